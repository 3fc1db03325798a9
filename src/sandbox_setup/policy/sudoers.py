"""Which sudoers rules apply to an account: a small, pure reader of sudo's grammar.

Enough of it to find every rule whose user list names the agent (by name,
``#uid``, ``%group``, ``%#gid``, ``ALL`` or a ``User_Alias``), so the plan refuses
such an account and the audit reports a rule added later (docs/design.md invariant 5).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SudoersHit:
    """One sudoers rule that applies to the agent."""

    path: str
    line: int
    text: str
    nopasswd: bool


_ALIAS_KINDS = ("User_Alias", "Runas_Alias", "Host_Alias", "Cmnd_Alias", "Cmd_Alias")
_USER_LIST = re.compile(r"^\s*((?:!?[^\s,=]+\s*,\s*)*!?[^\s,=]+)\s+(\S.*)$")


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """Lines with backslash continuations joined and comments removed, numbered."""
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = pending + raw
        pending = ""
        # '#' starts a comment, except '#123' (a uid) and the #include directives.
        stripped = line.strip()
        if not stripped or stripped.startswith(("#include", "@include")):
            continue
        line = re.sub(r"(^|\s)#(?!\d).*$", "", line).strip()
        if line:
            yield start, line


def find_sudoers_rules(
    files: Mapping[str, str], agent: str, uid: int, groups: Mapping[str, int]
) -> list[SudoersHit]:
    """Rules in the sudoers ``files`` (path -> text) whose user list matches the agent.

    The agent matches by name, ``#uid``, ``%group``/``%#gid`` of any of its
    ``groups`` (name -> gid), ``ALL``, or a ``User_Alias`` that does.
    """
    logical = [(path, n, line) for path, text in files.items() for n, line in _logical_lines(text)]
    aliases: dict[str, list[str]] = {}
    for _path, _n, line in logical:
        if line.startswith("User_Alias"):
            for definition in line[len("User_Alias") :].split(":"):
                name, _, members = definition.partition("=")
                aliases[name.strip()] = [m.strip() for m in members.split(",") if m.strip()]

    def matches(item: str, depth: int = 0) -> bool:
        if item.startswith("!"):
            return False  # a negation excludes; it never grants
        if item in ("ALL", agent, f"#{uid}"):
            return True
        if item.startswith("%#"):
            return item[2:].isdigit() and int(item[2:]) in groups.values()
        if item.startswith("%"):
            return item[1:] in groups
        if item in aliases and depth < 8:
            return any(matches(member, depth + 1) for member in aliases[item])
        return False

    hits = []
    for path, number, line in logical:
        first = line.split(None, 1)[0]
        if first.startswith("Defaults") or first in _ALIAS_KINDS:
            continue
        parsed = _USER_LIST.match(line)
        if parsed is None:
            continue
        users = [u.strip() for u in parsed.group(1).split(",")]
        if any(matches(u) for u in users):
            hits.append(SudoersHit(path, number, line, "NOPASSWD" in parsed.group(2)))
    return hits
