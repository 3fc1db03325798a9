"""Faults around a launch: the config edited by another user after the audit,
bwrap killed while the launcher verifies it, the agent user deleted behind the
tool's back.

The setups are real headless applies under a ``--root`` tree. To launch one
for real, the launcher runs in a private mount namespace where the tree's
``/etc/passwd``, ``/etc/group``, ``/home``, ``/srv`` and ``/usr/local/bin`` are
bind-mounted over the live ones (:mod:`tests.faults.namespace`): it then finds
the agent the apply created, and the tree's fake ``claude`` (which prints its
version) runs inside the verified sandbox. The host's files never change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.core_fixtures import (
    CLAUDE_VERSION,
    SANDBOX,
    host_passwd_digest,
    make_target_root,
    run_cli,
)
from tests.faults.conftest import FaultRow
from tests.faults.namespace import run_in_namespace
from tests.launch_fixtures import (
    LaunchTree,
    launch_tree,
    launcher_env,
    run_launcher,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

CONFIG = "root/.config/sandbox-setup/launcher.toml"
ANSWERS = "root/.config/sandbox-setup/answers.toml"
CLAUDE_SAYS = f"{CLAUDE_VERSION} (Claude Code)"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "setfacl", "bwrap", "setpriv", "unshare"):
        require_tool(tool)
    host = host_passwd_digest()
    root = make_target_root(tmp_path / "root")
    done = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert done.returncode == 0, done.stderr
    yield root
    assert host_passwd_digest() == host, "the host's account files changed"


def launch(root: Path) -> dict[str, Any]:
    """sandbox-launch with the tree's config, accounts and homes in place of the live ones."""
    mounts: list[dict[str, object]] = [
        {"dir": f"/{rel}", "kind": "bind", "source": str(root / rel)}
        for rel in ("etc/passwd", "etc/group", "home", "srv", "usr/local/bin")
    ]
    argv = [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(root / CONFIG), "--",
            "--print", "ok"]  # fmt: skip
    return run_in_namespace(mounts, argv, launcher_env())


def audit(root: Path) -> tuple[int, dict[str, Any]]:
    proc = run_cli("--audit", "--json", "--root", str(root))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


def refused(result: dict[str, Any], *needles: str, root: Path | None = None) -> str:
    stderr = str(result["stderr"])
    assert result["rc"] == 3, (result["rc"], result["stdout"], stderr)
    assert "sandbox-launch: refused:" in stderr and "Traceback" not in stderr, stderr
    for needle in needles:
        assert needle in stderr, stderr
    assert CLAUDE_SAYS not in str(result["stdout"]), "Claude ran although refused"
    reason = stderr.strip().splitlines()[-1].replace("sandbox-launch: refused: ", "")
    return (reason.replace(str(root), "<root>") if root else reason)[:140]


def launched(result: dict[str, Any]) -> None:
    assert result["rc"] == 0, (result["stdout"], result["stderr"])
    assert CLAUDE_SAYS in str(result["stdout"])


@pytest.mark.parametrize("how", ["owner", "mode"])
def test_config_edited_by_another_user_between_audit_and_launch(
    root: Path, how: str, fault: FaultRow
) -> None:
    what = "now owned by nobody" if how == "owner" else "made world-writable"
    fault.expect(
        f"launcher.toml edited by another user after a clean audit ({what})",
        "the launch that worked before is refused, exit 3, naming the file; Claude never runs",
    )
    assert audit(root)[0] == 0
    launched(launch(root))
    fault.saw("audit exit 0 and a real launch ran Claude in the sandbox")
    config = root / CONFIG
    config.write_text(config.read_text().replace('network = "host"', 'network = "host" # x'))
    if how == "owner":
        os.chown(config, 65534, 65534)
    else:
        config.chmod(0o666)
    reason = refused(launch(root), str(config), root=root)
    fault.saw(f"then exit 3: {reason}")
    code, _ = audit(root)
    assert code == 1
    fault.saw("audit now exit 1")


def test_agent_user_deleted_behind_the_tools_back(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "agent user deleted behind the tool's back (userdel in the tree)",
        "audit names audit.safety.agent_missing (exit 1); launch refused, exit 3; "
        "replaying the answers recovers: audit exit 0, launch runs",
    )
    launched(launch(root))
    subprocess.run(
        ["userdel", "--prefix", str(root), "claude-agent"], check=True, capture_output=True
    )
    code, report = audit(root)
    ids = [f["id"] for f in report.get("findings", [])]
    assert code == 1 and "audit.safety.agent_missing" in ids, report
    fault.saw("audit exit 1: audit.safety.agent_missing")
    reason = refused(launch(root), "agent user 'claude-agent' does not exist")
    fault.saw(f"launch exit 3: {reason}")
    again = run_cli("--headless", "--answers", str(root / ANSWERS), "--yes", "--root", str(root))
    assert again.returncode == 0, again.stderr
    assert audit(root)[0] == 0
    launched(launch(root))
    fault.saw("re-apply from answers: audit exit 0, launch ran Claude again")


# A stand-in bwrap: starts the real one, waits for it to report the sandbox's pid,
# SIGKILLs bwrap and the sandbox, and only then passes the pid on to the launcher,
# which is then verifying a sandbox that is gone. Finally it is killed itself.
KILLING_BWRAP = r"""#!/usr/bin/python3
import os, signal, subprocess, sys, time
args = sys.argv[1:]
i = args.index("--json-status-fd")
out_fd = int(args[i + 1])
block_fd = int(args[args.index("--block-fd") + 1])
r, w = os.pipe()
args[i + 1] = str(w)
real = subprocess.Popen(["/usr/bin/bwrap", *args], pass_fds=(w, block_fd))
os.close(w)
buffer = b""
while b"child-pid" not in buffer:
    chunk = os.read(r, 4096)
    if not chunk:
        sys.exit("real bwrap ended without reporting")
    buffer += chunk
line = buffer.split(b"\n")[0]
pid = int(line.split(b'"child-pid":')[1].split(b",")[0].split(b"}")[0])
os.kill(pid, signal.SIGKILL)
real.kill()
real.wait()
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        state = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        break
    if state in ("Z", "X"):
        break
    time.sleep(0.01)
open({log!r}, "w").write("killed %d\n" % pid)
os.write(out_fd, line + b"\n")
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def test_bwrap_killed_during_verification(tree: LaunchTree, fault: FaultRow) -> None:
    fault.expect(
        "bwrap (and the sandbox) SIGKILLed after reporting its pid, before release",
        "exit 3 (sandbox not verified), no Claude, no process left",
    )
    claude = tree.write_script(f"#!/bin/sh\ntouch {tree.marker}\necho claude-ran\n")
    config = tree.write_config(claude)
    assert run_launcher(config).returncode == 0 and tree.marker.exists(), "control launch"
    tree.marker.unlink()
    fake_bin = tree.base / "fake-bin"
    fake_bin.mkdir(mode=0o755)
    log = tree.outside / "killed.log"  # the stand-in runs as the agent (the tree's live account)
    tree.write_script(KILLING_BWRAP.replace("{log!r}", repr(str(log))), "bwrap", fake_bin)
    (fake_bin / "setpriv").symlink_to("/usr/bin/setpriv")
    (fake_bin / "prlimit").symlink_to("/usr/bin/prlimit")  # the session's task limit
    result = run_launcher(config, ["--print", "ok"], env=launcher_env({"PATH": str(fake_bin)}))
    assert log.exists() and log.read_text().startswith("killed"), result.stderr
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert "sandbox-launch: refused:" in result.stderr and "Traceback" not in result.stderr
    assert not tree.marker.exists() and "claude-ran" not in result.stdout
    leftovers = [p for p in os.listdir("/proc") if p.isdigit() and str(tree.base) in _cmdline(p)]
    assert leftovers == []
    reason = result.stderr.strip().splitlines()[-1].replace("sandbox-launch: refused: ", "")
    fault.saw(f"exit 3: {reason[:110]}; marker absent; no process left")


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
