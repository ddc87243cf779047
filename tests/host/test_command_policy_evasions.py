"""Command lines written to get past the command rules or plan mode, and what the policy decides.

The principle: when the policy cannot be sure what a line does it does not let it run silently:
it asks (and plan mode refuses), and a deny rule that might match what it cannot see is not
bypassed in yolo either. Ordinary lines keep running as before.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tiller.host.command_policy import CommandPolicy
from tiller.tools.ports import ApprovalRequest

RULES = {
    "allow": ["echo *", "cat *", "ls *", "git diff *", "git status", "git log *", "grep *", "pytest *", "head *",
              "printf *", "test *", "[ *", "true", "sort *", "xargs *"],
    "deny": ["rm -rf *", "rm -f *", "git push *", "curl *"],
}


@pytest.fixture
def policy(tmp_path: Path) -> CommandPolicy:
    user = tmp_path / "user" / "settings.json"
    user.parent.mkdir()
    user.write_text(json.dumps({"commands": RULES}))
    (tmp_path / "project").mkdir()
    return CommandPolicy(str(tmp_path / "project"), lambda event: None, user_path=user)


def decide(policy: CommandPolicy, line: str, mode: str) -> str:
    request = ApprovalRequest(tool_call_id="c", tool_name="bash", kind="execute", title="Run", command=line)
    decision = policy.decide(request, mode)  # type: ignore[arg-type]
    assert decision is not None
    return decision.outcome


def check(policy: CommandPolicy, line: str, expected: dict[str, str]) -> None:
    got = {mode: decide(policy, line, mode) for mode in expected}
    assert got == expected, line


ASKS = {"ask": "ask", "acceptEdits": "ask", "yolo": "ask", "plan": "refuse"}
DENIED = {"ask": "refuse", "acceptEdits": "refuse", "yolo": "refuse", "plan": "refuse"}
# No rule allows it: the mode decides (yolo runs it), plan mode refuses it.
MODE = {"ask": "ask", "acceptEdits": "ask", "yolo": "allow", "plan": "refuse"}
ALLOWED = {"ask": "allow", "acceptEdits": "allow", "yolo": "allow", "plan": "allow"}


# --- 1. brace expansion and globs are not literal text ----------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    # a brace expansion is spelled out as bash does it: `r{m,} -rf x` is `rm r -rf x`
    ("r{m,} -rf x", DENIED),
    ("ca{t,} /etc/hostname", ALLOWED),  # cat ca /etc/hostname
    ("git {push,origin,main}", DENIED),
    ("rm -{r,f} x", DENIED),
    ("git diff {--output=gd.out,HEAD}", {"ask": "ask", "plan": "refuse"}),  # it writes gd.out
    ("echo hi | sort {--output=brace.out,-}", {"ask": "ask", "plan": "refuse"}),
    ("find . -name '*.tmp' -{delete,true}", {"ask": "ask", "yolo": "allow", "plan": "refuse"}),
    ("git {push,origin}{,} main", DENIED),
    ("echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n} && git pu{sh,sh} x", DENIED),  # 128 words: not spelled out
    # a command name made by a glob: nobody can say which command runs
    ("/bin/r[m] -rf x", ASKS),
    ("/bin/r? -rf x", ASKS),
    ("{r,s}* -rf x", ASKS),
    # a glob may give the command more words, which deny rules see
    ("rm *", DENIED),  # a file named -rf
    ("sort *.txt", {"ask": "allow", "plan": "refuse"}),  # *.txt may be -ofoo.txt
    ("git diff *.py", {"ask": "allow", "plan": "refuse"}),  # may be --output=x.py
])
def test_brace_expansion_and_globs_are_expansions(policy, line, expected):
    check(policy, line, expected)


@pytest.mark.parametrize("line", [
    "ls *.py", "cat src/*.txt", "git diff src/*.py", "grep -rn foo src", "ls -la", "git status", "cat a | head",
    "echo {}", "echo '{a,b}' \"*\" \\*", "[ -f x ] && echo y", "git log --oneline -5",
    "git diff HEAD@{1}",
])
def test_ordinary_lines_still_run(policy, line):
    check(policy, line, {"ask": "allow", "plan": "allow", "yolo": "allow"})
    check(policy, "pytest -q tests/x.py", {"ask": "allow", "acceptEdits": "allow", "yolo": "allow"})


# --- 2. variables set by export, declare, … or a bare assignment are judged -----------------------

@pytest.mark.parametrize("line", [
    "export GIT_EXTERNAL_DIFF=rm; git diff",
    "declare -x PAGER=x; git diff",
    "PATH=.:$PATH; pytest",
    "readonly 'GIT_SSH_COMMAND=rm'; git diff",
    "typeset -x LD_PRELOAD=./evil.so; cat x",
    "local BASH_ENV=x; echo hi",
    "declare -n ref=PATH; ref=.; pytest",  # a name reference: which variable is set is not in sight
    'export "$SETTING"; git diff',
    "env GIT_EXTERNAL_DIFF=rm git diff",
    "env 'BASH_FUNC_ls%%=() { rm -rf x; }' bash -c ls",  # env takes any word with = as a variable
])
def test_a_line_setting_a_variable_that_runs_programs_asks_even_in_yolo(policy, line):
    check(policy, line, ASKS)


def test_harmless_variables_still_run(policy):
    for line in ("export NODE_ENV=test && pytest -q", "x=1; echo $x", "FOO=bar; cat a", "local x; echo hi"):
        check(policy, line, {"ask": "allow", "acceptEdits": "allow", "yolo": "allow"})
    check(policy, "x=1; echo $x", {"plan": "allow"})
    check(policy, "GIT_PAGER=cat git log", MODE)  # not the command a rule allowed, but nothing unseen


# --- 3. text holding a command that reaches arithmetic ----------------------------------------------

@pytest.mark.parametrize("line", [
    "x='a[$(touch p)]'; echo $((x))",
    "x='a[$(touch p)]'; (( x > 0 ))",
    "[[ 'a[$(touch p)]' -eq 0 ]]; echo hi",
    "[[ -v 'a[$(touch p)]' ]]",
    "test -v 'a[$(touch p)]'",
    "[ 'a[`touch p`]' -gt 1 ]",
    "printf -v 'a[$(touch p)]' x",
    "let 'y=a[$(touch p)]'",
    "declare -i y='a[$(touch p)]'",
    "read 'a[$(touch p)]' <<< x",
    "x=$'a[$(touch p)]'; echo ${s:x}",
])
def test_text_holding_a_command_that_reaches_arithmetic_asks(policy, line):
    check(policy, line, ASKS)


def test_arithmetic_and_quoted_dollars_alone_still_run(policy):
    for line in ("echo $((1 + 2))", "for i in 1 2; do echo $((i + 1)); done", "echo '$(date)'", "test 1 -eq 1",
                 'echo "${HOME}" "${x:-1}"'):
        check(policy, line, ALLOWED)
    # printf -v and test -v set or look at variables by a name bash may evaluate: not read-only.
    check(policy, "printf -v x '%s' hi", {"ask": "allow", "plan": "refuse"})
    check(policy, "test -v HOME", {"ask": "allow", "plan": "refuse"})


# --- 4 and 7. what wrappers run, however their options are spelled ---------------------------------

@pytest.mark.parametrize("line", [
    "echo ./v | xargs --max-lines rm cat",  # --max-lines takes a value only when attached
    "echo ./v | xargs --eof rm cat",
    "echo ./v | xargs -e rm cat",
    "echo ./v | xargs -l rm cat",
    "echo ./v | xargs --replace rm -f {}",
    "echo ./v | xargs -i rm -f {}",
    "echo ./v | xargs --max-l=1 rm -f",
    "env -S'rm -rf x'",
    "env --split-string 'rm -rf x'",
    "env --split 'rm -rf x'",
    "env --spl='rm -rf' x",
    "env -iS'rm -rf x'",
    "sudo -R /tmp rm -rf x",
    "sudo -h rm -rf x",
    "timeout --sig KILL 5 rm -rf x",
    "trap 'rm -rf x' EXIT",
    "sh <<< 'rm -rf x'",
    "bash <<'EOF'\nrm -rf x\nEOF",
    "git --no-pager push origin main",
    "sh - <<'EOF'\nrm -rf x\nEOF",
])
def test_deny_rules_see_what_wrappers_run(policy, line):
    check(policy, line, DENIED)


@pytest.mark.parametrize("line", [
    "echo 'rm -rf x' | sh",  # a shell reading a pipe
    "bash -s < script.sh",
    "bash <<EOF\n$CMD\nEOF",
    "source ./env.sh",
    ". ./env.sh",
    "echo x | xargs -I{} sh -c {}",  # the input becomes the script
    "env $OPTIONS rm -rf x",  # an option only known at run time may take rm as its value
    "env -S'ls -la'",  # env splits the string its own way
    "echo ls | bash -",
    "bash <(echo rm -rf x)",  # the script file is made when the line runs
    "git -c core.pager='rm -rf x' log",  # a setting that runs a program
    "git -c color.ui=never -c alias.log='!rm -rf x' log",
    "sh -c \"git -c core.pager='rm -rf x' log\"",  # found inside a script as well
])
def test_commands_out_of_sight_ask_even_in_yolo(policy, line):
    check(policy, line, ASKS)


def test_wrappers_spelled_as_usual_still_run(policy):
    for line in ("xargs -0 -n 1 cat", "ls | xargs grep foo", "git --no-pager diff", "git -C sub log",
                 "trap 'echo bye' EXIT; echo hi", "bash <<'EOF'\necho hi\nEOF", "timeout 5 cat x",
                 "git -c color.ui=never -c core.quotepath=off log --oneline"):
        check(policy, line, {"ask": "allow", "yolo": "allow"})
    check(policy, "timeout 60 pytest -q", {"ask": "allow", "acceptEdits": "allow", "yolo": "allow"})
    check(policy, "bash scripts/check.sh", MODE)  # a script file: a program like any other


# --- 5. plan mode's read-only list does not let commands write ---------------------------------------

@pytest.mark.parametrize("line", [
    "echo hi | sort --outp=sorted.txt",  # GNU tools take any unambiguous start of a long option
    "sort --compress-program=sh -S 1 big.txt",
    "git reflog show --output=F",
    "git stash list --output=F",
    "git shortlog --outp=F",
    "git rev-list --output F HEAD",
    "git log --outp=F",
    "git branch -vumaster",  # -v -u master: sets master's upstream
    "git branch -vuorigin/main",
    "git branch --set-up=origin/main",
    "git branch -vD old",
    "git tag -l -d v1",
    "/usr/bin/time -o t.out cat x",  # time -o writes its report
    "time --output=t.out cat x",
])
def test_plan_mode_refuses_read_only_commands_spelled_to_write(policy, line):
    check(policy, line, {"plan": "refuse"})


def test_plan_mode_still_runs_what_only_reads(policy):
    for line in ("git branch -v", "git branch -vv", "git branch -a", "git branch --list 'feat*'", "git tag -l 'v1*'",
                 "git log --oneline -5", "git diff --stat", "git diff --output-indicator-new=+", "sort -u names.txt",
                 "git stash list", "git reflog", "time cat x"):
        check(policy, line, {"plan": "allow"})


# --- 6. what redirections write is checked like a write tool's path ----------------------------------

def targets(policy: CommandPolicy, line: str) -> list[str | None]:
    request = ApprovalRequest(tool_call_id="c", tool_name="bash", kind="execute", title="Run", command=line)
    decision = policy.decide(request, "acceptEdits")
    assert decision is not None
    return [str(t) if t is not None else None for t in decision.writes]


def test_redirections_are_resolved_to_the_files_they_write(policy, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cwd = Path(policy.cwd)
    assert targets(policy, "echo x > .git/hooks/pre-commit") == [str(cwd / ".git/hooks/pre-commit")]
    assert targets(policy, "echo x >> ~/.config/tiller/settings.json") == [
        str(tmp_path / "home/.config/tiller/settings.json")]
    assert targets(policy, "echo hi > -") == [str(cwd / "-")]  # a file named -, not standard output
    assert targets(policy, "echo hi > $OUT") == [None]
    assert targets(policy, "echo hi > '~/x'") == [str(cwd / "~/x")]  # quoted: no home directory
    # After cd, a relative target may be in either directory; after cd to an unknown one, anywhere.
    assert targets(policy, "cd .git && echo x > hooks/pre-commit") == [
        str(cwd / "hooks/pre-commit"), str(cwd / ".git/hooks/pre-commit")]
    assert targets(policy, "cd $D && echo x > y") == [str(cwd / "y"), None]
    assert targets(policy, "echo hi > /dev/null 2>&1 && echo hi >&2") == []
    assert targets(policy, "cat <<EOF > out\nhi\nEOF") == [str(cwd / "out")]


def test_options_that_write_files_are_writes_too(policy):
    cwd = Path(policy.cwd)
    assert targets(policy, "git diff --output=.git/hooks/pre-commit") == [str(cwd / ".git/hooks/pre-commit")]
    assert targets(policy, "git log --outp notes.txt") == [str(cwd / "notes.txt")]
    assert targets(policy, "git -C sub diff --output=y") == [str(cwd / "sub/y")]
    assert targets(policy, "sort -uo out.txt in.txt") == [str(cwd / "out.txt")]
    assert targets(policy, "tree -o tree.txt") == [str(cwd / "tree.txt")]
    assert targets(policy, "bash -c 'git diff --output=x'") == [str(cwd / "x")]  # once
    assert targets(policy, "sort -k2o in.txt && git diff --output-indicator-new=+") == []
    # An allow rule for `git diff *` lets it run, not write without what a write needs.
    check(policy, "git diff --output=notes.txt", {"ask": "ask", "acceptEdits": "allow", "plan": "refuse"})


# --- 8. no line makes judging fail -------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "echo $'\\U7fffffff'",  # beyond Unicode
    "echo $'\\ud800' $'\\U0000DFFF'",  # lone surrogates
    "echo \ud800",  # a lone surrogate that came in through JSON
    "cat >~$'\\x00'x/y",
    "echo $'\\777'",
])
def test_odd_characters_are_judged_not_crashed_on(policy, line):
    request = ApprovalRequest(tool_call_id="c", tool_name="bash", kind="execute", title="Run", command=line)
    decision = policy.decide(request, "ask")
    assert decision is not None and decision.outcome in ("allow", "ask")
    assert "judging it failed" not in (decision.message or "")


_PIECES = [*"abrm -'\"$(){}[]*?\\`;|&<>=~#\n\t!%^,.:0x/", "$'", "\\U7fffffff", "\\ud800", "\ud800", "<<", "<<<",
           "((", "[[", "]]", "${", "$((", "EOF", "sh -c ", "env -S", "xargs ", "trap ", "declare ", "a[", "-eq", "é",
           "cd ", "time -o ", "--outp", "git ", "sort "]


def test_random_lines_are_judged_without_failing(policy):
    """Lines made of shell's odd pieces at random (a fixed seed): none makes judging fail (which
    would still ask, with the reason "judging it failed")."""
    rng = random.Random(12)
    for _ in range(300):
        line = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 30)))
        request = ApprovalRequest(tool_call_id="c", tool_name="bash", kind="execute", title="Run", command=line)
        for mode in ("ask", "plan"):
            decision = policy.decide(request, mode)
            assert decision is not None and "judging it failed" not in (decision.message or ""), line
