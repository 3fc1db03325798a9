"""Strings from the workspace, the agent or the network, made safe to print (docs/design.md
invariant 15): :func:`printable` is the one escaping function.

A file name, a git key, a hostname the agent asked the egress proxy for: any of them
can hold terminal controls. Printed raw to root's terminal, ``ESC ] 0 ; ... BEL``
sets the window title, ``ESC ] 52`` writes the clipboard, ``ESC [ 2J`` clears the
screen, ``CR`` or a colour sequence paints over the warning before it; a bidi
override (``U+202E``) shows a name backwards. :func:`printable` keeps ordinary
printable text (any script, spaces, symbols) and shows everything else as a
visible escape, the ones bash's ``$'...'`` reads:

- ``\\`` for a backslash, so the result is unambiguous (two different strings
  never print the same);
- ``\\n`` ``\\t`` ``\\r``; ``\\xNN`` for the other C0 controls and DEL;
- ``\\xNN`` for a byte that was not UTF-8 (``os.fsdecode`` keeps it as a lone
  surrogate, U+DC80-U+DCFF);
- ``\\u00NN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` for every other character that is not
  printable (``str.isprintable``): C1 controls (CSI is U+009B), format characters
  (bidi overrides and isolates, zero-width characters), line and paragraph
  separators, non-breaking spaces, unassigned code points.

JSON output never comes here: JSON escapes controls itself and keeps the exact name.
:func:`printable_lines` is for a message of several lines of our own that quotes
such a string: its line breaks stay, nothing else does.
:func:`shell_word` is the same idea for a command the operator pastes: a word bash
reads back as the exact name.
"""

from __future__ import annotations

import shlex

_NAMED = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    code = ord(char)
    named = _NAMED.get(char)
    if named is not None:
        return named
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:
        # os.fsdecode's surrogateescape: the byte of a name that was not UTF-8.
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _plain(char: str) -> bool:
    return char != "\\" and char.isprintable()


def printable(text: str) -> str:
    """``text`` with every character that is not ordinary printable text (and every
    backslash) shown as a visible escape; see the module docstring."""
    if "\\" not in text and text.isprintable():
        return text
    return "".join(char if _plain(char) else _escape(char) for char in text)


def printable_diff_line(line: str) -> str:
    """:func:`printable` for one line of a file's diff: tabs stay tabs (a file's own
    indentation, as in a gitconfig; a tab moves the cursor and nothing else)."""
    return "\t".join(printable(part) for part in line.split("\t"))


# A message line longer than this is cut (a 20 MB value in an answers file would
# otherwise be echoed in full): the start and how long it was stay.
LINE_LIMIT = 4000
_LINE_KEPT = 1000


def printable_lines(text: str) -> str:
    """:func:`printable` line by line: a message of several lines (ours) keeps its
    ``\n``; anything else it quotes is escaped. A line longer than
    :data:`LINE_LIMIT` is cut to its start and says how long it was."""
    return "\n".join(_bounded(printable(line)) for line in text.split("\n"))


def _bounded(line: str) -> str:
    if len(line) <= LINE_LIMIT:
        return line
    return f"{line[:_LINE_KEPT]}... (cut: the line has {len(line):,} characters)"


def shell_word(text: str) -> str:
    """``text`` as one bash word that is printable too: ``shlex.quote`` when it is
    printable already, else ``$'...'`` with each other character as its bytes
    (``\\xNN``, UTF-8; a surrogate-escaped byte as itself), whatever the locale."""
    if printable(text) == text:
        return shlex.quote(text)
    out = []
    for char in text:
        if char == "'":
            out.append("\\'")
        elif _plain(char):
            out.append(char)
        else:
            try:
                raw = char.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate no byte stands for
                raw = char.encode("utf-8", "surrogatepass")
            out.append("".join(f"\\x{byte:02x}" for byte in raw))
    return "$'" + "".join(out) + "'"


def pasted_word(text: str) -> str:
    """``text`` as one bash word of a command that is printed through :func:`printable`
    or :func:`printable_lines` with the message around it (a remedy): ``shlex.quote``
    when ``text`` is printable already; else ``$'...'`` holding the characters as they
    are, which printing turns into the escapes ``$'...'`` reads (``\\`` ``\\r``
    ``\\xNN`` ``\\uNNNN``; a line break stays one, which bash reads inside the quotes
    too), so the printed command pastes as the exact name. A ``'`` closes the word,
    follows as ``"'"`` and reopens it. Never print it without :func:`printable`:
    :func:`shell_word` is the form that is printable already."""
    if printable(text) == text:
        return shlex.quote(text)
    return "$'" + text.replace("'", "'\"'\"$'") + "'"
