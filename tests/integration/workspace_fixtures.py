"""Workspaces with real git repositories, root's git as the operator runs it, and
marker files that prove whether an agent-written command ran as uid 0.

Root's git here never reads the host's configuration: ``HOME`` is a temp dir and
``GIT_CONFIG_NOSYSTEM=1``. That home's ``.gitconfig`` sets ``safe.directory = *``,
as many operators' do: git's ownership check would otherwise refuse some
agent-made repositories on its own, and the boundary must not depend on a
setting real root may or may not have.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.containers import make_workdir
from tests.tools import require_root, require_tool

NOBODY = 65534


@dataclass(frozen=True)
class World:
    """A 0755 base dir with root's git home, a workspace and a marker directory."""

    base: Path
    home: Path
    workspace: Path
    markers: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "LANG": "C.UTF-8",
            # Root's editor for `git commit` without -m: a no-op, so an
            # agent-chosen core.editor is the only editor that could run.
            "GIT_EDITOR": "true",
            "GIT_PAGER": "",
            "PAGER": "cat",
        }

    def git(self, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Root's git in ``cwd``, as the operator would run it after the session."""
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} in {cwd}: {proc.stderr}")
        return proc

    def marker(self, name: str) -> Path:
        return self.markers / name

    def command(self, name: str) -> str:
        """A shell command that records ``id -u`` in the marker ``name``; whatever
        arguments git appends (``"$@"``) end up in a comment."""
        return f"id -u > {shlex.quote(str(self.marker(name)))}; exit 0 #"

    def script(self, path: Path, name: str) -> Path:
        """An executable script at ``path`` that records ``id -u`` in marker ``name``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!/bin/sh\nid -u > {shlex.quote(str(self.marker(name)))}\nexit 0\n")
        path.chmod(0o755)
        return path

    def fired(self) -> dict[str, str]:
        """Markers written so far: name -> the uid the command ran as."""
        return {p.name: p.read_text().strip() for p in self.markers.iterdir()}

    def repo(self, path: Path) -> Path:
        """A repository with one commit and a tracked file, made by root."""
        path.mkdir(parents=True, exist_ok=True)
        self.git(path, "init", "-q", "-b", "main")
        (path / "README").write_text("hello\n")
        self.git(path, "add", "README")
        self.git(path, "commit", "-q", "-m", "init")
        return path

    def review(self, cwd: Path) -> None:
        """What the operator does after a session: status, diff, log, commit,
        checkout -b (failures are fine; what ran is what counts)."""
        self.git(cwd, "status", check=False)
        self.git(cwd, "diff", check=False)
        self.git(cwd, "log", "-p", "-1", check=False)
        (cwd / "README").write_text("reviewed\n") if (cwd / "README").exists() else None
        self.git(cwd, "commit", "-am", "review", check=False)
        self.git(cwd, "checkout", "-b", f"review-{os.urandom(3).hex()}", check=False)
        self.git(cwd, "checkout", "-", check=False)


@pytest.fixture(name="world")
def world_fixture() -> Iterator[World]:
    require_root()
    require_tool("git")
    base = make_workdir("ws-scan-")
    home = base / "root-home"
    markers = base / "markers"
    workspace = base / "ws"
    for d in (home, markers, workspace):
        d.mkdir()
    markers.chmod(0o777)  # a command run as the agent could write here too
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Operator\n\temail = op@example.com\n[safe]\n\tdirectory = *\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    try:
        yield World(base=base, home=home, workspace=workspace, markers=markers)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def chown_tree(path: Path, uid: int = NOBODY, gid: int = NOBODY) -> None:
    """Give ``path`` and everything below it to the agent (nobody), as if it wrote it."""
    for root, dirs, files in os.walk(path):
        os.lchown(root, uid, gid)
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)
