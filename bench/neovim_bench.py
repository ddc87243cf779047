"""How much does the Neovim plugin add to Neovim's own LSP client when a reply streams?

    .venv/bin/python bench/neovim_bench.py [--deltas 20000] [--repeat 3]

A faux model streams a reply of `deltas` one-character deltas through `tiller serve` into a
real headless Neovim 0.11 (tests/neovim/driver.py). Measured from pressing <CR> in the
prompt buffer to the end of the run:

- baseline: the plugin's `agent/event` handler does nothing (what Neovim's LSP client costs:
  reading, decoding and scheduling every notification);
- plugin: the transcript model and the chat window (markdown highlighted by treesitter,
  redrawn at most every 50 ms) as a user has them.

Prints both and the ratio plugin/baseline (medians of `repeat` runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.neovim.driver import Neovim
from tests.server.harness import faux_script, reply, server_env, text

SILENCE_HANDLER = """
    local client = require('tiller.client')
    _G.events = 0
    client.on_event = function(root, params)
      _G.events = _G.events + 1
      if params.event.type == 'agent_end' then require('tiller').chat().streaming = false end
    end
"""


def run(tmp: Path, deltas: int, baseline: bool) -> float:
    line = "word " * 8 + "\n"
    body = (line * (deltas // len(line) + 1))[:deltas]
    script = faux_script(tmp / "faux.json", [reply(text("ok")), reply(text(body))], chunk_chars=1)
    env = server_env(tmp, TILLER_FAUX_SCRIPT=script)
    env["HOME"] = str(tmp)
    workspace = tmp / "workspace"
    (workspace / ".git").mkdir(parents=True, exist_ok=True)
    nvim = Neovim(env, workspace)
    try:
        nvim.type_prompt("warm up")  # the server is started and the session open
        nvim.wait_idle()
        if baseline:
            nvim.lua(SILENCE_HANDLER)
        start = time.perf_counter()
        nvim.type_prompt("go")
        nvim.wait_idle()
        elapsed = time.perf_counter() - start
        if not baseline:
            assert body.rstrip("\n").split("\n")[-1] in nvim.chat_lines()
        return elapsed
    finally:
        nvim.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"baseline": [], "plugin": []}
    for _ in range(args.repeat):
        for name in results:
            with tempfile.TemporaryDirectory() as tmp:
                results[name].append(run(Path(tmp), args.deltas, baseline=name == "baseline"))
    baseline, plugin = (statistics.median(results[name]) for name in ("baseline", "plugin"))
    print(f"{args.deltas} one-character deltas into Neovim (median of {args.repeat}):")
    print(f"  Neovim's LSP client alone: {baseline:.2f} s ({args.deltas / baseline:,.0f} deltas/s)")
    print(f"  with the plugin's chat:    {plugin:.2f} s ({args.deltas / plugin:,.0f} deltas/s)")
    print(f"  plugin/baseline: {plugin / baseline:.2f}x")


if __name__ == "__main__":
    main()
