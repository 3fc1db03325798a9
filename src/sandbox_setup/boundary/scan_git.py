"""Finding git repositories in a workspace the way git finds them, by fd, and
judging what they hold: ``.git`` directories and ``gitdir:`` files, ``commondir``,
linked worktrees (``.git/worktrees/*``), submodules (``.git/modules/**``), bare
repository layouts, included configs and ``core.hooksPath`` directories inside
the workspace. The walk itself is :mod:`sandbox_setup.boundary.scan`.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from pathlib import PurePosixPath

from sandbox_setup.base import fdwalk
from sandbox_setup.boundary.scan_model import (
    MAX_FILE,
    MAX_GIT_ENTRIES,
    MAX_INCLUDE_DEPTH,
    Finding,
    Mark,
    dir_kinds,
    entry_kind,
    metadata_path,
)
from sandbox_setup.policy import workspace as policy
from sandbox_setup.policy.git_danger import ConfigContext
from sandbox_setup.policy.git_inert import unlisted_entries
from sandbox_setup.policy.gitconfig import hooks_path, included_files

# An operation in progress: what `git <op> --continue` reads and runs (the todo
# list's exec lines, the merge strategy, the editor).
SEQUENCER_STATE = ("rebase-merge", "rebase-apply", "sequencer")


class GitDiscovery:
    """The state of one walk of one workspace (marks, findings, layout facts), and
    everything it does inside git repositories."""

    def __init__(self, workspace: str, top_fd: int, limits: fdwalk.WalkLimits) -> None:
        self.ws = workspace.rstrip("/") or "/"
        self.top = top_fd
        self.limits = limits
        self.stats = fdwalk.WalkStats()
        self.marks: dict[str, Mark] = {}
        self.findings: list[Finding] = []
        self.gitdirs: list[policy.GitDirFacts] = []
        self.pointers: list[str] = []
        self.trees: list[policy.TreeFacts] = []
        self.extra: list[tuple[str, str]] = []
        self.seen_gitdirs: set[tuple[int, int]] = set()
        self.git_entries = 0
        self.roots = {posixpath.normpath(self.ws), os.path.realpath(self.ws)}
        self._added: set[tuple[str, str, str, tuple[str | int, ...]]] = set()

    def incomplete(self) -> list[str]:
        """What this walk could not see: where it stopped, what it could not read."""
        return [*self.stats.truncated, *(f"could not read {e}" for e in self.stats.errors)]

    def abspath(self, rel: str) -> str:
        return self.ws if rel == "." else posixpath.join(self.ws, rel)

    def add(self, finding: Finding) -> None:
        # Two entries with the same key and value are two findings (each has
        # its own locator, and a rewrite must remove both).
        key = (finding.rel, finding.kind, finding.identity, finding.locator)
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
        value = metadata_path(content.data[len(b"gitdir: ") :])
        if value is None:
            return
        target = posixpath.normpath(posixpath.join(self.abspath(visit.rel), value))
        target_rel = self.inside(target)
        if target_rel is None or not self._open_target(target_rel, "target", visit.rel):
            self.add(
                Finding(
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
        if role != "bare":  # a bare layout is a directory of the walk: counted there
            self.git_entries += len(entries)
        self.marks[rel] = Mark.of(st)
        self.add(
            Finding(
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
        present = {n: entry_kind(entries[n]) for n in policy.GITDIR_PROTECTED if n in entries}
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
        for state in SEQUENCER_STATE:
            if state in entries:
                self._sequencer(fd, state, f"{rel}/{state}")
        if "commondir" in entries:
            self._commondir(fd, entries["commondir"], rel, role, worktree)
        self._special_files(fd, entries, rel)
        if entries.get("worktrees") is not None and entry_kind(entries["worktrees"]) == "dir":
            self._listed_gitdirs(fd, "worktrees", f"{rel}/worktrees", "worktree")
        if entries.get("modules") is not None and entry_kind(entries["modules"]) == "dir":
            self._modules(fd, f"{rel}/modules")

    def _special_files(self, fd: int, entries: dict[str, os.DirEntry[str]], rel: str) -> None:
        """FIFOs, sockets and devices (or symlinks to one) where git opens files: in
        the git directory itself (``HEAD``, ``index``, ``packed-refs``, ``gitdir``...)
        and in the directories it reads (refs, reflogs, objects, info). One already
        judged (a FIFO ``config`` or ``commondir``, a bare layout's ``HEAD``) is not
        told twice."""
        for name, entry in entries.items():
            if f"{rel}/{name}" not in self.marks:
                self._special_entry(fd, entry, f"{rel}/{name}")
        for name in policy.GIT_READ_DIRS:
            read_dir = entries.get(name)
            if read_dir is None or not read_dir.is_dir(follow_symlinks=False):
                continue
            try:
                sub = fdwalk.open_dir_at(fd, name)
            except OSError:
                continue
            stats = fdwalk.WalkStats()
            try:
                for visit in fdwalk.walk(sub, self.limits, stats):
                    for child in visit.entries:
                        child_rel = f"{rel}/{name}/{visit.join(child.name)}"
                        self._special_entry(visit.fd, child, child_rel)
            finally:
                os.close(sub)
            self.stats.truncated += [f"{rel}/{name}: {t}" for t in stats.truncated]
            self.stats.errors += [f"{rel}/{name}/{e}" for e in stats.errors]

    def _special_entry(self, dir_fd: int, entry: os.DirEntry[str], rel: str) -> None:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return
        kind = fdwalk.kind_of(st.st_mode)
        digest = None
        if kind == "link":
            # git opens through it: judged by what it names now (stat, never open).
            try:
                target = os.stat(entry.name, dir_fd=dir_fd)
            except OSError:
                return  # dangling or a loop: git's open fails as well
            kind = fdwalk.kind_of(target.st_mode)
            digest = f"a symlink to a {kind}"
        if policy.git_metadata_kind_ok(kind):
            return
        self.marks[rel] = Mark.of(st, digest)
        self.add(
            Finding(
                rel,
                "special-file",
                digest or "a FIFO, socket or device in git metadata",
                "git opens it as a regular file: root's git would wait for ever or read "
                "what it gives",
                "quarantine",
                dev=st.st_dev,
                ino=st.st_ino,
            )
        )

    def _sequencer(self, gitdir_fd: int, name: str, rel: str) -> None:
        st = fdwalk.lstat_at(gitdir_fd, name)
        if st is None:
            return
        digest = None
        if stat.S_ISDIR(st.st_mode):
            digest = self._tree_digest(gitdir_fd, name)
        elif stat.S_ISREG(st.st_mode):
            digest = self._digest(gitdir_fd, name, st)
        self.marks[rel] = Mark.of(st, digest)
        self.add(
            Finding(
                rel,
                "sequencer",
                f"an operation in progress ({name}/)",
                "`git rebase --continue`, `git cherry-pick --continue` and `git am "
                "--continue` run its exec lines, strategy and editor as root",
                "quarantine",
                dev=st.st_dev,
                ino=st.st_ino,
            )
        )

    def _tree_digest(self, dir_fd: int, name: str) -> str | None:
        """A digest of every name, type and content below directory ``name``; None
        (never the same as before) when it cannot be read whole."""
        try:
            fd = fdwalk.open_dir_at(dir_fd, name)
        except OSError:
            return None
        digest = hashlib.sha256()
        stats = fdwalk.WalkStats()
        try:
            for visit in fdwalk.walk(fd, fdwalk.WalkLimits(max_entries=2000, max_depth=4), stats):
                for entry in sorted(visit.entries, key=lambda e: e.name):
                    est = entry.stat(follow_symlinks=False)
                    content = self._digest(visit.fd, entry.name, est)
                    digest.update(
                        f"{visit.join(entry.name)}\0{est.st_mode}\0{est.st_size}\0{content}\n".encode(
                            "utf-8", "surrogateescape"
                        )
                    )
        except OSError:
            return None
        finally:
            os.close(fd)
        return None if stats.truncated else digest.hexdigest()

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
        if action == "rewrite":
            # A git directory's own config (or what it includes): anything not on
            # the short inert list is news when it appeared during the session.
            judged = {h.locator for h in hits}
            parsed = policy.parse_git_config(text).entries
            hits += [h for h in unlisted_entries(parsed, context) if h.locator not in judged]
        self.marks[rel] = Mark.of(content.st, content.sha256, [h.identity for h in hits])
        for hit in hits:
            rewrite = action == "rewrite" and hit.kind != "unreadable"
            self.add(
                Finding(
                    rel,
                    "git-unlisted" if hit.kind == "unlisted" else "git-config",
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
                    Finding(
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
        value = metadata_path(content.data) if content.complete else None
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
            Finding(
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
            stats = fdwalk.WalkStats()
            for visit in fdwalk.walk(fd, limits, stats):
                self.git_entries += len(visit.entries)
                for entry in list(visit.entries):
                    if entry.name not in visit.subdirs:
                        continue
                    try:
                        kinds = dir_kinds(visit.fd, entry.name)
                    except OSError:
                        continue
                    if policy.may_be_module_git_dir(kinds):
                        visit.subdirs.remove(entry.name)
                        module_rel = f"{rel}/{visit.join(entry.name)}"
                        self._gitdir(visit.fd, entry.name, module_rel, "module", worktree=None)
            self.stats.truncated += [f"{rel}: {t}" for t in stats.truncated + stats.errors]
        finally:
            os.close(fd)

    def _bare(self, visit: fdwalk.DirVisit) -> None:
        st = os.fstat(visit.fd)
        if (st.st_dev, st.st_ino) in self.seen_gitdirs:
            return
        self.seen_gitdirs.add((st.st_dev, st.st_ino))
        head = next(e for e in visit.entries if e.name == "HEAD")
        hst = head.stat(follow_symlinks=False)
        head_rel = visit.join("HEAD")
        self.marks[head_rel] = Mark.of(hst)
        self.add(
            Finding(
                head_rel,
                "bare-repo",
                "a bare repository layout (HEAD, objects, refs)",
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
        self.add(Finding(rel, "symlink", what, why, "quarantine", dev=st.st_dev, ino=st.st_ino))

    def _unreadable(self, rel: str, st: os.stat_result, what: str, action: str) -> None:
        self.marks.setdefault(rel, Mark.of(st, None, ("<unreadable>",)))
        self.add(
            Finding(
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
