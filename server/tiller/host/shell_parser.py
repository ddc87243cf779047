"""A bash command line as bash would run it: every command in it, and every file it writes.

The line is parsed with tree-sitter's bash grammar (a real parser, not patterns over text), so
pipes, `&&`, `||`, `;`, subshells, `{ …; }`, `if`/`for`/`while`/`case`, function bodies, command
and process substitutions and here-documents are all seen. Each word gets the value bash would
give it after quote removal (`"r"m` is `rm`, `$'\\x72m'` is `rm`); what is only known when the
line runs (`$HOME`, `$(…)`, `$((…))`) is marked dynamic. Redirections that write a file are
collected (`> out`, `>> log`, `&> all`, `<> rw`), not those to file descriptors or /dev/null.

A line the grammar cannot parse completely, or whose command name is only known when it runs
(`$cmd x`), cannot be judged: `problem` says why, and whoever judges it must ask.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

# Stands in a word's text for a part that is only known when the line runs.
DYNAMIC = "\x00"

# Redirection operators that open the destination for writing.
_WRITING_OPERATORS = {">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|"}
# Destinations that are not files of the workspace.
_NOT_FILES = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"}
# How deep commands may nest (`bash -c "bash -c '…'"`, substitutions in substitutions).
MAX_DEPTH = 12


@dataclass(frozen=True)
class Word:
    """One argument as bash would pass it; DYNAMIC marks the parts known only at run time."""

    text: str
    # An unquoted expansion: bash may split it into several words, or none.
    splits: bool = False

    @property
    def dynamic(self) -> bool:
        return DYNAMIC in self.text

    def __str__(self) -> str:
        return self.text.replace(DYNAMIC, "…")


@dataclass
class Command:
    """One simple command: its words (argv), and the variables assigned just for it."""

    words: list[Word]
    assignments: list[str] = field(default_factory=list)  # names of `NAME=value` prefixes
    # Commands it runs itself (filled in by command_wrappers): `timeout 5 pytest` runs pytest.
    inner: list[Command] = field(default_factory=list)
    # Whether the inner commands alone decide (`timeout 5 pytest` is pytest), or this command
    # needs a rule of its own too (`sudo …`, `find … -exec …`); see command_wrappers.
    transparent: bool = True

    @property
    def name(self) -> str:
        return self.words[0].text if self.words else ""

    def __str__(self) -> str:
        return " ".join(str(word) for word in self.words)


@dataclass
class CommandLine:
    source: str
    commands: list[Command] = field(default_factory=list)  # in source order, substitutions included
    writes: list[Word] = field(default_factory=list)  # files written by redirections
    problem: str | None = None  # why the line cannot be judged

    def note(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem


@functools.cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def parse_command_line(source: str, depth: int = 0) -> CommandLine:
    line = CommandLine(source)
    if depth > MAX_DEPTH:
        line.note("commands nest too deeply to be judged")
        return line
    data = source.encode("utf-8", errors="surrogateescape")
    tree = _parser().parse(data)
    if tree.root_node.has_error:
        line.note(f"bash cannot parse it ({_first_error(tree.root_node, data)})")
    _Walker(line, data, depth).walk(tree.root_node)
    return line


def _first_error(node: Node, data: bytes) -> str:
    for child in _descendants(node):
        if child.is_error or child.is_missing:
            row, column = child.start_point
            what = f"missing {child.type!r}" if child.is_missing else "unexpected text"
            return f"{what} at line {row + 1}, column {column + 1}"
    return "a syntax error"


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(current.children))
    return found


class _Walker:
    def __init__(self, line: CommandLine, data: bytes, depth: int) -> None:
        self.line = line
        self.data = data
        self.depth = depth

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="surrogateescape")

    # --- statements ----------------------------------------------------------------------

    def walk(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self.command(node)
        elif kind == "file_redirect":
            self.redirect(node)
        elif kind in ("command_substitution", "process_substitution"):
            self.walk_children(node)
        elif kind in ("comment", "heredoc_start", "heredoc_end", "heredoc_content"):
            return
        else:
            self.walk_children(node)

    def walk_children(self, node: Node) -> None:
        for child in node.children:
            self.walk(child)

    def command(self, node: Node) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        # Added first so that a command comes before the ones substituted into it.
        command = Command(words, assignments)
        self.line.commands.append(command)
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "name":
                name = child.named_children[0] if child.named_children else child
                words.append(self.word(name))
            elif field_name == "argument":
                words.append(self.word(child))
            elif child.type == "variable_assignment":
                variable = child.child_by_field_name("name")
                assignments.append(self.text(variable) if variable is not None else "?")
                value = child.child_by_field_name("value")
                if value is not None:
                    self.word(value)  # substitutions in the value run too
            else:
                self.walk(child)
        if words and words[0].dynamic:
            self.line.note(f"the command name {words[0]} is only known when the line runs")

    def redirect(self, node: Node) -> None:
        operator = next((self.text(c) for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        if destination is None:
            return
        target = self.word(destination)
        if operator not in _WRITING_OPERATORS:
            return
        if operator in (">&", "<&") and (destination.type == "number" or target.text == "-"):
            return  # 2>&1, >&- : file descriptors, not files
        if target.text in _NOT_FILES or target.text.startswith("/dev/fd/"):
            return
        self.line.writes.append(target)

    # --- words ---------------------------------------------------------------------------

    def word(self, node: Node, quoted: bool = False) -> Word:
        """The value bash gives the word after quote removal; substitutions inside are walked."""
        kind = node.type
        if kind in ("word", "number"):
            return Word(_unescape_unquoted(self.text(node)))
        if kind == "raw_string":
            return Word(self.text(node)[1:-1])
        if kind == "ansi_c_string":
            return Word(_ansi_c(self.text(node)[2:-1]))
        if kind in ("string", "translated_string"):
            return Word(self.string(node), splits=False)
        if kind == "concatenation":
            parts = [self.word(child, quoted) for child in node.named_children]
            return Word("".join(p.text for p in parts), splits=any(p.splits for p in parts))
        if kind in ("command_substitution", "process_substitution"):
            self.walk(node)
            return Word(DYNAMIC, splits=not quoted and kind == "command_substitution")
        if kind in ("simple_expansion", "expansion", "arithmetic_expansion", "brace_expression"):
            self.walk_children(node)  # ${x:-$(cmd)} runs cmd
            return Word(DYNAMIC, splits=not quoted)
        # Anything else in a word's place (an extglob, a test operator): judged as unknown.
        self.walk_children(node)
        return Word(DYNAMIC, splits=not quoted)

    def string(self, node: Node) -> str:
        """A double-quoted string: literal text between its expansions, with \\\\ \\" \\$ \\` unescaped."""
        start, end = node.start_byte, node.end_byte
        text = self.text(node)
        if text.startswith('$"'):
            start += 2
        elif text.startswith('"'):
            start += 1
        if text.endswith('"') and end > start:
            end -= 1
        pieces: list[str] = []
        position = start
        for child in node.named_children:
            if child.type == "string_content":
                continue
            pieces.append(_unescape_quoted(self.data[position : child.start_byte].decode("utf-8", "surrogateescape")))
            pieces.append(self.word(child, quoted=True).text)
            position = child.end_byte
        pieces.append(_unescape_quoted(self.data[position:end].decode("utf-8", "surrogateescape")))
        return "".join(pieces)


def _unescape_unquoted(text: str) -> str:
    return _unescape(text, escapable=None)


def _unescape_quoted(text: str) -> str:
    # Inside double quotes a backslash escapes only $ ` " \ and a newline.
    return _unescape(text, escapable='$`"\\\n')


def _unescape(text: str, escapable: str | None) -> str:
    """Backslash removal as bash does it; `escapable` None: any character (unquoted text)."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        following = text[index + 1] if index + 1 < len(text) else ""
        if char == "\\" and following and (escapable is None or following in escapable):
            if following != "\n":  # a backslash-newline joins lines
                out.append(following)
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


_ANSI_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                 "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(body: str) -> str:
    """The value of `$'…'`: C-style escapes, as bash decodes them."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 >= len(body):
            out.append(char)
            index += 1
            continue
        code = body[index + 1]
        if code in _ANSI_ESCAPES:
            out.append(_ANSI_ESCAPES[code])
            index += 2
        elif code in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[code]
            digits = _take(body, index + 2, limit, "0123456789abcdefABCDEF")
            out.append(chr(int(digits, 16)) if digits else "\\" + code)
            index += 2 + len(digits)
        elif code in "01234567":
            digits = _take(body, index + 1, 3, "01234567")
            out.append(chr(int(digits, 8)))
            index += 1 + len(digits)
        elif code == "c" and index + 2 < len(body):
            out.append(chr(ord(body[index + 2]) & 0x1F))
            index += 3
        else:
            out.append("\\" + code)
            index += 2
    return "".join(out)


def _take(text: str, start: int, limit: int, allowed: str) -> str:
    end = start
    while end < len(text) and end - start < limit and text[end] in allowed:
        end += 1
    return text[start:end]
