"""Git config files, read the way git reads them (the dangerous keys are judged in
:mod:`sandbox_setup.policy.git_danger`).

The parser follows git's own (``config.c``: ``git_parse_source``, ``get_base_var``,
``get_value``, ``parse_value``) rather than an INI reader, because the agent writes
these files and a difference between what git reads and what this reads is a way
past the check:

- section and key names are case-insensitive (lowercased here); a quoted
  subsection ``[section "Sub"]`` keeps its case, the legacy ``[section.sub]``
  form is lowercased whole;
- a key may follow its section header on the same line (``[core] pager = x``);
- ``#`` and ``;`` start a comment outside double quotes; a backslash at the end
  of a line continues the value; ``\\"`` ``\\\\`` ``\\n`` ``\\t`` ``\\b`` are the only
  escapes; runs of unquoted whitespace inside a value become spaces;
- a key with no ``=`` is boolean true.

A file git would refuse (a syntax error) is reported with its line: git refuses
to run there at all, but what was parsed before the error is still judged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

_SPACE = " \t\n\r"  # git's isspace()


def _iskeychar(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One ``key = value`` of a config file, with where it is in the text."""

    section: str  # lowercased
    subsection: str | None  # case kept (quoted form); lowercased (legacy form)
    name: str  # lowercased
    value: str | None  # None: the key has no "=" (boolean true)
    line: int  # 1-based line the key starts on
    start: int  # offset of the key's first character
    end: int  # offset just past the entry (before its newline)
    inline: bool  # it follows a section header on the same line

    @property
    def key(self) -> str:
        """The key as ``git config --list`` prints it."""
        if self.subsection is None:
            return f"{self.section}.{self.name}" if self.section else self.name
        return f"{self.section}.{self.subsection}.{self.name}"


@dataclass(frozen=True, slots=True)
class ParsedConfig:
    entries: tuple[ConfigEntry, ...]
    error: str | None = None  # "line N: ..." where git would stop: it refuses the file


class _Reader:
    """git's get_next_char(): CRLF reads as LF, the end of the text as a final LF."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 1 if text.startswith("\ufeff") else 0  # git skips a UTF-8 BOM
        self.line = 1
        self.eof = False

    def next(self) -> str:
        text = self.text
        if self.pos >= len(text):
            self.eof = True
            return "\n"
        c = text[self.pos]
        self.pos += 1
        if c == "\r" and self.pos < len(text) and text[self.pos] == "\n":
            c = "\n"
            self.pos += 1
        if c == "\n":
            self.line += 1
        return c


class _ConfigSyntaxError(Exception):
    pass


def _parse_header(r: _Reader) -> tuple[str, str | None]:
    name = ""
    while True:
        c = r.next()
        if r.eof:
            raise _ConfigSyntaxError("unterminated section header")
        if c == "]":
            if not name:
                raise _ConfigSyntaxError("empty section header")
            section, dot, sub = name.partition(".")
            return section, (sub if dot else None)  # legacy [section.sub]: lowercased
        if c in _SPACE:
            break
        if not _iskeychar(c) and c != ".":
            raise _ConfigSyntaxError(f"bad character {c!r} in a section name")
        name += c.lower()
    while c in _SPACE:
        if c == "\n":
            raise _ConfigSyntaxError("unterminated section header")
        c = r.next()
    if c != '"':
        raise _ConfigSyntaxError("a subsection name must be quoted")
    sub = ""
    while True:
        c = r.next()
        if c == "\n":
            raise _ConfigSyntaxError("unterminated subsection name")
        if c == '"':
            break
        if c == "\\":
            c = r.next()
            if c == "\n":
                raise _ConfigSyntaxError("unterminated subsection name")
        sub += c
    if r.next() != "]":
        raise _ConfigSyntaxError("missing ']' after the subsection name")
    # [a.b "c"] names the section a and the subsection b.c, as git's flat key does.
    section, dot, rest = name.partition(".")
    return section, (f"{rest}.{sub}" if dot else sub)


_ESCAPES = {"\n": None, "t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}


def _parse_value(r: _Reader) -> str:
    out: list[str] = []
    quote = comment = False
    space = 0
    while True:
        c = r.next()
        if c == "\n":
            if quote:
                raise _ConfigSyntaxError("unterminated quoted value")
            return "".join(out)
        if comment:
            continue
        if c in _SPACE and not quote:
            if out:
                space += 1
            continue
        if not quote and c in "#;":
            comment = True
            continue
        out.append(" " * space)
        space = 0
        if c == "\\":
            c = r.next()
            if c not in _ESCAPES:
                raise _ConfigSyntaxError(f"bad escape \\{c}")
            escaped = _ESCAPES[c]
            if escaped is not None:  # None: a line continuation
                out.append(escaped)
            continue
        if c == '"':
            quote = not quote
            continue
        out.append(c)


def parse_git_config(text: str) -> ParsedConfig:
    """The entries of a git config file, in order (see the module docstring)."""
    r = _Reader(text)
    entries: list[ConfigEntry] = []
    section, subsection = "", None
    comment = False
    header_line = 0
    while True:
        c = r.next()
        if c == "\n":
            if r.eof:
                return ParsedConfig(tuple(entries))
            comment = False
            continue
        if comment or c in _SPACE:
            continue
        if c in "#;":
            comment = True
            continue
        line = r.line
        try:
            if c == "[":
                section, subsection = _parse_header(r)
                header_line = r.line
                continue
            if not (c.isascii() and c.isalpha()):
                raise _ConfigSyntaxError("bad config line")
            start = r.pos - 1
            name = c.lower()
            while True:
                c = r.next()
                if r.eof or not _iskeychar(c):
                    break
                name += c.lower()
            while c in " \t":
                c = r.next()
            value: str | None = None
            if c != "\n":
                if c != "=":
                    raise _ConfigSyntaxError(f"bad character {c!r} after key {name!r}")
                value = _parse_value(r)
        except _ConfigSyntaxError as exc:
            return ParsedConfig(tuple(entries), error=f"line {line}: {exc}")
        end = r.pos if r.eof else r.pos - 1
        if end > 0 and text[end - 1 : end + 1] == "\r\n":
            end -= 1
        entries.append(
            ConfigEntry(
                section=section,
                subsection=subsection,
                name=name,
                value=value,
                line=line,
                start=start,
                end=end,
                inline=header_line == line,
            )
        )


_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def git_int(value: str) -> int | None:
    """git's ``git_parse_int()``: C ``strtoimax(value, &end, 0)`` (leading
    whitespace and a sign skipped; ``0x`` hex, a leading ``0`` octal), then an
    optional unit ``k``/``m``/``g`` and nothing else. None when git refuses it."""
    i = 0
    while i < len(value) and value[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < len(value) and value[i] in "+-":
        sign = -1 if value[i] == "-" else 1
        i += 1
    rest = value[i:]
    if rest[:2].lower() == "0x" and len(rest) > 2 and rest[2] in "0123456789abcdefABCDEF":
        base, digits, i = 16, "0123456789abcdefABCDEF", i + 2
    elif rest[:1] == "0":
        base, digits = 8, "01234567"
    else:
        base, digits = 10, "0123456789"
    j = i
    while j < len(value) and value[j] in digits:
        j += 1
    if j == i:
        return None
    factor = _UNIT.get(value[j:].lower())
    if factor is None:
        return None
    return sign * int(value[i:j], base) * factor


def git_bool(value: str | None) -> bool | None:
    """git's ``git_parse_maybe_bool()``: None (no "=") is true, "" false, and
    ``true yes on`` / ``false no off`` compared whole and case-insensitively (no
    spaces trimmed: ``" on"`` is not a boolean, git runs it as a command where a
    command may go), else an integer as :func:`git_int` reads it; None when the
    value is not a boolean."""
    if value is None:
        return True
    low = value.lower()
    if low in ("", "false", "no", "off"):
        return False
    if low in ("true", "yes", "on"):
        return True
    number = git_int(value)
    return None if number is None else number != 0


def remove_entries(text: str, starts: Iterable[int]) -> str:
    """``text`` without the entries that start at the offsets ``starts`` (as in
    :attr:`ConfigHit.locator`): each removed with its continuation lines and its
    comment; every other line is kept byte for byte. An entry that shares its line
    with a section header leaves the header."""
    parsed = parse_git_config(text)
    drop = set(starts)
    spans: list[tuple[int, int]] = []
    for entry in parsed.entries:
        if entry.start not in drop:
            continue
        if entry.inline:
            spans.append((entry.start, entry.end))
            continue
        line_start = text.rfind("\n", 0, entry.start) + 1
        end = entry.end
        if text.startswith("\r\n", end):
            end += 2
        elif text.startswith("\n", end):
            end += 1
        spans.append((line_start, end))
    out = []
    pos = 0
    for start, end in sorted(spans):
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def included_files(text: str) -> list[str]:
    """The ``include.path`` / ``includeIf.*.path`` values of a config text."""
    return [
        e.value
        for e in parse_git_config(text).entries
        if e.name == "path"
        and e.section in ("include", "includeif")
        and e.value
        and e.value.strip()
    ]


def hooks_path(text: str) -> str | None:
    """The last ``core.hooksPath`` of a config text (git's last-one-wins), if any."""
    found = None
    for entry in parse_git_config(text).entries:
        if entry.section == "core" and entry.subsection is None and entry.name == "hookspath":
            found = entry.value if entry.value and entry.value.strip() else None
    return found
