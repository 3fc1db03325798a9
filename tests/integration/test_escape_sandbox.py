"""Escape attempts from inside the real sandbox that test_launch_sandbox.py does
not make: through ``/proc/1/root`` and pid 1's open files, signalling every
process at once, gaining capabilities (setuid binaries under no_new_privs, a
nested ``unshare -r`` that then remounts or bind-mounts host paths, writes to
``/proc/sys`` and ``/proc/sysrq-trigger``, ``setuid(0)``, ``mknod``).

A fake ``claude`` (python, started by ``sandbox-launch`` in sandbox mode as
the agent) makes every attempt and prints one JSON line; the test then checks
on the host side that nothing changed and that the host process it aimed at
is alive. The agent owns ``outside/`` on the host, so plain permissions would
let it write there: only the sandbox keeps it out. Likewise the operator's 0644
secret, which the agent reads on the host (checked first), must stay out of
reach through ``/proc/1/root``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.launch_fixtures import (
    OPERATOR_SECRET,
    LaunchTree,
    agent_sleeper,
    as_agent,
    last_json,
    launch_tree,
    run_launcher,
)

pytestmark = pytest.mark.integration

ESCAPE_CLAUDE = r"""#!/usr/bin/python3
import ctypes, json, os, signal, stat, subprocess
OUTSIDE, HOST_PID, SECRET = {outside!r}, {host_pid}, {secret!r}
out = {{}}

def attempt(fn):
    try:
        return fn()
    except OSError as exc:
        return "errno %d" % exc.errno

def write(path):
    with open(path, "w") as handle:
        handle.write("escaped\n")
    return "written"

def run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    return {{"rc": done.returncode, "out": done.stdout.strip()[-200:],
            "err": done.stderr.strip()[-200:]}}

# /proc/1/root is the sandbox's own root, not the host's.
root_st, proc1_st = os.stat("/"), os.stat("/proc/1/root")
own = (root_st.st_dev, root_st.st_ino)
out["proc1_root_is_own_root"] = own == (proc1_st.st_dev, proc1_st.st_ino)
out["proc1_root_listing_equal"] = sorted(os.listdir("/proc/1/root")) == sorted(os.listdir("/"))
out["proc1_root_write_outside"] = attempt(lambda: write("/proc/1/root" + OUTSIDE + "/via-proc1"))
out["proc1_root_read_root_home"] = attempt(lambda: os.listdir("/proc/1/root/root"))
out["proc1_root_read_operator_secret"] = attempt(lambda: open("/proc/1/root" + SECRET).read())
out["read_operator_secret"] = attempt(lambda: open(SECRET).read())
out["proc1_root_read_shadow"] = attempt(lambda: open("/proc/1/root/etc/shadow").read(1))
roots = set()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        st = os.stat("/proc/%s/root" % pid)
        roots.add((st.st_dev, st.st_ino) == (root_st.st_dev, root_st.st_ino))
    except OSError:
        pass
out["every_visible_root_is_own"] = roots == {{True}}
# Open directories of pid 1 would let fchdir() walk out of the mount namespace.
fds = {{}}
for name in attempt(lambda: os.listdir("/proc/1/fd")) or []:
    try:
        fds[name] = stat.S_ISDIR(os.stat("/proc/1/fd/" + name).st_mode)
    except OSError as exc:
        fds[name] = "errno %d" % exc.errno
out["proc1_dir_fds"] = [n for n, is_dir in fds.items() if is_dir is True]
# Signal every process we may: the host's sleep (same uid) must not get it.
signal.signal(signal.SIGUSR2, signal.SIG_IGN)
out["kill_all"] = attempt(lambda: os.kill(-1, signal.SIGUSR2) or "sent")
out["kill_host_pid"] = attempt(lambda: os.kill(HOST_PID, signal.SIGUSR2) or "sent")
# Capabilities.
out["setuid0"] = attempt(lambda: os.setuid(0) or "became root")
disk = os.makedev(8, 0)
out["mknod"] = attempt(lambda: os.mknod("/tmp/sda", 0o600 | stat.S_IFBLK, disk) or "made")
out["sysrq"] = attempt(lambda: write("/proc/sysrq-trigger"))
out["sysctl"] = attempt(lambda: write("/proc/sys/kernel/hostname"))
setuid = [p for p in ("/usr/bin/mount", "/usr/bin/su", "/usr/bin/passwd", "/usr/bin/newgrp")
          if os.path.exists(p) and os.stat(p).st_mode & stat.S_ISUID]
out["setuid_binaries"] = setuid
out["setuid_mount"] = run("/usr/bin/mount", "-t", "tmpfs", "none", "/tmp")
out["setuid_passwd"] = run("/usr/bin/passwd", "-S", "root")
out["userns_remount"] = run("unshare", "-rm", "sh", "-c",
                            "mount -o remount,rw /usr && touch /usr/.pwned")
out["userns_remount_root"] = run("unshare", "-rm", "sh", "-c", "mount -o remount,rw /")
out["userns_write_outside"] = run("unshare", "-rm", "sh", "-c",
    "mkdir -p {outside} && touch {outside}/.pwned")
out["userns_bind_over_usr"] = run("unshare", "-rm", "sh", "-c",
    "mount --bind /tmp /usr && touch /usr/.bound && test -e /usr/.bound")
out["userns_capeff"] = run("unshare", "-r", "grep", "CapEff", "/proc/self/status")
out["status"] = {{k: v for k, v in (l.split(":", 1) for l in open("/proc/self/status"))
                  if k in ("CapEff", "CapPrm", "CapAmb", "NoNewPrivs", "Uid")}}
print(json.dumps(out))
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("unshare")


@pytest.fixture
def host_sleep(tree: LaunchTree) -> Iterator[subprocess.Popen[bytes]]:
    yield from agent_sleeper(tree)


@pytest.fixture
def report(tree: LaunchTree, host_sleep: subprocess.Popen[bytes]) -> dict[str, Any]:
    before_usr = set(os.listdir("/usr"))
    before_mounts = Path("/proc/self/mountinfo").read_text()
    # The control: on the host, plain permissions let the agent read the secret.
    host_read = as_agent(tree, ["/usr/bin/cat", str(tree.operator_secret)])
    assert (host_read.returncode, host_read.stdout) == (0, OPERATOR_SECRET), host_read.stderr
    claude = tree.write_script(
        ESCAPE_CLAUDE.format(
            outside=str(tree.outside), host_pid=host_sleep.pid, secret=str(tree.operator_secret)
        )
    )
    result = run_launcher(tree.write_config(claude), ["--print", "ok"])
    assert result.returncode == 0, result.stderr
    data = last_json(result.stdout)
    # Host-side evidence, whatever the sandbox claimed.
    assert host_sleep.poll() is None, "a host process was signalled from inside"
    assert os.listdir(tree.outside) == [], "something was written outside the sandbox"
    assert set(os.listdir("/usr")) == before_usr
    assert not os.path.exists("/usr/.pwned") and not os.path.exists("/usr/.bound")
    assert Path("/proc/self/mountinfo").read_text() == before_mounts
    return data


def test_proc_1_root_is_the_sandbox_itself(report: dict[str, Any]) -> None:
    assert report["proc1_root_is_own_root"] is True
    assert report["proc1_root_listing_equal"] is True
    assert report["every_visible_root_is_own"] is True
    assert report["proc1_root_write_outside"].startswith("errno")
    assert report["proc1_root_read_root_home"].startswith("errno")
    # ENOENT: the operator's directory is not in the sandbox at all, not merely
    # unreadable (the agent reads it on the host: checked in the fixture).
    assert report["proc1_root_read_operator_secret"] == "errno 2"
    assert report["read_operator_secret"] == "errno 2"
    assert report["proc1_root_read_shadow"].startswith("errno")
    assert report["proc1_dir_fds"] == []


def test_cannot_signal_host_processes(report: dict[str, Any]) -> None:
    # kill(-1) "succeeds" for the sandbox's own processes; the host's sleep,
    # same uid, stayed alive (checked in the fixture).
    assert report["kill_host_pid"] == "errno 3"  # ESRCH: not even visible


def test_cannot_gain_capabilities(report: dict[str, Any]) -> None:
    status = report["status"]
    for key in ("CapEff", "CapPrm", "CapAmb"):
        assert int(status[key], 16) == 0, (key, status)
    assert status["NoNewPrivs"].strip() == "1"
    assert report["setuid0"] in ("errno 1", "errno 22")  # EPERM, or uid 0 not even mapped
    assert report["mknod"].startswith("errno")
    assert report["sysrq"].startswith("errno")
    assert report["sysctl"].startswith("errno")
    # A setuid-root binary does not make its caller root under no_new_privs.
    assert "/usr/bin/mount" in report["setuid_binaries"]
    assert report["setuid_mount"]["rc"] != 0
    assert report["setuid_passwd"]["rc"] != 0


def test_nested_user_namespace_gives_no_power_over_host_paths(report: dict[str, Any]) -> None:
    # Root of a user namespace of its own: full caps there (Claude's inner
    # sandbox needs this), but the outer mounts stay locked read-only and host
    # paths stay out of reach.
    assert report["userns_capeff"]["rc"] == 0, report["userns_capeff"]
    assert int(report["userns_capeff"]["out"].split()[-1], 16) != 0, "no caps: test is moot"
    assert report["userns_remount"]["rc"] != 0, report["userns_remount"]
    assert report["userns_remount_root"]["rc"] != 0, report["userns_remount_root"]
    # outside/ lies under /tmp, a private tmpfs in the sandbox: the write "works"
    # there, while the host's outside/ stays empty (checked in the fixture).
    assert report["userns_write_outside"]["rc"] == 0, report["userns_write_outside"]
    # Binding its /tmp over /usr fails here (EINVAL); where a kernel allows it, it
    # is that namespace's view only: the fixture checks the host's /usr and mounts.
    assert "userns_bind_over_usr" in report
