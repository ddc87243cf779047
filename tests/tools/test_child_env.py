"""The environment of processes the tools start: an allowlist plus what the user names."""

from __future__ import annotations

import os

from tiller.environment import child_env, looks_like_a_credential


def test_only_allowlisted_variables_pass_by_default():
    env = child_env({
        "PATH": "/usr/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
        "OPENAI_API_KEY": "sk", "GH_PAT": "p", "GITHUB_PAT": "p", "PGPASSWORD": "pw", "DATABASE_URL": "u",
        "NPM_CONFIG__AUTH": "a", "DOCKER_AUTH_CONFIG": "d", "SENTRY_DSN": "s", "HTTPS_PROXY": "http://u:p@proxy",
        "SOME_PLAIN_SETTING": "x", "TILLER_DATA_DIR": "/d", "TILLER_TOOL_ENV": "",
    })
    assert env == {"PATH": "/usr/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm"}


def test_the_user_names_more_with_tiller_tool_env():
    source = {"PATH": "/bin", "AWS_PROFILE": "dev", "AWS_REGION": "eu", "GH_TOKEN": "t", "OTHER": "o",
              "TILLER_TOOL_ENV": "AWS_*, GH_TOKEN"}
    assert child_env(source) == {"PATH": "/bin", "AWS_PROFILE": "dev", "AWS_REGION": "eu", "GH_TOKEN": "t"}
    assert child_env(source, configured="OTHER") == {"PATH": "/bin", "OTHER": "o"}


def test_by_default_it_reads_the_process_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("TILLER_PLAIN_VISIBLE", "1")
    env = child_env()
    assert "OPENAI_API_KEY" not in env and "TILLER_PLAIN_VISIBLE" not in env
    assert env["PATH"] == os.environ["PATH"]


def test_credential_names_withheld_from_the_server_itself():
    for name in ("OPENAI_API_KEY", "GH_PAT", "GITHUB_PAT", "PGPASSWORD", "DATABASE_URL", "NPM_CONFIG__AUTH",
                 "DOCKER_AUTH_CONFIG", "SENTRY_DSN", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWORD"):
        assert looks_like_a_credential(name), name
    for name in ("PATH", "HOME", "TILLER_DATA_DIR", "OPENAI_BASE_URL", "LANG", "XDG_CONFIG_HOME"):
        assert not looks_like_a_credential(name), name
