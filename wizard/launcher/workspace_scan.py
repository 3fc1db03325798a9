"""The end-of-session scan: what the agent left in a workspace that root's tools
would run, found before the launcher hands the terminal back.

``snapshot()`` runs when a session starts, ``scan(before=snapshot)`` when it
ends; ``--audit`` runs ``scan(before=None)``. Both walk each workspace by file
descriptor (:mod:`wizard.base.fdwalk`: no symlink followed, nothing but regular
files and directories opened, bounded), find git repositories the way git does
(``.git`` directories, ``.git`` files with ``gitdir:``, ``commondir``, linked
worktrees under ``.git/worktrees``, submodules under ``.git/modules``, bare
repository layouts), and judge what they hold with :mod:`wizard.policy.workspace`.

A finding is *new* when it appeared or changed since the snapshot (always, with
no snapshot). New findings are neutralized by :mod:`wizard.launcher.quarantine`;
findings that were there when the session started are only reported: they are
the operator's own (a git-lfs filter, a pre-commit hook), and the audit shows them.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePosixPath

from wizard.base import fdwalk
from wizard.policy import workspace as policy
from wizard.policy.git_danger import ConfigContext
from wizard.policy.gitconfig import hooks_path, included_files

SNAPSHOT_FORMAT = "sandbox-setup-workspace-snapshot-1"
QUARANTINE_NAME = ".sandbox-setup-quarantine"
MAX_FILE = 1 << 20  # git accepts a .git file up to 1 MiB; configs are far smaller
MAX_GIT_ENTRIES = 20_000  # hooks, worktrees and modules listed per workspace
MAX_INCLUDE_DEPTH = 10  # git's own include depth limit
_WATCHED_DIRS = (".vscode", ".idea", ".claude/commands", ".claude/agents", ".claude/skills")


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
        if self.action != "report":
            return "sandbox-launch moves it aside when the session ends; review the quarantine"
        if self.file_format == "git-config" and "=" in self.what:
            key = self.what.split("=", 1)[0].strip()
            return f"if you did not set it: git config --file {self.path} --unset-all {key}"
        return f"if you did not put it there, move it away: mv -- {self.path} <somewhere safe>"

    def describe(self) -> str:
        when = "written during the session" if self.new else "there before the session"
        return f"{self.path}: {self.what} ({self.why}; {when})"


@dataclass
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


@dataclass
class ScanResult:
    hits: list[Hit]
    truncated: list[str]
    layouts: dict[str, policy.WorkspaceLayout] = field(default_factory=dict)

    @property
    def to_neutralize(self) -> list[Hit]:
        return [h for h in self.hits if h.action != "report"]


@dataclass(frozen=True)
class _Finding:
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


def _metadata_path(data: bytes) -> str | None:
    # git's read of a .git file's path or a commondir: CR/LF stripped from the
    # end of the file only, the path ends at the first NUL.
    data = data.rstrip(b"\r\n").split(b"\0", 1)[0]
    return data.decode("utf-8", "surrogateescape") if data else None


class _Discovery:
    """One walk of one workspace: marks, findings and layout facts."""

    def __init__(self, workspace: str, top_fd: int, limits: fdwalk.WalkLimits) -> None:
        self.ws = workspace.rstrip("/") or "/"
        self.top = top_fd
        self.limits = limits
        self.stats = fdwalk.WalkStats()
        self.marks: dict[str, Mark] = {}
        self.findings: list[_Finding] = []
        self.gitdirs: list[policy.GitDirFacts] = []
        self.pointers: list[str] = []
        self.trees: list[policy.TreeFacts] = []
        self.extra: list[tuple[str, str]] = []
        self.seen_gitdirs: set[tuple[int, int]] = set()
        self.git_entries = 0
        self.roots = {posixpath.normpath(self.ws), os.path.realpath(self.ws)}
        self._added: set[tuple[str, str, str]] = set()

    def abspath(self, rel: str) -> str:
        return self.ws if rel == "." else posixpath.join(self.ws, rel)

    def add(self, finding: _Finding) -> None:
        key = (finding.rel, finding.kind, finding.identity)
        if key not in self._added:
            self._added.add(key)
            self.findings.append(finding)

    def inside(self, path: str) -> str | None:
        """``path`` relative to the workspace, or None when it is outside."""
        path = posixpath.normpath(path)
        for root in self.roots:
            if path == root:
                return "."
            if path.startswith(root.rstrip("/") + "/"):
                return path[len(root.rstrip("/")) + 1 :]
        return None

    # -- the walk -------------------------------------------------------------

    def run(self) -> None:
        for visit in fdwalk.walk(self.top, self.limits, self.stats):
            kinds: dict[str, os.DirEntry[str]] = {}
            for entry in visit.entries:
                if entry.name in _INTERESTING:
                    kinds[entry.name] = entry
            if not kinds and visit.rel != ".":
                continue
            self._visit(visit, kinds)
        if self.git_entries > MAX_GIT_ENTRIES:
            self.stats.truncated.append(f"git metadata: stopped after {MAX_GIT_ENTRIES} entries")

    def _visit(self, visit: fdwalk.DirVisit, entries: dict[str, os.DirEntry[str]]) -> None:
        quarantine = entries.get(QUARANTINE_NAME)
        if quarantine is not None and QUARANTINE_NAME in visit.subdirs:
            st = quarantine.stat(follow_symlinks=False)
            if st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700:
                visit.subdirs.remove(QUARANTINE_NAME)  # root's own: what it moved aside
        if "HEAD" in entries and ".git" not in entries:
            kinds = {e.name: _entry_kind(e) for e in visit.entries if e.name in _GITDIR_NAMES}
            if policy.looks_like_git_dir(kinds):
                # git's own directories are judged as a git directory; anything
                # else in there is walked like the rest of the workspace.
                visit.subdirs[:] = [n for n in visit.subdirs if n not in _GIT_OWN_DIRS]
                self._bare(visit)
        dotgit = entries.get(".git")
        is_tree = visit.rel == "."
        if dotgit is not None:
            if ".git" in visit.subdirs:
                visit.subdirs.remove(".git")
            is_tree = True
            self._dotgit(visit, dotgit)
        if is_tree:
            self._tree(visit)
        if ".claude" in entries and _entry_kind(entries[".claude"]) == "dir":
            self._claude_dir(visit)
        mcp = entries.get(".mcp.json")
        if mcp is not None:
            self._json_file(visit.fd, ".mcp.json", visit.join(".mcp.json"), "mcp")
        for name in (".envrc",):
            if name in entries:
                self._watch_file(visit.fd, name, visit.join(name))
        for name in (".vscode", ".idea"):
            if name in entries and _entry_kind(entries[name]) == "dir":
                self._watch_dir(visit.fd, name, visit.join(name))

    # -- work trees and Claude project files -----------------------------------

    def _tree(self, visit: fdwalk.DirVisit) -> None:
        present: dict[str, str] = {}
        missing: set[str] = set()
        wanted = list(policy.TREE_PROTECTED)
        if visit.rel == ".":
            wanted += list(policy.WORKSPACE_DOTFILES)
        for name in wanted:
            for part in _prefixes(name):
                if part in missing:
                    break
                if part in present:
                    continue
                parent, _, leaf = part.rpartition("/")
                try:
                    fd = fdwalk.open_dir_path(visit.fd, parent) if parent else os.dup(visit.fd)
                except OSError:
                    break
                try:
                    st = fdwalk.lstat_at(fd, leaf)
                finally:
                    os.close(fd)
                if st is None:
                    missing.add(part)
                    break
                present[part] = fdwalk.kind_of(st.st_mode)
                if present[part] == "link":
                    rel = visit.join(part)
                    self._symlink(rel, st, "root's tools would follow this symlink")
                    break
        gitmodules = present.get(".gitmodules")
        if gitmodules == "file":
            self._config_file(visit.fd, ".gitmodules", visit.join(".gitmodules"), None, "report")
        self.trees.append(policy.TreeFacts(visit.rel, present, workspace_root=visit.rel == "."))

    def _claude_dir(self, visit: fdwalk.DirVisit) -> None:
        try:
            fd = fdwalk.open_dir_at(visit.fd, ".claude")
        except OSError:
            return
        try:
            for name in ("settings.json", "settings.local.json"):
                rel = visit.join(f".claude/{name}")
                self._json_file(fd, name, rel, "claude-settings")
            self._claude_hooks(fd, visit.join(".claude/hooks"))
            for watched in ("commands", "agents", "skills"):
                self._watch_dir(fd, watched, visit.join(f".claude/{watched}"))
        finally:
            os.close(fd)

    def _claude_hooks(self, claude_fd: int, rel: str) -> None:
        st = fdwalk.lstat_at(claude_fd, "hooks")
        if st is None:
            return
        if stat.S_ISLNK(st.st_mode):
            self._symlink(rel, st, "Claude Code hook scripts would be read through this symlink")
            return
        if not stat.S_ISDIR(st.st_mode):
            return
        try:
            fd = fdwalk.open_dir_at(claude_fd, "hooks")
        except OSError:
            return
        try:
            limits = fdwalk.WalkLimits(max_entries=2000, max_depth=4)
            for visit in fdwalk.walk(fd, limits):
                for entry in visit.entries:
                    if entry.is_dir(follow_symlinks=False):
                        continue
                    entry_rel = f"{rel}/{visit.join(entry.name)}"
                    est = entry.stat(follow_symlinks=False)
                    digest = self._digest(visit.fd, entry.name, est)
                    self.marks[entry_rel] = Mark.of(est, digest)
                    self.add(
                        _Finding(
                            entry_rel,
                            "claude-hook",
                            "a Claude Code hook script",
                            "project hooks root's Claude Code runs can call it",
                            "quarantine",
                            dev=est.st_dev,
                            ino=est.st_ino,
                        )
                    )
        finally:
            os.close(fd)

    def _json_file(self, dir_fd: int, name: str, rel: str, kind: str) -> None:
        st = fdwalk.lstat_at(dir_fd, name)
        if st is None:
            return
        if not stat.S_ISREG(st.st_mode):
            self._symlink(rel, st, "root's Claude Code would read its settings through it")
            return
        try:
            content = fdwalk.read_file_at(dir_fd, name, MAX_FILE)
        except OSError as exc:
            self._unreadable(rel, st, f"could not be read ({exc.strerror})", "report")
            return
        if content is None:
            return
        try:
            if not content.complete:
                raise ValueError("larger than 1 MiB")
            data = json.loads(content.data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            self.marks[rel] = Mark.of(content.st, content.sha256, ("<unreadable>",))
            self._unreadable(rel, content.st, f"not JSON this scan can read ({exc})", "quarantine")
            return
        judge = policy.judge_mcp_json if kind == "mcp" else policy.judge_claude_settings
        hits = judge(data)
        self.marks[rel] = Mark.of(content.st, content.sha256, [h.identity for h in hits])
        for hit in hits:
            self.add(
                _Finding(
                    rel,
                    kind,
                    f"{hit.key} = {hit.value}",
                    hit.why,
                    "rewrite",
                    identity=hit.identity,
                    file_format="json",
                    locator=hit.locator,
                    dev=content.st.st_dev,
                    ino=content.st.st_ino,
                )
            )

    def _watch_file(self, dir_fd: int, name: str, rel: str) -> None:
        st = fdwalk.lstat_at(dir_fd, name)
        if st is None:
            return
        digest = self._digest(dir_fd, name, st)
        self.marks[rel] = Mark.of(st, digest)
        self.add(
            _Finding(
                rel,
                "watched",
                "changed" if stat.S_ISREG(st.st_mode) else f"a {fdwalk.kind_of(st.st_mode)}",
                policy.TREE_PROTECTED.get(posixpath.basename(rel), "root's tools read it"),
                "report",
                dev=st.st_dev,
                ino=st.st_ino,
            )
        )

    def _watch_dir(self, dir_fd: int, name: str, rel: str) -> None:
        st = fdwalk.lstat_at(dir_fd, name)
        if st is None or not stat.S_ISDIR(st.st_mode):
            if st is not None and stat.S_ISLNK(st.st_mode):
                self._symlink(rel, st, "root's tools would follow this symlink")
            return
        try:
            fd = fdwalk.open_dir_at(dir_fd, name)
        except OSError:
            return
        listing = hashlib.sha256()
        try:
            for visit in fdwalk.walk(fd, fdwalk.WalkLimits(max_entries=2000, max_depth=6)):
                for entry in sorted(visit.entries, key=lambda e: e.name):
                    est = entry.stat(follow_symlinks=False)
                    listing.update(
                        f"{visit.join(entry.name)}\0{est.st_ino}\0{est.st_mode}\0"
                        f"{est.st_size}\0{est.st_mtime_ns}\n".encode("utf-8", "surrogateescape")
                    )
        finally:
            os.close(fd)
        self.marks[rel] = Mark.of(st, listing.hexdigest())
        why = policy.TREE_PROTECTED.get(rel.rsplit("/", 2)[-1], "")
        for key, text in policy.TREE_PROTECTED.items():
            if rel == key or rel.endswith("/" + key):
                why = text
        self.add(_Finding(rel, "watched", "changed", why, "report", dev=st.st_dev, ino=st.st_ino))

    # -- git --------------------------------------------------------------------

    def _dotgit(self, visit: fdwalk.DirVisit, entry: os.DirEntry[str]) -> None:
        rel = visit.join(".git")
        st = entry.stat(follow_symlinks=False)
        kind = fdwalk.kind_of(st.st_mode)
        if kind == "dir":
            self._gitdir(visit.fd, ".git", rel, "dotgit", worktree=visit.rel)
        elif kind == "file":
            self._pointer(visit, rel, st)
        elif kind == "link":
            self._symlink(rel, st, "git follows this symlink to a repository")
        else:
            self._unreadable(rel, st, "a .git that is not a file or directory", "quarantine")

    def _pointer(self, visit: fdwalk.DirVisit, rel: str, st: os.stat_result) -> None:
        self.pointers.append(rel)
        content = self._read(visit.fd, ".git", rel, st)
        if content is None:
            return
        self.marks[rel] = Mark.of(content.st, content.sha256)
        if not content.data.startswith(b"gitdir: ") or not content.complete:
            return  # git does not follow it either
        value = _metadata_path(content.data[len(b"gitdir: ") :])
        if value is None:
            return
        target = posixpath.normpath(posixpath.join(self.abspath(visit.rel), value))
        target_rel = self.inside(target)
        if target_rel is None or not self._open_target(target_rel, "target", visit.rel):
            self.add(
                _Finding(
                    rel,
                    "git-pointer",
                    f"gitdir: {value}",
                    "sends root's git to a repository outside the workspace, "
                    "or through a symlink, that this scan cannot vouch for",
                    "quarantine",
                    dev=content.st.st_dev,
                    ino=content.st.st_ino,
                )
            )

    def _open_target(self, target_rel: str, role: str, worktree: str | None) -> bool:
        parent, _, leaf = target_rel.rpartition("/")
        try:
            fd = fdwalk.open_dir_path(self.top, parent or ".")
        except OSError:
            return False
        try:
            st = fdwalk.lstat_at(fd, leaf)
            if st is None or not stat.S_ISDIR(st.st_mode):
                return False
            self._gitdir(fd, leaf, target_rel, role, worktree=worktree)
            return True
        finally:
            os.close(fd)

    def _gitdir(self, parent_fd: int, name: str, rel: str, role: str, worktree: str | None) -> None:
        try:
            fd = fdwalk.open_dir_at(parent_fd, name)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in self.seen_gitdirs:
                return
            self.seen_gitdirs.add((st.st_dev, st.st_ino))
            self._gitdir_fd(fd, st, rel, role, worktree)
        finally:
            os.close(fd)

    def _gitdir_fd(
        self, fd: int, st: os.stat_result, rel: str, role: str, worktree: str | None
    ) -> None:
        try:
            with os.scandir(fd) as it:
                entries = {e.name: e for e in it}
        except OSError:
            return
        self.git_entries += len(entries)
        self.marks[rel] = Mark.of(st)
        self.add(
            _Finding(
                rel,
                "new-repo",
                "a git repository",
                "it appeared (or was replaced) during the session; its config and hooks "
                "were checked",
                "report",
                dev=st.st_dev,
                ino=st.st_ino,
            )
        )
        present = {n: _entry_kind(entries[n]) for n in policy.GITDIR_PROTECTED if n in entries}
        self.gitdirs.append(policy.GitDirFacts(rel, role, present))
        context = ConfigContext(
            workspace=PurePosixPath(self.ws), gitdir=PurePosixPath(self.abspath(rel))
        )
        texts = []
        for config in ("config", "config.worktree"):
            if config in entries:
                text = self._config_file(fd, config, f"{rel}/{config}", context, "rewrite")
                if text is not None:
                    texts.append(text)
        for text in texts:
            self._includes(text, self.abspath(rel), context, depth=1)
        if present.get("hooks") == "dir":
            self._hooks_dir(fd, "hooks", f"{rel}/hooks")
        elif present.get("hooks") == "link":
            self._symlink(
                f"{rel}/hooks",
                entries["hooks"].stat(follow_symlinks=False),
                "git runs hooks from wherever this symlink points",
            )
        hooks_base = self.abspath(rel if role == "bare" or worktree is None else worktree)
        for text in texts:
            self._hooks_path(text, hooks_base)
        if "commondir" in entries:
            self._commondir(fd, entries["commondir"], rel, role, worktree)
        if entries.get("worktrees") is not None and _entry_kind(entries["worktrees"]) == "dir":
            self._listed_gitdirs(fd, "worktrees", f"{rel}/worktrees", "worktree")
        if entries.get("modules") is not None and _entry_kind(entries["modules"]) == "dir":
            self._modules(fd, f"{rel}/modules")

    def _config_file(
        self, dir_fd: int, name: str, rel: str, context: ConfigContext | None, action: str
    ) -> str | None:
        st = fdwalk.lstat_at(dir_fd, name)
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            self._symlink(rel, st, "git reads its settings through this")
            return None
        content = self._read(dir_fd, name, rel, st)
        if content is None:
            return None
        if not content.complete:
            self.marks[rel] = Mark.of(content.st, content.sha256, ("<too large>",))
            self._unreadable(rel, content.st, "larger than 1 MiB: not judged", "quarantine")
            return None
        text = content.data.decode("utf-8", "surrogateescape")
        hits = policy.dangerous_git_config(text, context)
        self.marks[rel] = Mark.of(content.st, content.sha256, [h.identity for h in hits])
        for hit in hits:
            rewrite = action == "rewrite" and hit.kind != "unreadable"
            self.add(
                _Finding(
                    rel,
                    "git-config",
                    f"{hit.key} = {hit.value}" if hit.value is not None else hit.key,
                    hit.why,
                    "rewrite" if rewrite else ("quarantine" if action == "rewrite" else action),
                    identity=hit.identity,
                    file_format="git-config",
                    locator=hit.locator,
                    dev=content.st.st_dev,
                    ino=content.st.st_ino,
                )
            )
        return text

    def _includes(self, text: str, base: str, context: ConfigContext, depth: int) -> None:
        if depth > MAX_INCLUDE_DEPTH:
            return
        for value in included_files(text):
            if value.startswith("~"):
                continue
            rel = self.inside(posixpath.join(base, value))
            if rel is None or rel == "." or rel in self.marks:
                continue
            parent, _, leaf = rel.rpartition("/")
            try:
                fd = fdwalk.open_dir_path(self.top, parent or ".")
            except OSError:
                continue
            try:
                st = fdwalk.lstat_at(fd, leaf)
                if st is not None:
                    self.extra.append((rel, fdwalk.kind_of(st.st_mode)))
                included = self._config_file(fd, leaf, rel, context, "rewrite")
            finally:
                os.close(fd)
            if included is not None:
                self._includes(included, posixpath.dirname(self.abspath(rel)), context, depth + 1)

    def _hooks_path(self, text: str, base: str) -> None:
        value = hooks_path(text)
        if value is None or value.startswith("~"):
            return
        rel = self.inside(posixpath.join(base, value))
        if rel is None or rel == "." or rel in self.marks:
            return
        parent, _, leaf = rel.rpartition("/")
        try:
            fd = fdwalk.open_dir_path(self.top, parent or ".")
        except OSError:
            return
        try:
            st = fdwalk.lstat_at(fd, leaf)
            if st is None:
                return
            self.extra.append((rel, fdwalk.kind_of(st.st_mode)))
            if stat.S_ISDIR(st.st_mode):
                self.marks[rel] = Mark.of(st)
                self._hooks_dir(fd, leaf, rel)
        finally:
            os.close(fd)

    def _hooks_dir(self, dir_fd: int, name: str, rel: str) -> None:
        try:
            fd = fdwalk.open_dir_at(dir_fd, name)
        except OSError:
            return
        try:
            with os.scandir(fd) as it:
                entries = list(it)
            self.git_entries += len(entries)
            for entry in entries:
                if entry.name.endswith(".sample"):
                    continue
                est = entry.stat(follow_symlinks=False)
                if not policy.is_hook_that_runs(entry.name, est.st_mode):
                    continue
                entry_rel = f"{rel}/{entry.name}"
                self.marks[entry_rel] = Mark.of(est, self._digest(fd, entry.name, est))
                shown = "a symlink" if stat.S_ISLNK(est.st_mode) else "an executable file"
                self.add(
                    _Finding(
                        entry_rel,
                        "hook",
                        f"git hook {entry.name} ({shown})",
                        f"git runs it as root on the {entry.name} event",
                        "quarantine",
                        dev=est.st_dev,
                        ino=est.st_ino,
                    )
                )
        except OSError:
            return
        finally:
            os.close(fd)

    def _commondir(
        self, gitdir_fd: int, entry: os.DirEntry[str], rel: str, role: str, worktree: str | None
    ) -> None:
        crel = f"{rel}/commondir"
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            self._symlink(crel, st, "git follows it to another git directory")
            return
        content = self._read(gitdir_fd, "commondir", crel, st)
        if content is None:
            return
        self.marks[crel] = Mark.of(content.st, content.sha256)
        value = _metadata_path(content.data) if content.complete else None
        if value is None:
            return
        target = posixpath.normpath(posixpath.join(self.abspath(rel), value))
        target_rel = self.inside(target)
        if target_rel == rel:
            return  # "." (what the sandbox's placeholder holds): git's own directory
        if target_rel is not None and self._open_target(target_rel, "common", worktree):
            if role in ("target", "worktree"):
                return  # a linked worktree's git directory: commondir is how it works
            why = (
                "sends root's git to another directory for its config, hooks and objects; "
                "a repository's own .git has no commondir"
            )
        else:
            why = (
                "sends root's git for its config and hooks to a directory outside the "
                "workspace, or through a symlink, that this scan cannot vouch for"
            )
        self.add(
            _Finding(
                crel,
                "commondir",
                f"commondir: {value}",
                why,
                "quarantine",
                dev=content.st.st_dev,
                ino=content.st.st_ino,
            )
        )

    def _listed_gitdirs(self, parent_fd: int, name: str, rel: str, role: str) -> None:
        try:
            fd = fdwalk.open_dir_at(parent_fd, name)
        except OSError:
            return
        try:
            with os.scandir(fd) as it:
                names = [e.name for e in it if e.is_dir(follow_symlinks=False)]
            self.git_entries += len(names)
            for child in sorted(names):
                if self.git_entries > MAX_GIT_ENTRIES:
                    return
                self._gitdir(fd, child, f"{rel}/{child}", role, worktree=None)
        finally:
            os.close(fd)

    def _modules(self, gitdir_fd: int, rel: str) -> None:
        # A submodule's name is a path (vendor/lib), so its git directory can sit
        # several levels down; anything that is not a git directory is a segment.
        try:
            fd = fdwalk.open_dir_at(gitdir_fd, "modules")
        except OSError:
            return
        try:
            limits = fdwalk.WalkLimits(max_entries=MAX_GIT_ENTRIES, max_depth=16)
            for visit in fdwalk.walk(fd, limits):
                self.git_entries += len(visit.entries)
                for entry in list(visit.entries):
                    if entry.name not in visit.subdirs:
                        continue
                    try:
                        names = _names(visit.fd, entry.name)
                    except OSError:
                        continue
                    if names & _MODULE_MARKERS:
                        visit.subdirs.remove(entry.name)
                        module_rel = f"{rel}/{visit.join(entry.name)}"
                        self._gitdir(visit.fd, entry.name, module_rel, "module", worktree=None)
        finally:
            os.close(fd)

    def _bare(self, visit: fdwalk.DirVisit) -> None:
        st = os.fstat(visit.fd)
        if (st.st_dev, st.st_ino) in self.seen_gitdirs:
            return
        self.seen_gitdirs.add((st.st_dev, st.st_ino))
        head = next(e for e in visit.entries if e.name == "HEAD")
        hst = head.stat(follow_symlinks=False)
        self.add(
            _Finding(
                f"{visit.rel}/HEAD",
                "bare-repo",
                "a bare repository layout (HEAD, objects/, refs/)",
                "git takes this directory for a repository when run inside it "
                "(safe.bareRepository defaults to all) and obeys its config",
                "quarantine",
                dev=hst.st_dev,
                ino=hst.st_ino,
            )
        )
        self._gitdir_fd(visit.fd, st, visit.rel, "bare", worktree=None)

    # -- helpers ------------------------------------------------------------------

    def _read(
        self, dir_fd: int, name: str, rel: str, st: os.stat_result
    ) -> fdwalk.FileContent | None:
        try:
            return fdwalk.read_file_at(dir_fd, name, MAX_FILE)
        except OSError as exc:
            self._unreadable(rel, st, f"could not be read ({exc.strerror})", "report")
            return None

    def _digest(self, dir_fd: int, name: str, st: os.stat_result) -> str | None:
        if not stat.S_ISREG(st.st_mode):
            return None
        try:
            content = fdwalk.read_file_at(dir_fd, name, MAX_FILE)
        except OSError:
            return None
        return content.sha256 if content is not None else None

    def _symlink(self, rel: str, st: os.stat_result, why: str) -> None:
        self.marks[rel] = Mark.of(st)
        kind = fdwalk.kind_of(st.st_mode)
        what = "a symlink" if kind == "link" else f"a {kind} where a file is expected"
        self.add(_Finding(rel, "symlink", what, why, "quarantine", dev=st.st_dev, ino=st.st_ino))

    def _unreadable(self, rel: str, st: os.stat_result, what: str, action: str) -> None:
        self.marks.setdefault(rel, Mark.of(st, None, ("<unreadable>",)))
        self.add(
            _Finding(
                rel,
                "unreadable",
                what,
                "root's tools may still read it",
                action,
                dev=st.st_dev,
                ino=st.st_ino,
            )
        )

    def layout(self) -> policy.WorkspaceLayout:
        return policy.WorkspaceLayout(
            gitdirs=tuple(self.gitdirs),
            pointers=tuple(self.pointers),
            trees=tuple(self.trees),
            extra=tuple(self.extra),
        )


_INTERESTING = frozenset(
    {".git", "HEAD", ".claude", ".mcp.json", ".envrc", ".vscode", ".idea", QUARANTINE_NAME}
)
_GITDIR_NAMES = frozenset({"HEAD", "objects", "refs", "commondir", "config", "hooks"})
_MODULE_MARKERS = frozenset({"HEAD", "config", "hooks", "objects"})
# What git keeps in a git directory (judged through it, never walked as files).
_GIT_OWN_DIRS = frozenset(
    {"objects", "refs", "logs", "hooks", "info", "worktrees", "modules", "lfs", "rr-cache"}
)


def _entry_kind(entry: os.DirEntry[str]) -> str:
    return fdwalk.kind_of(entry.stat(follow_symlinks=False).st_mode)


def _prefixes(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _names(dir_fd: int, name: str) -> set[str]:
    fd = fdwalk.open_dir_at(dir_fd, name)
    try:
        with os.scandir(fd) as it:
            return {e.name for e in it}
    finally:
        os.close(fd)


def _discover(workspace: str, limits: fdwalk.WalkLimits) -> _Discovery | None:
    try:
        # The configured workspace path is the operator's (a symlink there is
        # theirs and is followed, as bwrap binds its real path); below it, nothing is.
        top = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = _Discovery(workspace, top, limits)
        found.run()
        return found
    finally:
        os.close(top)


def _hit(ws: str, f: _Finding, new: bool) -> Hit:
    return Hit(
        workspace=ws,
        rel=f.rel,
        kind=f.kind,
        what=f.what,
        why=f.why,
        new=new,
        action=f.action if new else "report",
        file_format=f.file_format,
        locators=(f.locator,) if f.locator else (),
        dev=f.dev,
        ino=f.ino,
    )


def _is_new(f: _Finding, now: dict[str, Mark], before: dict[str, Mark] | None) -> bool:
    if before is None:
        return True
    old = before.get(f.rel)
    if old is None:
        return True
    if f.identity:
        return f.identity not in old.hits
    current = now.get(f.rel)
    return current is None or not old.same(current)


def _judge(ws: str, found: _Discovery, before: Snapshot | None) -> list[Hit]:
    old = before.marks.get(ws) if before is not None else None
    if before is not None and old is None:
        old = {}  # a workspace added since: everything in it is new
    hits = []
    for f in found.findings:
        new = _is_new(f, found.marks, old)
        if f.kind in ("new-repo", "watched"):
            if old is None or not new:
                continue  # news only against a snapshot
            appeared = f.rel not in old
            if f.kind == "new-repo":
                what = "a git repository " + ("appeared" if appeared else "was replaced")
            else:
                what = "appeared" if appeared else "changed"
            f = replace(f, what=f"{what} during the session")
        hits.append(_hit(ws, f, new))
    return hits


def snapshot(workspaces: Sequence[str], limits: fdwalk.WalkLimits | None = None) -> Snapshot:
    """The watched paths of ``workspaces`` now (session start), their layout for the
    read-only binds, and what is there already (all of it reported, none moved)."""
    result = Snapshot()
    for ws in workspaces:
        found = _discover(str(ws), limits or fdwalk.WalkLimits())
        if found is None:
            continue
        key = found.ws
        result.marks[key] = found.marks
        result.layouts[key] = found.layout()
        result.hits += [
            _hit(key, f, new=False) for f in found.findings if f.kind not in ("new-repo", "watched")
        ]
        result.truncated += [f"{key}: {t}" for t in found.stats.truncated]
    return result


def scan(
    workspaces: Sequence[str],
    before: Snapshot | None,
    limits: fdwalk.WalkLimits | None = None,
) -> ScanResult:
    """What in ``workspaces`` root's tools would run or obey; new since ``before``
    (or everything, with None) marked for neutralizing."""
    hits: list[Hit] = []
    truncated: list[str] = []
    layouts: dict[str, policy.WorkspaceLayout] = {}
    for ws in workspaces:
        found = _discover(str(ws), limits or fdwalk.WalkLimits())
        if found is None:
            continue
        hits += _judge(found.ws, found, before)
        layouts[found.ws] = found.layout()
        truncated += [f"{found.ws}: {t}" for t in found.stats.truncated]
    return ScanResult(hits=hits, truncated=truncated, layouts=layouts)
