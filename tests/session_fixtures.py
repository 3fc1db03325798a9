"""A launch tree for session tests: the agent is a live ``ac-`` account of its own.

Sessions are judged by the agent's uid (what runs as it, how many tasks it has),
so the agent must be a uid nothing else on the host uses (and sandbox-launch
refuses ``nobody``). The account is created and removed with the tree
(:func:`tests.launch_fixtures.make_launch_tree`).
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sandbox_setup.base.choices import InnerSandbox, Mode, Network
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.limits import Limits
from sandbox_setup.base.processes import processes_of_uid
from sandbox_setup.configure.launcher_toml import render_launcher_config
from tests.launch_fixtures import LaunchTree, launcher_env, make_launch_tree
from tests.live_accounts import LiveAccount
from tests.tools import REPO, require_root, require_tool

# Named through SANDBOX_SETUP_TEST_SESSION_AGENT by a second run beside this one.
AGENT = os.environ.get("SANDBOX_SETUP_TEST_SESSION_AGENT", "ac-session")


@dataclass(frozen=True)
class SessionTree:
    tree: LaunchTree
    agent: LiveAccount

    def config(self, claude: Path, mode: str, limits: Limits | None = None) -> Path:
        config = LauncherConfig(
            mode=Mode(mode),
            claude=PurePosixPath(claude),
            agent_user=self.agent.name,
            agent_home=PurePosixPath(self.tree.home),
            workspaces=(PurePosixPath(self.tree.workspace),),
            network=Network.HOST,
            inner_sandbox=InnerSandbox.OFF,
            limits=limits or Limits(),
        )
        path = self.tree.config_dir / f"{mode}.toml"
        path.write_text(render_launcher_config(config))
        path.chmod(0o644)
        return path

    def agent_processes(self) -> list[int]:
        return [p.pid for p in processes_of_uid(self.agent.uid)]


@contextmanager
def session_tree() -> Iterator[SessionTree]:
    require_root()
    for tool in ("bwrap", "setpriv", "unshare", "prlimit", "setsid", "bash"):
        require_tool(tool)
    with make_launch_tree(agent=AGENT) as tree:
        yield SessionTree(tree, tree.agent)


def read_some(master: int, timeout: float = 0.05) -> bytes:
    ready, _, _ = select.select([master], [], [], timeout)
    if not ready:
        return b""
    try:
        return os.read(master, 65536)
    except OSError:
        return b""  # the other side closed (EIO)


def shell_on_pty(script: str) -> tuple[subprocess.Popen[bytes], int]:
    """``sh -c SCRIPT`` as the session leader of a new pty (as a terminal emulator
    starts a login shell), with the launcher's test environment. (process, master)"""
    import fcntl
    import termios

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", script],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        env=launcher_env(),
        cwd=REPO,
    )
    os.close(slave)
    return proc, master


def launcher_command(config: Path, args: Sequence[str] = ()) -> str:
    import shlex

    launcher = [sys.executable, "-m", "sandbox_setup.launcher"]
    return shlex.join([*launcher, "--config", str(config), "--", *args])


def wait_until(predicate: object, timeout: float = 30, master: int | None = None) -> bytes:
    """Poll ``predicate()`` (draining ``master``) until true; the output read."""
    output = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if master is not None:
            output += read_some(master)
        if predicate():  # type: ignore[operator]
            return output
        if master is None:
            time.sleep(0.05)
    raise AssertionError(f"timed out; output so far: {output!r}")
