"""Text output for a terminal or a pipe: one layout, coloured by Rich on a terminal.

``--check`` and ``--audit`` build their report as :class:`Line` values (spans of
text with a style name) laid out for a width (:func:`output_width`: the terminal's,
80 on a pipe); :func:`emit` prints them. On a terminal without ``NO_COLOR`` the
lines go through Rich, in colour; on a pipe, a dumb terminal or with ``NO_COLOR``
they are written as plain text, and Rich is never imported: ``--check --json``
and scripts pay nothing for the colours. JSON output never comes here.

Every span goes through :func:`~sandbox_setup.base.printable.printable` on its
way in (:meth:`Line.add`, :func:`wrapped`): a report quotes file names, git keys and
hostnames the agent chose, and none of them reaches the terminal raw (invariant 15).
Only a ``\n`` in :func:`wrapped`'s text breaks a line.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

from sandbox_setup.base.printable import printable

# Style names -> Rich styles; a span's meaning is always in its words too.
STYLES = {
    "pass": "green",
    "warn": "yellow",
    "fail": "bold red",
    "error": "bold red",
    "skip": "dim",
    "critical": "bold red",
    "high": "red",
    "medium": "yellow",
    "low": "cyan",
    "info": "dim",
    "accepted": "bold magenta",
    "id": "bold",
    "head": "bold",
    "dim": "dim",
    "remedy": "cyan",
}
PIPE_WIDTH = 80
MAX_WIDTH = 120


@dataclass(slots=True)
class Line:
    """One output line: (text, style name) spans, printable (:meth:`add` escapes)."""

    spans: list[tuple[str, str]] = field(default_factory=list)

    def add(self, text: str, style: str = "") -> Line:
        self.spans.append((printable(text), style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)


def one_line(text: str) -> str:
    """``text`` on one line: runs of spaces and newlines become one space. Other
    whitespace is left for :func:`printable` to show (a ``\r`` or a tab in a
    file name is seen, not turned into a space)."""
    return re.sub(r"[ \n]+", " ", text).strip(" ")


def wants_color(stream: TextIO) -> bool:
    """Colour only for a terminal, never with NO_COLOR (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def output_width(stream: TextIO) -> int:
    """The terminal's width (at most 120) on a terminal; 80 on a pipe."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return PIPE_WIDTH
    columns = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
    return max(40, min(columns, MAX_WIDTH))


def wrapped(
    head: list[tuple[str, str]],
    text: str,
    width: int,
    indent: int,
    style: str = "",
    *,
    breaks: bool = True,
    wrap: bool = True,
) -> list[Line]:
    """``head`` spans, then ``text`` wrapped to ``width``; continuation lines (and
    each of ``text``'s own lines after the first) start at column ``indent``.

    Only ``\n`` ends a line of ``text``, and only with ``breaks`` (a line that
    quotes a hostname passes ``breaks=False``: its ``\n`` is shown, never a new line
    of the report); every other control in it (a ``\r`` in a file name) is escaped,
    before the wrap measures it.

    ``wrap=False`` keeps each line of ``text`` whole, however long: a remedy is a
    command to paste, and a line the product broke pastes as two commands (the
    terminal may wrap it on screen; a copy of it is still one line)."""
    head = [(printable(t), s) for t, s in head]
    used = sum(len(t) for t, _ in head)
    lines: list[Line] = []
    paragraphs = text.rstrip("\n").split("\n") if breaks else [text]
    for paragraph in paragraphs:
        room = max(20, width - (used if not lines else indent))
        # A command to paste is never split inside a word.
        pieces = (
            textwrap.wrap(
                printable(paragraph), room, break_long_words=False, break_on_hyphens=False
            )
            if wrap
            else [printable(paragraph).strip(" ")]
        )
        for piece in pieces or [""]:
            line = Line(list(head)) if not lines else Line().add(" " * indent)
            line.spans.append((piece, style))  # escaped above, as a whole paragraph
            lines.append(line)
    return lines


def emit(lines: Iterable[Line], stream: TextIO) -> None:
    """Print ``lines``: through Rich in colour on a terminal, else as plain text."""
    if not wants_color(stream):
        stream.write("".join(line.plain.rstrip() + "\n" for line in lines))
        return
    # why: Rich (tens of ms to import) only for a terminal: --json and pipes never
    # load it (tests/unit/test_cli_render.py)
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False)
    for line in lines:
        text = Text()
        for part, style in line.spans:
            text.append(part, style=STYLES.get(style, ""))
        text.rstrip()
        console.print(text)
