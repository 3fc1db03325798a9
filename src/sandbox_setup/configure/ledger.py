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

import contextlib
import enum
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from sandbox_setup.base.errors import InputError, SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops
from sandbox_setup.configure.journal import open_steps
from sandbox_setup.configure.journal.entries import CreateGroup, CreateUser
from sandbox_setup.configure.outcome import LeftFile, LeftWhy
from sandbox_setup.configure.state_trust import check_setup_file, check_state_file

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
    return {entry.name for entry in open_steps(layout) if isinstance(entry, CreateUser)}


def journal_created_groups(layout: Layout) -> set[str]:
    return {entry.name for entry in open_steps(layout) if isinstance(entry, CreateGroup)}


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


# The host-wide record of setups (docs/design.md invariant 18) -------------------------
#
# ``/etc/sandbox-setup/setups.json`` (root's, 0644), one for the host whatever
# the state directory of each setup::
#
#     {"format": "sandbox-setup-host-1",
#      "setups": {"/root/.local/state/sandbox-setup":
#                     {"operator": "root", "config": "/root/.config/sandbox-setup/launcher.toml",
#                      "applies": ["T1", "T2"],
#                      "relies": {"/root/.gitconfig": ["T1", "T2"]}}},
#      "shared": {"/root/.gitconfig": {"before": {"sha256": "...", "copy": "<before/sha256>",
#                                                 "mode": 384, "uid": 0, "gid": 0},
#                                      "written": "<sha256 the last apply left>"}},
#      "left": {"/root/.config/sandbox-setup/launcher.toml":
#                   {"setup": "/root/.local/state/sandbox-setup", "txn": "T1",
#                    "why": "changed", "sha256": "<as the undo left it>",
#                    "before": null, "backup": null}}}
#
# A shared host change (root's git include, the protected git file: the files every
# setup plans alike) is relied on by each apply that planned it, changed or found
# "already as planned". Its before-image is the file as it was before the first
# setup planned it (a copy in ``before/``). Undoing an apply drops its reliance; the
# file returns to that before-image only when no setup relies on it any more, and
# only when it is still as the last apply wrote it (otherwise it is left and named).
# What an undo left as it is (a file changed after the apply that wrote it) is
# recorded under ``left`` (typed: why, the copy of it from before, if any) for the
# audit and ``--status`` to explain; an entry goes once the file no longer holds what
# the undo left there (someone dealt with it), at the record's next write.
# Read and written under an flock of its directory: setups with different state
# directories hold different apply locks. When no setup is left, the record, the
# copies and the directory (when empty) go.

HOST_DIR = PurePosixPath("/etc/sandbox-setup")
HOST_RECORD = HOST_DIR / "setups.json"
HOST_BEFORE = HOST_DIR / "before"
HOST_FORMAT = "sandbox-setup-host-1"


@dataclass(frozen=True)
class BeforeImage:
    """A shared file as it was before the first setup planned it."""

    sha256: str
    copy: str
    mode: int
    uid: int
    gid: int


@dataclass(frozen=True)
class SharedFile:
    before: BeforeImage | None  # None: the file did not exist
    written: str | None  # sha256 of what the last apply that planned it left


@dataclass(frozen=True)
class HostSetup:
    """One setup as the host knows it: keyed by its state directory."""

    operator: str
    config: str
    applies: tuple[str, ...]
    relies: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class LeftRecord:
    """A file an undo left as it is, as the host record keeps it."""

    path: str
    setup: str  # the state directory of the setup whose undo left it
    txn: str  # the apply that undo took back
    why: LeftWhy
    sha256: str | None  # what the file held when it was left (None: absent)
    before: BeforeImage | None = None  # a shared file: its copy from before any setup
    backup: str | None = None  # the journal's copy from before that apply (state dir)


@dataclass(frozen=True)
class HostRecord:
    setups: dict[str, HostSetup]
    shared: dict[str, SharedFile]
    left: dict[str, LeftRecord] = field(default_factory=dict)

    def relying(self, path: str, *, besides: str | None = None) -> list[str]:
        """The state directories of the setups relying on ``path`` (but ``besides``)."""
        return sorted(
            state for state, s in self.setups.items() if path in s.relies and state != besides
        )


def _strs(raw: object) -> tuple[str, ...] | None:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        return None
    return tuple(raw)


def _before(raw: object) -> BeforeImage | None:
    if not isinstance(raw, dict):
        raise ValueError("before")
    sha, copy = raw.get("sha256"), raw.get("copy")
    ids = [raw.get(k) for k in ("mode", "uid", "gid")]
    if not isinstance(sha, str) or not isinstance(copy, str):
        raise ValueError("before")
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ValueError("before")
    copy_path = PurePosixPath(copy)
    if copy_path.parent != HOST_BEFORE:
        raise ValueError("before copy outside the record's folder")
    return BeforeImage(sha, copy, int(ids[0]), int(ids[1]), int(ids[2]))  # type: ignore[arg-type]


def parse_host_record(data: bytes | None, source: str) -> HostRecord:
    """The host record in ``data`` (None: none yet); InputError naming ``source``."""
    if data is None:
        return HostRecord({}, {})
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != HOST_FORMAT:
            raise ValueError(f"not a {HOST_FORMAT} record")
        setups: dict[str, HostSetup] = {}
        for state, raw in dict(doc.get("setups", {})).items():
            applies = _strs(raw.get("applies"))
            relies_raw = raw.get("relies", {})
            if applies is None or not isinstance(relies_raw, dict):
                raise ValueError(f"setup {state!r} is malformed")
            relies = {}
            for path, txns in relies_raw.items():
                listed = _strs(txns)
                if listed is None:
                    raise ValueError(f"setup {state!r} is malformed")
                relies[str(path)] = listed
            setups[str(state)] = HostSetup(
                str(raw.get("operator", "")), str(raw.get("config", "")), applies, relies
            )
        shared = {}
        for path, raw in dict(doc.get("shared", {})).items():
            written = raw.get("written")
            if not (written is None or isinstance(written, str)):
                raise ValueError(f"shared file {path!r} is malformed")
            before = None if raw.get("before") is None else _before(raw.get("before"))
            shared[str(path)] = SharedFile(before, written)
        left = {str(path): _left(str(path), raw) for path, raw in dict(doc.get("left", {})).items()}
    except (ValueError, TypeError, AttributeError, RecursionError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{source}: not a valid host record of setups ({exc}); fix or remove it "
            "(left untouched)"
        ) from None
    return HostRecord(setups, shared, left)


def _left(path: str, raw: Any) -> LeftRecord:
    if not isinstance(raw, dict):
        raise ValueError(f"left file {path!r} is malformed")
    setup, txn, sha, backup = (raw.get(k) for k in ("setup", "txn", "sha256", "backup"))
    if not isinstance(setup, str) or not isinstance(txn, str):
        raise ValueError(f"left file {path!r} is malformed")
    if not (sha is None or isinstance(sha, str)) or not (backup is None or isinstance(backup, str)):
        raise ValueError(f"left file {path!r} is malformed")
    before = None if raw.get("before") is None else _before(raw.get("before"))
    return LeftRecord(path, setup, txn, LeftWhy(raw.get("why")), sha, before, backup)


def _render_host_record(record: HostRecord) -> bytes:
    doc = {
        "format": HOST_FORMAT,
        "setups": {
            state: {
                "operator": s.operator,
                "config": s.config,
                "applies": list(s.applies),
                "relies": {p: list(t) for p, t in sorted(s.relies.items())},
            }
            for state, s in sorted(record.setups.items())
        },
        "shared": {
            path: {"before": None if f.before is None else asdict(f.before), "written": f.written}
            for path, f in sorted(record.shared.items())
        },
    }
    if record.left:
        doc["left"] = {
            path: {
                "setup": f.setup,
                "txn": f.txn,
                "why": f.why.value,
                "sha256": f.sha256,
                "before": None if f.before is None else asdict(f.before),
                "backup": f.backup,
            }
            for path, f in sorted(record.left.items())
        }
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def read_host_record(layout: Layout) -> HostRecord:
    """The host record as it is now. One that fails the trust rule is refused (exit 3):
    undo acts on it; a malformed one is an InputError (exit 2)."""
    check_setup_file(layout, HOST_RECORD, "host-wide record of setups")
    real = layout.real(HOST_RECORD)
    state = fsops.read_file(layout.root, real)
    return parse_host_record(state.data if state else None, str(real))


def _host_dirs() -> fsops.DirSpec:
    return fsops.DirSpec(0o755, 0, 0)


@contextlib.contextmanager
def _host_lock(layout: Layout) -> Iterator[None]:
    """The host record's lock: an flock of its directory (blocking: its holders only
    read and write the record). A directory the last release removed meanwhile is
    not the record's any more: lock the new one."""
    while True:
        fd = fsops.open_dir(layout.root, layout.real(HOST_DIR), create=_host_dirs())
        assert fd is not None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = (
                os.lstat(layout.real(HOST_DIR)) if os.path.lexists(layout.real(HOST_DIR)) else None
            )
            held = os.fstat(fd)
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                yield
                return
        finally:
            os.close(fd)


def _write_host_record(layout: Layout, record: HostRecord) -> None:
    real = layout.real(HOST_RECORD)
    if not record.setups and not record.shared and not record.left:
        fsops.remove_file(layout.root, real)
        for directory in (HOST_BEFORE, HOST_DIR):  # each only when empty
            with contextlib.suppress(OSError):
                fsops.remove_empty_dir(layout.root, layout.real(directory))
        return
    fsops.atomic_write(
        layout.root, real, _render_host_record(record), mode=0o644, uid=0, gid=0,
        dirs=_host_dirs(),
    )  # fmt: skip


@dataclass(frozen=True)
class Planned:
    """A shared file an apply planned: as it was before, and the sha256 it left."""

    path: str
    before: fsops.FileState | None
    written: str | None


def rely(layout: Layout, txn: str, planned: list[Planned]) -> None:
    """Record that apply ``txn`` of this setup relies on ``planned`` (changed or
    found already as planned), and that the setup exists."""
    state_dir = str(layout.state_dir)
    with _host_lock(layout):
        record = read_host_record(layout)
        old = record.setups.get(state_dir)
        relies = dict(old.relies) if old else {}
        shared = dict(record.shared)
        saved: list[BeforeImage] = []
        try:
            for item in planned:
                relies[item.path] = tuple(dict.fromkeys((*relies.get(item.path, ()), txn)))
                known = shared.get(item.path)
                before = known.before if known is not None else _save_before(layout, item.before)
                if known is None and before is not None:
                    saved.append(before)
                shared[item.path] = SharedFile(before, item.written)
            applies = tuple(dict.fromkeys((*(old.applies if old else ()), txn)))
            setup = HostSetup(layout.operator.name, str(layout.launcher_config), applies, relies)
            # A left file this apply plans again is a setup's own again (its state
            # now is the before-image a later undo puts back).
            again = {i.path for i in planned}
            left = {p: f for p, f in record.left.items() if p not in again}
            after = HostRecord({**record.setups, state_dir: setup}, shared, left)
            _write_host_record(layout, after)
        except BaseException:
            # Not recorded: the copies this call saved are nobody's (a full disk).
            named = _copies(record)
            with contextlib.suppress(OSError):
                for copy in saved:
                    if copy.copy not in named:
                        fsops.remove_file(layout.root, layout.real(PurePosixPath(copy.copy)))
                fsops.remove_empty_dir(layout.root, layout.real(HOST_BEFORE))
            raise
        named = _copies(after)
        for entry in record.left.values():
            if entry.path in again and entry.before and entry.before.copy not in named:
                with contextlib.suppress(OSError):
                    fsops.remove_file(layout.root, layout.real(PurePosixPath(entry.before.copy)))


def _save_before(layout: Layout, state: fsops.FileState | None) -> BeforeImage | None:
    if state is None:
        return None
    digest = fsops.sha256(state.data)
    assert digest is not None
    copy = HOST_BEFORE / digest
    fsops.atomic_write(
        layout.root, layout.real(copy), state.data, mode=0o600, uid=0, gid=0, dirs=_host_dirs()
    )
    return BeforeImage(digest, str(copy), state.mode, state.uid, state.gid)


class Release(enum.Enum):
    """What undoing an apply does to one shared file it relied on."""

    STILL_MINE = "still-mine"  # an earlier apply of this setup relies on it
    KEPT = "kept"  # another setup relies on it
    RESTORE = "restore"  # the last reliance: back to the before-image
    LEFT = "left"  # the last reliance, but it changed since the last apply wrote it
    JOURNAL = "journal"  # the last reliance: the journal's own write entry puts it back


@dataclass(frozen=True)
class SharedDecision:
    path: str
    release: Release
    others: tuple[str, ...] = ()
    before: BeforeImage | None = None


def release_plan(
    layout: Layout, record: HostRecord, txn: str, olds: Mapping[str, str | None]
) -> list[SharedDecision]:
    """What undoing ``txn`` does to the shared files it relied on (the preview and the
    run both use this). ``olds``: the files ``txn`` itself wrote, with the sha256 its
    journal recorded before: where that is the before-image, the journal's own revert
    puts it back (:data:`Release.JOURNAL`: a rename of its restore point, which works
    on a full disk)."""
    state_dir = str(layout.state_dir)
    setup = record.setups.get(state_dir)
    if setup is None:
        return []
    decisions = []
    for path, txns in sorted(setup.relies.items()):
        if txn not in txns:
            continue
        others = tuple(record.relying(path, besides=state_dir))
        shared = record.shared.get(path)
        if len(txns) > 1:
            decisions.append(SharedDecision(path, Release.STILL_MINE))
        elif others:
            decisions.append(SharedDecision(path, Release.KEPT, others))
        elif shared is None:
            continue
        else:
            now = fsops.read_file(layout.root, layout.real(PurePosixPath(path)))
            current = fsops.sha256(now.data if now else None)
            # As the last apply left it, or already back (a release killed half-way).
            back = None if shared.before is None else shared.before.sha256
            unchanged = current in (shared.written, back)
            kind = Release.RESTORE if unchanged else Release.LEFT
            if kind is Release.RESTORE and path in olds and olds[path] == back:
                kind = Release.JOURNAL
            decisions.append(SharedDecision(path, kind, (), shared.before))
    return decisions


def as_found_by_undo_of(record: HostRecord, state_dir: str, txn: str) -> HostRecord:
    """``record`` as the undo of apply ``txn`` finds it: undo goes newest first, so
    every later apply of the same setup has dropped its reliances by then (the
    ``--undo --all`` preview decides each apply against this, as its run does)."""
    setup = record.setups.get(state_dir)
    if setup is None or txn not in setup.applies:
        return record
    later = set(setup.applies[setup.applies.index(txn) + 1 :])
    if not later:
        return record
    relies = {p: tuple(t for t in ts if t not in later) for p, ts in setup.relies.items()}
    applies = tuple(t for t in setup.applies if t not in later)
    trimmed = HostSetup(
        setup.operator, setup.config, applies, {p: ts for p, ts in relies.items() if ts}
    )
    return HostRecord({**record.setups, state_dir: trimmed}, record.shared, record.left)


def release(layout: Layout, txn: str, olds: Mapping[str, str | None]) -> list[SharedDecision]:
    """Drop apply ``txn``'s reliances; put back what no setup relies on any more.
    Idempotent (a second call finds nothing of ``txn``)."""
    state_dir = str(layout.state_dir)
    known = read_host_record(layout).setups.get(state_dir)
    if known is None or txn not in known.applies:
        return []  # (no lock taken: nothing created for a setup the record lacks)
    with _host_lock(layout):
        record = read_host_record(layout)
        setup = record.setups.get(state_dir)
        if setup is None or txn not in setup.applies:
            return []
        decisions = release_plan(layout, record, txn, olds)
        shared = dict(record.shared)
        left = dict(record.left)
        for decision in decisions:
            if decision.release is Release.RESTORE:
                _restore_before(layout, decision.path, decision.before)
            if decision.release in (Release.RESTORE, Release.LEFT, Release.JOURNAL):
                shared.pop(decision.path, None)
            if decision.release is Release.LEFT:  # its copy from before stays, named here
                left[decision.path] = LeftRecord(
                    decision.path, state_dir, txn, LeftWhy.SHARED_CHANGED,
                    _sha_now(layout, decision.path), decision.before,
                )  # fmt: skip
        relies = {p: tuple(t for t in ts if t != txn) for p, ts in setup.relies.items()}
        relies = {p: ts for p, ts in relies.items() if ts}
        applies = tuple(t for t in setup.applies if t != txn)
        setups = dict(record.setups)
        if applies:
            setups[state_dir] = HostSetup(setup.operator, setup.config, applies, relies)
        else:
            del setups[state_dir]
        # The copies no shared file names any more go first (the record's directory
        # goes with the record when it is the last).
        after = HostRecord(setups, shared, left)
        named = _copies(after)
        for decision in decisions:
            before = decision.before
            gone = decision.release in (Release.RESTORE, Release.JOURNAL)
            if gone and before and before.copy not in named:
                fsops.remove_file(layout.root, layout.real(PurePosixPath(before.copy)))
        _write_host_record(layout, _pruned(layout, after))
    return decisions


def _copies(record: HostRecord) -> set[str]:
    """The before-image copies ``record`` names (shared files and left ones)."""
    files: list[SharedFile | LeftRecord] = [*record.shared.values(), *record.left.values()]
    return {f.before.copy for f in files if f.before is not None}


def _sha_now(layout: Layout, path: str) -> str | None:
    now = fsops.read_file(layout.root, layout.real(PurePosixPath(path)))
    return fsops.sha256(now.data if now else None)


def still_left(layout: Layout, entry: LeftRecord) -> bool:
    """Whether ``entry``'s file still holds what the undo left there (else someone
    dealt with it since, and the entry goes at the record's next write)."""
    try:
        return _sha_now(layout, entry.path) == entry.sha256
    except (OSError, SetupError):
        return True  # unreadable now: still worth naming


def _pruned(layout: Layout, record: HostRecord) -> HostRecord:
    """``record`` without the left files someone dealt with (their copies go too)."""
    gone = {p: f for p, f in record.left.items() if not still_left(layout, f)}
    if not gone:
        return record
    kept = HostRecord(
        record.setups, record.shared, {p: f for p, f in record.left.items() if p not in gone}
    )
    named = _copies(kept)
    for entry in gone.values():
        if entry.before is not None and entry.before.copy not in named:
            with contextlib.suppress(OSError):
                fsops.remove_file(layout.root, layout.real(PurePosixPath(entry.before.copy)))
    return kept


def record_left(layout: Layout, txn: str, files: list[LeftFile]) -> None:
    """Record the files the undo of ``txn`` left as they are (those the journal's own
    steps left; :func:`release` records the shared ones)."""
    state_dir = str(layout.state_dir)
    with _host_lock(layout):
        record = read_host_record(layout)
        left = dict(record.left)
        for item in files:
            left[item.path] = LeftRecord(
                item.path, state_dir, txn, item.why, _sha_now(layout, item.path),
                backup=item.backup,
            )  # fmt: skip
        _write_host_record(layout, HostRecord(record.setups, record.shared, left))


def left_files(layout: Layout) -> list[LeftRecord]:
    """The files undos left as they are and that still hold what was left there, by
    path (every setup's: an audit picks its own). Raises as :func:`read_host_record`."""
    record = read_host_record(layout)
    return [f for _, f in sorted(record.left.items()) if still_left(layout, f)]


def tidy(layout: Layout) -> None:
    """With no record left, the record's directory goes when nothing else is in it
    (the first apply made it before its own protected git file; undo removes that
    file after the release). Under the record's lock."""
    if not os.path.isdir(layout.real(HOST_DIR)) or os.path.lexists(layout.real(HOST_RECORD)):
        return
    with _host_lock(layout):
        if os.path.lexists(layout.real(HOST_RECORD)):
            return
        for directory in (HOST_BEFORE, HOST_DIR):  # each only when empty
            with contextlib.suppress(OSError):
                fsops.remove_empty_dir(layout.root, layout.real(directory))


def _restore_before(layout: Layout, path: str, before: BeforeImage | None) -> None:
    real = layout.real(PurePosixPath(path))
    if before is None:
        fsops.remove_file(layout.root, real)
        return
    now = fsops.read_file(layout.root, real)
    if now is not None and fsops.sha256(now.data) == before.sha256:
        return  # already back (a release killed before it wrote the record)
    saved = fsops.read_file(layout.root, layout.real(PurePosixPath(before.copy)))
    if saved is None or fsops.sha256(saved.data) != before.sha256:
        raise SetupError(
            f"cannot restore {path}: its copy {before.copy} is missing or does not match "
            "the host record; it was left as it is"
        )
    fsops.atomic_write(
        layout.root, real, saved.data, mode=before.mode, uid=before.uid, gid=before.gid,
        dirs=_host_dirs(),
    )  # fmt: skip


def shared_kept_by_others(layout: Layout, path: str) -> list[str]:
    """The other setups relying on ``path`` now (an undo leaves it for them)."""
    return read_host_record(layout).relying(path, besides=str(layout.state_dir))


def host_setups(layout: Layout) -> dict[str, HostSetup]:
    """Every setup the host record lists (by state directory); {} when unreadable."""
    try:
        return read_host_record(layout).setups
    except (InputError, OSError):
        return {}
