"""Helpers for the launcher tests: a temp tree the agent can reach, fake Claudes, configs.

pytest's ``tmp_path`` lives under ``/tmp/pytest-of-root`` (0700), which the agent
cannot traverse, so :func:`make_launch_tree` makes its own 0755 base under /tmp
and removes it afterwards. The agent is a live ``ac-`` account of the tree's own
(:func:`tests.live_accounts.live_account`, shell nologin as every agent
sandbox-setup creates: sandbox-launch refuses ``nobody``, a system or service
account and a login account), with a 0700 home of its own; it is removed with the
tree.

A fake ``claude`` is a root-owned 0755 script in a root-owned directory (so it
passes the launcher's trust checks). Each one first touches a marker file in
the workspace, which proves it ran; the fail-closed tests assert the marker is
absent.

The tree also holds an *operator's* directory (0755, root's) with a 0644 secret
and an ``inbox`` that the agent owns: on the host plain permissions let the
agent read the one and write the other, so when a sandboxed agent cannot, the
sandbox is the reason (``/root`` is 0700, which would refuse the agent anyway).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig, UnsafeAcceptance
from sandbox_setup.configure.launcher_toml import render_launcher_config
from tests.installed import installed_copy
from tests.live_accounts import AGENT_SHELL, LiveAccount, live_account
from tests.seams import LAUNCH_WITH_SEAMS
from tests.tools import REPO, SRC, require_root, require_tool

NOBODY = 65534  # not an agent: sandbox-launch refuses it (a file "owned by nobody")
# The agent of a launch tree (one more, -1, -2, ..., for a tree made inside another).
# A second run beside this one (a helper's branch) names its own through
# SANDBOX_SETUP_TEST_LAUNCH_AGENT, so the two never remove each other's account.
LAUNCH_AGENT = os.environ.get("SANDBOX_SETUP_TEST_LAUNCH_AGENT", "ac-launch")
_TREES_OPEN: list[str] = []
# The workspaces' trusted state a launch as root keeps (host-wide; in the suite's
# private view an empty tmpfs of its own, tests/hermetic.py).
HOST_TRUST = Path("/var/lib/sandbox-setup/workspaces")
MARKER = "claude-ran"
OPERATOR_SECRET = "operator-secret-not-for-the-agent"

# Reports, as one JSON line, what the process sees from where it was started.
# Filled in by :func:`report_claude`.
REPORT_CLAUDE = r"""#!/usr/bin/python3
import errno, json, os, subprocess, sys
WORKSPACE, OUTSIDE, HOST_PID = {workspace!r}, {outside!r}, {host_pid}
OPERATOR_SECRET, OPERATOR_INBOX = {operator_secret!r}, {operator_inbox!r}
with open(os.path.join(WORKSPACE, "claude-ran"), "w") as f:
    f.write("ran")

def write_result(directory):
    # "ok", or the errno name: EROFS (read-only mount) and EACCES (permissions)
    # are different reasons for the same refusal.
    path = os.path.join(directory, ".sandbox-launch-probe")
    try:
        with open(path, "w"):
            pass
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    os.unlink(path)
    return "ok"

def can_write(directory):
    return write_result(directory) == "ok"

def read_result(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))

def can_read_root():
    try:
        names = os.listdir("/root")
        for name in names:
            path = os.path.join("/root", name)
            if os.path.isfile(path):
                open(path, "rb").read(1)
        return True
    except OSError:
        return False

def kill_host():
    try:
        os.kill(HOST_PID, 15)
        return "signalled"
    except OSError as exc:
        return type(exc).__name__

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()

remount = subprocess.run(["/usr/bin/mount", "-o", "remount,rw", "/usr"],
                         capture_output=True, text=True)
print(json.dumps({{
    "uid": os.getuid(),
    "ns": {{k: os.readlink("/proc/self/ns/" + k) for k in ("user", "mnt", "pid", "ipc", "uts")}},
    "is_sandbox": os.environ.get("IS_SANDBOX"),
    "env": dict(os.environ),
    "cwd": os.getcwd(),
    "args": sys.argv[1:],
    "write_usr": can_write("/usr"),
    "write_etc": can_write("/etc"),
    "write_errors": {{"/usr": write_result("/usr"), "/etc": write_result("/etc")}},
    "read_operator_secret": read_result(OPERATOR_SECRET),
    "write_operator_inbox": can_write(OPERATOR_INBOX),
    "write_root_home": can_write("/root"),
    "write_outside": can_write(OUTSIDE),
    "write_workspace": can_write(WORKSPACE),
    "write_home": can_write(os.environ.get("HOME", "/nonexistent")),
    "read_root": can_read_root(),
    "sees_host_pid": os.path.exists("/proc/%d" % HOST_PID),
    "process_count": sum(1 for p in os.listdir("/proc") if p.isdigit()),
    "kill_host": kill_host(),
    "remount_rc": remount.returncode,
    "no_new_privs": status("NoNewPrivs"),
    "cap_eff": status("CapEff"),
}}))
"""


@dataclass(frozen=True)
class LaunchTree:
    """A temp tree: root-owned bin and config dirs, the agent's home and workspace."""

    base: Path
    bin: Path
    config_dir: Path
    home: Path
    workspace: Path
    outside: Path
    operator: Path
    agent: LiveAccount

    @property
    def marker(self) -> Path:
        return self.workspace / MARKER

    @property
    def operator_secret(self) -> Path:
        """0644, in a 0755 directory: the agent can read it on the host."""
        return self.operator / "secret.txt"

    @property
    def operator_inbox(self) -> Path:
        """Owned by the agent inside the operator's directory: writable by it on the host."""
        return self.operator / "inbox"

    def write_script(self, text: str, name: str = "claude", directory: Path | None = None) -> Path:
        path = (directory or self.bin) / name
        path.write_text(text)
        path.chmod(0o755)
        return path

    def write_config(
        self,
        claude: Path | str,
        mode: str = "sandbox",
        agent_user: str | None = None,
        accepted: bool = False,
        network: str = "host",
        inner_sandbox: str = "strong",
        workspaces: Sequence[Path] | None = None,
        name: str = "launcher.toml",
        directory: Path | None = None,
        env_pass: Sequence[str] = (),
        allowed_domains: Sequence[str] = (),
        loopback_ports: Sequence[int] = (),
        landlock: bool | None = None,
        readable: Sequence[str] = (),
    ) -> Path:
        """``agent_user``: None is the tree's agent. ``landlock``/``readable``: a
        ``[user]`` table (the operator's; no apply writes it); None and empty: none, the
        default (Landlock on)."""
        config = LauncherConfig(
            mode=Mode(mode) if mode in {m.value for m in Mode} else Mode.SANDBOX,
            claude=PurePosixPath(claude),
            agent_user=self.agent.name if agent_user is None else agent_user,
            agent_home=PurePosixPath(self.home),
            workspaces=tuple(PurePosixPath(w) for w in (workspaces or [self.workspace])),
            network=network,
            inner_sandbox=inner_sandbox,
            env_pass=tuple(env_pass),
            allowed_domains=tuple(allowed_domains),
            loopback_ports=tuple(loopback_ports),
            unsafe=UnsafeAcceptance("root (uid 0)", "2026-11-30T04:00:00+00:00", "I accept")
            if accepted
            else None,
        )
        text = render_launcher_config(config)
        if mode not in {m.value for m in Mode}:
            text = text.replace('mode = "sandbox"', f'mode = "{mode}"')
        if landlock is not None or readable:
            text += "\n[user]\n"
            if landlock is not None:
                text += f"landlock = {str(landlock).lower()}\n"
            if readable:
                text += "readable = [" + ", ".join(f'"{r}"' for r in readable) + "]\n"
        path = (directory or self.config_dir) / name
        path.write_text(text)
        path.chmod(0o644)
        return path


@contextmanager
def make_launch_tree(directory: str = "/tmp", agent: str | None = None) -> Iterator[LaunchTree]:
    """A fresh tree under ``directory`` (a test that mounts over /tmp passes /var/tmp),
    with a live agent account ``agent`` (None: :data:`LAUNCH_AGENT`, numbered when a
    tree is made inside another)."""
    name = agent or (f"{LAUNCH_AGENT}-{len(_TREES_OPEN)}" if _TREES_OPEN else LAUNCH_AGENT)
    base = Path(tempfile.mkdtemp(prefix="sandbox-launch-test-", dir=directory))
    _TREES_OPEN.append(name)
    try:
        base.chmod(0o755)
        with live_account(name, shell=AGENT_SHELL) as account:
            tree = LaunchTree(
                base=base,
                bin=base / "bin",
                config_dir=base / "config",
                home=base / "home",
                workspace=base / "workspace",
                outside=base / "outside",
                operator=base / "operator",
                agent=account,
            )
            for made in (
                tree.bin,
                tree.config_dir,
                tree.home,
                tree.workspace,
                tree.outside,
                tree.operator,
                tree.operator_inbox,
            ):
                made.mkdir()
                made.chmod(0o755)
            tree.home.chmod(0o700)
            for made in (tree.home, tree.workspace, tree.outside, tree.operator_inbox):
                os.chown(made, account.uid, account.gid)
            tree.operator_secret.write_text(OPERATOR_SECRET)
            tree.operator_secret.chmod(0o644)
            yield tree
    finally:
        _TREES_OPEN.remove(name)
        shutil.rmtree(base, ignore_errors=True)


def report_claude(tree: LaunchTree, host_pid: int) -> str:
    """The text of a fake ``claude`` that prints what it sees (:data:`REPORT_CLAUDE`)."""
    return REPORT_CLAUDE.format(
        workspace=str(tree.workspace),
        outside=str(tree.outside),
        host_pid=host_pid,
        operator_secret=str(tree.operator_secret),
        operator_inbox=str(tree.operator_inbox),
    )


def as_agent(tree: LaunchTree, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` on the host (no sandbox) as the tree's agent: the control that
    shows what plain permissions allow the agent."""
    uid, gid = tree.agent.uid, tree.agent.gid
    return subprocess.run(
        ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--",
         *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )  # fmt: skip


def launcher_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A small caller environment with a secret that must not leak into the sandbox."""
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "SECRET_TOKEN": "must-not-leak",
        "PYTHONPATH": str(SRC),
        # the launcher's state (session snapshots, quarantine, egress log): never root's
        "XDG_STATE_HOME": str(state_home(0)),
    }
    env.update(extra or {})
    return env


_STATE_HOMES: dict[int, Path] = {}


def state_home(uid: int = 0) -> Path:
    """An XDG_STATE_HOME of ``uid``'s for launches (the launcher keeps the session
    snapshots, the quarantine and the egress log there): never the host's
    ~/.local/state. One per uid and test process, in /tmp (another user reaches
    it), removed at exit."""
    if uid not in _STATE_HOMES:
        path = Path(tempfile.mkdtemp(prefix=f"sandbox-launch-state-{uid}-"))
        os.chown(path, uid, uid)
        _STATE_HOMES[uid] = path
        atexit.register(shutil.rmtree, path, True)
    return _STATE_HOMES[uid]


def run_launcher(
    config: Path,
    claude_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    dry_run: bool = False,
    timeout: float = 120,
    preexec_user: int | None = None,
    cwd: Path | None = None,
    options: Sequence[str] = (),
    seams: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run ``sandbox-launch`` as a separate process: this checkout's, or, as another
    user (``preexec_user``), the session's world-readable installed copy.

    ``cwd``: where the operator is (Claude starts there when it is in a workspace);
    ``options``: more of the launcher's own options (``--quiet``); ``seams``: the
    ``--seam-...`` options of :mod:`tests.seams.launch_with_seams`, which then runs
    the launcher."""
    entry = [str(LAUNCH_WITH_SEAMS), *seams] if seams else ["-m", "sandbox_setup.launcher"]
    argv = [sys.executable, *entry]
    run_cwd = cwd or REPO
    run_env = dict(env if env is not None else launcher_env())
    if run_env.get("XDG_STATE_HOME", str(state_home(0))) == str(state_home(0)):
        run_env["XDG_STATE_HOME"] = str(state_home(preexec_user or 0))  # one the user can write
    if preexec_user is not None:
        run_env.pop("PYTHONPATH", None)  # the copy, never the checkout
        copy = installed_copy()
        entry = [str(copy.seams / LAUNCH_WITH_SEAMS.name), *seams] if seams else entry
        argv = [str(copy.python), *entry]
        run_cwd = cwd or Path("/")
        argv = [
            "/usr/bin/setpriv",
            f"--reuid={preexec_user}",
            f"--regid={preexec_user}",
            "--clear-groups",
            "--",
            *argv,
        ]
    if dry_run:
        argv.append("--dry-run")
    argv += [*options, "--config", str(config), "--", *claude_args]
    return subprocess.run(
        argv,
        env=run_env,
        cwd=run_cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def last_json(stdout: str) -> dict[str, Any]:
    """The last JSON line a fake claude printed."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            data: dict[str, Any] = json.loads(line)
            return data
    raise AssertionError(f"no JSON report in output:\n{stdout}")


def host_namespaces() -> dict[str, str]:
    return {k: os.readlink(f"/proc/self/ns/{k}") for k in ("user", "mnt", "pid", "ipc", "uts")}


def launch_tree(*tools: str) -> Iterator[LaunchTree]:
    """Body of each launch test module's ``tree`` fixture: root, bwrap, setpriv
    and ``tools`` are required (skipped with the reason, a failure under CI),
    then a fresh :func:`make_launch_tree`."""
    require_root()
    for tool in ("bwrap", "setpriv", *tools):
        require_tool(tool)
    with make_launch_tree() as made:
        yield made


def agent_sleeper(tree: LaunchTree) -> Iterator[subprocess.Popen[bytes]]:
    """Body of a ``host_sleep`` fixture: a host process of the agent's, outside any
    sandbox, for the tests that try to see or signal it from inside."""
    uid, gid = tree.agent.uid, tree.agent.gid
    proc = subprocess.Popen(
        ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
         "sleep", "300"]
    )  # fmt: skip
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def start_launcher_on_pty(config: Path, slave: int) -> subprocess.Popen[bytes]:
    """``sandbox-launch --config CONFIG`` with the pty ``slave`` as its controlling
    terminal and stdio, as a terminal emulator starts a shell."""
    import fcntl
    import termios

    return subprocess.Popen(
        [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        env=launcher_env(),
        cwd=REPO,
    )


def tree_processes(tree: LaunchTree) -> list[int]:
    """Pids (other than this test's) whose command line names the tree's temp base:
    the launcher, bwrap, the sandbox and the fake Claude of that tree."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(tree.base).encode() in cmdline:
            found.append(int(entry.name))
    return found
