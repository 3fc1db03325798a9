"""Neutralize what the end-of-session scan found: move it aside, never delete it.

Where things go. The quarantine is a directory the agent cannot write or enter:
first the operator's state directory (``<state>/quarantine/<session>/``, made
0700 by the launcher's user), reached with one ``rename`` when the workspace is
on the same mount. When it is not (``EXDEV``), a root-made 0700 directory with
an unguessable name at the top of the workspace
(``.sandbox-setup-quarantine-<random>``): the agent can rename that directory but
not enter it, read it or change what is inside, and the scan skips it. When even
that is another mount, the same kind of directory beside the file. Nothing is
copied across file systems: a rename moves the very inode the scan judged.

What is done. A hook, a ``.git`` pointer, a symlink, a bare repository's
``HEAD``, an unreadable file: moved aside whole. A config file or a Claude
settings file that also holds the operator's own settings: the original is moved
to the quarantine and a copy without the new dangerous settings takes its place
(same owner and mode; for a git config every other line is kept byte for byte,
and the result is parsed again to prove only those settings went). If the copy
cannot be proven, the whole file is moved aside instead.

What is told. One line per action for stderr, with the restore command, and a
``manifest.json`` in the quarantine listing the same. Root reads an existing
manifest back (it merges into it) and the operator pastes its restore commands, so
the quarantine and every manifest in it pass the trust rule of
:mod:`sandbox_setup.policy.trust` first (:func:`check_quarantine_trust`): a launch
refuses (exit 3) naming the file and the fix before it writes anything. The line quotes names the
agent chose: each is shown through :func:`~sandbox_setup.base.printable.printable`
(invariant 15), and the restore command quotes them as bash reads them back
(:func:`~sandbox_setup.base.printable.shell_word`); the manifest keeps them exact.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base import fdwalk
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.pathfacts import resolved_chain
from sandbox_setup.base.printable import printable, shell_word
from sandbox_setup.boundary.scan import QUARANTINE_NAME, Hit
from sandbox_setup.policy.claude_project import (
    judge_claude_settings,
    judge_mcp_json,
    without_settings,
)
from sandbox_setup.policy.config_hit import ConfigHit
from sandbox_setup.policy.gitconfig import parse_git_config, remove_entries
from sandbox_setup.policy.trust import (
    TrustProblem,
    chain_problems,
    refusal_text,
    state_dir_problems,
    trusted_owners,
)

MANIFEST = "manifest.json"


def check_quarantine_trust(quarantine: Path | str) -> None:
    """The quarantine folder (``<state>/quarantine``), each session's folder in it and
    each ``manifest.json``: owned by root or this user, not group/world-writable, and
    so is every directory above. Raises :class:`RefusedError` naming the first that is
    not, and the fix; a quarantine that does not exist yet passes."""
    owners = trusted_owners(os.geteuid())
    top = Path(os.path.abspath(quarantine))
    if not os.path.lexists(top):
        leaf, dirs = resolved_chain(top)
        _refuse(state_dir_problems(leaf, dirs, owners), "quarantine")
        return
    for path, what, as_dir in _quarantine_paths(top):
        leaf, dirs = resolved_chain(path)
        if as_dir:
            _refuse(state_dir_problems(leaf, dirs, owners), what)
        else:
            _refuse(chain_problems(leaf, dirs, owners), what)


def _quarantine_paths(top: Path) -> list[tuple[Path, str, bool]]:
    found = [(top, "quarantine", True)]
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return found  # the trust check of top names what is wrong with it
    for name in names:
        session = top / name
        if os.path.islink(session) or not os.path.isdir(session):
            found.append((session, "quarantine", True))  # refused: not a directory
            continue
        found.append((session, "quarantine", True))
        manifest = session / MANIFEST
        if os.path.lexists(manifest):
            found.append((manifest, "quarantine manifest", False))
    return found


def _refuse(problems: list[TrustProblem], what: str) -> None:
    for problem in problems:
        raise RefusedError(
            f"{refusal_text(problem, what)}; root reads it back and its restore commands "
            "are pasted as root. Nothing was written"
        )


@dataclass(frozen=True, slots=True)
class Neutralized:
    """One action on one path, and the line that tells the operator."""

    path: str
    done: bool
    line: str
    quarantined: str | None = None


class _Quarantine:
    """Where moved files go: the primary directory, else a fallback by mount."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.fd: int | None = None
        self.counter = 0
        self.entries: list[dict[str, object]] = []
        self.fallbacks: dict[tuple[int, int], tuple[int, str]] = {}

    def open(self) -> int:
        if self.fd is None:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            fd = os.open(self.directory, fdwalk.DIR_FLAGS)
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or st.st_mode & 0o077:
                os.close(fd)
                raise OSError(errno.EPERM, "not a private directory of this user", self.directory)
            self.fd = fd
            self.counter = len(os.listdir(fd))
        return self.fd

    def name_for(self, original: str) -> str:
        self.counter += 1
        return f"{self.counter:03d}-{os.path.basename(original) or 'entry'}"

    def fallback(self, dir_fd: int, where: str) -> tuple[int, str]:
        """A fresh root-made 0700 directory in ``dir_fd`` (same mount as it)."""
        st = os.fstat(dir_fd)
        key = (st.st_dev, st.st_ino)
        if key not in self.fallbacks:
            name = f"{QUARANTINE_NAME}-{os.urandom(6).hex()}"
            os.mkdir(name, 0o700, dir_fd=dir_fd)
            fd = os.open(name, fdwalk.DIR_FLAGS, dir_fd=dir_fd)
            os.fchmod(fd, 0o700)
            self.fallbacks[key] = (fd, os.path.join(where, name))
        return self.fallbacks[key]

    def move(self, dir_fd: int, name: str, original: str, top_fd: int, top: str) -> str:
        """Rename ``name`` in ``dir_fd`` into the quarantine; returns where it went."""
        primary = self.open()
        qname = self.name_for(original)
        try:
            os.rename(name, qname, src_dir_fd=dir_fd, dst_dir_fd=primary)
            return os.path.join(self.directory, qname)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        for fallback_dir, where in ((top_fd, top), (dir_fd, os.path.dirname(original))):
            fd, path = self.fallback(fallback_dir, where)
            try:
                os.rename(name, qname, src_dir_fd=dir_fd, dst_dir_fd=fd)
                return os.path.join(path, qname)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
        raise OSError(errno.EXDEV, "no quarantine on the same mount", original)

    def record(self, original: str, moved_to: str, action: str, found: Sequence[Hit]) -> None:
        self.entries.append(
            {
                "original": original,
                "quarantined": moved_to,
                "action": action,
                "found": [{"what": h.what, "why": h.why, "kind": h.kind} for h in found],
                "restore": restore_command(moved_to, original),
                "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )

    def close(self) -> None:
        if self.entries:
            self._write_manifest()
        for fd, _path in self.fallbacks.values():
            os.close(fd)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _write_manifest(self) -> None:
        fd = self.open()
        manifest = os.path.join(self.directory, MANIFEST)
        if os.path.lexists(manifest):
            # Root merges the old entries into what it writes: the rule first.
            leaf, dirs = resolved_chain(Path(os.path.abspath(manifest)))
            _refuse(chain_problems(leaf, dirs, trusted_owners(os.geteuid())), "quarantine manifest")
        old: list[object] = []
        existing = fdwalk.read_file_at(fd, MANIFEST, 16 << 20)
        if existing is not None:
            try:
                loaded = json.loads(existing.data)
                old = loaded.get("entries", []) if isinstance(loaded, dict) else []
            except ValueError:
                old = []
        data = json.dumps({"format": 1, "entries": old + self.entries}, indent=2) + "\n"
        tmp = f".{MANIFEST}.{os.urandom(4).hex()}"
        wfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            os.write(wfd, data.encode())
            os.fsync(wfd)
        finally:
            os.close(wfd)
        os.rename(tmp, MANIFEST, src_dir_fd=fd, dst_dir_fd=fd)


def restore_command(quarantined: str, original: str) -> str:
    return f"mv -- {shell_word(quarantined)} {shell_word(original)}"


def _open_parent(top_fd: int, rel: str) -> tuple[int, str]:
    parent, _, leaf = rel.rpartition("/")
    return fdwalk.open_dir_path(top_fd, parent or "."), leaf


def _still_there(dir_fd: int, name: str, hit: Hit) -> os.stat_result | None:
    st = fdwalk.lstat_at(dir_fd, name)
    if st is None:
        return None
    if hit.ino and (st.st_dev, st.st_ino) != (hit.dev, hit.ino):
        return None
    return st


def _summary(hits: Sequence[Hit]) -> str:
    first = hits[0]
    more = f" and {len(hits) - 1} more" if len(hits) > 1 else ""
    return f"{printable(first.what)}: {printable(first.why)}{more}"


def _cleaned(hits: Sequence[Hit], data: bytes) -> bytes | None:
    """The file without the settings of ``hits``, proven; None when it cannot be."""
    fmt = hits[0].file_format
    if fmt == "git-config":
        text = data.decode("utf-8", "surrogateescape")
        starts = [int(loc[0]) for h in hits for loc in h.locators if loc]
        before = parse_git_config(text)
        if before.error is not None:
            return None
        after_text = remove_entries(text, starts)
        after = parse_git_config(after_text)
        dropped = set(starts)
        kept = [(e.key, e.value) for e in before.entries if e.start not in dropped]
        if after.error is not None or [(e.key, e.value) for e in after.entries] != kept:
            return None
        return after_text.encode("utf-8", "surrogateescape")
    if fmt == "json":
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError:
            return None
        config_hits = [
            ConfigHit(h.what, None, h.why, locator=loc) for h in hits for loc in h.locators
        ]
        cleaned = without_settings(doc, config_hits)
        judge = judge_mcp_json if hits[0].kind == "mcp" else judge_claude_settings
        left = {h.locator for h in judge(cleaned)}
        if left & {h.locator for h in config_hits}:
            return None
        return (json.dumps(cleaned, indent=2) + "\n").encode()
    return None


def _write_beside(dir_fd: int, name: str, data: bytes, st: os.stat_result) -> str:
    tmp = f".{name}.sandbox-setup-{os.urandom(4).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        os.write(fd, data)
        if os.geteuid() == 0:
            os.fchown(fd, st.st_uid, st.st_gid)
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp


def _neutralize_one(q: _Quarantine, top_fd: int, hits: Sequence[Hit], rewrite: bool) -> Neutralized:
    hit = hits[0]
    path = hit.path
    shown = printable(path)  # for the line; the manifest and the moves use the name
    try:
        dir_fd, name = _open_parent(top_fd, hit.rel)
    except OSError as exc:
        return Neutralized(path, False, f"could not neutralize {shown}: {exc.strerror}")
    try:
        st = _still_there(dir_fd, name, hit)
        if st is None:
            return Neutralized(path, False, f"left {shown} alone: it changed after the scan")
        cleaned = None
        if rewrite:
            content = fdwalk.read_file_at(dir_fd, name, 1 << 20)
            if content is not None and content.complete:
                cleaned = _cleaned(hits, content.data)
        tmp = _write_beside(dir_fd, name, cleaned, st) if cleaned is not None else None
        try:
            moved = q.move(dir_fd, name, path, top_fd, hit.workspace)
        except BaseException:
            if tmp is not None:
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        restore = restore_command(moved, path)
        if tmp is not None:
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            q.record(path, moved, "rewritten", hits)
            keys = "; ".join(
                f"{printable(h.what.split(' = ', 1)[0])} ({printable(h.why)})" for h in hits
            )
            line = (
                f"removed from {shown}: {keys}; every other setting is kept; "
                f"the original is at {printable(moved)}; restore: {restore}"
            )
        else:
            q.record(path, moved, "moved", hits)
            line = (
                f"quarantined {shown} ({_summary(hits)}) -> {printable(moved)}; restore: {restore}"
            )
        return Neutralized(path, True, line, moved)
    except OSError as exc:
        why = printable(hit.why)
        return Neutralized(path, False, f"could NOT move {shown} aside ({exc.strerror}): {why}")
    finally:
        os.close(dir_fd)


def neutralize_all(hits: Sequence[Hit], quarantine_dir: str) -> list[Neutralized]:
    """Neutralize every hit whose action is not ``report`` (see the module docstring)."""
    by_file: dict[tuple[str, str], list[Hit]] = {}
    for hit in hits:
        if hit.action in ("quarantine", "rewrite"):
            by_file.setdefault((hit.workspace, hit.rel), []).append(hit)
    q = _Quarantine(quarantine_dir)
    done: list[Neutralized] = []
    moved: list[str] = []
    try:
        # Shallow paths first: once a directory's entry is moved, what was below it
        # went with it.
        for (workspace, rel), group in sorted(by_file.items(), key=lambda kv: kv[0][1].count("/")):
            if any(rel.startswith(m + "/") for m in moved):
                continue
            try:
                top = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as exc:
                line = f"could not open {printable(workspace)}: {exc.strerror}"
                done.append(Neutralized(group[0].path, False, line))
                continue
            try:
                rewrite = all(h.action == "rewrite" for h in group)
                result = _neutralize_one(q, top, group, rewrite)
            finally:
                os.close(top)
            if result.done:
                moved.append(rel)
            done.append(result)
    finally:
        q.close()
    return done


def neutralize(hits: Sequence[Hit], quarantine_dir: str) -> list[str]:
    """:func:`neutralize_all`, as the lines to print on stderr."""
    return [n.line for n in neutralize_all(hits, quarantine_dir)]
