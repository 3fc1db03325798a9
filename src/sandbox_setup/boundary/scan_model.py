"""What the workspace scan records and reports: marks of watched paths, hits,
the session-start snapshot and a scan's result (see :mod:`sandbox_setup.boundary.scan`)."""

from __future__ import annotations

import json
import os
import posixpath
import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from sandbox_setup.base import fdwalk
from sandbox_setup.policy import workspace as policy

SNAPSHOT_FORMAT = "sandbox-setup-workspace-snapshot-1"
QUARANTINE_NAME = ".sandbox-setup-quarantine"
MAX_FILE = 1 << 20  # git accepts a .git file up to 1 MiB; configs are far smaller
MAX_GIT_ENTRIES = 20_000  # hooks, worktrees and modules listed per workspace
MAX_INCLUDE_DEPTH = 10  # git's own include depth limit


@dataclass(frozen=True, slots=True)
class Mark:
    """What a watched path was when seen: enough to tell that it changed."""

    kind: str
    dev: int
    ino: int
    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    digest: str | None = None
    hits: tuple[str, ...] = ()  # identities of the dangerous settings it held

    @classmethod
    def of(cls, st: os.stat_result, digest: str | None = None, hits: Sequence[str] = ()) -> Mark:
        return cls(
            kind=fdwalk.kind_of(st.st_mode),
            dev=st.st_dev,
            ino=st.st_ino,
            mode=st.st_mode,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            ctime_ns=st.st_ctime_ns,
            digest=digest,
            hits=tuple(hits),
        )

    def same(self, other: Mark) -> bool:
        """The same inode with the same content and mode (the hits aside). A
        directory is the same inode (git writes inside it all the time) with the
        same listing digest where one was taken."""
        if self.kind == "dir" or other.kind == "dir":
            return (self.kind, self.dev, self.ino, self.digest) == (
                other.kind,
                other.dev,
                other.ino,
                other.digest,
            )
        mine = (self.dev, self.ino, self.mode, self.size, self.mtime_ns, self.ctime_ns)
        theirs = (other.dev, other.ino, other.mode, other.size, other.mtime_ns, other.ctime_ns)
        return mine == theirs and self.digest == other.digest


@dataclass(frozen=True, slots=True)
class Hit:
    """Something in a workspace root's tools would run or obey.

    ``action``: ``rewrite`` (remove the new settings from the file, keep the
    rest; the original goes to the quarantine), ``quarantine`` (move the entry
    aside), ``report`` (there before the session, or not ours to move).
    """

    workspace: str
    rel: str
    kind: str
    what: str
    why: str
    new: bool
    action: str
    file_format: str = ""  # "git-config" or "json" for a rewrite
    locators: tuple[tuple[str | int, ...], ...] = ()
    dev: int = 0
    ino: int = 0

    @property
    def path(self) -> str:
        return posixpath.join(self.workspace, self.rel)

    @property
    def remedy(self) -> str:
        """The command that removes it by hand (what ``--audit`` shows). The
        end-of-session scan does the same for what a session wrote."""
        path = shlex.quote(self.path)
        if self.kind in ("new-repo", "watched"):
            return f"review {path} before you run tools there as root"
        if self.file_format == "git-config" and " = " in self.what:
            key = self.what.split(" = ", 1)[0]
            return f"if you did not set it: git config --file {path} --unset-all {shlex.quote(key)}"
        if self.file_format == "json":
            key = self.what.split(" = ", 1)[0]
            return f"if you did not set it, remove {key} from {path}"
        if self.kind == "bare-repo":
            return f"if it is not a repository of yours: mv -- {path} {path}.not-a-repo"
        return f"if you did not put it there, move it out of the workspace: mv -- {path} <dir>"

    def describe(self) -> str:
        when = "written during the session" if self.new else "there before the session"
        return f"{self.path}: {self.what} ({self.why}; {when})"


@dataclass(slots=True)
class Snapshot:
    """The watched paths of each workspace at session start (and what the scan
    learnt about their layout, for the read-only binds)."""

    marks: dict[str, dict[str, Mark]] = field(default_factory=dict)
    layouts: dict[str, policy.WorkspaceLayout] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        marks = {ws: {rel: asdict(m) for rel, m in ms.items()} for ws, ms in self.marks.items()}
        return json.dumps({"format": SNAPSHOT_FORMAT, "marks": marks}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
            raise ValueError("not a workspace snapshot")
        marks = {
            ws: {rel: Mark(**{**m, "hits": tuple(m["hits"])}) for rel, m in ms.items()}
            for ws, ms in data["marks"].items()
        }
        return cls(marks=marks)


@dataclass(slots=True)
class ScanResult:
    """What one scan found (hits), where it stopped early, and the layouts it saw."""

    hits: list[Hit]
    truncated: list[str]
    layouts: dict[str, policy.WorkspaceLayout] = field(default_factory=dict)
    marks: dict[str, dict[str, Mark]] = field(default_factory=dict)  # as a snapshot has them

    @property
    def to_neutralize(self) -> list[Hit]:
        return [h for h in self.hits if h.action != "report"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a workspace walk saw that root's tools run or obey: what it is, why
    it matters, and what to do when it is new (``action``)."""

    rel: str
    kind: str
    what: str
    why: str
    action: str  # what to do when new
    identity: str = ""  # a setting's key=value; "" for the file itself
    file_format: str = ""
    locator: tuple[str | int, ...] = ()
    dev: int = 0
    ino: int = 0


def metadata_path(data: bytes) -> str | None:
    # git's read of a .git file's path or a commondir: CR/LF stripped from the
    # end of the file only, the path ends at the first NUL.
    data = data.rstrip(b"\r\n").split(b"\0", 1)[0]
    return data.decode("utf-8", "surrogateescape") if data else None


def entry_kind(entry: os.DirEntry[str]) -> str:
    return fdwalk.kind_of(entry.stat(follow_symlinks=False).st_mode)


def dir_kinds(dir_fd: int, name: str) -> dict[str, str]:
    """The names in directory ``name`` of ``dir_fd`` (opened without following links),
    each with its kind (:func:`entry_kind`)."""
    fd = fdwalk.open_dir_at(dir_fd, name)
    try:
        with os.scandir(fd) as it:
            return {e.name: entry_kind(e) for e in it}
    finally:
        os.close(fd)
