"""What the tests look for in a screen's text: sandbox-setup's own flags left in it.

A check for tests only (the product never reads its messages back: the wizard's words
come from typed parts, :mod:`sandbox_setup.commands.wording`)."""

from __future__ import annotations

import re

from sandbox_setup.commands.wording import FIELD_WORDS

_FLAG = re.compile(r"--[a-z][a-z-]*[a-z](?: [A-Z][A-Z_]*\b)?")
# A command to paste: one of sandbox-setup's actions, or sandbox-launch.
_COMMAND = re.compile(
    r"sandbox-setup +--(?:headless|check|audit|undo|version|help)\b[^\n]*"
    r"|sandbox-launch +--[^\n]*"
)


def names_a_flag(text: str) -> list[str]:
    """sandbox-setup's flags ``text`` still names outside commands to paste."""
    prose = _COMMAND.sub("", text)
    return [m.split(" ")[0] for m in _FLAG.findall(prose) if m.split(" ")[0] in FIELD_WORDS]
