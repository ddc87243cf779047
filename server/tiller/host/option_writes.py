"""Files that commands write through an option rather than a redirection.

`git diff --output=F` (any git command that shows a diff or a log), `sort -o F` and `tree -o F`
write F, so F needs what a redirection's file needs (command_policy, approvals): an allow rule
for `git diff *` does not let it write `.git/hooks/pre-commit` unasked. Options are read as the
tools read them: anywhere before `--`, long ones by any start (`--outp=F`), short ones in a
bundle (`-uoF`). A word only known when the line runs that may turn out to be such an option
is left to the deny rules of plan mode; here only what is written out counts.
"""

from __future__ import annotations

import os

from .shell_parser import Command, Word

# Per command: its long option that names a written file, and its short option letter (if any)
# with the letters whose value is the rest of a bundle (so `-k2o` is not -o).
_WRITING: dict[str, tuple[str, str, str]] = {
    "sort": ("--output", "o", "kStT"),
    "tree": ("--output", "o", "LPIHT"),
    "git": ("--output", "", ""),
}


def written_by_options(command: Command) -> list[Word]:
    name = os.path.basename(command.name)
    if name not in _WRITING or command.inner:
        return []  # `git -C dir diff …` is judged through its inner command
    long_option, letter, other_values = _WRITING[name]
    words = command.words
    written: list[Word] = []
    for index, word in enumerate(words[1:], start=1):
        text = word.text
        following = words[index + 1] if index + 1 < len(words) else None
        if text == "--":
            break
        if text.startswith("--"):
            given, equals, value = text.partition("=")
            if len(given) > 3 and long_option.startswith(given):
                written.append(Word(value) if equals else following or Word(""))
        elif letter and text.startswith("-") and len(text) > 1:
            for position, char in enumerate(text[1:], start=1):
                if char == letter:
                    rest = text[position + 1 :]
                    written.append(Word(rest) if rest else following or Word(""))
                    break
                if char in other_values:
                    break
    return [w for w in written if w.text]
