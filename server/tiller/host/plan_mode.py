"""Plan mode: the agent explores and plans, and changes nothing.

In the `plan` approval mode read-only tools run as always; edit and write are refused with a
message telling the model it is planning; bash runs only lines whose every command is on the
read-only list (tiller's, below, plus the `readOnly` rules of the user and a trusted project),
that no rule denies or asks about, that write no file (by redirection or by an option), that set
no variable making programs run others, and that can be judged (command_policy.py).
An MCP tool runs only if its server marks it read-only (the `readOnlyHint` annotation).
Nothing ever asks the user in plan mode: what is not read-only is refused.

The model is told in its system prompt while the mode lasts, and the first prompt after the
user leaves plan mode says so.
"""

from __future__ import annotations

from ..protocol.methods import CommandRules
from ..protocol.modes import ApprovalMode

# Commands that only look. Each `*` word stands for any arguments; options that make one of
# these write or run something are excluded below.
READ_ONLY = [
    "ls *", "cat *", "head *", "tail *", "wc *", "file *", "stat *", "du *", "df *", "pwd", "cd *", "echo *",
    "printf *", "which *", "type *", "whoami", "id *", "uname *", "date", "date +*", "hostname", "env",
    "printenv *", "tree *", "find *", "grep *", "egrep *", "fgrep *", "rg *", "diff *", "cmp *", "sort *", "uniq",
    "uniq -*", "cut *", "tr *", "nl *", "tac *", "rev *", "column *", "fold *", "od *", "hexdump *", "strings *",
    "realpath *", "readlink *", "basename *", "dirname *", "sha256sum *", "sha1sum *", "md5sum *", "cksum *",
    "jq *", "test *", "[ *", "true", "false", "sleep *",
    "git status *", "git log *", "git diff *", "git show *", "git blame *", "git rev-parse *", "git ls-files *",
    "git ls-tree *", "git cat-file *", "git grep *", "git describe *", "git shortlog *", "git merge-base *",
    "git rev-list *", "git remote", "git remote -v", "git remote show *", "git branch", "git branch -a",
    "git branch -r", "git branch -v*", "git branch --list *", "git branch --show-current", "git tag",
    "git tag -l *", "git tag --list *", "git stash list *", "git config --get *", "git config --list *",
    "git config -l", "git reflog", "git reflog show *",
]

# Options that make a command of the list write files or run programs. Deny rules match a long
# option by any start (`--outp=x` is `--output=x`) and short options in any bundle (`-vumaster`
# holds `-u`), as the tools read them.
NOT_READ_ONLY = [
    "sort -o* *", "sort --output* *", "sort --compress-program* *", "tree -o* *",
    # Every git command that shows a diff or a log takes --output=FILE (diff, log, show, stash list,
    # reflog, shortlog, rev-list, ...); --output-indicator-new=+ is harmless.
    "git --output=* *", "git --output *",
    "git branch -d* *", "git branch -D* *", "git branch -m* *", "git branch -M* *", "git branch -c* *",
    "git branch -C* *", "git branch -u* *", "git branch -f* *", "git branch -t* *", "git branch --delete* *",
    "git branch --move* *", "git branch --copy* *", "git branch --force* *", "git branch --set-upstream-to* *",
    "git branch --unset-upstream* *", "git branch --track* *", "git branch --edit-description* *",
    "git branch --create-reflog* *",
    "git tag -d* *", "git tag -a* *", "git tag -s* *", "git tag -f* *", "git tag -m* *", "git tag -F* *",
    "git tag -u* *", "git tag --delete* *", "git tag --annotate* *", "git tag --sign* *", "git tag --force* *",
    "git tag --message* *", "git tag --file* *", "git tag --local-user* *",
    "find -delete *", "find -fprint *", "find -fprint0 *", "find -fprintf *",
    "find -fls *", "rg --pre* *", "git grep -O* *", "git grep --open-files-in-pager* *", "date -s* *",
    "date --set* *",
    # A variable name may carry an array subscript, which bash evaluates: printf -v 'a[$(cmd)]' x.
    "printf -v* *", "test -v *", "[ -v *",
]

BUILT_IN_RULES = CommandRules(read_only=READ_ONLY)
# Only in plan mode: there they are deny rules.
PLAN_ONLY_RULES = CommandRules(deny=NOT_READ_ONLY)

SYSTEM_PROMPT = """

# Plan mode
The user has put this session in plan mode: explore and plan, change nothing. Read and search \
files freely (read, grep, find, ls); bash runs only read-only commands (ls, cat, git log, \
git diff, rg, ...). edit and write are refused, and so is any command that could change \
something. Find out what you need, then answer with a concrete plan: the files to change, what \
to change in each, and how to check the result. The user switches out of plan mode when they \
want the plan carried out."""

REFUSED_CHANGE = (
    "Not done: the session is in plan mode, where nothing is changed. Do not try to make this change "
    "another way: put it in your plan. The user will switch out of plan mode to have the plan carried out."
)


def refused_mcp_call(tool_name: str, server: str | None) -> str:
    return (
        f"Not run: the session is in plan mode, where only MCP tools that their server marks read-only run, "
        f"and {tool_name} (of the MCP server {server}) is not marked read-only. Put the call in your plan."
    )


def refused_command(why: str) -> str:
    return (
        f"Not run: the session is in plan mode, where only read-only commands run, and {why}. Read files with "
        "the read, grep, find and ls tools, or put the command in your plan."
    )


def system_prompt(base: str, mode: ApprovalMode) -> str:
    return base + SYSTEM_PROMPT if mode == "plan" else base


def left_plan_mode(mode: ApprovalMode) -> str:
    """What the first prompt after plan mode tells the model."""
    return (
        f"[tiller] The user switched the session from plan mode to {mode} mode: you may now carry out the plan. "
        "File changes and commands follow the approval mode again."
    )
