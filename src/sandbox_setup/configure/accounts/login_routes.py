"""Plan actions that close the agent's ways in outside the launcher
(:mod:`sandbox_setup.policy.login_routes`).

Each is a :class:`~sandbox_setup.configure.actions.WriteFile`, so the journal records it,
a replaced file is backed up and ``--undo`` restores it byte for byte (or removes what
the apply created):

- :data:`SSHD_KIND`: the agent's sshd drop-in, written whole (root, 0644, enforced),
  where sshd is installed (its main config exists);
- :data:`DENY_KIND`: the agent's name merged into ``/etc/cron.deny`` and ``/etc/at.deny``
  where the scheduler's client is installed or the file exists, unless an ``.allow``
  file decides instead (then the plan says whether it lists the agent).

Modes ``sandbox`` and ``user``, with a root operator: there the agent is an account of
its own. Not ``unsafe`` (no agent account) and not a non-root operator's setup (the
agent is the operator, whose own logins these would shut).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular
from sandbox_setup.configure.actions import Action, WriteFile
from sandbox_setup.policy.login_routes import (
    SCHEDULERS,
    SSHD_CONFIG,
    DenyList,
    listed,
    render_sshd_dropin,
    sshd_dropin,
    sshd_reads_dropins,
    with_name,
)

SSHD_KIND = "login-sshd"
DENY_KIND = "login-deny"
LOGIN_KINDS = (SSHD_KIND, DENY_KIND)


def _read_text(layout: Layout, path: PurePosixPath) -> str | None:
    try:  # never blocks on a FIFO, never reads a device (bounded)
        return read_regular(layout.real(path)).decode("utf-8", errors="surrogateescape")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except InputError as exc:
        return f"# unreadable: {exc}"
    except OSError as exc:
        return f"# unreadable: {exc.strerror}"


def _sshd_action(layout: Layout, agent: str, notes: list[str]) -> WriteFile | None:
    config = _read_text(layout, SSHD_CONFIG)
    if config is None:
        return None  # no sshd here: nothing to close
    path = sshd_dropin(agent)
    data = render_sshd_dropin(agent)
    if not sshd_reads_dropins(config):
        notes.append(
            f"sshd: {SSHD_CONFIG} does not include {path.parent}/*.conf, so the drop-in "
            f"that denies {agent} is not read; add `Include {path.parent}/*.conf` at its top "
            f"(or `DenyUsers {agent}`) and reload sshd"
        )
    notes.append(
        f"sshd: {path} denies {agent} every login (a key it planted in its own "
        "~/.ssh/authorized_keys would otherwise start a process outside any session); a "
        "running sshd reads it at its next reload: systemctl reload ssh"
    )
    return WriteFile(
        layout,
        path,
        lambda _current: data,
        owner="root",
        label=f"sshd drop-in: DenyUsers {agent}",
        mode=0o644,
        dir_mode=0o755,
        enforce=True,
        kind=SSHD_KIND,
    )


def _deny_action(
    layout: Layout, agent: str, scheduler: DenyList, notes: list[str]
) -> WriteFile | None:
    allow = _read_text(layout, scheduler.allow)
    if allow is not None:
        if listed(allow, agent):
            notes.append(
                f"{scheduler.name}: {scheduler.allow} lists {agent}, so it may schedule jobs "
                f"that run outside any session; remove that line"
            )
        return None  # the allow file decides; the deny file is not read
    deny_exists = _read_text(layout, scheduler.deny) is not None
    if not deny_exists and not layout.real(scheduler.client).exists():
        return None  # neither installed nor configured
    return WriteFile(
        layout,
        scheduler.deny,
        lambda current: with_name(
            current.decode("utf-8", errors="surrogateescape") if current else "", agent
        ).encode("utf-8", errors="surrogateescape"),
        owner="root",
        label=f"{scheduler.name}: deny {agent} ({scheduler.deny})",
        mode=0o644,
        dir_mode=0o755,
        kind=DENY_KIND,
    )


def login_route_actions(layout: Layout, mode: Mode, agent: str, notes: list[str]) -> list[Action]:
    """The actions that leave the launcher the agent's only way in (appends plan notes)."""
    if mode is Mode.UNSAFE or layout.operator.uid != 0:
        return []
    actions: list[Action] = []
    sshd = _sshd_action(layout, agent, notes)
    if sshd is not None:
        actions.append(sshd)
    for scheduler in SCHEDULERS:
        deny = _deny_action(layout, agent, scheduler, notes)
        if deny is not None:
            actions.append(deny)
    return actions
