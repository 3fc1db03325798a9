"""Sessions end completely, hold no terminal, keys or resources beyond their own
(issue 14, docs/design.md invariant 10). Real launches on real ptys, as a live ``ac-``
agent account (a uid of its own, so "nothing of the agent is left" is exact).

- a detached (``setsid``, double-forked) agent process does not survive the
  launcher, and a line typed after the launcher returned reaches the operator's
  shell, never the agent; nothing it writes appears after the launcher returned;
- the terminal hanging up, or the launcher being SIGKILLed, ends the session too;
- a key in the operator's session keyring is not visible from inside (the control:
  the same reader run as the agent without the launcher does read it);
- a fork loop and a memory hog are stopped by the limits while the host stays
  responsive. Every loop is bounded twice: by the limit under test (tasks = 64,
  tmpfs = 64M) and by the test itself (a few seconds, a few hundred forks, an
  outer ``prlimit --nproc`` above the limit, the launcher's timeout).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from sandbox_setup.base.cgroups import judge_delegation, read_cgroup_facts
from sandbox_setup.base.limits import Limits
from sandbox_setup.base.processes import all_processes
from tests.launch_fixtures import last_json, launcher_env
from tests.session_fixtures import (
    SessionTree,
    launcher_command,
    read_some,
    session_tree,
    shell_on_pty,
    wait_until,
)
from tests.tools import REPO

pytestmark = pytest.mark.integration


@pytest.fixture
def session() -> Iterator[SessionTree]:
    with session_tree() as made:
        yield made
        leftover = made.agent_processes()
        assert leftover == [], f"agent processes left after the test: {leftover}"


# Leaves a detached daemon behind (its own session, reparented away), which reads
# the terminal it inherited and writes fake output to it, as the issue describes.
DETACHING_CLAUDE = r"""#!/usr/bin/python3
import ctypes, os, time
WS = {workspace!r}
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork():
        os._exit(0)
    # A name to find it by from the host (its pid inside a namespace is not the host's).
    ctypes.CDLL(None).prctl(15, b"ac-detached", 0, 0, 0)
    with open(os.path.join(WS, "daemon.pid"), "w") as f:
        f.write(str(os.getpid()))
    captured = open(os.path.join(WS, "captured"), "ab", buffering=0)
    os.set_blocking(0, False)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            captured.write(os.read(0, 4096))
        except OSError:
            pass
        try:
            os.write(1, b"FAKE-OUTPUT\r\n")
        except OSError:
            pass
        time.sleep(0.1)
    os._exit(0)
os.waitpid(pid, 0)
while not os.path.exists(os.path.join(WS, "daemon.pid")):
    time.sleep(0.01)
{after}
"""

LAUNCHER = (sys.executable, "-m", "sandbox_setup.launcher")


def detached_alive() -> bool:
    """Is the detached daemon (by its name) running anywhere on the host?"""
    return any(p.name == "ac-detached" and p.running for p in all_processes())


@pytest.mark.parametrize("mode", ["user", "sandbox"])
def test_a_detached_agent_process_does_not_outlive_the_launcher(
    session: SessionTree, mode: str
) -> None:
    tree = session.tree
    claude = tree.write_script(DETACHING_CLAUDE.format(workspace=str(tree.workspace), after=""))
    typed = tree.config_dir / "typed"  # root's directory: only the operator's shell writes it
    script = (
        f"{launcher_command(session.config(claude, mode))}; echo LAUNCHER-EXIT $?; "
        f'read -r line; echo "$line" > {typed}; sleep 1; echo SHELL-END'
    )
    proc, master = shell_on_pty(script)
    try:
        output = b""
        deadline = time.monotonic() + 60
        while b"LAUNCHER-EXIT" not in output and time.monotonic() < deadline:
            output += read_some(master)
        assert b"LAUNCHER-EXIT 0" in output, output
        assert (tree.workspace / "daemon.pid").exists(), output
        # The launcher has returned: nothing of the agent runs, the daemon included.
        assert not detached_alive(), "the detached agent process outlived the launcher"
        assert session.agent_processes() == []
        os.write(master, b"typed-after-the-launcher-returned\n")
        after = b""
        deadline = time.monotonic() + 30
        while b"SHELL-END" not in after and time.monotonic() < deadline:
            after += read_some(master)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    assert typed.read_text() == "typed-after-the-launcher-returned\n"
    captured = tree.workspace / "captured"
    assert b"typed-after" not in (captured.read_bytes() if captured.exists() else b"")
    assert b"FAKE-OUTPUT" not in after, after


@pytest.mark.parametrize("mode", ["user", "sandbox"])
def test_the_terminal_hanging_up_ends_the_whole_session(session: SessionTree, mode: str) -> None:
    tree = session.tree
    claude = tree.write_script(
        DETACHING_CLAUDE.format(workspace=str(tree.workspace), after="time.sleep(60)")
    )
    proc, master = shell_on_pty("exec " + launcher_command(session.config(claude, mode)))
    closed = False
    try:
        wait_until(lambda: (tree.workspace / "daemon.pid").exists(), 60, master)
        assert detached_alive()
        os.close(master)  # the terminal goes away: SIGHUP for its session
        closed = True
        proc.wait(timeout=30)
        wait_until(lambda: session.agent_processes() == [], 10)
        assert not detached_alive()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not closed:
            os.close(master)


def test_killing_the_launcher_ends_a_user_session(session: SessionTree) -> None:
    tree = session.tree
    claude = tree.write_script(
        DETACHING_CLAUDE.format(workspace=str(tree.workspace), after="time.sleep(60)")
    )
    proc = subprocess.Popen(
        [*LAUNCHER, "--config", str(session.config(claude, "user"))],
        env=launcher_env(), cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(lambda: (tree.workspace / "daemon.pid").exists(), 60)
        proc.kill()  # SIGKILL: no handler runs; the kernel's parent-death signals must act
        proc.wait()
        wait_until(lambda: session.agent_processes() == [], 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


KEY_DESCRIPTION = "ac-operator-secret"
# Joins a session keyring, adds a key to it (keyctl add user NAME DATA @s, by the
# system calls), then execs the command: the operator's shell, as the issue had it.
OPERATOR_WITH_KEY = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(250, 1, b"ac-operator-session", 0, 0, 0) < 0:
    sys.exit("join: %d" % ctypes.get_errno())
key = libc.syscall(248, b"user", DESCRIPTION, b"operator-key-data", 17, -3)
if key < 0:
    sys.exit("add_key: %d" % ctypes.get_errno())
argv = [a.replace("KEYID", str(key)) for a in sys.argv[1:]]
os.execvp(argv[0], argv)
""".replace("DESCRIPTION", repr(KEY_DESCRIPTION.encode()))

KEY_READER = r"""#!/usr/bin/python3
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    result = libc.syscall(*args)
    return result if result >= 0 else -ctypes.get_errno()
key = int(sys.argv[1])
buf = ctypes.create_string_buffer(256)
read = call(250, 11, key, buf, 256, 0)                       # KEYCTL_READ by id
found = call(250, 10, -3, b"user", DESCRIPTION, 0)            # KEYCTL_SEARCH in @s
print(json.dumps({"read": buf.value.decode() if read > 0 else errno.errorcode.get(-read),
                  "search": found if found > 0 else errno.errorcode.get(-found)}))
""".replace("DESCRIPTION", repr(KEY_DESCRIPTION.encode()))


def as_operator_with_key(*argv: str) -> subprocess.CompletedProcess[str]:
    if os.uname().machine != "x86_64":
        pytest.skip("the key helper uses x86_64 system call numbers")
    return subprocess.run(
        [sys.executable, "-c", OPERATOR_WITH_KEY, *argv],
        env=launcher_env(), cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["user", "sandbox"])
def test_the_operators_session_keyring_is_not_visible_inside(
    session: SessionTree, mode: str
) -> None:
    reader = session.tree.write_script(KEY_READER)
    # The control: the agent, started from the operator's shell without the launcher,
    # shares the operator's session keyring and reads the key.
    agent = session.agent
    control = as_operator_with_key(
        "setpriv", f"--reuid={agent.uid}", f"--regid={agent.gid}", "--init-groups",
        str(reader), "KEYID",
    )  # fmt: skip
    assert control.returncode == 0, control.stderr
    assert json.loads(control.stdout)["read"] == "operator-key-data"
    config = session.config(reader, mode)
    done = as_operator_with_key(sys.executable, "-m", "sandbox_setup.launcher", "--config",
                                str(config), "--", "KEYID")  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = last_json(done.stdout)
    assert seen["read"] in ("EACCES", "ENOKEY"), seen
    assert seen["search"] == "ENOKEY", seen


FORK_LOOP = r"""#!/usr/bin/python3
import errno, json, os, signal, time
WS = {workspace!r}
children, error = [], None
end = time.monotonic() + 5
while time.monotonic() < end and len(children) < 400:   # the test's own bound
    try:
        pid = os.fork()
    except OSError as exc:
        error = errno.errorcode.get(exc.errno)
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children.append(pid)
open(os.path.join(WS, "full"), "w").close()
time.sleep(1)  # hold: the test checks the host meanwhile
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(json.dumps({{"children": len(children), "error": error}}))
"""


@pytest.mark.parametrize("mode", ["user", "sandbox"])
def test_a_fork_loop_stops_at_the_task_limit_and_the_host_stays_responsive(
    session: SessionTree, mode: str
) -> None:
    tree = session.tree
    claude = tree.write_script(FORK_LOOP.format(workspace=str(tree.workspace)))
    config = session.config(claude, mode, Limits(tasks=64))
    # The outer backstop: were the launcher's limit missing, 300 would still hold.
    proc = subprocess.Popen(
        ["prlimit", "--nproc=300:300", "--", sys.executable, "-m", "sandbox_setup.launcher",
         "--config", str(config)],
        env=launcher_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: (tree.workspace / "full").exists() or proc.poll() is not None, 60)
        started = time.monotonic()
        subprocess.run(["true"], check=True, timeout=10)
        assert time.monotonic() - started < 2.0, "the host did not stay responsive"
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    result = last_json(stdout)
    assert result["error"] == "EAGAIN", result
    assert result["children"] < 64, result


TMPFS_HOG = r"""#!/usr/bin/python3
import errno, json, os
out = {}
for directory in ("/dev/shm", "/tmp", "/run"):
    written, error = 0, None
    chunk = b"\0" * (1 << 20)
    try:
        with open(os.path.join(directory, "hog"), "wb") as f:
            while written < (256 << 20):   # the test's own bound: 256M
                f.write(chunk)
                f.flush()
                written += len(chunk)
    except OSError as exc:
        error = errno.errorcode.get(exc.errno)
    try:
        os.unlink(os.path.join(directory, "hog"))
    except OSError:
        pass
    out[directory] = [written, error]
print(json.dumps(out))
"""


def test_a_tmpfs_hog_in_the_sandbox_stops_at_the_tmpfs_size(session: SessionTree) -> None:
    claude = session.tree.write_script(TMPFS_HOG)
    config = session.config(claude, "sandbox", Limits(tasks=64, tmpfs="64M"))
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config)],
        env=launcher_env(), cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    for directory, (written, error) in result.items():
        assert error == "ENOSPC" and written <= 64 << 20, (directory, result)


MEMORY_HOG = r"""#!/usr/bin/python3
import json, time
held, end = [], time.monotonic() + 10
while time.monotonic() < end and len(held) < 1024:   # the test's own bound: 1G
    held.append(bytearray(1 << 20))
print(json.dumps({"held": len(held)}))
"""


@pytest.mark.parametrize("mode", ["user", "sandbox"])
def test_a_memory_hog_is_stopped_where_the_host_delegates_a_cgroup(
    session: SessionTree, mode: str
) -> None:
    claude = session.tree.write_script(MEMORY_HOG)
    config = session.config(claude, mode, Limits(tasks=64, memory="128M"))
    delegation = judge_delegation(read_cgroup_facts())
    done = subprocess.run(
        ["timeout", "60", sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config)],
        env=launcher_env(), cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if delegation.kind == "none":
        # Nothing can limit memory here: the launch must say so, never pretend.
        assert "memory is not limited" in done.stderr, done.stderr
        assert delegation.reason in done.stderr
        pytest.skip(f"no cgroup delegation on this host ({delegation.reason}): memory is "
                    "not limited here, and the launch notice says so")  # fmt: skip
    # Killed by the OOM killer inside its cgroup (or its allocation failed) well
    # before the test's own bound of 1G.
    assert done.returncode != 0 or last_json(done.stdout)["held"] < 128, done.stdout


def test_the_check_reports_cgroup_delegation() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_setup", "--check", "--json", "cgroup.delegation"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    finding = json.loads(done.stdout)["checks"][0]
    delegation = judge_delegation(read_cgroup_facts())
    assert finding["id"] == "cgroup.delegation"
    assert finding["status"] == ("warn" if delegation.kind == "none" else "pass")
    assert delegation.reason in finding["summary"]


def test_sigkill_of_a_session_process_leaves_the_launchers_status(session: SessionTree) -> None:
    # Claude killed outright: the session still ends cleanly, with 128+9.
    claude = session.tree.write_script("#!/bin/sh\nsetsid sleep 300 &\nkill -9 $$\n")
    done = subprocess.run(
        [*LAUNCHER, "--config", str(session.config(claude, "user"))],
        env=launcher_env(), cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 128 + signal.SIGKILL, done.stderr
    assert session.agent_processes() == []
