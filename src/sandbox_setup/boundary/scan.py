"""The end-of-session scan: what the agent left in a workspace that root's tools
would run, found before the launcher hands the terminal back.

``snapshot()`` runs when a session starts, ``scan(before=snapshot)`` when it
ends; ``--audit`` runs ``scan(before=None)``. Both walk each workspace whole by
file descriptor (:mod:`sandbox_setup.base.fdwalk`: no symlink followed, nothing but
regular files and directories opened, a bounded number of descriptors held; a
million entries take seconds), and say what they could not see
(``ScanResult.truncated``: the caller then marks the workspace untrusted). They
find git repositories the way git does
(``.git`` directories, ``.git`` files with ``gitdir:``, ``commondir``, linked
worktrees under ``.git/worktrees``, submodules under ``.git/modules``, bare
repository layouts), and judge what they hold with :mod:`sandbox_setup.policy.workspace`.

A finding is *new* when it appeared or changed since the snapshot (always, with
no snapshot). New findings are neutralized by :mod:`sandbox_setup.boundary.quarantine`;
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
from dataclasses import replace

from sandbox_setup.base import fdwalk
from sandbox_setup.boundary.scan_git import GitDiscovery
from sandbox_setup.boundary.scan_model import (
    MAX_FILE,
    MAX_GIT_ENTRIES,
    QUARANTINE_NAME,
    SNAPSHOT_FORMAT,
    Finding,
    Hit,
    Mark,
    ScanResult,
    Snapshot,
    entry_kind,
)
from sandbox_setup.policy import workspace as policy

__all__ = [
    "QUARANTINE_NAME",
    "SNAPSHOT_FORMAT",
    "Hit",
    "Mark",
    "ScanResult",
    "Snapshot",
    "scan",
    "snapshot",
]

_INTERESTING = frozenset({".git", "HEAD", ".claude", ".mcp.json", ".envrc", ".vscode", ".idea"})
# Findings that matter only when they are new against a snapshot: a repository or
# watched file that appeared, a setting off the inert list (the operator's own
# user.signingKey or pull.rebase are not worth a line in every audit).
_NEWS_ONLY = frozenset({"new-repo", "watched", "git-unlisted"})


class _Discovery(GitDiscovery):
    """One walk of one workspace: the directories, work trees and Claude project
    files; git repositories are handed to :class:`GitDiscovery`."""

    def run(self) -> None:
        for visit in fdwalk.walk(self.top, self.limits, self.stats):
            kinds: dict[str, os.DirEntry[str]] = {}
            for entry in visit.entries:
                if entry.name in _INTERESTING:
                    kinds[entry.name] = entry
                elif entry.name.startswith(QUARANTINE_NAME):
                    self._skip_quarantine(visit, entry)
            if not kinds and visit.rel != ".":
                continue
            self._visit(visit, kinds)
        if self.git_entries > MAX_GIT_ENTRIES:
            self.stats.truncated.append(f"git metadata: stopped after {MAX_GIT_ENTRIES} entries")

    def _skip_quarantine(self, visit: fdwalk.DirVisit, entry: os.DirEntry[str]) -> None:
        # What the quarantine moved aside within the workspace (when the state
        # directory was on another mount): a root-made 0700 directory the agent
        # cannot enter. One the agent made under that name is walked like any other.
        if entry.name not in visit.subdirs:
            return
        st = entry.stat(follow_symlinks=False)
        if st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700:
            visit.subdirs.remove(entry.name)

    def _visit(self, visit: fdwalk.DirVisit, entries: dict[str, os.DirEntry[str]]) -> None:
        if "HEAD" in entries:
            # git looks at the directory itself when its .git is missing or not a
            # repository, and at every directory up to the top: each one counts.
            kinds = {
                e.name: entry_kind(e) for e in visit.entries if e.name in policy.GITDIR_MARKERS
            }
            if policy.looks_like_git_dir(kinds):
                # git's own directories are judged as a git directory; anything
                # else in there is walked like the rest of the workspace.
                visit.subdirs[:] = [n for n in visit.subdirs if n not in policy.GIT_OWN_DIRS]
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
        if ".claude" in entries and entry_kind(entries[".claude"]) == "dir":
            self._claude_dir(visit)
        mcp = entries.get(".mcp.json")
        if mcp is not None:
            self._json_file(visit.fd, ".mcp.json", visit.join(".mcp.json"), "mcp")
        for name in (".envrc",):
            if name in entries:
                self._watch_file(visit.fd, name, visit.join(name))
        for name in (".vscode", ".idea"):
            if name in entries and entry_kind(entries[name]) == "dir":
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
            limits = fdwalk.WalkLimits(max_entries=MAX_GIT_ENTRIES, max_depth=16)
            stats = fdwalk.WalkStats()
            for visit in fdwalk.walk(fd, limits, stats):
                for entry in visit.entries:
                    if entry.is_dir(follow_symlinks=False):
                        continue
                    entry_rel = f"{rel}/{visit.join(entry.name)}"
                    est = entry.stat(follow_symlinks=False)
                    digest = self._digest(visit.fd, entry.name, est)
                    self.marks[entry_rel] = Mark.of(est, digest)
                    self.add(
                        Finding(
                            entry_rel,
                            "claude-hook",
                            "a Claude Code hook script",
                            "project hooks root's Claude Code runs can call it",
                            "quarantine",
                            dev=est.st_dev,
                            ino=est.st_ino,
                        )
                    )
            self.stats.truncated += [f"{rel}: {t}" for t in stats.truncated + stats.errors]
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
                Finding(
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
            Finding(
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
        self.add(Finding(rel, "watched", "changed", why, "report", dev=st.st_dev, ino=st.st_ino))


def _prefixes(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


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


def _hit(ws: str, f: Finding, new: bool) -> Hit:
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


def _is_new(f: Finding, now: dict[str, Mark], before: dict[str, Mark] | None) -> bool:
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
        if f.kind in _NEWS_ONLY:
            if old is None or not new:
                continue  # news only against a snapshot
            appeared = f.rel not in old
            if f.kind == "git-unlisted":
                hits.append(_hit(ws, f, new))
                continue
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
        found = _discover(str(ws), limits or fdwalk.UNBOUNDED)
        if found is None:
            continue
        key = found.ws
        result.marks[key] = found.marks
        result.layouts[key] = found.layout()
        result.hits += [_hit(key, f, new=False) for f in found.findings if f.kind not in _NEWS_ONLY]
        result.truncated += [f"{key}: {t}" for t in found.incomplete()]
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
    marks: dict[str, dict[str, Mark]] = {}
    for ws in workspaces:
        found = _discover(str(ws), limits or fdwalk.UNBOUNDED)
        if found is None:
            continue
        hits += _judge(found.ws, found, before)
        layouts[found.ws] = found.layout()
        marks[found.ws] = found.marks
        truncated += [f"{found.ws}: {t}" for t in found.incomplete()]
    return ScanResult(hits=hits, truncated=truncated, layouts=layouts, marks=marks)
