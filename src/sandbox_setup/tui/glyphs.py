"""The wizard in ASCII where the locale is not UTF-8 (``LANG=C``, ``LC_ALL=C``, a
Latin-1 locale, or none set).

The terminal of such a locale shows UTF-8 as garbage: the borders, the step
indicator's ✓ ● ○, the radio buttons, the arrows of the keys and the scroll bars.
:class:`AsciiFilter` is a Textual line filter over everything the wizard draws: each
character keeps its cell (one ASCII character for a one-cell glyph: ``-`` ``|`` ``+``
for box drawing, ``+`` for ✓, ``*`` for ●, ``o`` for ○, ``^`` ``v`` for the arrows;
``?`` for a character with no ASCII form), so the layout stays as it is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from rich.cells import cell_len
from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

__all__ = ["AsciiFilter", "ascii_cells", "locale_is_utf8"]

# One ASCII character per one-cell glyph the wizard (and Textual) draws.
_FORMS = {
    "✓": "+",
    "✔": "+",
    "✗": "x",
    "✘": "x",
    "●": "*",
    "○": "o",
    "◉": "*",
    "•": "*",
    "·": "-",
    "…": ".",
    "—": "-",
    "\u2013": "-",
    "↑": "^",
    "↓": "v",
    "←": "<",
    "→": ">",
    "▲": "^",
    "▼": "v",
    "◀": "<",
    "▶": ">",
    "▔": "-",
    "▁": "_",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u00a0": " ",
    "\u00d7": "x",
    "≤": "<",
    "≥": ">",
}


def _box(char: str) -> str | None:
    """Box drawing and block elements: a line, a corner or a bar."""
    code = ord(char)
    if 0x2500 <= code <= 0x257F:
        words = unicodedata.name(char, "").split()
        if "AND" in words or "ARC" in words or "CROSS" in words:
            return "+"  # a corner, a tee, a crossing
        if {"HORIZONTAL", "LEFT", "RIGHT"} & set(words):
            return "-"
        if {"VERTICAL", "UP", "DOWN"} & set(words):
            return "|"
        return "+"
    if 0x2580 <= code <= 0x259F:
        name = unicodedata.name(char, "")
        if "LEFT" in name or "RIGHT" in name:
            return "|"
        if name == "FULL BLOCK" or "QUADRANT" in name:
            return "#"
        return " "  # the scroll bar's partial blocks: its colour still shows the thumb
    return None


def ascii_cells(text: str) -> str:
    """``text`` with each character that is not ASCII replaced, cell for cell."""
    if text.isascii():
        return text
    out = []
    for char in text:
        if char.isascii():
            out.append(char)
            continue
        form = _FORMS.get(char) or _box(char)
        out.append(form if form is not None else "?" * cell_len(char))
    return "".join(out)


def locale_is_utf8(environ: Mapping[str, str]) -> bool:
    """Whether the locale the environment sets (``LC_ALL``, else ``LC_CTYPE``, else
    ``LANG``) is UTF-8. None set, C and POSIX are not."""
    value = next((environ[n] for n in ("LC_ALL", "LC_CTYPE", "LANG") if environ.get(n)), "")
    codeset = value.partition(".")[2].partition("@")[0]
    return codeset.lower().replace("-", "") == "utf8"


class AsciiFilter(LineFilter):
    """Everything drawn, in ASCII (see the module doc)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [
            seg if seg.control or seg.text.isascii() else Segment(ascii_cells(seg.text), seg.style)
            for seg in segments
        ]
