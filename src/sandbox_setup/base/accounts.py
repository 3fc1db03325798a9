"""Look up accounts in the target system's passwd/group files.

With the live root (``/``) the name service is asked (``pwd``/``grp``); under
another root (``--root DIR``) ``DIR/etc/passwd`` and ``DIR/etc/group`` are read
(non-blocking; anything but a regular file there is an InputError naming it),
so homes and ids come from the tree being configured, never from the host.
"""

from __future__ import annotations

import grp
import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base.regular_files import read_regular_text

# The agent account sandbox-setup creates unless told otherwise.
DEFAULT_AGENT_USER = "claude-agent"


@dataclass(frozen=True, slots=True)
class Account:
    """One account as the passwd database lists it."""

    name: str
    uid: int
    gid: int
    home: Path
    shell: str


def _parse_passwd_line(line: str) -> Account | None:
    parts = line.rstrip("\n").split(":")
    if len(parts) < 7 or not parts[2].isdigit() or not parts[3].isdigit():
        return None
    return Account(parts[0], int(parts[2]), int(parts[3]), Path(parts[5]), parts[6])


def _accounts_in(root: Path) -> list[Account]:
    try:
        text = read_regular_text(root / "etc/passwd", errors="replace")
    except FileNotFoundError:
        return []
    return [a for a in map(_parse_passwd_line, text.splitlines()) if a is not None]


def is_live_root(root: Path) -> bool:
    return Path(root).resolve() == Path("/")


def lookup_user(key: str | int, root: Path = Path("/")) -> Account | None:
    """The account named (str) or numbered (int) ``key`` in the target system."""
    if is_live_root(root):
        try:
            entry = pwd.getpwuid(key) if isinstance(key, int) else pwd.getpwnam(key)
        except KeyError:
            return None
        return Account(
            entry.pw_name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), entry.pw_shell
        )
    for account in _accounts_in(root):
        if (isinstance(key, int) and account.uid == key) or account.name == key:
            return account
    return None


def lookup_group_gid(name: str, root: Path = Path("/")) -> int | None:
    if is_live_root(root):
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            return None
    try:
        text = read_regular_text(root / "etc/group", errors="replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[0] == name and parts[2].isdigit():
            return int(parts[2])
    return None


def operator_account(root: Path = Path("/")) -> Account:
    """The account running this tool (effective uid), as the target system knows it.

    Under another root where the uid is unknown, a synthetic entry with the
    conventional home (``/root`` for uid 0) keeps paths inside that root.
    """
    uid = os.geteuid()
    found = lookup_user(uid, root)
    if found is not None:
        return found
    if uid == 0:
        return Account("root", 0, 0, Path("/root"), "/bin/sh")
    live = lookup_user(uid)
    name = live.name if live else str(uid)
    return Account(name, uid, os.getegid(), Path("/home") / name, "/bin/sh")
