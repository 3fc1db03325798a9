"""The ledger of setups: which agent accounts and workspace groups sandbox-setup made.

``setups.json`` in the operator's state directory (root's, for root: 0600), one
record per agent account::

    {"format": "sandbox-setup-setups-1",
     "setups": {"claude-agent": {"mode": "sandbox", "group": "sandbox-ws-claude-agent",
                                 "workspaces": ["/srv/a"], "created_user": true,
                                 "created_group": true}}}

Each apply writes it as one more journaled file (the last action but the answers),
so ``--undo`` puts the previous ledger back byte for byte. The journal is the other
half of the record: a ``create-user`` step that is not undone yet means the account
is still sandbox-setup's, even after its setup's ledger entry went (an undo whose
``userdel`` failed). Together they answer, for the plan, the undo and the audit:

- "was this account created by sandbox-setup?" (:func:`created_accounts`): such an
  account is the setup's own, no ``--reuse-account`` needed;
- "does another setup still use this user or group?" (:func:`users_of`): undo keeps it;
- "did an account outlive its setup?" (:func:`created_accounts` minus the ledger's
  agents): the audit reports it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops
from sandbox_setup.configure.journal import open_steps
from sandbox_setup.configure.state_trust import check_state_file

LEDGER_FORMAT = "sandbox-setup-setups-1"
LEDGER_NAME = "setups.json"


@dataclass(frozen=True)
class SetupRecord:
    """One setup: its agent account, workspace group and what sandbox-setup made."""

    agent: str
    mode: str
    group: str | None
    workspaces: tuple[str, ...]
    created_user: bool
    created_group: bool


def ledger_path(layout: Layout) -> PurePosixPath:
    return layout.state_dir / LEDGER_NAME


def _record(agent: str, raw: Any) -> SetupRecord | None:
    if not isinstance(raw, dict):
        return None
    workspaces = raw.get("workspaces", [])
    group = raw.get("group")
    if not isinstance(workspaces, list) or not (group is None or isinstance(group, str)):
        return None
    return SetupRecord(
        agent=agent,
        mode=str(raw.get("mode", "")),
        group=group,
        workspaces=tuple(str(w) for w in workspaces),
        created_user=raw.get("created_user") is True,
        created_group=raw.get("created_group") is True,
    )


def parse_ledger(data: bytes | None, source: str) -> dict[str, SetupRecord]:
    """The records in ``data`` (None: no ledger yet); InputError naming ``source``."""
    if data is None:
        return {}
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(
            f"{source}: invalid JSON: {exc}; fix or remove it (left untouched)"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != LEDGER_FORMAT:
        raise InputError(f"{source}: not a sandbox-setup ledger ({LEDGER_FORMAT})")
    setups = doc.get("setups", {})
    if not isinstance(setups, dict):
        raise InputError(f"{source}: 'setups' must be an object")
    records = {}
    for agent, raw in setups.items():
        record = _record(str(agent), raw)
        if record is None:
            raise InputError(f"{source}: setup {agent!r} is malformed")
        records[record.agent] = record
    return records


def read_ledger(layout: Layout) -> dict[str, SetupRecord]:
    """The ledger as it is now; {} when there is none or it cannot be read (the
    journal still knows what was created; the next apply reports a bad file). A
    ledger that fails the trust rule is refused (exit 3): undo and plan act on it."""
    check_state_file(layout, ledger_path(layout), "ledger")
    real = layout.real(ledger_path(layout))
    try:
        state = fsops.read_file(layout.root, real)
        return parse_ledger(state.data if state else None, str(real))
    except (InputError, OSError):
        return {}


def render_ledger(current: bytes | None, record: SetupRecord, source: str) -> bytes:
    """The ledger with ``record`` added or updated. What an earlier apply created
    stays recorded as created (a re-apply finds the account there already)."""
    records = parse_ledger(current, source)
    old = records.get(record.agent)
    if old is not None:
        record = SetupRecord(
            agent=record.agent,
            mode=record.mode,
            group=record.group,
            workspaces=record.workspaces,
            created_user=record.created_user or old.created_user,
            created_group=record.created_group or (old.created_group and old.group == record.group),
        )
    records[record.agent] = record
    setups = {}
    for agent in sorted(records):
        entry = asdict(records[agent])
        del entry["agent"]
        entry["workspaces"] = list(entry["workspaces"])
        setups[agent] = entry
    doc = {"format": LEDGER_FORMAT, "setups": setups}
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def journal_created_users(layout: Layout) -> set[str]:
    """Accounts a ``create-user`` step made that no undo or rollback has removed."""
    return {
        str(entry["name"])
        for entry in open_steps(layout)
        if entry.get("op") == "create-user" and "name" in entry
    }


def journal_created_groups(layout: Layout) -> set[str]:
    return {
        str(entry["name"])
        for entry in open_steps(layout)
        if entry.get("op") == "create-group" and "name" in entry
    }


def created_accounts(layout: Layout) -> set[str]:
    """Every account sandbox-setup created that is still recorded as its own."""
    from_ledger = {r.agent for r in read_ledger(layout).values() if r.created_user}
    return from_ledger | journal_created_users(layout)


def users_of(
    records: dict[str, SetupRecord], *, user: str | None = None, group: str | None = None
) -> list[str]:
    """The setups (by agent) in ``records`` whose agent is ``user`` or whose
    workspace group is ``group``."""
    return sorted(
        r.agent
        for r in records.values()
        if (user is not None and r.agent == user) or (group is not None and r.group == group)
    )
