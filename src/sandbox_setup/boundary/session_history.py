"""The host's recent sessions: a small, bounded history written at each session's end.

``sessions.json`` beside the workspaces' trusted state
(:mod:`sandbox_setup.boundary.trust_record`: root's, 0700 directory, the file 0600,
written atomically under the record's ``lock``), the last :data:`KEEP` sessions, oldest
first. Each says whose it was (the operator's state directory, the launcher config,
the agent, the mode), when it started and ended, its launcher's pid (which the egress
proxy's log records carry, so ``sandbox-setup --status`` finds the session's refusals),
its exit status and what its end check did (typed: moved aside, complete or not).

Read by ``sandbox-setup --status``; a history that cannot be read is no history (the
status says so), never a refusal: nothing acts on it.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from sandbox_setup.boundary.trust_record import write_private

HISTORY = "sessions.json"
HISTORY_FORMAT = "sandbox-setup-session-history-1"
KEEP = 50  # sessions kept: the oldest go first
READ_LIMIT = 1024 * 1024  # a history is a few kB; more is not one this code wrote


@dataclass(frozen=True)
class EndCheck:
    """What a session's end check did: files moved aside (into ``quarantine``), and
    whether it saw every workspace whole."""

    complete: bool
    moved_aside: int
    quarantine: str | None


@dataclass(frozen=True)
class PastSession:
    session: str
    pid: int
    state: str  # the operator's state directory (where the egress log is)
    config: str  # the launcher config it ran with ("" when unknown)
    agent: str
    mode: str
    workspaces: tuple[str, ...]
    started: float  # seconds since the epoch
    ended: float
    exit_code: int | None  # None: the session did not run (a refused launch)
    end_check: EndCheck | None  # None: the end check failed


def _entry(raw: object) -> PastSession | None:
    if not isinstance(raw, dict):
        return None
    try:
        check = raw.get("end_check")
        end_check = (
            EndCheck(bool(check["complete"]), int(check["moved_aside"]), check.get("quarantine"))
            if isinstance(check, dict)
            else None
        )
        code = raw.get("exit_code")
        return PastSession(
            session=str(raw["session"]),
            pid=int(raw["pid"]),
            state=str(raw["state"]),
            config=str(raw.get("config", "")),
            agent=str(raw.get("agent", "")),
            mode=str(raw.get("mode", "")),
            workspaces=tuple(str(w) for w in raw["workspaces"]),
            started=float(raw["started"]),
            ended=float(raw["ended"]),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            end_check=end_check,
        )
    except (KeyError, TypeError, ValueError):
        return None


def read_history(directory: Path) -> list[PastSession]:
    """The recorded sessions, oldest first; [] when there is no history. A file that is
    not this uid's regular file, is writable by others or is not a history raises
    ``ValueError`` (naming it)."""
    path = directory / HISTORY
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise ValueError(f"{path} is not a regular file of uid {os.geteuid()}")
        if info.st_mode & 0o022:
            raise ValueError(f"{path} is group- or world-writable")
        data = os.read(fd, READ_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > READ_LIMIT:
        raise ValueError(f"{path} is larger than a session history")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != HISTORY_FORMAT:
        raise ValueError(f"{path}: not a {HISTORY_FORMAT} history")
    sessions = doc.get("sessions")
    if not isinstance(sessions, list):
        raise ValueError(f"{path}: no list of sessions")
    return [s for s in (_entry(raw) for raw in sessions) if s is not None]


def append_history(directory: Path, session: PastSession, keep: int = KEEP) -> None:
    """Add ``session`` (the caller holds the record's lock); the last ``keep`` stay.
    A history that cannot be read is started anew."""
    try:
        sessions = read_history(directory)
    except ValueError:
        sessions = []
    sessions = [*sessions, session][-keep:]
    doc = {"format": HISTORY_FORMAT, "sessions": [asdict(s) for s in sessions]}
    write_private(directory / HISTORY, json.dumps(doc, sort_keys=True))
