"""`tiller chat` in a long session: the user sees when and why the context was compacted,
and the meter after it, against a loopback OpenAI-compatible model with a 4k window."""

from __future__ import annotations

import re

from tests.server.windowed_model import WindowedModel, windowed_config
from tests.support.sse_server import SSEServer

from .helpers import ChatProcess, write_script


def test_the_chat_says_when_and_why_it_compacted(tmp_path):
    model = WindowedModel(window=4096)
    with SSEServer(responder=model) as server:
        ref = windowed_config(tmp_path / "xdg-config", server.url, window=4096, max_tokens=512)
        chat = ChatProcess(script=write_script(tmp_path, []), TILLER_MODEL=ref,
                           XDG_CONFIG_HOME=str(tmp_path / "xdg-config"))
        try:
            turn = 0
            while "[compacted: " not in chat.stderr:
                turn += 1
                assert turn <= 30, f"never compacted:\n{chat.stderr}"
                chat.send(f"Turn {turn}: go on")
                chat.wait_stderr(f"[{ref}: ", count=turn)  # the run is over
            chat.close_stdin()
            assert chat.wait() == 0, chat.stderr
        finally:
            chat.kill()

    assert not [call for call in model.calls if call.refused], "compaction kept every request inside the window"
    lines = chat.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[compacting the context (threshold): "))
    done = re.fullmatch(r"\[compacted: ([\d,]+) → ([\d,]+) tokens; older turns summarised\]", lines[start + 1])
    assert done, lines[start + 1]
    before, after = (int(n.replace(",", "")) for n in done.groups())
    assert after < before
    meters = [int(m.replace(",", "")) for m in re.findall(r"; context ([\d,]+)/4,096 \(\d+%\)", chat.stderr)]
    assert len(meters) == turn and meters[-1] < max(meters)  # the meter shows the smaller context
