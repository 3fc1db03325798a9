"""Live accounts for the tests that need one the kernel knows (a process running as
it, a session the launcher starts as it): named ``ac-...``, created with the real
``useradd`` and removed, with every process of theirs, even when the test fails.

Everything else uses ``useradd --prefix`` trees; a live account is the exception,
so this helper checks that no line of it is left in the host's account files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.processes import processes_of_uid
from tests.tools import require_root, require_tool

PREFIX = "ac-"
# The shell of every agent sandbox-setup creates (configure/accounts/users.py): an account that
# sandbox-launch switches to must have it (policy/accounts.py, launch_agent_problems).
AGENT_SHELL = "/usr/sbin/nologin"


@dataclass(frozen=True)
class LiveAccount:
    name: str
    uid: int
    gid: int
    home: Path


def kill_all_of(uid: int, timeout: float = 10.0) -> None:
    """SIGKILL every process of ``uid`` until none is left (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p.pid for p in processes_of_uid(uid) if p.pid != os.getpid()]
        if not alive:
            return
        for pid in alive:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def remove_live_account(name: str) -> None:
    """Remove ``name`` (an ``ac-`` account) and its group if they exist."""
    assert name.startswith(PREFIX), name
    account = lookup_user(name)
    if account is not None:
        kill_all_of(account.uid)
        subprocess.run(["userdel", name], capture_output=True, check=False)
    subprocess.run(["groupdel", name], capture_output=True, check=False)


@contextmanager
def live_account(
    name: str, home: Path | None = None, shell: str = "/bin/bash"
) -> Iterator[LiveAccount]:
    """A locked, regular (uid from login.defs' range) live account ``name`` with the
    login shell ``shell`` (an agent sandbox-launch starts: :data:`AGENT_SHELL`). Its
    home is ``home`` (created, 0700, owned by it) or an uncreated /home/NAME."""
    assert name.startswith(PREFIX), name
    require_root()
    for tool in ("useradd", "userdel", "groupdel"):
        require_tool(tool)
    remove_live_account(name)  # a leftover of a killed earlier run
    target = home or Path("/home") / name
    try:
        subprocess.run(
            ["useradd", "--no-create-home", "--home-dir", str(target), "--shell", shell,
             "--user-group", name],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        account = lookup_user(name)
        assert account is not None
        if home is not None:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chown(home, account.uid, account.gid)
        yield LiveAccount(name, account.uid, account.gid, target)
    finally:
        remove_live_account(name)
        assert not leftover_lines(name), f"removing {name} left {leftover_lines(name)}"


ACCOUNT_FILES = ("passwd", "group", "shadow", "gshadow", "subuid", "subgid")


def leftover_lines(name: str) -> list[str]:
    """Lines of the host's account files that still name ``name`` (as an entry or
    a group member). Other lines may change meanwhile: other tests run too."""
    found = []
    for file in ACCOUNT_FILES:
        try:
            text = Path("/etc", file).read_text()
        except OSError:
            continue
        for line in text.splitlines():
            fields = line.split(":")
            if fields[0] == name or name in fields[-1].split(","):
                found.append(f"/etc/{file}: {line}")
    return found
