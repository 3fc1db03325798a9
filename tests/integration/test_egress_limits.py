"""The egress proxy's limits under load: many idle tunnels, slow clients, a full house.

The proxy runs as its own process (the server the launcher forks, run here by
``python -c`` with the limits given), every server on 127.0.0.1. What it holds is read
from ``/proc/PID`` (``VmRSS``, the entries of ``fd``) and compared with what
:mod:`sandbox_setup.launcher.egress.limits` states.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from sandbox_setup.launcher.egress.limits import (
    CONNECTION_MEMORY,
    FDS_PER_CONNECTION,
    PIPE_SPARE,
    RESOLVE_WORKERS,
    RESOLVE_WORKERS_MAX,
    ProxyLimits,
)
from sandbox_setup.launcher.egress.wire import CONNECT_ESTABLISHED, PROXY_HEADER

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
IDLE_TUNNELS = 1000
SLOW_CLIENTS = 100
SERVE = """
import json, socket, sys, time
from sandbox_setup.launcher.egress import server
from sandbox_setup.launcher.egress.limits import ProxyLimits
from sandbox_setup.policy.network import EgressPolicy
allowed, limits = json.loads(sys.argv[1]), ProxyLimits(**json.loads(sys.argv[2]))
names = json.loads(sys.argv[3])
def resolve(name, port):  # the test's DNS: a name "stuck" never answers
    if names.get(name) == "stuck":
        time.sleep(3600)
    return names.get(name, [])
sock = socket.create_server(("127.0.0.1", 0), backlog=4096)
print(sock.getsockname()[1], flush=True)
proxy = server.EgressProxy(EgressPolicy.build(allowed), None, resolve)
server.run(sock, proxy, None, limits=limits)
"""


class Echo:
    """A server on 127.0.0.1 that holds every connection and echoes what it gets."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        held: list[socket.socket] = []
        while not self.stop.is_set():
            for key, _ in selector.select(0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    with contextlib.suppress(BlockingIOError):
                        while True:
                            client, _ = self.listener.accept()
                            client.setblocking(False)
                            held.append(client)
                            selector.register(client, selectors.EVENT_READ)
                    continue
                try:
                    data = sock.recv(65536)
                    if data:
                        sock.sendall(data)
                        continue
                except OSError:
                    pass
                selector.unregister(sock)
                sock.close()
        for sock in held:
            sock.close()
        self.listener.close()


@contextlib.contextmanager
def echo_server() -> Iterator[Echo]:
    echo = Echo()
    try:
        yield echo
    finally:
        echo.stop.set()
        echo.thread.join(5)


@contextlib.contextmanager
def proxy_process(
    allowed: list[str],
    limits: ProxyLimits,
    names: dict[str, object] | None = None,
    nofile: int | None = None,
) -> Iterator[tuple[int, int]]:
    """The proxy's server in a process of its own, resolving ``names``, its descriptors
    limited to ``nofile`` (soft and hard) when given: (pid, port)."""

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, json.dumps(allowed), json.dumps(asdict(limits)),
         json.dumps(names or {})],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")}, preexec_fn=limit,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip().isdigit(), f"the proxy did not start: {line!r}"
        yield process.pid, int(line)
    finally:
        process.kill()
        process.wait()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def nofile_soft(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no Max open files")


def connect_request(port: int, host: str = "127.0.0.1") -> bytes:
    authority = f"{host}:{port}"
    return f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()


def open_tunnels(
    proxy_port: int, echo_port: int, count: int, host: str = "127.0.0.1"
) -> list[socket.socket]:
    """``count`` CONNECT tunnels to the echo server, each answered 200, left idle."""
    tunnels: list[socket.socket] = []
    request = connect_request(echo_port, host)
    for start in range(0, count, 100):
        batch = [socket.create_connection(("127.0.0.1", proxy_port), timeout=20)
                 for _ in range(min(100, count - start))]  # fmt: skip
        tunnels += batch
        for sock in batch:
            sock.sendall(request)
        for sock in batch:
            answer = b""
            while len(answer) < len(CONNECT_ESTABLISHED):
                chunk = sock.recv(len(CONNECT_ESTABLISHED) - len(answer))
                assert chunk, f"tunnel {len(tunnels)}: closed after {answer!r}"
                answer += chunk
            assert answer == CONNECT_ESTABLISHED, answer
    return tunnels


def round_trip(proxy_port: int, echo_port: int, host: str = "127.0.0.1") -> bytes:
    """A normal request: a new tunnel, a message there and back."""
    with open_tunnels(proxy_port, echo_port, 1, host)[0] as sock:
        sock.sendall(b"ping through the proxy")
        answer = b""
        while len(answer) < 22:
            chunk = sock.recv(64)
            if not chunk:
                break
            answer += chunk
        return answer


def whole_answer(sock: socket.socket) -> bytes:
    answer = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def wait_until(predicate: object, timeout: float) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


@pytest.fixture
def many_fds() -> Iterator[None]:
    """This test process holds both ends of every tunnel: room for them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 3 * (IDLE_TUNNELS + SLOW_CLIENTS) + 256
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {need}: cannot hold the tunnels")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_thousand_idle_tunnels_and_a_hundred_slow_clients_stay_within_the_limits(
    many_fds: None,
) -> None:
    limits = ProxyLimits()
    assert limits.connections > IDLE_TUNNELS + SLOW_CLIENTS
    with echo_server() as echo, proxy_process([f"127.0.0.1:{echo.port}"], limits) as (pid, port):
        assert round_trip(port, echo.port) == b"ping through the proxy"
        assert wait_until(lambda: threads(pid) == 1 + RESOLVE_WORKERS, 5)
        base_fds, base_rss = fds(pid), rss(pid)
        # the soft descriptor limit raised to what the stated limits need (or the hard one)
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        assert nofile_soft(pid) >= min(limits.descriptors(1), hard)

        tunnels = open_tunnels(port, echo.port, IDLE_TUNNELS)
        slow = [socket.create_connection(("127.0.0.1", port), timeout=10)
                for _ in range(SLOW_CLIENTS)]  # fmt: skip
        try:
            for sock in slow:  # a head that never ends (within the head timeout)
                sock.sendall(b"CONNECT 127.0.0.1:")
            # a normal request goes through while they are all held
            assert round_trip(port, echo.port) == b"ping through the proxy"
            time.sleep(0.5)  # the slow clients' bytes are read
            held_fds, held_rss = fds(pid), rss(pid)
            assert threads(pid) == 1 + RESOLVE_WORKERS  # no thread per connection
        finally:
            for sock in (*tunnels, *slow):
                sock.close()
        # an idle tunnel holds its two sockets, a slow client one; no pipe while idle
        open_now = IDLE_TUNNELS + SLOW_CLIENTS
        assert held_fds <= base_fds + 2 * IDLE_TUNNELS + SLOW_CLIENTS + 2 * PIPE_SPARE, held_fds
        assert held_fds <= limits.descriptors(1)
        assert held_fds - base_fds <= FDS_PER_CONNECTION * open_now
        grown = held_rss - base_rss
        assert grown <= open_now * CONNECTION_MEMORY, (
            f"RSS grew by {grown} bytes for {open_now} connections "
            f"({grown // open_now} each; stated: at most {CONNECTION_MEMORY})"
        )
        # and all of it goes once they are gone
        assert wait_until(lambda: fds(pid) <= base_fds, 10), (fds(pid), base_fds)
        assert round_trip(port, echo.port) == b"ping through the proxy"


def test_past_the_connection_limit_clients_are_refused_cleanly(many_fds: None) -> None:
    limits = ProxyLimits(connections=20)
    with echo_server() as echo, proxy_process([f"127.0.0.1:{echo.port}"], limits) as (pid, port):
        tunnels = open_tunnels(port, echo.port, 20)
        try:
            for _ in range(3):  # the 21st and on: 503 and closed, at once
                with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                    sock.sendall(connect_request(echo.port))
                    answer = whole_answer(sock)
                assert answer.startswith(b"HTTP/1.1 503 "), answer
                assert f"{PROXY_HEADER}: busy".encode() in answer
                assert b"too many connections" in answer
            assert fds(pid) <= limits.descriptors(1)
            full = fds(pid)
            tunnels.pop().close()  # one leaves: one more gets in
            assert wait_until(lambda: fds(pid) <= full - 2, 5)
            tunnels += open_tunnels(port, echo.port, 1)
            tunnels[-1].sendall(b"still relayed")
            assert tunnels[-1].recv(64) == b"still relayed"
        finally:
            for sock in tunnels:
                sock.close()


def test_under_a_low_hard_descriptor_limit_it_serves_as_many_as_fit(many_fds: None) -> None:
    limits = ProxyLimits()
    fit = limits.connections_within(512, 1)  # (512 - 1 listener - 32) // 6
    assert 0 < fit < limits.connections
    with (
        echo_server() as echo,
        proxy_process([f"127.0.0.1:{echo.port}"], limits, nofile=512) as (pid, port),
    ):
        assert nofile_soft(pid) == 512  # never above the hard limit
        tunnels = open_tunnels(port, echo.port, fit)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(connect_request(echo.port))
                answer = whole_answer(sock)
            assert answer.startswith(b"HTTP/1.1 503 "), answer
            assert fds(pid) <= 512
        finally:
            for sock in tunnels:
                sock.close()


def test_a_client_that_never_finishes_its_head_is_closed_at_the_head_timeout() -> None:
    limits = ProxyLimits(head_timeout=0.5)
    with echo_server() as echo, proxy_process([f"127.0.0.1:{echo.port}"], limits) as (_, port):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"CONNECT 127.0.0.1:")
            start = time.monotonic()
            assert whole_answer(sock) == b""  # closed, nothing connected for it
            assert time.monotonic() - start < 5
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"\x05\x01")  # a SOCKS5 greeting cut short
            assert whole_answer(sock) == b""


def test_an_idle_tunnel_is_closed_and_a_busy_one_is_not() -> None:
    limits = ProxyLimits(idle_timeout=1.5)
    with echo_server() as echo, proxy_process([f"127.0.0.1:{echo.port}"], limits) as (_, port):
        idle, busy = open_tunnels(port, echo.port, 2)
        with idle, busy:
            deadline = time.monotonic() + 3.5
            while time.monotonic() < deadline:  # past the idle timeout, busy every 0.3 s
                busy.sendall(b"x")
                assert busy.recv(1) == b"x"
                time.sleep(0.3)
            idle.settimeout(5)
            assert whole_answer(idle) == b""  # the proxy closed it
            busy.sendall(b"y")
            assert busy.recv(1) == b"y"


def test_names_that_never_resolve_do_not_hold_up_the_others() -> None:
    limits = ProxyLimits(resolve_timeout=1.0)
    names: dict[str, object] = {"stuck.test": "stuck", "fast.test": ["127.0.0.1"]}
    with (
        echo_server() as echo,
        proxy_process(["stuck.test", "fast.test", f"127.0.0.1:{echo.port}"], limits, names) as (
            pid,
            port,
        ),
    ):
        stuck = [socket.create_connection(("127.0.0.1", port), timeout=10)
                 for _ in range(RESOLVE_WORKERS + 4)]  # fmt: skip
        try:
            for sock in stuck:  # every resolver thread held, and more waiting
                sock.sendall(connect_request(echo.port, "stuck.test"))
            time.sleep(0.3)
            start = time.monotonic()
            assert round_trip(port, echo.port, "fast.test") == b"ping through the proxy"
            assert time.monotonic() - start < 0.9  # not after the stuck ones gave up
            for sock in stuck:  # each refused at the resolve timeout, as unresolved
                answer = whole_answer(sock)
                assert answer.startswith(b"HTTP/1.1 502 "), answer
                assert b"the name does not resolve" in answer
            assert 1 + RESOLVE_WORKERS < threads(pid) <= 1 + RESOLVE_WORKERS_MAX
        finally:
            for sock in stuck:
                sock.close()
