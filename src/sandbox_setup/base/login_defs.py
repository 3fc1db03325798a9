"""The target system's ``/etc/login.defs``: where regular users' ids start and end.

useradd gives a regular account a uid from ``UID_MIN`` to ``UID_MAX`` and a system
account one below ``UID_MIN``; under ``--root DIR`` the tree's own file is read.
Without a file (or a key) Debian's defaults apply: 1000 and 60000.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular_or_none

DEFAULT_UID_MIN = 1000
DEFAULT_UID_MAX = 60000


@dataclass(frozen=True, slots=True)
class UidRange:
    """The uids useradd gives regular (non-system) accounts, both ends included."""

    uid_min: int = DEFAULT_UID_MIN
    uid_max: int = DEFAULT_UID_MAX
    source: str = "the Debian defaults (no login.defs)"


def parse_login_defs(text: str) -> dict[str, str]:
    """``KEY value`` lines; comments and blank lines skipped, the last value wins."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) >= 2:
            values[fields[0]] = fields[1]
    return values


def uid_range_from_text(text: str | None, source: str) -> UidRange:
    """The range in ``text`` (None: no file): a key that is missing or not a number
    keeps its default."""
    if text is None:
        return UidRange()
    values = parse_login_defs(text)

    def number(key: str, default: int) -> int:
        raw = values.get(key, "")
        return int(raw) if raw.isdigit() else default

    return UidRange(number("UID_MIN", DEFAULT_UID_MIN), number("UID_MAX", DEFAULT_UID_MAX), source)


def read_uid_range(layout: Layout) -> UidRange:
    """The target's range, from ``/etc/login.defs`` under the layout's root."""
    real = layout.real("/etc/login.defs")
    text = read_regular_or_none(real)  # never blocks on a FIFO, never reads a device
    if text is None:
        return UidRange()
    return uid_range_from_text(text, str(real))
