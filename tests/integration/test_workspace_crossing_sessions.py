"""Issue 24's reproductions planted by the agent inside a real session, both modes.

``test_workspace_crossing.py`` runs each of this round's routes against the scan;
here a fake Claude (the agent, a live ac- account) writes them through ``sandbox-launch``, as an
attacker would, and afterwards root's real git runs the command that would obey each:

- a bare-repository layout in a root-owned directory ``app/`` (``HEAD``, ``objects``
  and ``refs`` as symlinks into ``.git``, and as empty 0755 files), then
  ``git status`` in ``app/lib``;
- the three aliases the old rule did not know (``fetch --upload-pack``,
  ``rebase --exec``, ``log --output``), then ``git co`` / ``up`` / ``l``;
- a planted ``.git/rebase-merge/`` with an ``exec`` line (in a second repository),
  then ``git status`` and ``rebase --continue``;
- ``core.fsmonitor = " on"`` with ``./on`` present, then ``git status`` with ``.`` on
  root's PATH.

Root's git has a temp ``HOME`` without the protected include of layer 1, so the
session's read-only mounts and its end scan are what hold. The control plants the
same without a session: root's git runs every one of them there.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.git_plants import ran_as_root
from tests.launch_fixtures import LaunchTree, as_agent, launch_tree, launcher_env, run_launcher

pytestmark = pytest.mark.integration

PLANT = r"""#!/usr/bin/python3
import errno, json, os, sys
WS, M = {workspace!r}, {markers!r}
R = os.path.join(WS, "repo")
R2 = os.path.join(WS, "repo2")  # the rebase state: a rebase in progress stops `git up`
res = {{}}

def attempt(name, fn):
    try:
        fn()
        res[name] = "ok"
    except OSError as exc:
        res[name] = errno.errorcode.get(exc.errno, str(exc.errno))

def cmd(name):
    return "id -u >> %s/%s; true" % (M, name)

def script(path, name):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + cmd(name) + "\n")
    os.chmod(path, 0o755)

def append(path, text):
    with open(path, "a") as f:
        f.write(text)

def bare(where, kind):
    app = os.path.join(R, where)
    with open(os.path.join(app, "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    for name in ("objects", "refs"):
        path = os.path.join(app, name)
        if kind == "symlinks":
            os.symlink(os.path.join("..", ".git", name), path)
        else:
            open(path, "w").close()
            os.chmod(path, 0o755)
    with open(os.path.join(app, "config"), "w") as f:
        f.write('[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n'
                '\tfsmonitor = "%s"\n' % cmd("bare-" + kind))

def rebase_state():
    head = open(os.path.join(R2, ".git", "refs", "heads", "main")).read().strip()
    state = os.path.join(R2, ".git", "rebase-merge")
    os.mkdir(state)
    for name, text in (("git-rebase-todo", "exec %s\n" % cmd("rebase-exec")),
                       ("head-name", "refs/heads/main\n"), ("onto", head + "\n"),
                       ("orig-head", head + "\n"), ("interactive", ""), ("end", "1\n"),
                       ("msgnum", "0\n")):
        with open(os.path.join(state, name), "w") as f:
            f.write(text)

def fsmonitor_on():
    script(os.path.join(R, "on"), "fsmonitor-on")
    append(os.path.join(R, ".git", "config"), '[core]\n\tfsmonitor = " on"\n')

os.makedirs(os.path.join(WS, ".p"), exist_ok=True)
script(os.path.join(WS, ".p", "run.sh"), "alias-upload-pack")
attempt("bare-symlinks", lambda: bare("app", "symlinks"))
attempt("bare-files", lambda: bare("app2", "files"))
attempt("alias-upload-pack", lambda: append(os.path.join(R, ".git", "config"),
        '[alias]\n\tco = "fetch --upload-pack=\\"%s/.p/run.sh x;\\" ."\n' % WS))
attempt("alias-exec", lambda: append(os.path.join(R, ".git", "config"),
        '[alias]\n\tup = rebase -q --exec \\"id -u > %s/alias-exec\\" HEAD~1\n' % M))
attempt("alias-output", lambda: append(os.path.join(R, ".git", "config"),
        "[alias]\n\tl = log --output=%s/alias-output -1\n" % M))
attempt("rebase-merge", rebase_state)
attempt("fsmonitor-on", fsmonitor_on)
print(json.dumps(res), flush=True)
"""

ROOT_GIT_CONFIG = "[safe]\n\tdirectory = *\n[user]\n\tname = Root Op\n\temail = root@example.test\n"


def root_git(
    tree: LaunchTree, *args: str, cwd: Path, path: str = "/usr/bin:/bin"
) -> subprocess.CompletedProcess[str]:
    """Root's git as the operator runs it: no layer-1 include (a temp HOME)."""
    home = tree.base / "root-home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(ROOT_GIT_CONFIG)
    env = {"PATH": path, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8",
           "GIT_EDITOR": "true", "GIT_PAGER": "", "PAGER": "cat"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("git", "setfacl")


def prepare(tree: LaunchTree) -> tuple[Path, Path]:
    """A root-made repository with two commits and root-owned ``app/lib`` and
    ``app2/lib`` in it; the agent gets rwX through ACLs, as the apply gives it."""
    ws = tree.workspace
    repo = ws / "repo"
    for made in (repo, ws / "repo2"):
        root_git(tree, "init", "-q", "-b", "main", str(made), cwd=tree.base)
        for where in ("app/lib", "app2/lib"):
            (made / where).mkdir(parents=True)
            (made / where / "x.txt").write_text("x\n")
        root_git(tree, "add", ".", cwd=made)
        root_git(tree, "commit", "-q", "-m", "first", cwd=made)
        root_git(tree, "commit", "-q", "--allow-empty", "-m", "second", cwd=made)
    os.chown(ws, 0, 0)
    ws.chmod(0o755)
    for spec in (f"u:{tree.agent.name}:rwX", f"d:u:{tree.agent.name}:rwX"):
        subprocess.run(["setfacl", "-R", "-m", spec, str(ws)], check=True)
    markers = tree.base / "markers"
    markers.mkdir()
    markers.chmod(0o777)
    return repo, markers


def plant_script(tree: LaunchTree, markers: Path) -> Path:
    text = PLANT.format(workspace=str(tree.workspace), markers=str(markers))
    return tree.write_script(text, name="claude-plants")


def roots_commands(tree: LaunchTree, repo: Path) -> None:
    """What root does afterwards: each command that would obey one of the plants."""
    root_git(tree, "status", cwd=repo / "app/lib")
    root_git(tree, "status", cwd=repo / "app2/lib")
    for alias in ("co", "up", "l"):
        root_git(tree, alias, cwd=repo)
    root_git(tree, "status", cwd=repo.parent / "repo2")
    root_git(tree, "rebase", "--continue", cwd=repo.parent / "repo2")
    root_git(tree, "status", cwd=repo, path=".:/usr/bin:/bin")


ROUTES = (
    "bare-symlinks",
    "bare-files",
    "alias-upload-pack",
    "alias-exec",
    "alias-output",
    "rebase-exec",
    "fsmonitor-on",
)


def test_the_control_root_runs_every_plant_without_a_session(tree: LaunchTree) -> None:
    repo, markers = prepare(tree)
    result = as_agent(tree, [str(plant_script(tree, markers))])
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(planted.values()) == {"ok"}, planted
    roots_commands(tree, repo)
    ran = ran_as_root(markers)
    # (alias-output is a file root's git wrote, not a command: it exists, as root's)
    assert (markers / "alias-output").exists() and (markers / "alias-output").stat().st_uid == 0
    assert sorted(set(ROUTES) - {"alias-output"}) == sorted(ran), ran


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_after_a_session_roots_git_obeys_none_of_them(tree: LaunchTree, mode: str) -> None:
    repo, markers = prepare(tree)
    config = tree.write_config(plant_script(tree, markers), mode=mode)
    state = tree.base / "state"
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    # Outside .git the agent writes freely in both modes: the bare layouts are planted.
    assert planted["bare-symlinks"] == planted["bare-files"] == "ok", planted
    if mode == "user":
        assert set(planted.values()) == {"ok"}, planted  # no read-only mounts in user mode
    roots_commands(tree, repo)
    assert ran_as_root(markers) == {}, (ran_as_root(markers), result.stderr)
    assert not (markers / "alias-output").exists(), "root's git wrote where the agent chose"
    # Root's repository still works for root.
    assert "second" in root_git(tree, "log", "-1", "--format=%s", cwd=repo).stdout
