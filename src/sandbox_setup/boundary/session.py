"""The workspace boundary at launch (docs/design.md invariant 8): what the agent writes in a
workspace never runs as root afterwards through root's git, Claude Code or editor.

One :class:`Boundary` per session (sandbox and user mode, ``--run`` too; unsafe mode
has no agent to keep out). Trust is the workspace's, not the session's: every check
judges against the workspace's trusted state, kept once for the host
(:mod:`sandbox_setup.boundary.trust_record`), under its lock:

1. **Start.** Sessions whose launcher died before their end are named. Where no
   session of a workspace's family is live, what such sessions (or an end that could
   not see everything) left is checked first: their placeholders removed, the
   workspace scanned against its trusted state, what is new moved aside, and the
   trusted state settled when the scan saw all of it. Then a workspace with no live
   session and a settled trusted state takes the workspace as it is now as its
   trusted state (root's own edits between runs are root's); otherwise the session
   inherits the trusted state of the run it joins (never a snapshot of now).
2. **Bind** (sandbox mode): the protected paths of every git repository and the
   project files root's tools obey are bound read-only inside
   (:func:`~sandbox_setup.policy.workspace.plan_ro_binds`,
   :mod:`sandbox_setup.boundary.binds`), from the layout as it is now; placeholders
   git must read are made first and recorded with the session.
3. **End** (a session-end hook, after every process of the session is gone): each
   workspace is scanned against its trusted state and what is new is moved aside into
   ``<state>/quarantine/<session>/`` (:mod:`sandbox_setup.boundary.quarantine`, never
   deleted), one line on stderr per action. Where another session of the workspace is
   still live, nothing it has mounted is touched (the placeholders stay, and are never
   moved aside) and the trusted state stays; the last session of a workspace removes
   every placeholder left, and when its scan saw everything the trusted state advances
   to the workspace as it is now (what ``--audit`` judges against until the next run).
   A scan that could not see a workspace whole marks it untrusted
   (``workspace-untrusted.json`` beside the record): each launch and ``--audit`` say
   so, and tell root not to run git there, until an ``--audit`` whose scan covers it
   whole clears the mark; its trusted state stays, so the next run checks again first.

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
from sandbox_setup.boundary.quarantine import check_quarantine_trust, neutralize
from sandbox_setup.boundary.scan import scan, snapshot
from sandbox_setup.boundary.scan_model import Mark, Snapshot
from sandbox_setup.boundary.trust_record import (
    HostRecord,
    SessionEntry,
    Trusted,
    locked,
    make_trust_dir,
    now_text,
    overlaps,
    starttime,
    trust_dir,
    write_private,
)
from sandbox_setup.policy.workspace import BindPlan, RoBind, WorkspaceLayout, plan_ro_binds

# Workspaces an end scan could not see whole: untrusted until --audit completes
# (beside the host-wide record of the trusted state).
UNTRUSTED = "workspace-untrusted.json"
QUARANTINE_DIR = "quarantine"
PREFIX = "sandbox-launch: "


def _make_private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise OSError(f"{path} is not a directory of uid {os.geteuid()}")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


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
    write_private(state / UNTRUSTED, json.dumps({"format": 1, "workspaces": marked}, indent=2))


def clear_untrusted(state: Path, workspaces: Sequence[str]) -> None:
    """Take ``workspaces`` (scanned whole just now) off the marker."""
    marked = read_untrusted(state)
    if not marked:
        return
    left = {ws: e for ws, e in marked.items() if ws != "*" and ws not in workspaces}
    if left:
        write_private(state / UNTRUSTED, json.dumps({"format": 1, "workspaces": left}, indent=2))
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


@dataclass(slots=True)
class Checked:
    """One check's result: the lines to print, whether it saw every workspace whole,
    and the workspaces as they are after it (what a settled trusted state holds)."""

    lines: list[str]
    complete: bool
    marks: dict[str, dict[str, Mark]]
    moved: int = 0  # paths moved aside


def check(
    workspaces: Sequence[str],
    before: Snapshot,
    state: Path,
    session: str,
    limits: WalkLimits | None = None,
    *,
    marks_dir: Path | None = None,
    keep: frozenset[tuple[str, str]] = frozenset(),
) -> Checked:
    """Scan ``workspaces`` against ``before`` (their trusted state), move aside what is
    new (into ``state``'s quarantine), except ``keep`` (workspace, path) pairs: what
    another live session has mounted. A scan that could not see everything marks the
    workspaces it missed untrusted (in ``marks_dir``, default ``state``; ``limits``:
    the walk's bounds, none by default)."""
    result = scan(workspaces, before, limits)
    lines: list[str] = []
    todo = [h for h in result.to_neutralize if (h.workspace, h.rel) not in keep]
    if todo:
        check_quarantine_trust(state / QUARANTINE_DIR)
        _make_private_dir(state / QUARANTINE_DIR)
        lines += neutralize(todo, quarantine_dir(state, session))
    if result.truncated:
        missed = _by_workspace(result.truncated, workspaces)
        mark_untrusted(marks_dir or state, missed)
        lines += [untrusted_line(ws, "", why) for ws, why in missed.items()]
    # Nothing was moved aside: the workspaces are as the scan just walked them (its
    # marks are a snapshot's); otherwise they are walked again, as they are now.
    marks = snapshot(workspaces).marks if todo else result.marks
    return Checked(lines, not result.truncated, marks, len(todo))


def _finish_placeholders(entry: SessionEntry, host: str) -> None:
    """Remove what a session's bwrap and prepare() left in ``host`` (mount points, the
    prepared commondir/config.worktree): only once no live session uses them."""
    placeholders = entry.placeholders.pop(host, None)
    if not isinstance(placeholders, dict):
        return
    try:
        binds = [RoBind(*b) for b in placeholders["binds"]]
        created = [str(c) for c in placeholders["prepared"]]
    except (TypeError, KeyError, ValueError):
        return
    finish(host, BindPlan(tuple(binds), ()), Prepared(host, created))


def _mounted(record: HostRecord) -> frozenset[tuple[str, str]]:
    """The placeholders (workspace, path) that sessions made and have not finished:
    mount points that a live session may have bound (its own, or another's it found)."""
    found: set[tuple[str, str]] = set()
    for entry in record.sessions.values():
        for host, placeholders in entry.placeholders.items():
            if not isinstance(placeholders, dict):
                continue
            found.update((host, str(b[0])) for b in placeholders.get("binds", []))
            found.update((host, str(c)) for c in placeholders.get("prepared", []))
    return frozenset(found)


def _retire(
    record: HostRecord,
    workspaces: Sequence[str],
    state: Path,
    session: str,
    me: str = "",
) -> Checked:
    """End the runs of ``workspaces`` (no session of their families live but ``me``):
    remove every placeholder left there, check them and every unsettled workspace of
    their families against the trusted state, and settle what the check saw whole.
    Sessions left with nothing to do are dropped from the record."""
    todo: list[str] = []
    for ws in [*workspaces, *(u for w in workspaces for u in record.unsettled_family(w))]:
        if ws not in todo and not record.live_on(ws, but=me):
            todo.append(ws)
    for key, entry in record.sessions.items():
        if key != me and entry.alive:
            continue
        for host in list(entry.placeholders):
            if any(overlaps(host, ws) for ws in todo) and not record.live_on(host, but=me):
                _finish_placeholders(entry, host)
    before = Snapshot({ws: record.marks_for(ws, running=False) or {} for ws in todo})
    checked = check(todo, before, state, session, marks_dir=record.directory)
    if checked.complete:
        for ws in todo:
            record.trusted[ws] = Trusted(checked.marks.get(ws, {}), settled=True, since=now_text())
    for key, entry in list(record.sessions.items()):
        if key == me or entry.alive or entry.placeholders:
            continue
        idle = not any(record.live_on(ws, but=me) for ws in entry.workspaces)
        if idle and (checked.complete or entry.ended):
            del record.sessions[key]
    return checked


def _tell_untrusted(directory: Path, workspaces: Sequence[str], lines: list[str]) -> None:
    """Print ``lines`` and a warning for each of ``workspaces`` marked untrusted."""
    for ws, mark in read_untrusted(directory).items():
        if ws == "*" or ws in workspaces:
            why = mark.get("why")
            reasons = [str(w) for w in why] if isinstance(why, list) else []
            lines.append(untrusted_line(ws, str(mark.get("since") or ""), reasons))
    for line in lines:
        print(PREFIX + line, file=sys.stderr)


@dataclass(slots=True)
class Boundary:
    """One session's workspace boundary (see the module docstring)."""

    workspaces: tuple[str, ...]  # host paths (real), as the scan walks them
    state: Path
    before: Snapshot
    bind_args: list[str] = field(default_factory=list)
    binds: list[tuple[str, BindPlan, Prepared | None]] = field(default_factory=list)
    trust: Path | None = None  # the directory of the host-wide trusted state
    key: str = ""  # this session in the record: "<pid>-<starttime>"
    session: str = ""
    ended: bool = False
    agent_uid: int | None = None  # whose leftover mount points end() removes
    # For the history of sessions (session_history): what it ran with, when, how it ended.
    config: str = ""
    agent: str = ""
    mode: str = ""
    started: float = 0.0
    exit_code: int | None = None
    # The session-start scan's layouts, by real host path (which repositories a
    # --run review may open: sandbox_setup.policy.git_review).
    layouts: dict[str, WorkspaceLayout] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        workspaces: Sequence[tuple[str, str]],
        state: Path,
        *,
        sandbox: bool,
        dry_run: bool = False,
        trust: Path | None = None,
    ) -> Boundary:
        """``workspaces``: (path inside the sandbox, real host path) pairs. ``trust``:
        where the host-wide trusted state is (default: :func:`trust_dir`). A dry run
        saves and prepares nothing, and checks nothing."""
        real = tuple(host for _, host in workspaces)
        if dry_run:
            boundary = cls(real, state, snapshot(real))
            boundary.layouts = dict(boundary.before.layouts)
            if sandbox:
                boundary._plan_binds(workspaces, boundary.before, dry_run=True)
            _tell_untrusted(trust or trust_dir(state), real, [])
            return boundary
        # Before anything is written: the quarantine root reads back (its manifests).
        check_quarantine_trust(state / QUARANTINE_DIR)
        _make_private_dir(state)
        directory = make_trust_dir(trust or trust_dir(state))
        me = os.getpid()
        key = f"{me}-{starttime(me) or 0}"
        session = f"{time.strftime('%Y%m%dT%H%M%S')}-{me}"
        lines: list[str] = []
        with locked(directory):
            record = HostRecord.load(directory)
            for entry in record.sessions.values():
                if entry.dead and any(entry.touches(ws) for ws in real):
                    lines.append(
                        f"the session of launcher pid {entry.pid} ended without its "
                        "workspace scan; its workspaces are checked against their trusted "
                        "state by the last session that ends (now, if none is live)"
                    )
            alone = [ws for ws in real if not record.live_on(ws)]
            pending = [
                ws
                for ws in alone
                if record.unsettled_family(ws)
                or any(not e.alive and e.touches(ws) for e in record.sessions.values())
            ]
            if pending:
                lines += _retire(record, pending, state, f"recovered-{session}").lines
            now = snapshot(real)
            trusted: dict[str, dict[str, Mark]] = {}
            for ws in real:
                current = now.marks.get(ws, {})
                mine = record.trusted.get(ws)
                fresh = ws in alone and not record.unsettled_family(ws)
                if fresh:
                    record.trusted[ws] = Trusted(dict(current), settled=False, since=now_text())
                elif mine is None or mine.settled:
                    inherited = record.marks_for(ws, current)
                    marks = inherited if inherited is not None else dict(current)
                    record.trusted[ws] = Trusted(marks, settled=False, since=now_text())
                trusted[ws] = dict(record.trusted[ws].marks)
            boundary = cls(real, state, Snapshot(trusted), trust=directory, key=key)
            boundary.session = session
            boundary.started = time.time()
            boundary.mode = "sandbox" if sandbox else "user"
            boundary.layouts = dict(now.layouts)
            if sandbox:
                boundary._plan_binds(workspaces, now, dry_run=False)
            record.sessions[key] = SessionEntry(
                pid=me,
                start=key.split("-", 1)[1],
                workspaces=list(real),
                placeholders=boundary._placeholders(),
                session=session,
                since=now_text(),
            )
            record.save()
        _tell_untrusted(directory, real, lines)
        return boundary

    def _plan_binds(
        self, workspaces: Sequence[tuple[str, str]], now: Snapshot, *, dry_run: bool
    ) -> None:
        """The read-only binds (sandbox mode), from the layout as it is now (another
        live session's placeholders included: they are bound as they are)."""
        for inside, host in workspaces:
            layout = now.layouts.get(host)
            if layout is None:
                continue
            plan = plan_ro_binds(layout)
            prepared = None if dry_run else prepare(host, plan)
            self.binds.append((host, plan, prepared))
            self.bind_args += ro_bind_argv(plan, host, inside, prepared)

    def _placeholders(self) -> dict[str, dict[str, list[list[str]] | list[str]]]:
        """The placeholders made on the host, so the last session of the workspace
        (or a recovery) removes them as this session's end would."""
        return {
            host: {
                "binds": [[b.rel, b.source, b.why] for b in plan.binds if b.source != "self"],
                "prepared": list(prepared.created) if prepared is not None else [],
            }
            for host, plan, prepared in self.binds
        }

    @staticmethod
    def prepare_end() -> None:
        """Import what only :meth:`end` needs (Claude's mount points, the history of
        sessions). The launcher calls it while the agent runs, when it only waits for
        the session: the imports' CPU time is spent all the same, but not on the
        launch's wall clock, before Claude starts or after it exited. :meth:`end`
        imports them itself where nobody did."""
        import sandbox_setup.boundary.claude_mountpoints
        import sandbox_setup.boundary.session_history  # noqa: F401

    def end(self, _session_end: object = None) -> None:
        """The end-of-session hook: scan, neutralize, tell; the last session of a
        workspace also removes the placeholders and advances the trusted state.
        Also what a launch refused after :meth:`start` calls (nothing ran: nothing is new)."""
        if self.ended or self.trust is None:
            return
        self.ended = True
        code = getattr(_session_end, "exit_code", None)  # the runner's SessionEnd
        if isinstance(code, int) and not isinstance(code, bool):
            self.exit_code = code
        try:
            lines = self._end()
        except (OSError, RefusedError) as exc:
            # The record keeps this session: the next launch checks again first.
            why = [f"the scan failed: {printable(str(exc))}"]
            with contextlib.suppress(OSError):
                mark_untrusted(self.trust, {ws: why for ws in self.workspaces})
            lines = [untrusted_line(ws, "", why) for ws in self.workspaces]
            lines.append("the next launch scans again against the workspace's trusted state")
        for line in lines:
            print(PREFIX + line, file=sys.stderr)

    def _end(self) -> list[str]:
        from sandbox_setup.boundary.claude_mountpoints import remove_mount_points  # prepare_end

        assert self.trust is not None
        with locked(self.trust):
            record = HostRecord.load(self.trust)
            entry = record.sessions.get(self.key)
            if entry is not None:
                entry.ended = True
            shared = [ws for ws in self.workspaces if record.live_on(ws, but=self.key)]
            last = [ws for ws in self.workspaces if ws not in shared]
            lines: list[str] = []
            checks: list[Checked] = []
            if last and self.agent_uid is not None:
                # Claude's own leftover mount points, once no session of the
                # workspace runs: one that still runs may be using them.
                remove_mount_points(last, self.agent_uid)
            if last:
                checks.append(_retire(record, last, self.state, self.session, me=self.key))
                lines += checks[-1].lines
            if shared:
                # Others still run there: judged against the same trusted state, what
                # they mounted left alone; the last of them advances it.
                before = Snapshot({ws: record.marks_for(ws) or {} for ws in shared})
                checked = check(
                    shared,
                    before,
                    self.state,
                    self.session,
                    marks_dir=self.trust,
                    keep=_mounted(record),
                )
                checks.append(checked)
                lines += checked.lines
            if entry is not None and not entry.placeholders:
                del record.sessions[self.key]
            record.save()
            self._remember(checks)
        return lines

    def _remember(self, checks: Sequence[Checked]) -> None:
        """This session in the host's history of sessions (under the record's lock)."""
        from sandbox_setup.boundary.session_history import (  # see prepare_end
            EndCheck,
            PastSession,
            append_history,
        )

        assert self.trust is not None
        moved = sum(c.moved for c in checks)
        past = PastSession(
            session=self.session,
            pid=int(self.key.split("-", 1)[0]) if self.key else os.getpid(),
            state=str(self.state),
            config=self.config,
            agent=self.agent,
            mode=self.mode,
            workspaces=tuple(self.workspaces),
            started=self.started,
            ended=time.time(),
            exit_code=self.exit_code,
            end_check=EndCheck(
                all(c.complete for c in checks),
                moved,
                quarantine_dir(self.state, self.session) if moved else None,
            ),
        )
        with contextlib.suppress(OSError):
            append_history(self.trust, past)
