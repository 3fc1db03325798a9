"""Read what the target system says about an account: its groups, the sudoers
files, its shadow entry. Under ``--root DIR`` everything comes from DIR/etc.
The rules that judge these facts are in :mod:`sandbox_setup.policy.accounts` and
:mod:`sandbox_setup.policy.sudoers`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base.accounts import Account
from sandbox_setup.base.login_defs import UidRange, read_uid_range
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular_or_none


@dataclass(frozen=True)
class AccountRecords:
    """What the target's files say about one account, read once: the shadow file's text
    (None: unreadable), its groups, the sudoers files (path -> text) and the system's
    uid range. :func:`sandbox_setup.policy.accounts.account_facts_of` judges nothing
    yet: it turns these into the facts every account rule reads."""

    shadow: str | None
    groups: dict[str, int]
    sudoers: dict[str, str]
    uid_range: UidRange


def read_account_records(layout: Layout, account: Account) -> AccountRecords:
    """The records of ``account`` in the target (under ``--root DIR``, DIR/etc)."""
    return AccountRecords(
        shadow=read_text_or_none(layout.real("/etc/shadow")),
        groups=agent_groups(layout, account),
        sudoers=sudoers_files(layout),
        uid_range=read_uid_range(layout),
    )


def agent_groups(layout: Layout, agent: Account) -> dict[str, int]:
    """The agent's groups (name -> gid): its primary group and every membership."""
    groups: dict[str, int] = {}
    text = read_regular_or_none(layout.real("/etc/group")) or ""
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) < 4 or not fields[2].isdigit():
            continue
        gid = int(fields[2])
        if gid == agent.gid or agent.name in fields[3].split(","):
            groups[fields[0]] = gid
    if agent.gid not in groups.values():
        groups[str(agent.gid)] = agent.gid
    return groups


def read_text_or_none(real: Path) -> str | None:
    """The file's text; None when it is missing, unreadable or not a regular file
    (never blocks on a FIFO nor reads a device: the reader is bounded)."""
    return read_regular_or_none(real)


def sudoers_files(layout: Layout) -> dict[str, str]:
    """/etc/sudoers and the files sudo would include from /etc/sudoers.d."""
    files: dict[str, str] = {}
    main = layout.real("/etc/sudoers")
    text = read_text_or_none(main)
    if text is not None:
        files[str(main)] = text
    included = layout.real("/etc/sudoers.d")
    try:
        names = sorted(os.listdir(included))
    except OSError:
        names = []
    for name in names:
        # sudo's @includedir skips names ending in '~' or containing a '.'.
        if name.endswith("~") or "." in name:
            continue
        text = read_text_or_none(included / name)
        if text is not None:
            files[str(included / name)] = text
    return files
