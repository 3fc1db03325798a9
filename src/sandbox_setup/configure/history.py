"""A setup as one thing with a history: every apply not yet undone, the agent's files
left in the workspaces, and the state directory at the end of ``--undo --all``.

:func:`sandbox_setup.configure.undo.undo_last` takes back one apply; this module
adds what an undo of the whole history needs around it:

- :func:`open_applies`: the applies still in effect, newest first, each with the
  entries its undo would replay (the backups they name pass the trust rule first);
- :func:`agent_owners` / :func:`agent_files` / :func:`give_back`: the files in the
  workspaces owned by an agent (or by a workspace group) that this undo removes,
  found by a walk over file descriptors that never follows a symlink (invariant 11),
  and chowned to the workspace's owner, so the next account to get that uid or gid
  does not inherit them;
- :func:`remove_state_dir`: the journal, the backups (of ``/etc/shadow`` among them)
  and the lock, then the parent directories the first apply created for them
  (recorded in :data:`CREATED_PARENTS` by :func:`sandbox_setup.configure.journal.apply_lock`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import PurePosixPath

from sandbox_setup.base import fdwalk
from sandbox_setup.base.accounts import lookup_group_gid, lookup_user
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops, outcome
from sandbox_setup.configure.journal import (
    BOOKKEEPING,
    CREATED_PARENTS,
    check_backups_of,
    open_transactions,
    pending_steps,
    read_entries,
)
from sandbox_setup.configure.journal.check import JournalCorruptError
from sandbox_setup.configure.journal.entries import (
    AccountsDone,
    Acl,
    Begin,
    CreateGroup,
    CreateUser,
    Entry,
    Write,
)
from sandbox_setup.configure.ledger import ledger_path, read_ledger
from sandbox_setup.configure.outcome import StepResult
from sandbox_setup.configure.state_trust import check_state_dir, check_state_file
from sandbox_setup.policy.inodes import AGENT_TEMP_DIRS, may_change_inode


def open_applies(layout: Layout) -> list[tuple[str, list[Entry]]]:
    """Every apply not yet undone, newest first: its id and the entries an undo of it
    replays (``begin``, ``accounts-done`` and the steps still in effect).

    The ledger is read (and so trust-checked) first, before an undo changes anything;
    while it records a setup, an apply still in effect must have written it, or the
    journal lost applies (:func:`_check_whole`)."""
    records = read_ledger(layout)
    entries = read_entries(layout)
    found = []
    for txn in reversed(open_transactions(entries)):
        mine = [e for e in entries if e.txn == txn]
        pending = {id(entry) for _, entry in pending_steps(mine)}
        kept = [e for e in mine if isinstance(e, Begin | AccountsDone) or id(e) in pending]
        check_backups_of(layout, kept)
        found.append((txn, kept))
    _check_whole(layout, sorted(records), entries, found)
    return found


def _check_whole(
    layout: Layout,
    agents: list[str],
    entries: list[Entry],
    applies: list[tuple[str, list[Entry]]],
) -> None:
    """Refuse (exit 2, naming the journal) a journal that lost the applies the ledger
    says are in effect: an undo of what is left would remove the journal and the
    backups and call the setup undone while its agent and files stay. The journal
    must hold a write of the ledger, and the applies still in effect every write of
    it from the one that created it on, in order (``applies``: newest first, as
    :func:`open_applies` gives them). A ledger an undo left as it was (changed since)
    is the undo's report, not a lost apply."""
    if not agents:
        return
    ledger = str(ledger_path(layout))

    def writes_of(items: list[Entry]) -> list[Write]:
        return [e for e in items if isinstance(e, Write) and e.target == ledger]

    written = writes_of([e for _, kept in reversed(applies) for e in kept])  # oldest first
    # Each write of the ledger replaced what the one before it wrote; the first, nothing.
    olds = [e.old_sha256 for e in written]
    news = [None, *[e.new_sha256 for e in written][:-1]]
    if olds == news and (written or writes_of(entries)):
        return
    raise JournalCorruptError(
        f"journal {layout.real(layout.journal)}: the ledger {layout.real(ledger_path(layout))} "
        f"records the setup of {', '.join(agents)}, but the applies in the journal still in "
        "effect do not account for it: the journal lost applies or their order. Nothing was "
        "changed: undo replays the journal only when it is whole. Restore the journal "
        "from a copy, or undo by hand what the ledger lists"
    )


def steps(applies: list[tuple[str, list[Entry]]]) -> list[Entry]:
    """The steps (not the bookkeeping) of ``applies``."""
    return [e for _, kept in applies for e in kept if e.op not in BOOKKEEPING]


@dataclass(frozen=True)
class Owners:
    """Whose files an undo hands back: the agents' uids and the groups' gids it removes."""

    uids: frozenset[int]
    gids: frozenset[int]
    names: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.uids or self.gids)


def agent_owners(layout: Layout, undone: list[Entry]) -> Owners:
    """The uids of the agents and the gids of the groups the steps ``undone`` remove,
    looked up in the target's account files while they still exist."""
    uids: set[int] = set()
    gids: set[int] = set()
    names: list[str] = []
    for entry in undone:
        if isinstance(entry, CreateUser):
            account = lookup_user(entry.name, layout.root)
            if account is not None and account.uid != 0:
                uids.add(account.uid)
                names.append(entry.name)
        elif isinstance(entry, CreateGroup):
            gid = lookup_group_gid(entry.name, layout.root)
            if gid is not None and gid != 0:
                gids.add(gid)
    return Owners(frozenset(uids), frozenset(gids), tuple(names))


def journal_workspaces(layout: Layout) -> list[PurePosixPath]:
    """Every workspace an apply of this setup opened to its agent (its ACL steps)."""
    found = [PurePosixPath(e.target) for e in read_entries(layout) if isinstance(e, Acl)]
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class OwnedFile:
    workspace: PurePosixPath
    rel: str
    uid: int
    gid: int
    hardlinked: bool = False  # a non-directory with other hard links: never chowned

    @property
    def path(self) -> PurePosixPath:
        return self.workspace / self.rel


def _walk(layout: Layout, workspace: PurePosixPath, owners: Owners, chown: bool) -> list[OwnedFile]:
    top = fsops.open_dir(layout.root, layout.real(workspace))
    if top is None:
        return []
    found = []
    try:
        owner = os.fstat(top)
        for visit in fdwalk.walk(top, fdwalk.UNBOUNDED):
            for entry in visit.entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone since the listing
                if st.st_uid not in owners.uids and st.st_gid not in owners.gids:
                    continue
                rel = visit.join(entry.name)
                if not may_change_inode(st):
                    found.append(OwnedFile(workspace, rel, st.st_uid, st.st_gid, hardlinked=True))
                    continue
                found.append(OwnedFile(workspace, rel, st.st_uid, st.st_gid))
                if chown:
                    uid = owner.st_uid if st.st_uid in owners.uids else -1
                    gid = owner.st_gid if st.st_gid in owners.gids or uid != -1 else -1
                    os.chown(entry.name, uid, gid, dir_fd=visit.fd, follow_symlinks=False)
    finally:
        os.close(top)
    return found


def agent_files(layout: Layout, workspaces: list[PurePosixPath], owners: Owners) -> list[OwnedFile]:
    """The files, directories and links in ``workspaces`` that ``owners`` own."""
    if not owners:
        return []
    return [f for ws in workspaces for f in _walk(layout, ws, owners, chown=False)]


def give_back(layout: Layout, workspaces: list[PurePosixPath], owners: Owners) -> list[StepResult]:
    """Chown what ``owners`` own in ``workspaces`` to each workspace's owner (and its
    group), never a non-directory with other hard links (policy.inodes); one line per
    workspace, one more for what was left alone, and one for the agent's files in the
    world-writable temp directories (listed, never chowned). A setuid bit of a
    regular file is cleared by the kernel on chown."""
    lines = []
    for ws in workspaces:
        if not owners:
            break
        try:
            found = _walk(layout, ws, owners, chown=True)
        except OSError as exc:
            lines.append(
                outcome.failed(f"could not give the agent's files in {ws} to its owner: {exc}", exc)
            )
            continue
        moved = [f for f in found if not f.hardlinked]
        skipped = [f for f in found if f.hardlinked]
        if moved:
            lines.append(
                outcome.done(f"gave {len(moved)} file(s) the agent owned in {ws} to its owner")
            )
        if skipped:
            lines.append(outcome.done(_hardlinked_line(skipped, "kept")))
    return lines + [outcome.done(line) for line in outside_lines(layout, owners)]


def _hardlinked_line(skipped: list[OwnedFile], verb: str) -> str:
    return (
        f"{verb} the owner of {len(skipped)} file(s) with other hard links (the same inode "
        f"has another name, maybe outside the workspace), e.g. {skipped[0].path}"
    )


def describe_owned(files: list[OwnedFile], owners: Owners, limit: int = 20) -> list[str]:
    """The preview lines for ``files``."""
    lines = []
    given = [f for f in files if not f.hardlinked]
    for item in given[:limit]:
        whose = "agent" if item.uid in owners.uids else "workspace group"
        lines.append(f"give {item.path} ({whose}'s) to the owner of {item.workspace}")
    if len(given) > limit:
        lines.append(f"... and {len(given) - limit} more")
    skipped = [f for f in files if f.hardlinked]
    if skipped:
        lines.append(_hardlinked_line(skipped, "keep"))
    return lines


def agent_files_outside(
    layout: Layout, owners: Owners, limit: int = 200_000
) -> list[PurePosixPath]:
    """What the agents' uids (or the groups' gids) own in the world-writable temp
    directories (policy.inodes.AGENT_TEMP_DIRS under the target root), walked by fd
    (no symlink followed, a bounded number of entries). Only listed: never chowned."""
    found: list[PurePosixPath] = []
    if not owners:
        return found
    for temp in AGENT_TEMP_DIRS:
        try:
            top = fsops.open_dir(layout.root, layout.real(temp))
        except (OSError, SetupError):
            continue  # not a directory we can walk safely: nothing listed from it
        if top is None:
            continue
        try:
            device = os.fstat(top).st_dev
            limits = fdwalk.WalkLimits(max_entries=limit, max_depth=64)
            for visit in fdwalk.walk(top, limits):
                for entry in visit.entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_dev != device and entry.name in visit.subdirs:
                        visit.subdirs.remove(entry.name)  # another mount: not walked
                        continue
                    if st.st_uid in owners.uids or st.st_gid in owners.gids:
                        found.append(temp / visit.join(entry.name))
        except OSError:
            continue
        finally:
            os.close(top)
    return found


def outside_lines(layout: Layout, owners: Owners, limit: int = 5) -> list[str]:
    """The undo's lines for :func:`agent_files_outside` (none when there are none)."""
    found = agent_files_outside(layout, owners)
    if not found:
        return []
    shown = ", ".join(str(p) for p in found[:limit])
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return [
        f"the agent still owns {len(found)} file(s) outside the workspaces: {shown}{more}; "
        "not changed (the next account to get its uid would own them): remove them, or "
        "give them to root, by hand"
    ]


def _remove_tree(dir_fd: int) -> None:
    """Remove everything in the directory ``dir_fd`` (no symlink followed)."""
    with os.scandir(dir_fd) as it:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    for name, is_dir in names:
        if is_dir:
            child = fdwalk.open_dir_at(dir_fd, name)
            try:
                _remove_tree(child)
            finally:
                os.close(child)
            os.rmdir(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)


def state_dir_contents(layout: Layout) -> tuple[int, int]:
    """(files, backups) in the state directory now; (0, 0) when there is none."""
    real = layout.real(layout.state_dir)
    if not real.is_dir():
        return 0, 0
    files = backups = 0
    for dirpath, _dirs, names in os.walk(real):
        files += len(names)
        if PurePosixPath(dirpath).is_relative_to(layout.real(layout.backups_dir)):
            backups += len(names)
    return files, backups


def created_parents(layout: Layout) -> list[PurePosixPath]:
    """The directories above the state directory its first creation made (recorded);
    only the state directory's own ancestors below the operator's home count."""
    target = layout.state_dir / CREATED_PARENTS
    check_state_file(layout, target, "state directory record")
    state = fsops.read_file(layout.root, layout.real(target))
    if state is None:
        return []
    try:
        listed = json.loads(state.data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return []
    home = PurePosixPath(layout.operator.home)
    allowed = {p for p in layout.state_dir.parents if home in p.parents}
    if not isinstance(listed, list):
        return []
    return [PurePosixPath(p) for p in listed if isinstance(p, str) and PurePosixPath(p) in allowed]


# What the applies keep in the state directory (removed by `--undo --all`), beside what
# the sessions keep there (the quarantine, the session records, the egress log), which
# an undo never deletes: files moved out of a workspace are moved aside, never deleted.
HISTORY = ("journal.jsonl", "backups", "apply.lock", CREATED_PARENTS, "setups.json", "crash.log")


def history_left(layout: Layout) -> bool:
    """Whether the applies' journal or backups are still in the state directory (an
    ``--undo --all`` removed them even when it kept the directory)."""
    return any(os.path.lexists(layout.real(path)) for path in (layout.journal, layout.backups_dir))


def kept_in_state_dir(layout: Layout) -> list[str]:
    """What the sessions keep in the state directory (not the applies' history)."""
    real = layout.real(layout.state_dir)
    if not real.is_dir():
        return []
    return sorted(name for name in os.listdir(real) if name not in HISTORY)


def remove_state_dir(layout: Layout) -> tuple[list[str], list[str]]:
    """Remove the applies' history from the state directory, then the directory and
    what the first apply created above it when nothing else is left. Returns (one line
    per thing removed, the names of what was left there)."""
    check_state_dir(layout)
    real = layout.real(layout.state_dir)
    parents = created_parents(layout)
    top = fsops.open_dir(layout.root, real)
    if top is None:
        return [], []
    try:
        if not stat.S_ISDIR(os.fstat(top).st_mode):
            return [], []
        for name in HISTORY:
            st = fdwalk.lstat_at(top, name)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                child = fdwalk.open_dir_at(top, name)
                try:
                    _remove_tree(child)
                finally:
                    os.close(child)
                os.rmdir(name, dir_fd=top)
            else:
                os.unlink(name, dir_fd=top)
        left = sorted(os.listdir(top))
    finally:
        os.close(top)
    lines = [f"removed the journal and the backups from {layout.state_dir}"]
    if left:
        return lines, left
    fsops.remove_empty_dir(layout.root, real)
    lines = [f"removed the state directory {layout.state_dir}"]
    for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        try:
            if fsops.remove_empty_dir(layout.root, layout.real(parent)):
                lines.append(f"removed directory {parent}")
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
    return lines, []
