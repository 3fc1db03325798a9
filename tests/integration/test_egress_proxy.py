"""The egress proxy against a real outside world: curl, git and urllib through it, as `nobody`.

The world lives in network namespaces of this test (:mod:`tests.integration.egress_world`);
the proxy runs in its "host" namespace, started by a stand-in launcher through
``start_proxy_process``, and is reached through the socat bridge of ``bridge_argv`` on
the test's loopback. Every refusal test has a twin that shows the refused
destination really answers when asked directly, so a refusal is the proxy's doing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.egress import proxy as proxy_module
from sandbox_setup.launcher.egress.limits import RESOLVE_WORKERS
from sandbox_setup.launcher.egress.proxy import probe_proxy, start_proxy_process
from sandbox_setup.policy.network import EgressPolicy
from tests.integration import egress_world
from tests.integration.egress_world import (
    BIG_SIZE,
    HOST_LOOPBACK_PORT,
    HOST_SECRET,
    NOBODY,
    WORLD_GREETING,
    WORLD_PRIVATE,
    Proxy,
    World,
    process_gone,
    start_stand_in,
)
from tests.tools import require_root

pytestmark = pytest.mark.integration
world = egress_world.world  # the fixtures, shared with test_egress_sandbox.py
egress = egress_world.egress
REFUSED = "sandbox-launch egress proxy: refused"


def curl(
    egress: Proxy, url: str, *extra: str, proxy: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["curl", "-sS", "--max-time", "10", "--cacert", str(egress.world.ca),
         "-x", proxy or egress.url, *extra, url],
        capture_output=True, text=True, check=False, env={"PATH": os.environ["PATH"]},
    )  # fmt: skip


def raw_connect(egress: Proxy, authority: str) -> bytes:
    """A CONNECT through the bridge; the proxy's whole answer (it closes after a refusal)."""
    with socket.create_connection(("127.0.0.1", egress.port), timeout=10) as sock:
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def open_fds(pid: int) -> list[str]:
    """What each fd ``pid`` holds. An fd closed between the listing and its readlink
    (the ready pipe, which the proxy closes right after saying it is ready) is no
    longer held, so it is left out."""
    targets = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return targets


def zombie_children() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == os.getpid():
                found.append(int(entry.name))
    return found


# --- the process ------------------------------------------------------------------------


def test_the_proxy_runs_as_nobody_alone_in_its_session_with_only_its_fds(egress: Proxy) -> None:
    pid = egress.stand_in.proxy_pid
    status = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if ":\t" in line
    )  # fmt: skip
    assert status["Uid"].split() == [str(NOBODY)] * 4
    assert status["Gid"].split() == [str(NOBODY)] * 4
    assert status["Groups"].strip() == ""
    assert status["NoNewPrivs"] == "1"
    assert int(status["CapEff"], 16) == 0
    assert os.getsid(pid) == pid  # a Ctrl-C for Claude does not reach it
    targets = open_fds(pid)
    leak = Path(egress.world.base, "leak")
    assert str(leak) not in targets, "a launcher fd reached the proxy"
    allowed_kinds = ("/dev/null", str(egress.stand_in.log_path), "socket:", "pipe:",
                     "anon_inode:[eventpoll]")  # fmt: skip
    assert all(t.startswith(allowed_kinds) for t in targets), targets
    assert Path(f"/proc/{pid}/ns/net").resolve() != Path("/proc/self/ns/net").resolve()


def test_the_proxy_and_its_resolvers_run_as_sched_batch_at_the_same_nice(egress: Proxy) -> None:
    """SCHED_BATCH: no wake-up preemption of the client it relays for; nothing more."""
    pid = egress.stand_in.proxy_pid
    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    assert len(tids) > 1  # the loop and its resolver threads
    assert {os.sched_getscheduler(t) for t in tids} == {os.SCHED_BATCH}
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert {os.getpriority(os.PRIO_PROCESS, t) for t in tids} == {ours}


# --- allowed ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "url"),
    [
        ("http", "http://allowed.test/hello.txt"),  # plain forwarding
        ("http", "https://allowed.test/hello.txt"),  # CONNECT
        ("http", "https://www.allowed.test/hello.txt"),  # under the wildcard
        ("http", "https://v6.allowed.test/hello.txt"),  # an IPv6 destination
        ("socks5h", "https://allowed.test/hello.txt"),  # SOCKS5, domain address type
        ("socks5h", "http://www.allowed.test/hello.txt"),
    ],
)
def test_an_allowed_domain_works_with_curl(egress: Proxy, scheme: str, url: str) -> None:
    proxy = egress.url.replace("http", scheme, 1)
    result = curl(egress, url, proxy=proxy)
    assert (result.returncode, result.stdout) == (0, WORLD_GREETING), result.stderr


def test_git_ls_remote_over_https_through_the_proxy(egress: Proxy, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "HTTPS_PROXY": egress.url, "GIT_SSL_CAINFO": str(egress.world.ca),
           "GIT_TERMINAL_PROMPT": "0"}  # fmt: skip
    result = subprocess.run(
        ["git", "ls-remote", "https://git.allowed.test/repo.git"],
        capture_output=True, text=True, check=False, env=env, timeout=30,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{egress.world.repo_head}\trefs/heads/main" in result.stdout


def test_python_urllib_through_the_proxy(egress: Proxy) -> None:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": egress.url, "https": egress.url}),
        urllib.request.HTTPSHandler(
            context=ssl.create_default_context(cafile=str(egress.world.ca))
        ),
    )
    for url in ("https://allowed.test/hello.txt", "http://www.allowed.test/hello.txt"):
        with opener.open(url, timeout=10) as response:
            assert response.read().decode() == WORLD_GREETING


# --- refused ------------------------------------------------------------------------------


def test_a_denied_domain_gets_the_403_message(egress: Proxy) -> None:
    result = curl(egress, "http://denied.test/hello.txt", "-w", "\n%{http_code}")
    body, _, code = result.stdout.rpartition("\n")
    assert code == "403"
    assert body.strip() == (
        "sandbox-launch egress proxy: refused denied.test:80: not on the allowlist; to allow "
        "it: sandbox-setup --headless --allow-domain denied.test:80 --yes"
    )
    answer = raw_connect(egress, "denied.test:443")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"X-Sandbox-Launch-Proxy: refused" in answer
    assert answer.endswith(
        b"refused denied.test:443: not on the allowlist; to allow it: "
        b"sandbox-setup --headless --allow-domain denied.test:443 --yes\n"
    )


REFUSALS = [
    ("loopback.allowed.test", HOST_LOOPBACK_PORT, "resolves to 127.0.0.1 (loopback)"),
    ("v6loopback.allowed.test", HOST_LOOPBACK_PORT, "resolves to ::1 (loopback)"),
    ("mapped.allowed.test", HOST_LOOPBACK_PORT, "resolves to 127.0.0.1 (loopback)"),
    ("rebind.allowed.test", HOST_LOOPBACK_PORT, "resolves to 127.0.0.1 (loopback)"),
    ("metadata.allowed.test", 80, "resolves to 169.254.169.254 (cloud metadata)"),
    ("private.allowed.test", 80, f"resolves to {WORLD_PRIVATE} (private)"),
    ("hostaddr.allowed.test", HOST_LOOPBACK_PORT, "resolves to 203.0.113.1 (host address)"),
    ("169.254.169.254", 80, "an IP address the operator did not allow"),
    ("127.0.0.1", HOST_LOOPBACK_PORT, "an IP address the operator did not allow"),
    ("[::1]", HOST_LOOPBACK_PORT, "an IP address the operator did not allow"),
    (WORLD_PRIVATE, 80, "an IP address the operator did not allow"),
]


@pytest.mark.parametrize(("host", "port", "why"), REFUSALS)
def test_refused_over_http_forwarding(egress: Proxy, host: str, port: int, why: str) -> None:
    result = curl(egress, f"http://{host}:{port}/secret.txt", "-w", "\n%{http_code}")
    body, _, code = result.stdout.rpartition("\n")
    assert code == "403", result
    assert body.startswith(f"{REFUSED} {host}:{port}: ")
    assert why in body
    assert HOST_SECRET not in result.stdout


@pytest.mark.parametrize(("host", "port", "why"), REFUSALS)
def test_refused_over_connect(egress: Proxy, host: str, port: int, why: str) -> None:
    answer = raw_connect(egress, f"{host}:{port}")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n"), answer
    assert why.encode() in answer


@pytest.mark.parametrize(("host", "port", "why"), REFUSALS[:8])
def test_refused_over_socks5(egress: Proxy, host: str, port: int, why: str) -> None:
    result = curl(egress, f"http://{host.strip('[]')}:{port}/secret.txt",
                  proxy=egress.url.replace("http", "socks5h", 1))  # fmt: skip
    assert result.returncode == 97, result  # the SOCKS5 request was refused
    assert "(2)" in result.stderr  # reply 0x02: connection not allowed by ruleset
    assert HOST_SECRET not in result.stdout


def test_the_refused_destinations_do_answer_when_asked_directly(egress: Proxy) -> None:
    # The twins of the refusals above: from the proxy's own namespace, the loopback
    # service and the private address answer, so only the proxy's rules stopped them.
    world = egress.world
    direct = ["ip", "netns", "exec", world.host_ns, "curl", "-sS", "--noproxy", "*"]
    secret = subprocess.run(
        [*direct, f"http://127.0.0.1:{HOST_LOOPBACK_PORT}/secret.txt"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert secret.stdout == HOST_SECRET
    private = subprocess.run(
        [*direct, f"http://{WORLD_PRIVATE}/hello.txt"], capture_output=True, text=True, check=True
    )
    assert private.stdout == WORLD_GREETING


def test_decisions_are_logged_as_json_lines(egress: Proxy) -> None:
    curl(egress, "http://rebind.allowed.test/log-probe")
    curl(egress, "https://allowed.test/hello.txt")
    entries = [e for e in egress.stand_in.decisions() if e.get("event") == "decision"]
    refused = [e for e in entries if e["host"] == "rebind.allowed.test"]
    assert refused, entries
    assert refused[-1]["allowed"] is False
    assert refused[-1]["rule"] == "loopback"
    assert refused[-1]["addresses"] == ["203.0.113.10", "127.0.0.1"]
    assert refused[-1]["port"] == 80
    allowed = [e for e in entries if e["host"] == "allowed.test" and e["protocol"] == "connect"]
    assert allowed[-1]["allowed"] is True
    assert allowed[-1]["rule"] == "allowlisted"
    assert all(set(e) >= {"time", "host", "port", "addresses", "rule", "allowed"} for e in entries)
    # the stand-in's probe was logged too: it must be refused on both protocols
    probes = [e for e in entries if e["host"] == "0.0.0.0"]
    assert {e["protocol"] for e in probes} == {"connect", "socks5"}
    assert not any(e["allowed"] for e in probes)


def test_parallel_and_aborted_transfers_leave_no_thread_or_fd_behind(egress: Proxy) -> None:
    # One loop relays every connection: the threads are the loop's and the resolvers'
    # (a fixed pool), never one per connection; the fds of a transfer go with it.
    pid = egress.stand_in.proxy_pid
    curl(egress, "https://allowed.test/hello.txt")
    threads = 1 + RESOLVE_WORKERS

    def counts() -> tuple[int, int]:
        return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))

    def settled() -> tuple[int, int]:  # nothing being relayed, spare pipes closed
        deadline, last = time.monotonic() + 15, counts()
        while time.monotonic() < deadline:
            time.sleep(1.5)  # longer than a tick of the loop, which closes the spares
            if (now := counts()) == last:
                return now
            last = now
        return last

    baseline = settled()
    assert baseline[0] == threads
    url = "https://allowed.test/big.bin"
    base = ["curl", "-sS", "-o", "/dev/null", "--cacert", str(egress.world.ca), "-x", egress.url]
    # slow.bin, not big.bin: the buffers on the way could take all of 4 MiB at once
    slow = [subprocess.Popen([*base, "--limit-rate", "512K", url.replace("big", "slow")])
            for _ in range(4)]  # fmt: skip
    try:
        fast = [subprocess.Popen([*base, "-w", "%{size_download}", url], stdout=subprocess.PIPE,
                                 text=True) for _ in range(4)]  # fmt: skip
        for process in fast:
            out, _ = process.communicate(timeout=60)
            assert (process.returncode, out) == (0, str(BIG_SIZE))
        # the slow ones are still being relayed (on a loaded machine they may only now connect)
        deadline = time.monotonic() + 10
        while counts()[1] < baseline[1] + 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert counts()[1] >= baseline[1] + 8  # two sockets for each slow transfer
        assert counts()[0] == threads
        assert all(process.poll() is None for process in slow)  # still reading
    finally:
        for process in slow:  # clients that vanish mid-transfer (also when a check failed)
            process.kill()
            process.wait()
    assert settled() == baseline
    assert curl(egress, "https://allowed.test/hello.txt").stdout == WORLD_GREETING


# --- lifetime and fail-closed -------------------------------------------------------------


def test_the_proxy_dies_when_its_launcher_is_killed(world: World) -> None:
    environ = {"PATH": os.environ["PATH"]}
    stand_in = start_stand_in(world.base, "orphan", None, [], environ, world.resolve_map)
    try:
        assert not process_gone(stand_in.proxy_pid, 0.2)
        os.kill(stand_in.process.pid, signal.SIGKILL)
        stand_in.process.wait()
        assert process_gone(stand_in.proxy_pid, 5.0), "the proxy outlived its launcher"
    finally:
        stand_in.stop()


def test_probe_refuses_an_impostor_and_a_silent_socket(tmp_path: Path) -> None:
    # Another program on the socket, one that lets everything through.
    impostor = tmp_path / "impostor.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(impostor))
    server.listen()

    def answer_everything() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                request = b""
                while b"\r\n\r\n" not in request and len(request) < 4096:
                    chunk = client.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                client.shutdown(socket.SHUT_WR)

    threading.Thread(target=answer_everything, daemon=True).start()
    try:
        with pytest.raises(RefusedError, match="not the proxy's refusal"):
            probe_proxy(impostor, timeout=2)
    finally:
        server.close()
    with pytest.raises(RefusedError, match="does not answer"):
        probe_proxy(tmp_path / "nothing.sock", timeout=2)


def test_start_refuses_root_and_a_taken_socket_path(tmp_path: Path) -> None:
    require_root()
    policy = EgressPolicy.build([])
    with pytest.raises(RefusedError, match="never runs as root"):
        start_proxy_process(tmp_path / "a.sock", policy, None, 0, 0)
    taken = tmp_path / "taken.sock"
    taken.write_text("")
    with pytest.raises(RefusedError, match=r"taken\.sock"):
        start_proxy_process(taken, policy, None, NOBODY, NOBODY)


def test_a_proxy_that_fails_to_start_refuses_and_is_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_root()

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("simulated failure")

    monkeypatch.setattr(proxy_module, "_become_proxy", broken)
    log = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with pytest.raises(RefusedError, match="did not start"):
            start_proxy_process(tmp_path / "p.sock", EgressPolicy.build([]), log, NOBODY, NOBODY)
    finally:
        os.close(log)
    entry = json.loads((tmp_path / "log").read_text().splitlines()[-1])
    assert entry["event"] == "proxy failed"
    assert "simulated failure" in entry["error"]
    assert not (tmp_path / "p.sock").exists()
    assert not zombie_children(), "the failed proxy was not reaped"


def test_a_proxy_that_exits_after_its_drop_refuses_the_start(tmp_path: Path) -> None:
    # The after_drop seam (a launch's --seam-break-proxy): the proxy is gone before it
    # serves, and the launcher sees a proxy that did not start.
    require_root()
    with pytest.raises(RefusedError, match="did not start"):
        start_proxy_process(tmp_path / "p.sock", EgressPolicy.build([]), None, NOBODY, NOBODY,
                            after_drop=lambda: os._exit(70))  # fmt: skip
    assert not (tmp_path / "p.sock").exists()
    assert not zombie_children(), "the failed proxy was not reaped"
    assert sys.modules["sandbox_setup.launcher.egress.proxy"] is proxy_module
