"""The workspaces' trusted state, once for the whole host (docs/design.md invariant 8).

Trust is the workspace's, not a session's. A workspace's *trusted state* is the
workspace as it was when its current run of sessions began: a session that starts
while no session of that workspace is live takes it (a snapshot: root's own edits
between runs are root's); one that starts while others are live inherits it and never
takes a snapshot as truth. Every end-of-session check and ``--audit`` judge against
it, so what differs is new whichever session wrote it. It advances (``settled``, the
workspace as it is after the check) only when the last live session of the workspace
ends with a complete check; until then, and after a launcher that died before its end,
the next session judges against the old one first.

Nested workspace paths are one family: a session of ``/srv/app/sub`` overlaps one of
``/srv/app``, and inherits the part of its trusted state under ``sub/``.

Where: ``/var/lib/sandbox-setup/workspaces/`` (root's, 0700;
:data:`~sandbox_setup.base.paths.WORKSPACE_TRUST_DIR`), whichever state directory the
operator's environment names; a non-root operator, who cannot write there, keeps it in
its state directory (``workspace-trust/``). One file, ``record.json`` (0600, written
atomically), holds every session of the host (pid and start time, so a pid reused by
another process is not taken for the launcher; its workspaces and the placeholders it
made, which stay until the last session of the workspace ends) and the trusted state of
every workspace; ``workspace-untrusted.json`` beside it marks what a check could not
see whole. Every start and end takes ``lock`` (``flock``) first: overlapping starts and
ends are serialized, so two launchers never both take a workspace's first snapshot or
both think they are the last.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import WORKSPACE_TRUST_DIR
from sandbox_setup.boundary.scan_model import Mark

RECORD = "record.json"
LOCK = "lock"
RECORD_FORMAT = "sandbox-setup-workspace-trust-1"
NON_ROOT_DIR = "workspace-trust"

Marks = dict[str, Mark]


def starttime(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot): a pid plus this is one process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    try:
        return data.rsplit(b")", 1)[1].split()[19].decode()
    except (IndexError, UnicodeDecodeError):
        return None


def trust_dir(state: Path, root: Path | None = None) -> Path:
    """Where the trusted state is kept for this process: the host-wide directory for
    root (under ``root``, for ``--root``), the operator's ``state`` otherwise."""
    if os.geteuid() != 0:
        return state / NON_ROOT_DIR
    if root is None or str(root) == "/":
        return Path(WORKSPACE_TRUST_DIR)
    return root.joinpath(*WORKSPACE_TRUST_DIR.parts[1:])


def overlaps(a: str, b: str) -> bool:
    """One workspace path is the other or lies under it (one family)."""
    a, b = a.rstrip("/") or "/", b.rstrip("/") or "/"
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _under(path: str, top: str) -> str | None:
    """``path`` relative to ``top`` when strictly under it, else None."""
    top = top.rstrip("/")
    return path[len(top) + 1 :] if path.startswith(top + "/") else None


@dataclass(slots=True)
class SessionEntry:
    """One session of the host: its launcher (pid and start time), its workspaces,
    the placeholders it made on the host (workspace -> binds and prepared files), and
    whether its end ran (``ended``: only its placeholders are left, for the last)."""

    pid: int
    start: str
    workspaces: list[str]
    placeholders: dict[str, dict[str, list[list[str]] | list[str]]] = field(default_factory=dict)
    ended: bool = False
    session: str = ""
    since: str = ""

    @property
    def key(self) -> str:
        return f"{self.pid}-{self.start}"

    @property
    def alive(self) -> bool:
        """Its launcher runs and its end has not run."""
        return not self.ended and starttime(self.pid) == self.start

    @property
    def dead(self) -> bool:
        """Its launcher is gone without its end (killed, a power cut)."""
        return not self.ended and starttime(self.pid) != self.start

    def touches(self, workspace: str) -> bool:
        return any(overlaps(workspace, mine) for mine in self.workspaces)


@dataclass(slots=True)
class Trusted:
    """A workspace's trusted state: the marks the checks judge against, and whether
    it is settled (the last session of its run ended with a complete check)."""

    marks: Marks
    settled: bool
    since: str = ""


@dataclass(slots=True)
class HostRecord:
    """Every session of the host and every workspace's trusted state (``record.json``)."""

    directory: Path
    sessions: dict[str, SessionEntry] = field(default_factory=dict)
    trusted: dict[str, Trusted] = field(default_factory=dict)

    # -- reading and writing ---------------------------------------------------

    @classmethod
    def load(cls, directory: Path) -> HostRecord:
        """The record, or an empty one when there is none yet. One that is there but
        cannot be read is a refusal: trusting part of it could launder a plant."""
        path = directory / RECORD
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return cls(directory)
        except OSError as exc:
            raise RefusedError(f"cannot read the workspaces' trusted state {path}: {exc}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                raise RefusedError(f"{path} is not a regular file of uid {os.geteuid()}")
            if info.st_mode & 0o022:
                raise RefusedError(f"{path} is group- or world-writable: chmod go-w {path}")
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = json.loads(handle.read().decode())
            if data.get("format") != RECORD_FORMAT:
                raise ValueError("not a trusted-state record")
            sessions = {}
            for key, entry in data["sessions"].items():
                sessions[key] = SessionEntry(
                    pid=int(entry["pid"]),
                    start=str(entry["start"]),
                    workspaces=[str(w) for w in entry["workspaces"]],
                    placeholders=dict(entry.get("placeholders", {})),
                    ended=bool(entry.get("ended", False)),
                    session=str(entry.get("session", "")),
                    since=str(entry.get("since", "")),
                )
            trusted = {
                ws: Trusted(
                    {rel: Mark(**{**m, "hits": tuple(m["hits"])}) for rel, m in t["marks"].items()},
                    bool(t["settled"]),
                    str(t.get("since", "")),
                )
                for ws, t in data["trusted"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            raise RefusedError(
                f"the workspaces' trusted state {path} is not one this version reads ({exc}); "
                "move it aside (the next session then takes the workspaces as they are)"
            ) from None
        finally:
            os.close(fd)
        return cls(directory, sessions, trusted)

    def save(self) -> None:
        data = {
            "format": RECORD_FORMAT,
            "sessions": {key: asdict(s) for key, s in sorted(self.sessions.items())},
            "trusted": {
                ws: {
                    "settled": t.settled,
                    "since": t.since,
                    "marks": {rel: asdict(m) for rel, m in sorted(t.marks.items())},
                }
                for ws, t in sorted(self.trusted.items())
            },
        }
        write_private(self.directory / RECORD, json.dumps(data, sort_keys=True))

    # -- questions -------------------------------------------------------------

    def live_on(self, workspace: str, but: str = "") -> list[SessionEntry]:
        """The live sessions (other than ``but``) of ``workspace``'s family."""
        return [
            s for k, s in self.sessions.items() if k != but and s.alive and s.touches(workspace)
        ]

    def marks_for(
        self, workspace: str, now: Marks | None = None, *, running: bool = True
    ) -> Marks | None:
        """The trusted marks of ``workspace``: its own entry, else derived from the
        entries of its family (the part under it of an ancestor's; ``now`` outside the
        descendants' parts, theirs inside). ``running``: only the entries of a run of
        sessions (not settled); a settled one is the workspace at the last end, which a
        new run replaces. None when the family has none."""
        entries = {ws: t for ws, t in self.trusted.items() if not (running and t.settled)}
        own = entries.get(workspace)
        if own is not None:
            return dict(own.marks)
        for top, entry in entries.items():
            prefix = _under(workspace, top)
            if prefix is not None:
                return {
                    rel[len(prefix) + 1 :]: m
                    for rel, m in entry.marks.items()
                    if rel.startswith(prefix + "/")
                }
        inner = [(rel, t) for ws, t in entries.items() if (rel := _under(ws, workspace))]
        if not inner:
            return None
        merged = {
            rel: m
            for rel, m in (now or {}).items()
            if not any(rel == r or rel.startswith(r + "/") for r, _ in inner)
        }
        for prefix, entry in inner:
            merged.update({f"{prefix}/{rel}": m for rel, m in entry.marks.items()})
        return merged

    def unsettled_family(self, workspace: str) -> list[str]:
        """The workspaces of ``workspace``'s family whose trusted state is not settled."""
        return [ws for ws, t in self.trusted.items() if not t.settled and overlaps(ws, workspace)]


def write_private(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically (temp file, fsync, rename), 0600, never
    through a symlink."""
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def make_trust_dir(directory: Path) -> Path:
    """``directory`` (and its parents, 0755), the last 0700, each this uid's and not
    writable by others; refused (:class:`RefusedError`) otherwise."""
    directory.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    for path in (directory.parent, directory):
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (0, os.geteuid()):
            raise RefusedError(
                f"{path} (the workspaces' trusted state) is not a directory of root's "
                f"or uid {os.geteuid()}'s; refusing to launch without it"
            )
        if info.st_mode & 0o022:
            raise RefusedError(
                f"{path} (the workspaces' trusted state) is group- or world-writable: "
                f"chmod go-w {path}"
            )
    return directory


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """The host-wide lock on the trusted state (``flock``, released when the
    process dies): one start or end at a time."""
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
