"""Command rules on real bash lines: every command of a line is judged as bash would run it.

The table gives each line the verdict of one fixed set of rules:
- allow / ask / deny: the rules say so (deny wins over ask, ask over allow);
- mode: no rule decides, the approval mode does;
- writes: every command is allowed, but a redirection writes a file (a write's approval applies);
- unjudgeable: the line cannot be parsed, or runs something only known at run time (it asks).
"""

from __future__ import annotations

import pytest

from tiller.host.command_rules import RuleBook, judge, proposed_patterns
from tiller.host.command_wrappers import read_command_line
from tiller.protocol.methods import CommandRules

RULES = CommandRules(
    allow=["git status", "git diff *", "git log *", "npm test", "pytest *", "ls *", "cat *", "echo *", "grep *",
           "head *", "wc *", "find *", "sudo apt update", "true"],
    ask=["git push *", "npm publish *"],
    deny=["rm -rf *", "curl *", "git push --force *", "dd *"],
)


def verdict(source: str) -> str:
    book = RuleBook()
    assert book.add("user", RULES) == []
    judgement = judge(read_command_line(source), book)
    if judgement.line.problem and judgement.verdict != "deny":
        return "unjudgeable"
    if judgement.verdict == "allow" and judgement.line.writes:
        return "writes"
    return judgement.verdict or "mode"


TABLE = [
    # plain commands and lists
    ("git status", "allow"),
    ("git status --short", "mode"),  # an allow rule without `*` allows exactly that
    ("git diff HEAD~1 -- src/", "allow"),
    ("git diff", "allow"),  # `*` also matches no words
    ("npm test", "allow"),
    ("npm test -- --watch", "mode"),
    ("pytest -x tests/", "allow"),
    ("ls -la | wc -l", "allow"),
    ("ls && rm -rf build", "deny"),
    ("git status; curl https://example.com", "deny"),
    ("git log --oneline || echo none", "allow"),
    ("git push origin main", "ask"),
    ("git push --force origin main", "deny"),
    ("git push origin main --force", "deny"),  # options match in any position
    ("npm publish --tag next", "ask"),
    ("ls -la | grep x | sort", "mode"),  # sort: no rule
    # options in any order and grouping, any path to the command
    ("rm -rf /", "deny"),
    ("rm -fr /tmp/x", "deny"),
    ("rm -r -f x", "deny"),
    ("rm x -rf", "deny"),
    ("rm -rf -- x", "deny"),
    ("rm foo.txt", "mode"),
    ("/bin/rm -rf /", "deny"),
    ("/usr/local/bin/curl -s x", "deny"),
    ("./curl x", "deny"),  # deny and ask rules catch the command whatever its directory
    ("/usr/bin/git status", "allow"),
    ("./git status", "mode"),  # allow rules do not: a local script named git is not git
    # quoting: the words bash would see
    ("\\rm -rf x", "deny"),
    ('r"m" -rf x', "deny"),
    ("'rm' -rf x", "deny"),
    ("$'\\x72m' -rf x", "deny"),
    ("$'\\162m' -r\\f x", "deny"),
    ('echo "a;rm -rf /"', "allow"),
    ("echo a\\;rm -rf /", "allow"),
    ("cat 'file with spaces.txt'", "allow"),
    # wrappers are seen through
    ("sudo rm -rf /", "deny"),
    ("sudo -u root rm -rf /", "deny"),
    ("env rm -rf /", "deny"),
    ("env -i PATH=/bin rm -rf /", "deny"),
    ("timeout 10 rm -rf x", "deny"),
    ("timeout -k 5 10 pytest -q", "allow"),
    ("nice -n 10 pytest", "allow"),
    ("nohup pytest &", "allow"),
    ("time git status", "allow"),
    ("exec curl x", "deny"),
    ("command curl x", "deny"),
    ("command -v curl", "mode"),  # only looks the name up
    ("stdbuf -oL curl x", "deny"),
    ("xargs rm -rf < files.txt", "deny"),
    ("ls | xargs grep -n TODO", "allow"),
    ("ls | xargs wc -l | sort", "mode"),
    ("find . -name '*.tmp' -exec rm -rf {} +", "deny"),
    ("find . -name '*.py' -exec grep -n TODO {} \\;", "allow"),
    ("find . -exec rm {} \\;", "mode"),  # `find *` does not allow what find runs
    ("sh -c 'rm -rf /'", "deny"),
    ('bash -c "curl -s x | sh"', "deny"),
    ("bash -lc 'git status && pytest'", "allow"),
    ("bash -o pipefail -c 'ls | wc -l'", "allow"),
    ('bash -c "$SCRIPT"', "unjudgeable"),
    ('eval "rm -rf /"', "deny"),
    ("eval $CMD", "unjudgeable"),
    ("sudo apt update", "allow"),  # spelled out in full
    ("sudo apt install vim", "mode"),
    ("sudo ls", "mode"),  # allowing ls does not allow running it as root
    ("git -C sub push origin", "ask"),
    ("git --no-pager log -5", "allow"),
    ("git -c core.pager=less status", "mode"),  # git -c may name a program git runs
    ("watch -n 1 'rm -rf x'", "deny"),
    ("env LD_PRELOAD=./x.so ls", "mode"),
    ("LD_PRELOAD=./x.so ls", "mode"),
    ("FOO=1 pytest", "allow"),
    ("coproc curl x", "deny"),
    # command and process substitutions run too
    ("echo $(rm -rf /)", "deny"),
    ("echo `curl x`", "deny"),
    ("cat <(curl x)", "deny"),
    ('echo "$(git status)"', "allow"),
    ("ls $(git diff --name-only)", "allow"),
    ("echo ${X:-$(curl x)}", "deny"),
    # subshells, groups, control flow, functions
    ("(cd sub && rm -rf build)", "deny"),
    ("{ ls; git status; }", "allow"),
    ("if git diff --quiet; then echo clean; fi", "allow"),
    ('for f in *.py; do cat "$f"; done', "allow"),
    ('while read l; do echo "$l"; done < list.txt', "mode"),
    ("case $x in a) rm -rf y;; esac", "deny"),
    ("f() { curl x; }; f", "deny"),
    ("! git diff --quiet", "allow"),
    ("[[ -f x ]] && cat x", "allow"),
    ("echo $((1 + 2))", "allow"),
    # redirections that write count as writes
    ("echo hi > out.txt", "writes"),
    ("echo hi >> log.txt", "writes"),
    ("git log &> all.log", "writes"),
    ("echo x >| f", "writes"),
    ("ls 2>&1 | head", "allow"),
    ("ls > /dev/null 2>&1", "allow"),
    ("cat < in.txt", "allow"),
    ("echo hi 1>&2", "allow"),
    # here-documents
    ("cat <<EOF > out.txt\nhello\nEOF", "writes"),
    ("cat <<EOF\n$(rm -rf /)\nEOF", "deny"),
    ("cat <<'EOF'\n$(rm -rf /)\nEOF", "allow"),  # a quoted delimiter: the body is text
    ("python - <<EOF\nimport os\nEOF", "mode"),
    # comments
    ("ls # rm -rf /", "allow"),
    ("git status # && curl x", "allow"),
    ("# nothing but a comment", "mode"),
    # unicode
    ("echo 'héllo wörld' > ünï.txt", "writes"),
    ('grep -r "naïve café" src', "allow"),
    ("rm\u00a0-rf /", "mode"),  # a no-break space does not separate words: no command rm
    ("ｒｍ -rf /", "mode"),  # fullwidth letters are another command
    # lines that cannot be judged ask
    ('echo "unterminated', "unjudgeable"),
    ("ls &&", "unjudgeable"),
    ("ls |", "unjudgeable"),
    ("$(echo rm) -rf /", "unjudgeable"),
    ("x=rm; $x -rf /", "unjudgeable"),
    ("env -S 'rm -rf /'", "deny"),  # the split string is parsed for deny rules (and asks otherwise)
    ("env -S 'ls -la'", "unjudgeable"),
]


def test_the_table_is_large_enough():
    assert len(TABLE) >= 60 and len({line for line, _ in TABLE}) == len(TABLE)


@pytest.mark.parametrize(("line", "expected"), TABLE, ids=[line for line, _ in TABLE])
def test_verdict(line, expected):
    assert verdict(line) == expected


@pytest.mark.parametrize(("line", "patterns"), [
    ("git log --oneline -5", ["git log *"]),
    ("pytest -x tests/test_a.py", ["pytest *"]),
    ("ls", ["ls"]),
    ("timeout 60 pytest -q", ["pytest *"]),
    ("make test && cargo build --release", ["make test", "cargo build *"]),
    ("rm build/x.o", ["rm build/x.o"]),  # harm depends on arguments: spelled out
    ("git push origin main", ["git push origin main"]),
    ("sudo systemctl restart nginx", ["sudo systemctl restart nginx"]),
    ("python -m pytest -q", ["python -m pytest *"]),
    ("cat $FILE | sort", ["cat *", "sort"]),
    ("node scripts/build.js 'a b'", ["node scripts/build.js 'a b'"]),
])
def test_always_allow_proposes_the_narrowest_useful_patterns(line, patterns):
    judgement = judge(read_command_line(line), RuleBook())
    assert proposed_patterns(judgement) == patterns
    book = RuleBook()
    book.add("session", CommandRules(allow=patterns))
    assert judge(read_command_line(line), book).verdict == "allow"  # saving them allows the line


def test_nothing_is_proposed_for_a_line_that_cannot_be_judged():
    assert proposed_patterns(judge(read_command_line("$CMD x"), RuleBook())) == []


@pytest.mark.parametrize("pattern", ["", "*", "ls | wc", "git status && ls", "echo 'unterminated"])
def test_bad_patterns_are_refused_with_a_reason(pattern):
    problems = RuleBook().add("user", CommandRules(allow=[pattern]))
    assert len(problems) == 1 and problems[0]
