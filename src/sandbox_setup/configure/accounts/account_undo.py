"""Undo of the account steps of an apply: the agent user, its group, its memberships.

Three rules (docs/design.md invariants 6 and 9):

- the agent's processes are stopped first, and the undo says so: ``userdel``
  refuses a user that still runs, and an agent left running would keep its
  workspace fds, its keys and its sessions after its access is gone;
- a group is removed only when nothing else uses it: no member is left (the
  legacy shared ``sandbox-ws`` keeps other setups' agents) and no other setup's
  ledger entry names it;
- a step that fails raises, so :func:`sandbox_setup.configure.undo.undo_last` leaves it
  recorded and the next ``--undo`` retries it.

Processes exist only on the live system: under ``--root DIR`` the tree's uids are
not the host's, so nothing is signalled there (and ``userdel --prefix`` does not
look at processes either).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence

from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.processes import processes_of_uid
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.journal.entries import (
    AccountStep,
    AddToGroup,
    CreateGroup,
    CreateUser,
    Entry,
    RemoveFromGroup,
    SetShell,
)
from sandbox_setup.configure.ledger import read_ledger

OPS = ("create-user", "create-group", "remove-from-group")
TERM_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
KILL_WAIT = 5.0


def stop_processes_of(uid: int) -> tuple[list[int], list[int]]:
    """SIGTERM every process running as ``uid``, SIGKILL what is left after a grace
    period. Returns (the pids signalled, the pids still alive at the end)."""
    own = os.getpid()
    signalled: list[int] = []
    deadline = time.monotonic() + TERM_GRACE + KILL_WAIT
    sig = signal.SIGTERM
    term_until = time.monotonic() + TERM_GRACE
    while True:
        alive = [p.pid for p in processes_of_uid(uid) if p.pid != own]
        if not alive or time.monotonic() > deadline:
            return signalled, alive
        if sig == signal.SIGTERM and time.monotonic() > term_until:
            sig = signal.SIGKILL
        for pid in alive:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
            except PermissionError:
                continue  # reported as still alive if it stays
            if pid not in signalled:
                signalled.append(pid)
        time.sleep(0.05)


def _stop_line(name: str, signalled: Sequence[int]) -> str:
    noun = "process" if len(signalled) == 1 else "processes"
    shown = ", ".join(map(str, signalled[:8])) + (", ..." if len(signalled) > 8 else "")
    return f"stopped {len(signalled)} {noun} of the agent {name} first (pids {shown})"


def stop_agents(layout: Layout, steps: Sequence[Entry]) -> list[str]:
    """Before anything is reverted: stop the processes of every user these steps
    created (live system only). One line per agent that had any."""
    if not layout.live:
        return []
    lines = []
    for entry in steps:
        if not isinstance(entry, CreateUser):
            continue
        account = lookup_user(entry.name, layout.root)
        if account is None or account.uid == 0:
            continue
        signalled, _alive = stop_processes_of(account.uid)
        if signalled:
            lines.append(_stop_line(account.name, signalled))
    return lines


def _stop_agent(layout: Layout, account: Account) -> None:
    """The agent's processes end before its account goes; raises (the step stays
    recorded, the next --undo retries) while any still runs."""
    if layout.live and account.uid != 0:
        _signalled, alive = stop_processes_of(account.uid)
        if alive:
            raise SetupError(
                f"{len(alive)} process(es) of {account.name} still run (pids "
                f"{', '.join(map(str, alive[:8]))}); the next --undo retries"
            )


def _why_group_stays(layout: Layout, name: str, steps: Sequence[Entry]) -> str | None:
    """Why the group ``name`` (it exists) must be kept, or None when it may go;
    raises while this transaction's own agent is still in it (its removal failed)."""
    members = users.group_members(name, layout.root) or []
    created_here = {e.name for e in steps if isinstance(e, CreateUser)}
    stranded = [m for m in members if m in created_here]
    if stranded:
        raise SetupError(
            f"group {name} still has {', '.join(stranded)}, whose removal did not succeed; "
            "the next --undo retries"
        )
    if members:
        return f"kept group {name}: other setups' agents are still in it ({', '.join(members)})"
    agents_here = created_here | {
        e.user for e in steps if isinstance(e, AddToGroup | RemoveFromGroup | SetShell)
    }
    others = [
        r.agent
        for r in read_ledger(layout).values()
        if r.group == name and r.agent not in agents_here
    ]
    if others:
        return f"kept group {name}: the setup of {', '.join(sorted(others))} still uses it"
    return None


def _revert_create_user(layout: Layout, name: str) -> str | None:
    account = lookup_user(name, layout.root)
    if account is None:
        return None
    _stop_agent(layout, account)
    users.run_tool(users.userdel_argv(layout, name))
    return f"removed user {name} and its home"


def _revert_create_group(layout: Layout, name: str, steps: Sequence[Entry]) -> str | None:
    if users.group_gid(layout, name) is None:
        return None
    kept = _why_group_stays(layout, name, steps)
    if kept is not None:
        return kept
    users.run_tool(users.groupdel_argv(layout, name))
    return f"removed group {name}"


def _revert_remove_from_group(layout: Layout, user: str, group: str) -> str | None:
    if not users.user_exists(layout, user) or users.group_gid(layout, group) is None:
        return None
    if user in (users.group_members(group, layout.root) or []):
        return None
    users.run_tool(users.add_to_group_argv(layout, user, group))
    return f"added {user} back to group {group}"


def revert_step(
    layout: Layout, entry: CreateUser | CreateGroup | RemoveFromGroup, steps: Sequence[Entry]
) -> str | None:
    """Revert one account step (``entry``) of the transaction whose steps are
    ``steps``; a line for what it did, None when there was nothing to do. Raises
    (:class:`SetupError`, OSError) when the step failed and must stay recorded."""
    if isinstance(entry, CreateUser):
        return _revert_create_user(layout, entry.name)
    if isinstance(entry, CreateGroup):
        return _revert_create_group(layout, entry.name, steps)
    return _revert_remove_from_group(layout, entry.user, entry.group)


def guard(layout: Layout, entry: AccountStep, steps: Sequence[Entry]) -> str | None:
    """Before an account step is reverted (by :mod:`sandbox_setup.configure.accounts.account_files`,
    byte for byte where it can): the rules above. Returns a line when the step must
    be kept as it is (another setup still uses the group), None to go on; raises when
    it cannot be reverted now and must stay recorded (the agent still runs)."""
    if isinstance(entry, CreateUser):
        account = lookup_user(entry.name, layout.root)
        if account is not None:
            _stop_agent(layout, account)
    elif isinstance(entry, CreateGroup) and users.group_gid(layout, entry.name) is not None:
        return _why_group_stays(layout, entry.name, steps)
    return None
