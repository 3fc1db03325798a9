"""The claude shim run for real, with fake Claudes: root's ``claude`` goes through
sandbox-launch (argv, stdin, stdout, exit status and signals unchanged), root with
``IS_SANDBOX=0`` and every other user get the next ``claude`` on PATH with the
environment byte for byte as given, no loops; and the install through a headless
apply under ``--root``, which ``--undo`` takes back byte for byte.

The shim under test is the one the plan renders, written into the test's own temp
tree; the apply/undo tests install it only under a ``--root`` tree. Nothing here
touches the host's /usr/local.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_setup.configure.claude_shim import find_sandbox_launch, render_shim
from sandbox_setup.policy.claude_shim import SHIM_PATH
from tests.core_fixtures import (
    CONFIG,
    SANDBOX,
    host_passwd_digest,
    make_target_root,
    run_cli,
    system_state,
)
from tests.launch_fixtures import LaunchTree, host_namespaces, launch_tree
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

# The configured Claude (run by sandbox-launch): reports argv, stdin, where and as whom.
CONFIGURED = """#!/usr/bin/python3 -IS
import json, os, sys
open({marker!r}, "w").write("ran")
print(json.dumps({{
    "who": "configured", "args": sys.argv[1:], "stdin": sys.stdin.read(), "uid": os.getuid(),
    "ns": {{k: os.readlink("/proc/self/ns/" + k) for k in ("user", "pid", "mnt")}},
    "is_sandbox": os.environ.get("IS_SANDBOX"),
}}))
sys.exit(int(os.environ.get("EXIT_WITH", "7")))
"""
# The "real" claude next on PATH: writes exactly what it was given.
NEXT = """#!/usr/bin/python3 -IS
import json, os, sys
with open({out!r} + "." + str(os.getuid()), "wb") as f:
    f.write(open("/proc/self/environ", "rb").read())
print(json.dumps({{"who": {who!r}, "args": sys.argv[1:], "uid": os.getuid()}}))
sys.exit(3)
"""
SLEEPER = "#!/bin/sh\ntouch {marker}\nexec sleep 60\n"


@dataclass(frozen=True)
class ShimWorld:
    tree: LaunchTree
    shim: Path
    next_dir: Path
    config: Path

    @property
    def path(self) -> str:
        return f"{self.shim.parent}:{self.next_dir}:/usr/bin:/bin"

    def environ_of(self, uid: int) -> bytes:
        return (self.tree.workspace / f"environ.{uid}").read_bytes()


def install_shim(directory: Path, config: Path) -> Path:
    directory.mkdir(mode=0o755, exist_ok=True)
    shim = directory / "claude"
    shim.write_bytes(render_shim(str(find_sandbox_launch()), str(config)))
    shim.chmod(0o755)
    return shim


@pytest.fixture
def world() -> Iterator[ShimWorld]:
    for made in launch_tree():
        configured = made.write_script(CONFIGURED.format(marker=str(made.marker)))
        config = made.write_config(configured)
        shim = install_shim(made.base / "sbin", config)
        next_dir = made.base / "next-bin"
        next_dir.mkdir(mode=0o755)
        out = str(made.workspace / "environ")
        made.write_script(NEXT.format(out=out, who="next"), directory=next_dir)
        yield ShimWorld(made, shim, next_dir, config)


def default_env(world: ShimWorld) -> dict[str, str]:
    """A small environment; the real sandbox-launch keeps its state in the tree."""
    return {"PATH": world.path, "LANG": "C.UTF-8", "XDG_STATE_HOME": str(world.tree.base / "st")}


def run_shim(
    world: ShimWorld,
    args: list[str],
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    as_user: int | None = None,
) -> subprocess.CompletedProcess[str]:
    argv = [str(world.shim), *args]
    if as_user is not None:
        argv = ["/usr/bin/setpriv", f"--reuid={as_user}", f"--regid={as_user}",
                "--clear-groups", "--", *argv]  # fmt: skip
    return subprocess.run(
        argv,
        env=dict(env if env is not None else default_env(world)),
        cwd=world.tree.workspace,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


ARGS = ["--print", "two words", "", "--", "-x", "--dangerously-skip-permissions", "é"]


def test_root_runs_claude_through_sandbox_launch_unchanged(world: ShimWorld) -> None:
    result = run_shim(world, ARGS, stdin="typed on stdin\n")
    assert result.returncode == 7, result.stderr  # the configured Claude's own status
    report = json.loads(result.stdout)  # stdout is Claude's alone
    assert report["who"] == "configured" and report["args"] == ARGS
    assert report["stdin"] == "typed on stdin\n"
    assert report["uid"] == world.tree.agent.uid and report["is_sandbox"] == "1"
    assert report["ns"]["user"] != host_namespaces()["user"]
    assert "sandbox-launch: sandbox mode" in result.stderr
    assert not list(world.tree.workspace.glob("environ.*")), "the next claude ran"


def test_root_signals_reach_claude_and_its_status_comes_back(world: ShimWorld) -> None:
    world.tree.write_script(SLEEPER.format(marker=world.tree.marker))
    proc = subprocess.Popen(
        [str(world.shim)], cwd=world.tree.workspace,
        env={"PATH": world.path, "XDG_STATE_HOME": str(world.tree.base / "st")},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not world.tree.marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert world.tree.marker.exists(), proc.stderr
        proc.send_signal(signal.SIGTERM)  # the shim's pid is the launcher's: exec
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM


def test_root_never_runs_a_sandbox_launch_others_could_change(world: ShimWorld) -> None:
    open_dir = world.tree.base / "open-bin"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # anyone could swap the launcher in here
    planted = open_dir / "sandbox-launch"
    planted.write_text(f"#!/bin/sh\ntouch {world.tree.marker}\n")
    planted.chmod(0o755)
    world.shim.write_bytes(render_shim(str(planted), str(world.config)))
    result = run_shim(world, ["--print", "ok"])
    assert result.returncode == 3 and "refused" in result.stderr, result.stderr
    assert not world.tree.marker.exists()
    # The control: the same shim with the real launcher runs.
    world.shim.write_bytes(render_shim(str(find_sandbox_launch()), str(world.config)))
    assert run_shim(world, ["--print", "ok"]).returncode == 7


def test_root_with_is_sandbox_0_keeps_the_guard_the_shim_steps_aside(world: ShimWorld) -> None:
    env = {"PATH": world.path, "IS_SANDBOX": "0", "LANG": "C.UTF-8"}
    result = run_shim(world, ARGS, env=env)
    assert result.returncode == 3, result.stderr
    assert json.loads(result.stdout) == {"who": "next", "args": ARGS, "uid": 0}
    assert "steps aside" in result.stderr and "sandbox-launch:" not in result.stderr
    assert world.environ_of(0) == b"".join(f"{k}={v}\0".encode() for k, v in env.items())
    assert not world.tree.marker.exists()


# Everything a shell or Python would "fix" on the way: no PWD, an IFS, LANG=C
# (Python's locale coercion), a newline in a value, an exported bash function.
ODD_ENV = {
    "PATH": "",  # filled in per world
    "IFS": "x",
    "LANG": "C",
    "MULTI": "line one\nline two",
    "BASH_FUNC_greet%%": "() {  echo hi\n}",
    "IS_SANDBOX": "1",
    "ANTHROPIC_API_KEY": "sk-not-for-the-shim-to-touch",
}


@pytest.mark.parametrize("other", [True, False], ids=["another-user", "root-is_sandbox-0"])
def test_other_users_get_the_next_claude_with_the_environment_byte_for_byte(
    world: ShimWorld, other: bool
) -> None:
    # Another user: the tree's agent account (a non-root user that can write the
    # workspace, where the next claude reports).
    as_user = world.tree.agent.uid if other else None
    env = {**ODD_ENV, "PATH": world.path}
    if as_user is None:
        env["IS_SANDBOX"] = "0"
    result = run_shim(world, ARGS, env=env, as_user=as_user)
    assert result.returncode == 3, result.stderr
    uid = as_user if as_user is not None else 0
    assert json.loads(result.stdout) == {"who": "next", "args": ARGS, "uid": uid}
    assert world.environ_of(uid) == b"".join(f"{k}={v}\0".encode() for k, v in env.items())
    if as_user is not None:
        assert result.stderr == ""  # nothing changes for them, not even a notice
    assert not world.tree.marker.exists()


def test_no_loop_through_another_copy_of_the_shim(world: ShimWorld) -> None:
    copy = install_shim(world.tree.base / "copy-bin", world.config)
    env = {"PATH": f"{world.shim.parent}:{copy.parent}:{world.shim.parent}:{world.next_dir}"}
    result = run_shim(world, ["-p", "x"], env=env, as_user=world.tree.agent.uid)
    assert result.returncode == 3 and json.loads(result.stdout)["who"] == "next", result.stderr
    path = {"PATH": f"{copy.parent}:/usr/bin"}
    alone = run_shim(world, ["-p", "x"], env=path, as_user=world.tree.agent.uid)
    assert alone.returncode == 127 and "command not found" in alone.stderr


# -- installed by a headless apply under --root, taken back by --undo -------------------


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_apply_installs_the_shim_and_undo_removes_it(root: Path) -> None:
    before = system_state(root)
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX, "--install-claude-shim")
    assert proc.returncode == 0, proc.stderr
    shim = root / str(SHIM_PATH).lstrip("/")
    st = shim.stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o755, 0, 0)
    config = f"/{CONFIG}/launcher.toml"
    assert shim.read_bytes() == render_shim(str(find_sandbox_launch()), config)
    toml = (root / CONFIG / "launcher.toml").read_text()
    assert 'claude = "/usr/local/bin/claude"' in toml  # the real one, never the shim
    journal = (root / "root/.local/state/sandbox-setup/journal.jsonl").read_text()
    assert any(json.loads(line).get("target") == str(SHIM_PATH) for line in journal.splitlines())
    # A re-apply changes nothing: the search for Claude skips the installed shim.
    installed = system_state(root)
    again = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX, "--install-claude-shim")
    assert again.returncode == 0, again.stderr
    assert system_state(root) == installed
    out = run_cli("--undo", "--yes", "--root", str(root))
    assert out.returncode == 0, out.stderr
    assert f"removed {SHIM_PATH}" in out.stdout and not shim.exists()
    assert system_state(root) == before


def test_undo_restores_what_was_at_the_shims_path_byte_for_byte(root: Path) -> None:
    existing = root / str(SHIM_PATH).lstrip("/")
    existing.parent.mkdir(parents=True)
    existing.write_bytes(b'#!/bin/sh\n# someone\'s own wrapper\nexec /opt/x/claude "$@"\n\xff')
    existing.chmod(0o750)
    os.chown(existing, 0, 0)
    before, digest = system_state(root), sha(existing)
    args = (*SANDBOX, "--install-claude-shim", "--claude", "/usr/local/bin/claude")
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == 0, proc.stderr
    assert sha(existing) != digest and b"sandbox-setup claude shim" in existing.read_bytes()
    out = run_cli("--undo", "--yes", "--root", str(root))
    assert out.returncode == 0, out.stderr
    assert f"restored {SHIM_PATH}" in out.stdout
    assert sha(existing) == digest and existing.stat().st_mode & 0o7777 == 0o750
    assert system_state(root) == before


def test_dry_run_shows_the_shim_and_writes_nothing(root: Path) -> None:
    before = system_state(root)
    proc = run_cli(
        "--headless", "--root", str(root), "--dry-run", *SANDBOX, "--install-claude-shim"
    )
    assert proc.returncode == 0, proc.stderr
    assert str(SHIM_PATH) in proc.stdout and "sandbox-setup claude shim" in proc.stdout
    assert system_state(root) == before


def test_the_shim_is_refused_in_unsafe_mode(root: Path) -> None:
    args = ("--mode", "unsafe", "--accept-unsafe-root", "--install-claude-shim")
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == 2 and "unsafe mode" in proc.stderr
    assert not (root / str(SHIM_PATH).lstrip("/")).exists()


def test_no_install_claude_shim_removes_it_and_undo_puts_it_back(root: Path) -> None:
    """``--no-install-claude-shim --yes`` removes the shim an earlier apply installed
    (journaled as ``remove-file``); ``--undo`` of that apply puts it back byte for byte."""
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX, "--install-claude-shim")
    assert proc.returncode == 0, proc.stderr
    shim = root / str(SHIM_PATH).lstrip("/")
    installed, digest = system_state(root), sha(shim)
    plan = run_cli("--headless", "--root", str(root), "--dry-run", "--no-install-claude-shim")
    assert plan.returncode == 0, plan.stderr
    assert f"remove claude shim (root's claude runs through sandbox-launch) {SHIM_PATH}" in (
        plan.stdout
    )
    assert shim.exists(), "a dry run removes nothing"
    proc = run_cli("--headless", "--root", str(root), "--yes", "--no-install-claude-shim")
    assert proc.returncode == 0, proc.stderr
    assert not shim.exists()
    assert sorted(p.name for p in shim.parent.iterdir()) == [], "no restore point left"
    answers = (root / CONFIG / "answers.toml").read_text()
    assert "install_claude_shim = false" in answers or "install_claude_shim" not in answers
    journal = root / "root/.local/state/sandbox-setup/journal.jsonl"
    ops = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [e["target"] for e in ops if e["op"] == "remove-file"] == [str(SHIM_PATH)]
    # The saved answers now say no shim: a re-apply leaves it removed.
    again = run_cli("--headless", "--root", str(root), "--yes")
    assert again.returncode == 0, again.stderr
    assert not shim.exists()
    both = run_cli(
        "--headless", "--root", str(root), "--install-claude-shim", "--no-install-claude-shim"
    )
    assert both.returncode == 2 and "choose one" in both.stderr
    out = run_cli("--undo", "--yes", "--root", str(root))  # the removal (the re-apply: no-op)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"put back {SHIM_PATH}" in out.stdout, out.stdout
    assert sha(shim) == digest
    st = shim.stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o755, 0, 0)
    assert system_state(root) == installed
