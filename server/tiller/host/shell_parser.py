"""A bash command line as bash would run it: every command in it, and every file it writes.

The line is parsed with tree-sitter's bash grammar (a real parser, not patterns over text), so
pipes, `&&`, `||`, `;`, subshells, `{ …; }`, `if`/`for`/`while`/`case`, function bodies, command
and process substitutions and here-documents are all seen. Each word gets the value bash would
give it after quote removal (`"r"m` is `rm`, `$'\\x72m'` is `rm`); what is only known when the
line runs (`$HOME`, `$(…)`, `$((…))`, and an unquoted glob `*.py` or brace expansion `{a,b}`,
which bash turns into words of its own) is marked dynamic. Redirections that write a file are
collected (`> out`, `>> log`, `&> all`, `<> rw`), not those to file descriptors or /dev/null.

A line the grammar cannot parse completely, or whose command name is only known when it runs
(`$cmd x`), cannot be judged: `problem` says why, and whoever judges it must ask.
"""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

# Stands in a word's text for a part that is only known when the line runs.
DYNAMIC = "\x00"

# Redirection operators that open the destination for writing.
_WRITING_OPERATORS = {">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|"}
# Destinations that are not files of the workspace.
_NOT_FILES = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
# How deep commands may nest (`bash -c "bash -c '…'"`, substitutions in substitutions).
MAX_DEPTH = 12


@dataclass(frozen=True)
class Word:
    """One argument as bash would pass it; DYNAMIC marks the parts known only at run time."""

    text: str
    # An unquoted expansion: bash may split it into several words, or none.
    splits: bool = False
    # Its dynamic parts come only from a glob or a brace expansion (`src/*.py`, `-{a,b}`): each
    # word it becomes has the known parts where they are (see may_be_option).
    glob: bool = False

    @property
    def dynamic(self) -> bool:
        return DYNAMIC in self.text

    def may_be_option(self) -> bool:
        """Whether a word (or one it becomes when the line runs) may start with `-`."""
        if self.text.startswith(("-", DYNAMIC)):
            return True
        # Split words after the first may be anything; each word of a glob keeps its start.
        return self.dynamic and self.splits and not self.glob

    def __str__(self) -> str:
        return self.text.replace(DYNAMIC, "…")


@dataclass
class Command:
    """One simple command: its words (argv), and the variables assigned just for it."""

    words: list[Word]
    # The variables it sets, with their values (None: only known when it runs): `NAME=value`
    # prefixes, or what a declaration (`export NAME=value`, a bare `NAME=value`) sets.
    assignments: dict[str, Word | None] = field(default_factory=dict)
    # `export …`, `declare …`, `NAME=value` on its own: sets variables and runs nothing, so it
    # needs no rule unless what it sets is risky (risky_variables.py).
    declaration: bool = False
    # Its input when the line writes it out: a here-document or here-string (`sh <<< 'ls'`).
    stdin: Word | None = None
    # Where it runs when a wrapper says (`git -C dir …`): its relative paths start there.
    directory: Word | None = None
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
    # Why the line may run commands that no rule sees (`GIT_EXTERNAL_DIFF=rm git diff`): it is
    # judged, but a deny rule might match what it runs, so even yolo asks while deny rules exist.
    unseen: list[str] = field(default_factory=list)

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
    data = source.encode("utf-8", errors="surrogatepass")  # a lone surrogate from JSON stays text
    tree = _parser().parse(data)
    if tree.root_node.has_error:
        line.note(f"bash cannot parse it ({_first_error(tree.root_node, data)})")
    walker = _Walker(line, data, depth)
    walker.walk(tree.root_node)
    if walker.arithmetic and walker.code_as_text:
        # x='a[$(rm -rf ~)]'; echo $((x)) runs rm: bash evaluates a variable's text, array
        # subscripts included, wherever it does arithmetic.
        line.note(f"text holding a command ({walker.code_as_text}) may reach arithmetic ({walker.arithmetic}), "
                  "where bash would run it")
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


# Where bash evaluates text as arithmetic, which runs any `$(…)` in an array subscript of it.
_ARITHMETIC_NODES = {"arithmetic_expansion", "subscript", "c_style_for_statement"}
_ARITHMETIC_TESTS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"}
# Commands that evaluate arithmetic, or take a variable name that may carry a subscript.
_ARITHMETIC_COMMANDS = {"let", "read", "unset", "mapfile", "readarray", "getopts", "wait"}
_DECLARATIONS = {"declare", "typeset", "local", "export", "readonly"}


class _Walker:
    def __init__(self, line: CommandLine, data: bytes, depth: int) -> None:
        self.line = line
        self.data = data
        self.depth = depth
        self.commands_by_node: dict[int, Command] = {}
        self.arithmetic = ""  # the first place bash evaluates arithmetic, if any
        self.code_as_text = ""  # the first word whose text holds $( or `, if any

    def saw_arithmetic(self, where: str) -> None:
        self.arithmetic = self.arithmetic or where

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="surrogateescape")

    # --- statements ----------------------------------------------------------------------

    def walk(self, node: Node) -> None:
        kind = node.type
        if kind == "command":
            self.command(node)
        elif kind == "redirected_statement":
            self.walk_children(node)
            body = node.child_by_field_name("body")
            heredoc = next((c for c in node.children if c.type == "heredoc_redirect"), None)
            if body is not None and heredoc is not None and body.id in self.commands_by_node:
                self.commands_by_node[body.id].stdin = self.heredoc(heredoc)
        elif kind == "file_redirect":
            self.redirect(node)
        elif kind in ("comment", "heredoc_start", "heredoc_end", "heredoc_content"):
            return
        elif kind in ("declaration_command", "variable_assignment", "variable_assignments"):
            self.declaration(node)
        elif kind in ("raw_string", "string", "ansi_c_string", "word", "concatenation"):
            self.word(node)  # an operand of [[ … ]], a `for` list, a `case` subject
        else:
            if kind in _ARITHMETIC_NODES or (kind == "compound_statement" and self.text(node).startswith("((")):
                self.saw_arithmetic(self.text(node)[:40])
            if kind == "test_operator" and self.text(node) in _ARITHMETIC_TESTS:
                self.saw_arithmetic(f"[[ {self.text(node)} ]]")
            if kind == "expansion" and any(c in self.text(node) for c in "[:"):
                self.saw_arithmetic(self.text(node)[:40])  # ${a[i]}, ${s:offset}
            self.walk_children(node)

    def walk_children(self, node: Node) -> None:
        for child in node.children:
            self.walk(child)

    def command(self, node: Node) -> None:
        words: list[Word] = []
        assignments: dict[str, Word | None] = {}
        # Added first so that a command comes before the ones substituted into it.
        command = Command(words, assignments)
        self.line.commands.append(command)
        self.commands_by_node[node.id] = command
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "name":
                name = child.named_children[0] if child.named_children else child
                words.extend(self.command_words(name))
            elif field_name == "argument":
                words.extend(self.command_words(child))
            elif child.type == "variable_assignment":
                self.assignment(child, assignments)
            elif child.type == "herestring_redirect" and child.named_children:
                command.stdin = self.word(child.named_children[-1])
            else:
                self.walk(child)
        if words and words[0].dynamic:
            self.line.note(f"the command name {words[0]} is only known when the line runs")
        program = words[0].text.rsplit("/", 1)[-1] if words else ""
        if program in _ARITHMETIC_COMMANDS or program in _DECLARATIONS or (
                program in ("test", "[") and any(w.text in _ARITHMETIC_TESTS for w in words[1:])) or (
                program == "printf" and any(w.text.startswith("-v") for w in words[1:])):
            self.saw_arithmetic(str(Command(words[:3])))

    def assignment(self, node: Node, into: dict[str, Word | None]) -> None:
        variable = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        # Substitutions in the value (and in a subscript) run too.
        into[self.text(variable) if variable is not None else "?"] = self.word(value) if value is not None else Word("")
        if variable is not None and variable.type == "subscript":
            self.walk_children(variable)

    def declaration(self, node: Node) -> None:
        """`export A=1 B`, `declare -x PAGER=x`, `local x`, or bare `A=1 B=2`: a command that
        only sets variables. Which it sets is judged (risky_variables.py)."""
        words: list[Word] = []
        assignments: dict[str, Word | None] = {}
        command = Command(words, assignments, declaration=True)
        self.line.commands.append(command)
        if node.type == "declaration_command":
            self.saw_arithmetic(self.text(node)[:40])  # declare -i, declare 'a[…]=1'
        for child in (node.children if node.type != "variable_assignment" else [node]):
            if child.type == "variable_assignment":
                self.assignment(child, assignments)
                words.append(Word(self.text(child)))
            elif child.type == "variable_name":
                assignments[self.text(child)] = None if node.type == "declaration_command" else Word("")
                words.append(Word(self.text(child)))
            elif child.type in ("comment", "file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.walk(child)
            elif child.is_named:
                word = self.word(child)
                words.append(word)
                if word.dynamic and not word.text.startswith("-"):
                    self.line.note(f"{words[0] if words else 'a declaration'} sets variables only known when "
                                   "the line runs")
                elif not word.text.startswith(("-", "+")):
                    name, _, value = word.text.partition("=")
                    assignments[name] = Word(value)
            else:
                words.append(Word(self.text(child)))  # the keyword: export, declare, local, …
        if words and words[0].text in ("declare", "typeset", "local") and any(
                w.text.startswith("-") and "n" in w.text for w in words[1:]):
            self.line.note("a name reference (declare -n) sets a variable that the line does not name")

    def heredoc(self, node: Node) -> Word:
        """A here-document's text: as written when its delimiter is quoted (`<<'EOF'`), else
        with its expansions only known when the line runs."""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return Word("")
        text = self.text(body)
        if start is not None and self.text(start)[:1] in "'\"\\":
            return Word(text)
        if body.named_children and any(c.type != "heredoc_content" for c in body.named_children):
            return Word(DYNAMIC)
        return Word(_unescape_quoted(text))

    def redirect(self, node: Node) -> None:
        operator = next((self.text(c) for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        if destination is None:
            return
        target = self.word(destination)
        if operator not in _WRITING_OPERATORS:
            return
        if self.text(destination).startswith("~"):  # an unquoted ~ is a home directory
            user, _, rest = target.text[1:].partition("/")
            home = os.path.expanduser(f"~{user}") if DYNAMIC not in user else f"~{user}"
            target = Word(f"{home}/{rest}" if home != f"~{user}" else DYNAMIC)
        if operator in (">&", "<&") and (destination.type == "number" or target.text == "-"):
            return  # 2>&1, >&- : file descriptors, not files
        if target.text in _NOT_FILES or target.text.startswith("/dev/fd/"):
            return
        self.line.writes.append(target)

    # --- words ---------------------------------------------------------------------------

    def word(self, node: Node, quoted: bool = False) -> Word:
        """The value bash gives the word after quote removal; substitutions inside are walked."""
        pieces: list[tuple[str, bool]] = []
        splits = self._pieces(node, quoted, pieces)
        return self._checked(_glob_word(_characters(pieces), splits))

    def command_words(self, node: Node) -> list[Word]:
        """A command's word as the words bash makes of it: a brace expansion gives one word per
        alternative (`r{m,} -rf x` is `rm r -rf x`), so that rules see each exactly."""
        pieces: list[tuple[str, bool]] = []
        splits = self._pieces(node, False, pieces)
        characters = _characters(pieces)
        alternatives = _brace_expansion(characters)
        if alternatives is None:  # too many to spell out: one word only known when the line runs
            return [self._checked(_glob_word(characters, splits))]
        if alternatives == [characters]:
            return [self._checked(_glob_word(characters, splits))]
        return [self._checked(_glob_word(alternative, splits)) for alternative in alternatives if alternative]

    def _checked(self, word: Word) -> Word:
        if not self.code_as_text and ("$(" in word.text or "`" in word.text):
            self.code_as_text = str(word)[:40]
        return word

    def _pieces(self, node: Node, quoted: bool, out: list[tuple[str, bool]]) -> bool:
        """Append the word's text to `out` as (text, unquoted glob or brace character); returns
        whether an unquoted expansion in it may be split into words."""
        kind = node.type
        if kind in ("word", "number"):
            out.extend(_unquoted_pieces(self.text(node)))
            return False
        if kind == "raw_string":
            out.append((self.text(node)[1:-1], False))
            return False
        if kind == "ansi_c_string":
            out.append((_ansi_c(self.text(node)[2:-1]), False))
            return False
        if kind in ("string", "translated_string"):
            out.append((self.string(node), False))
            return False
        if kind == "concatenation":
            return any([self._pieces(child, quoted, out) for child in node.named_children])
        out.append((DYNAMIC, False))
        if kind in _ARITHMETIC_NODES or (kind == "expansion" and any(c in self.text(node) for c in "[:")):
            self.saw_arithmetic(self.text(node)[:40])
        if kind in ("command_substitution", "process_substitution"):
            self.walk(node)
            return not quoted and kind == "command_substitution"
        # ${x:-$(cmd)} runs cmd; anything else in a word's place (an extglob, a test
        # operator) is judged as unknown too.
        self.walk_children(node)
        return not quoted

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
            pieces.append(self.word(child, quoted=True).text)  # no globs inside quotes
            position = child.end_byte
        pieces.append(_unescape_quoted(self.data[position:end].decode("utf-8", "surrogateescape")))
        return "".join(pieces)


# Unquoted characters that make bash expand a word into file names or several words.
_GLOB_OR_BRACE = set("*?[]{},")


def _unquoted_pieces(text: str) -> list[tuple[str, bool]]:
    """Unquoted text after backslash removal, each glob or brace character marked (`\\*` is a star)."""
    out: list[tuple[str, bool]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":  # a backslash-newline joins lines
                out.append((text[index + 1], False))
            index += 2
            continue
        out.append((char, char in _GLOB_OR_BRACE))
        index += 1
    return out


_Characters = list[tuple[str, bool]]  # each character, and whether it is an unquoted glob or brace one
# Beyond this many words a brace expansion is not spelled out (`{a,b}{c,d}…` doubles each time).
_MOST_BRACE_WORDS = 64


def _characters(pieces: list[tuple[str, bool]]) -> _Characters:
    return [(char, special) for text, special in pieces for char in (text if not special else text[:1])]


def _brace_expansion(chars: _Characters) -> list[_Characters] | None:
    """The words bash's brace expansion makes of a word (`a{b,c{d,e}}f` is abf acdf acef), left
    to right; None when there would be too many."""
    for start, (char, special) in enumerate(chars):
        if not (special and char == "{"):
            continue
        depth, commas = 0, list[int]()
        for end in range(start + 1, len(chars)):
            inner, inner_special = chars[end]
            if not inner_special:
                continue
            if inner == "{":
                depth += 1
            elif inner == "}" and depth:
                depth -= 1
            elif inner == "}":
                if not commas:
                    break  # `{}` or `{a}`: literal; a later brace may still expand
                bounds = [start, *commas, end]
                words: list[_Characters] = []
                for left, right in itertools.pairwise(bounds):
                    expanded = _brace_expansion(chars[:start] + chars[left + 1 : right] + chars[end + 1 :])
                    if expanded is None or len(words) + len(expanded) > _MOST_BRACE_WORDS:
                        return None
                    words += expanded
                return words
            elif inner == "," and not depth:
                commas.append(end)
    return [chars]


def _glob_word(chars: _Characters, splits: bool) -> Word:
    """The word from its characters. An unquoted glob (`*`, `?`, `[…]`) or a brace expansion not
    spelled out (`{1..3}`, or too many words) is what bash turns into file names or several
    words: each becomes a dynamic part. Such a word may become several words, and if it starts
    with the expansion one of them may be an option (`rm *` with a file named `-rf`), which
    rules that deny options then catch; `src/*.txt` cannot be one (see Word.may_be_option)."""
    specials = [i for i, (_, special) in enumerate(chars) if special]
    replaced: dict[int, int] = {}  # start of a dynamic run -> its end (exclusive)
    opening = next((i for i in specials if chars[i][0] == "{"), None)
    closing = next((i for i in reversed(specials) if chars[i][0] == "}"), None)
    if opening is not None and closing is not None and opening < closing:
        inside = "".join(char for char, _ in chars[opening + 1 : closing])
        if any(chars[i][0] == "," for i in specials if opening < i < closing) or ".." in inside:
            replaced[opening] = closing + 1
    for i in specials:
        char = chars[i][0]
        if any(start <= i < end for start, end in replaced.items()):
            continue
        if char in "*?":
            replaced[i] = i + 1
        elif char == "[":
            end = next((j for j in specials if j > i and chars[j][0] == "]"), None)
            if end is not None:
                replaced[i] = end + 1
    text: list[str] = []
    index = 0
    while index < len(chars):
        if index in replaced:
            text.append(DYNAMIC)
            index = replaced[index]
            continue
        text.append(chars[index][0])
        index += 1
    value = "".join(text)
    if not replaced:
        return Word(value, splits=splits)
    expands_only = DYNAMIC not in "".join(char for char, _ in chars)
    return Word(value, splits=True, glob=expands_only and not splits)


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
            out.append(_character(int(digits, 16)) if digits else "\\" + code)
            index += 2 + len(digits)
        elif code in "01234567":
            digits = _take(body, index + 1, 3, "01234567")
            out.append(_character(int(digits, 8)))
            index += 1 + len(digits)
        elif code == "c" and index + 2 < len(body):
            out.append(chr(ord(body[index + 2]) & 0x1F))
            index += 3
        else:
            out.append("\\" + code)
            index += 2
    return "".join(out)


def _character(code: int) -> str:
    """The character of a code point; beyond Unicode (`\\U7fffffff`) or a lone surrogate, which
    bash cannot print either, the replacement character."""
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return chr(code)


def _take(text: str, start: int, limit: int, allowed: str) -> str:
    end = start
    while end < len(text) and end - start < limit and text[end] in allowed:
        end += 1
    return text[start:end]
