"""The workspace boundary at launch (DESIGN invariant 8): what the agent writes in a
workspace never runs as root afterwards through root's git, Claude Code or editor.

One :class:`Boundary` per session (sandbox and user mode; unsafe mode has no agent
to keep out), in this order:

1. **Recover.** A session whose launcher died before its end (SIGKILL, a power cut)
   left its start snapshot in ``<state>/workspace-sessions/``; its launcher is gone,
   so its workspaces are scanned against that snapshot first and what it wrote is
   neutralized, before this session's snapshot could take it for the operator's.
2. **Snapshot** the workspaces (:func:`~sandbox_setup.boundary.scan.snapshot`) and
   save it there (``<pid>-<starttime>.json``, 0600, atomic), so ``--audit`` judges
   against it while the session runs, and step 1 finds it if the end never comes.
3. **Bind** (sandbox mode): the protected paths of every git repository and the
   project files root's tools obey are bound read-only inside
   (:func:`~sandbox_setup.policy.workspace.plan_ro_binds`,
   :mod:`sandbox_setup.boundary.binds`); placeholders git must read are made first.
4. **End** (a session-end hook, after every process of the session is gone): the
   placeholders are removed, the workspaces scanned against the snapshot, what
   appeared or changed is moved aside into ``<state>/quarantine/<session>/``
   (:mod:`sandbox_setup.boundary.quarantine`, never deleted) and each action is one line on
   stderr; then the workspaces as they are now become ``workspace-baseline.json``
   (what ``--audit`` judges against between sessions) and the session file goes.
   A scan that could not see a workspace whole (it could not read a directory,
   or the scan failed) marks it untrusted (``workspace-untrusted.json``): each
   launch and ``--audit`` say so, and tell root not to run git there, until an
   ``--audit`` whose scan covers it whole clears the mark.

Everything here walks the workspaces by fd (:mod:`sandbox_setup.base.fdwalk`): no symlink
is followed and nothing but regular files and directories is opened.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_setup.base import remedies
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.fdwalk import WalkLimits
from sandbox_setup.base.printable import printable
from sandbox_setup.boundary.binds import Prepared, finish, prepare, ro_bind_argv
from sandbox_setup.boundary.claude_mountpoints import remove_mount_points
from sandbox_setup.boundary.quarantine import check_quarantine_trust, neutralize
from sandbox_setup.boundary.scan import scan, snapshot
from sandbox_setup.boundary.scan_model import Snapshot
from sandbox_setup.policy.workspace import BindPlan, RoBind, plan_ro_binds

SESSIONS_DIR = "workspace-sessions"
BASELINE = "workspace-baseline.json"
# Workspaces an end scan could not see whole: untrusted until --audit completes.
UNTRUSTED = "workspace-untrusted.json"
QUARANTINE_DIR = "quarantine"
PREFIX = "sandbox-launch: "


def _starttime(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot): a pid plus this is one process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    try:
        return data.rsplit(b")", 1)[1].split()[19].decode()
    except (IndexError, UnicodeDecodeError):
        return None


def _make_private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise OSError(f"{path} is not a directory of uid {os.geteuid()}")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def write_state(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically (a temporary file in the same directory,
    fsynced, renamed over it), 0600, never through a symlink."""
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_state(path: Path) -> Snapshot | None:
    """A saved snapshot, or None when there is none (or it is not one: reported by
    the caller as missing, never trusted in part)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 64 << 20:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    finally:
        os.close(fd)
    try:
        return Snapshot.from_json(data.decode())
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


@dataclass(slots=True)
class SessionRecord:
    """A saved session-start snapshot: whose launcher, and whether it still runs."""

    path: Path
    pid: int
    starttime: str

    @property
    def alive(self) -> bool:
        return _starttime(self.pid) == self.starttime

    @classmethod
    def parse(cls, path: Path) -> SessionRecord | None:
        pid, _, start = path.stem.partition("-")
        if not (pid.isdigit() and start.isdigit()) or path.suffix != ".json":
            return None
        return cls(path, int(pid), start)


def session_records(state: Path) -> list[SessionRecord]:
    """The session snapshots in ``state`` (running sessions and unfinished ones), oldest first."""
    try:
        names = sorted(os.listdir(state / SESSIONS_DIR))
    except OSError:
        return []
    found = [SessionRecord.parse(state / SESSIONS_DIR / name) for name in names]
    records = [r for r in found if r is not None]
    return sorted(records, key=lambda r: _mtime(r.path))


def _mtime(path: Path) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def quarantine_dir(state: Path, session: str) -> str:
    return str(state / QUARANTINE_DIR / session)


def read_untrusted(state: Path) -> dict[str, dict[str, object]]:
    """The workspaces marked untrusted (path -> when and why), from :data:`UNTRUSTED`.
    A marker that cannot be read counts as one for every workspace (``"*"``)."""
    path = state / UNTRUSTED
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        return {"*": {"since": "", "why": [f"the marker {path} cannot be read: {exc.strerror}"]}}
    try:
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = json.loads(handle.read(1 << 20).decode())
        marked = data["workspaces"]
        if not isinstance(marked, dict):
            raise TypeError("workspaces")
        return {str(ws): dict(entry) for ws, entry in marked.items()}
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return {"*": {"since": "", "why": [f"the marker {path} is not one this version reads"]}}
    finally:
        os.close(fd)


def mark_untrusted(state: Path, why: dict[str, list[str]]) -> None:
    """Mark the workspaces of ``why`` (path -> what the scan could not see)
    untrusted, until an ``--audit`` whose scan covers them whole clears them."""
    marked = {ws: e for ws, e in read_untrusted(state).items() if ws != "*"}
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for ws, reasons in why.items():
        marked[ws] = {"since": marked.get(ws, {}).get("since") or now, "why": reasons[:20]}
    _make_private_dir(state)
    write_state(state / UNTRUSTED, json.dumps({"format": 1, "workspaces": marked}, indent=2))


def clear_untrusted(state: Path, workspaces: Sequence[str]) -> None:
    """Take ``workspaces`` (scanned whole just now) off the marker."""
    marked = read_untrusted(state)
    if not marked:
        return
    left = {ws: e for ws, e in marked.items() if ws != "*" and ws not in workspaces}
    if left:
        write_state(state / UNTRUSTED, json.dumps({"format": 1, "workspaces": left}, indent=2))
    else:
        with contextlib.suppress(FileNotFoundError):
            (state / UNTRUSTED).unlink()


def untrusted_line(workspace: str, since: str, why: Sequence[str]) -> str:
    """What the launcher and the audit say of an untrusted workspace."""
    when = f" since {since}" if since else ""
    first = printable(str(why[0])) if why else "it could not finish"
    more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
    return (
        f"WARNING: {printable(workspace)} is untrusted{when}: the end-of-session workspace "
        f"scan did not see all of it ({first}{more}); do NOT run git, Claude Code or an "
        f"editor there as root until this completes: {remedies.audit()}"
    )


def _by_workspace(truncated: Sequence[str], workspaces: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in truncated:
        ws = next((w for w in workspaces if line.startswith(f"{w.rstrip('/') or '/'}: ")), "")
        found.setdefault(ws or "*", []).append(line)
    return found


def end_scan(
    workspaces: Sequence[str],
    before: Snapshot,
    state: Path,
    session: str,
    limits: WalkLimits | None = None,
) -> list[str]:
    """Scan against ``before``, neutralize what is new, save the baseline; the lines to print.
    A scan that could not see everything marks the workspaces it missed untrusted
    (``limits``: the walk's bounds; none by default)."""
    result = scan(workspaces, before, limits)
    lines: list[str] = []
    todo = result.to_neutralize
    if todo:
        check_quarantine_trust(state / QUARANTINE_DIR)
        _make_private_dir(state / QUARANTINE_DIR)
        lines += neutralize(todo, quarantine_dir(state, session))
    if result.truncated:
        missed = _by_workspace(result.truncated, workspaces)
        mark_untrusted(state, missed)
        lines += [untrusted_line(ws, "", why) for ws, why in missed.items()]
    # The baseline keeps other setups' workspaces (one state directory, several configs).
    baseline = read_state(state / BASELINE) or Snapshot()
    # Nothing was moved aside: the workspaces are as the scan just walked them (its
    # marks are a snapshot's); otherwise they are walked again, as they are now.
    baseline.marks.update(snapshot(workspaces).marks if todo else result.marks)
    write_state(state / BASELINE, baseline.to_json())
    return lines


def _finish_placeholders(path: Path) -> None:
    """Remove what a dead session's bwrap and prepare() left on the host (mount
    points, the prepared commondir/config.worktree), as its end would have."""
    try:
        data = json.loads(path.read_text())
        placeholders = data.get("placeholders", {})
        items = [
            (host, [RoBind(*b) for b in entry["binds"]], list(entry["prepared"]))
            for host, entry in placeholders.items()
        ]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return
    for host, binds, created in items:
        finish(host, BindPlan(tuple(binds), ()), Prepared(host, created))


def recover(state: Path) -> list[str]:
    """Scan for every session that ended without its end scan (its launcher is gone)."""
    lines: list[str] = []
    for session in session_records(state):
        if session.alive:
            continue  # a session running now: its own end scans it
        before = read_state(session.path)
        _finish_placeholders(session.path)
        if before is not None:
            # Its own workspaces (another setup's may differ): against a snapshot
            # without a workspace, everything in it would count as new.
            theirs = sorted(before.marks)
            found = end_scan(theirs, before, state, f"recovered-{session.path.stem}")
            done = f"{len(found)} line(s) follow" if found else "nothing to move aside"
            lines.append(
                f"the session of launcher pid {session.pid} ended without its workspace "
                f"scan; scanned now: {done}"
            )
            lines += found
        with contextlib.suppress(OSError):
            session.path.unlink()
    return lines


@dataclass(slots=True)
class Boundary:
    """One session's workspace boundary (see the module docstring)."""

    workspaces: tuple[str, ...]  # host paths (real), as the scan walks them
    state: Path
    before: Snapshot
    bind_args: list[str] = field(default_factory=list)
    binds: list[tuple[str, BindPlan, Prepared | None]] = field(default_factory=list)
    record: Path | None = None
    session: str = ""
    ended: bool = False
    agent_uid: int | None = None  # whose leftover mount points end() removes

    @classmethod
    def start(
        cls,
        workspaces: Sequence[tuple[str, str]],
        state: Path,
        *,
        sandbox: bool,
        dry_run: bool = False,
    ) -> Boundary:
        """``workspaces``: (path inside the sandbox, real host path) pairs. A dry run
        saves and prepares nothing, and recovers nothing."""
        real = tuple(host for _, host in workspaces)
        lines: list[str] = []
        if not dry_run:
            # Before anything is written: the quarantine root reads back (its manifests).
            check_quarantine_trust(state / QUARANTINE_DIR)
            _make_private_dir(state)
            _make_private_dir(state / SESSIONS_DIR)
            lines += recover(state)
        before = snapshot(real)
        boundary = cls(real, state, before)
        if sandbox:
            for inside, host in workspaces:
                layout = before.layouts.get(host)
                if layout is None:
                    continue
                plan = plan_ro_binds(layout)
                prepared = None if dry_run else prepare(host, plan)
                boundary.binds.append((host, plan, prepared))
                boundary.bind_args += ro_bind_argv(plan, host, inside, prepared)
        if not dry_run:
            me = os.getpid()
            boundary.session = f"{time.strftime('%Y%m%dT%H%M%S')}-{me}"
            record = state / SESSIONS_DIR / f"{me}-{_starttime(me) or 0}.json"
            write_state(record, boundary.record_json())
            boundary.record = record
        marked = read_untrusted(state)
        for ws, entry in marked.items():
            if ws == "*" or ws in real:
                why = entry.get("why")
                reasons = [str(w) for w in why] if isinstance(why, list) else []
                lines.append(untrusted_line(ws, str(entry.get("since") or ""), reasons))
        for line in lines:
            print(PREFIX + line, file=sys.stderr)
        return boundary

    def record_json(self) -> str:
        """The session file: the snapshot, and the placeholders made on the host, so
        a recovery (:func:`recover`) removes them as :meth:`end` would."""
        data = json.loads(self.before.to_json())
        data["placeholders"] = {
            host: {
                "binds": [[b.rel, b.source, b.why] for b in plan.binds if b.source != "self"],
                "prepared": list(prepared.created) if prepared is not None else [],
            }
            for host, plan, prepared in self.binds
        }
        return json.dumps(data, sort_keys=True)

    def end(self, _session_end: object = None) -> None:
        """The end-of-session hook: placeholders out, scan, neutralize, tell, baseline.
        Also what a launch refused after :meth:`start` calls (nothing ran: nothing is new)."""
        if self.ended or self.record is None:
            return
        self.ended = True
        for host, plan, prepared in self.binds:
            finish(host, plan, prepared)
        if self.agent_uid is not None:
            remove_mount_points(self.workspaces, self.agent_uid)
        try:
            lines = end_scan(self.workspaces, self.before, self.state, self.session)
        except (OSError, RefusedError) as exc:
            # The session file stays: the next launch scans against it again.
            why = [f"the scan failed: {printable(str(exc))}"]
            with contextlib.suppress(OSError):
                mark_untrusted(self.state, {ws: why for ws in self.workspaces})
            lines = [untrusted_line(ws, "", why) for ws in self.workspaces]
            lines.append("the next launch scans again against this session's start")
        else:
            with contextlib.suppress(OSError):
                self.record.unlink()
        for line in lines:
            print(PREFIX + line, file=sys.stderr)
