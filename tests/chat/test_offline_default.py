"""The first impression: the README's first command, on the real offline model, through the real
`tiller chat` and `tiller serve` (no API key, no TILLER_MODEL: the local SmolLM2-135M)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tiller.ai.text_only import SYSTEM_PROMPT
from tiller.chat.terminal import OFFLINE_NOTICE

from .helpers import PATIENCE, chat_env

LOOP_NOTE = "[Stopped: the reply kept repeating itself.]"


def offline_chat(prompt: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = chat_env(None, TILLER_DATA_DIR=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("TILLER_MODEL")
    return subprocess.run([sys.executable, "-m", "tiller", "chat", prompt], capture_output=True, text=True,
                          encoding="utf-8", env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=PATIENCE)


def test_the_readme_first_command_answers_briefly_and_says_how_to_get_a_real_model(tmp_path):
    result = offline_chat("Write a haiku about tilling a field", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 8
    assert all(lines[i] != lines[i - 1] or lines[i] != lines[i - 2] for i in range(2, len(lines)))
    assert LOOP_NOTE not in result.stdout
    notice = OFFLINE_NOTICE.format(model="local/smollm2-135m")
    assert result.stderr.count(notice) == 1
    assert "README.md#using-real-providers" in notice
    # The usage line reports a short reply: far below the default token limit.
    usage = next(line for line in result.stderr.splitlines() if line.startswith("[local/smollm2-135m: "))
    assert int(usage.split(" in, ")[1].split(" out")[0]) <= 120


def test_two_plus_two_with_the_text_only_prompt(tmp_path):
    result = offline_chat("What is 2+2? Answer in one sentence.", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "4" in result.stdout
    assert len(result.stdout.strip().splitlines()) <= 3
    # The saved session shows what the model was given: the short text-only prompt, not the
    # coding agent's (which talks about tools this model cannot call).
    (session_file,) = (tmp_path / "data").rglob("*.jsonl")
    header = json.loads(session_file.read_text(encoding="utf-8").splitlines()[0])
    assert header["systemPrompt"] == SYSTEM_PROMPT
