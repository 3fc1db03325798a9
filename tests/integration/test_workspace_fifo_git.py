"""Git metadata that hangs root's git, or prints controls on root's terminal, planted
by the agent inside a real ``sandbox-launch`` session, both modes.

- ``repo/sub/.git/``: ``objects/``, ``refs/`` and a FIFO named ``HEAD``. Root's
  ``git status`` in the operator's repository opens ``sub/.git/HEAD`` to see whether
  the untracked ``sub/`` is a repository, and waits for a writer for ever.
- ``repo/app/``: the same as a bare layout (``HEAD`` a FIFO beside ``objects/`` and
  ``refs/``); root's ``git status`` in ``repo/app/lib`` opens it on its way up.
- ``repo/nest/.git/``: a repository whose ``refs/heads/main``, ``packed-refs`` and
  ``index`` are FIFOs; root's ``git status`` there reads them.
- ``user.name`` with an escape sequence (``ESC ] 0 ; ... BEL``, a window title) in
  ``repo/nest/.git/config`` and, where the session may write it (user mode), in the
  operator's ``repo/.git/config``: root's ``git log`` would print it raw.

Root's git runs under ``timeout 10``: a hang is exit 124. The control plants the
same without a session: root's git hangs there.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_workspace_crossing_sessions import ROOT_GIT_CONFIG, prepare
from tests.launch_fixtures import LaunchTree, as_agent, launch_tree, launcher_env, run_launcher

pytestmark = pytest.mark.integration

TITLE = "\x1b]0;pwned\x07"

PLANT = r"""#!/usr/bin/python3
import errno, json, os
R = {repo!r}
TITLE = {title!r}
res = {{}}

def attempt(name, fn):
    try:
        fn()
        res[name] = "ok"
    except OSError as exc:
        res[name] = errno.errorcode.get(exc.errno, str(exc.errno))

def layout(gitdir):
    os.makedirs(os.path.join(gitdir, "objects"))
    os.makedirs(os.path.join(gitdir, "refs"))
    os.mkfifo(os.path.join(gitdir, "HEAD"))

def bare():
    os.makedirs(os.path.join(R, "app3", "lib"))
    layout(os.path.join(R, "app3"))

def nest():
    g = os.path.join(R, "nest", ".git")
    for d in ("objects", "refs/heads", "refs/tags"):
        os.makedirs(os.path.join(g, d))
    with open(os.path.join(g, "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    with open(os.path.join(g, "config"), "w") as f:
        f.write('[core]\n\trepositoryformatversion = 0\n\tbare = false\n'
                '[user]\n\tname = "Nest%sName"\n\temail = nest@example.test\n' % TITLE)
    for name in ("refs/heads/main", "packed-refs", "index"):
        os.mkfifo(os.path.join(g, name))

def own_config():
    with open(os.path.join(R, ".git", "config"), "a") as f:
        f.write('[user]\n\tname = "Agent%sName"\n' % TITLE)

attempt("sub", lambda: layout(os.path.join(R, "sub", ".git")))
attempt("bare", bare)
attempt("nest", nest)
attempt("own-config", own_config)
print(json.dumps(res), flush=True)
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("git", "setfacl", "timeout")


def root_git(tree: LaunchTree, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Root's git as the operator runs it (no layer-1 include), under ``timeout 10``."""
    home = tree.base / "root-home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(ROOT_GIT_CONFIG)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "LANG": "C.UTF-8", "GIT_PAGER": "", "PAGER": "cat"}  # fmt: skip
    return subprocess.run(
        ["timeout", "10", "git", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def plant(tree: LaunchTree, repo: Path) -> Path:
    text = PLANT.format(repo=str(repo), title=TITLE)
    return tree.write_script(text, name="claude-plants")


def finished(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode != 124  # timeout's: git was still waiting


def test_the_control_roots_git_hangs_without_a_session(tree: LaunchTree) -> None:
    repo, _markers = prepare(tree)
    result = as_agent(tree, [str(plant(tree, repo))])
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(planted.values()) == {"ok"}, planted
    assert not finished(root_git(tree, "status", cwd=repo))
    assert not finished(root_git(tree, "status", cwd=repo / "app3/lib"))
    assert not finished(root_git(tree, "status", cwd=repo / "nest"))
    name = root_git(tree, "config", "--get", "user.name", cwd=repo).stdout
    assert TITLE in name


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_after_a_session_roots_git_finishes_and_prints_no_controls(
    tree: LaunchTree, mode: str
) -> None:
    repo, _markers = prepare(tree)
    config = tree.write_config(plant(tree, repo), mode=mode)
    state = tree.base / "state"
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    assert planted["sub"] == planted["bare"] == planted["nest"] == "ok", planted
    if mode == "user":
        assert planted["own-config"] == "ok", planted
    status = root_git(tree, "status", "--porcelain", cwd=repo)
    assert finished(status), ("git status in the operator's repository hung", result.stderr)
    assert status.returncode == 0, status.stderr
    assert finished(root_git(tree, "status", cwd=repo / "app3/lib")), result.stderr
    assert finished(root_git(tree, "status", cwd=repo / "nest")), result.stderr
    assert finished(root_git(tree, "add", "-A", cwd=repo)), result.stderr
    for where in (repo, repo / "nest"):
        shown = root_git(tree, "config", "--get-all", "user.name", cwd=where).stdout
        assert "\x1b" not in shown and "\x07" not in shown, (where, shown)
    # Root's repository still works for root.
    assert "second" in root_git(tree, "log", "-1", "--format=%s", cwd=repo).stdout
    assert os.path.isfile(repo / ".git/HEAD")
