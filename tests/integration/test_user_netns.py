"""User mode walled by address: its own network namespace where root may make one.

A real ``sandbox-launch`` in user mode, as a real live account (``ac-h36-...``), with
Landlock on and one exposed loopback port P. Root's services listen on the host at
``127.0.0.1:P`` (the one meant), ``127.0.0.2:P`` and ``[::1]:P`` (each answering
with its own secret), and a UDP service on ``127.0.0.1:U``. A fake ``claude`` tries
each directly, without the proxy. Landlock's TCP rules name ports, not addresses: on
its own it lets every address on P through, and UDP everywhere. In the session's own
network namespace only ``127.0.0.1:P`` (forwarded in) reaches root's service.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.base.netwall import PORTS_ONLY
from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT
from tests.launch_fixtures import LaunchTree, last_json, launch_tree, run_launcher, state_home
from tests.live_accounts import AGENT_SHELL, LiveAccount, live_account

pytestmark = pytest.mark.integration

ABI = landlock.abi_version()
needs_net = pytest.mark.skipif(ABI < 4, reason=f"TCP rules need Landlock ABI 4 (kernel: {ABI})")
SECRETS = {"127.0.0.1": b"meant-secret", "127.0.0.2": b"second-secret", "::1": b"v6-secret"}

ATTEMPTS = r"""#!/usr/bin/python3
import errno, json, os, socket
def reply(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect((host, port))
            got = b""
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                got += chunk
            return got.decode()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
def udp(port):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"udp-from-agent", ("127.0.0.1", port))
        return "sent"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps({{
    "uid": os.getuid(),
    "netns": os.stat("/proc/self/ns/net").st_ino,
    "v4": reply("127.0.0.1", {port}),
    "second": reply("127.0.0.2", {port}),
    "v6": reply("::1", {port}),
    "udp": udp({udp}),
    "proxy_env": os.environ.get("HTTPS_PROXY"),
}}))
"""


class _Services:
    """Root's services on the host: TCP on each address of :data:`SECRETS` at one port
    (each says its own secret and closes), UDP on 127.0.0.1 (records what arrives)."""

    def __init__(self) -> None:
        self.tcp: list[socket.socket] = []
        self.udp_got: list[bytes] = []
        self.stop = threading.Event()
        for _ in range(20):  # a port free on all three addresses
            first = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            first.bind(("127.0.0.1", 0))
            self.port = first.getsockname()[1]
            made = [first]
            try:
                for host in ("127.0.0.2", "::1"):
                    family = socket.AF_INET6 if ":" in host else socket.AF_INET
                    sock = socket.socket(family, socket.SOCK_STREAM)
                    made.append(sock)
                    sock.bind((host, self.port))
            except OSError:
                for sock in made:
                    sock.close()
                continue
            self.tcp = made
            break
        assert self.tcp, "no port free on 127.0.0.1, 127.0.0.2 and ::1"
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.2)
        self.udp_port = self.udp.getsockname()[1]
        self.threads = [threading.Thread(target=self._serve, args=(s,), daemon=True)
                        for s in self.tcp]  # fmt: skip
        self.threads.append(threading.Thread(target=self._receive, daemon=True))
        for sock in self.tcp:
            sock.listen(8)
            sock.settimeout(0.2)
        for thread in self.threads:
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        secret = SECRETS[sock.getsockname()[0]]
        while not self.stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(secret)

    def _receive(self) -> None:
        while not self.stop.is_set():
            try:
                self.udp_got.append(self.udp.recv(512))
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()
        for sock in (*self.tcp, self.udp):
            sock.close()


@pytest.fixture(scope="module")
def services() -> Iterator[_Services]:
    made = _Services()
    yield made
    made.close()


@pytest.fixture(scope="module")
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


@pytest.fixture(scope="module")
def account(tree: LaunchTree) -> Iterator[LiveAccount]:
    with live_account("ac-h36-netns", shell=AGENT_SHELL) as made:
        for path in (tree.home, tree.workspace):
            os.chown(path, made.uid, made.gid)
        yield made


def _session(
    tree: LaunchTree,
    account: LiveAccount,
    services: _Services,
    name: str,
    ports: tuple[int, ...] = (),
) -> tuple[dict[str, Any], str]:
    script = ATTEMPTS.format(port=services.port, udp=services.udp_port)
    claude = tree.write_script(script, name=f"claude-{name}")
    path = tree.write_config(claude, mode="user", agent_user=account.name, name=f"{name}.toml",
                             loopback_ports=[services.port, *ports])  # fmt: skip
    result = run_launcher(path, ["--print", "hi"])
    assert result.returncode == 0, result.stderr
    return last_json(result.stdout), result.stderr


@pytest.fixture(scope="module")
def session(
    tree: LaunchTree, account: LiveAccount, services: _Services
) -> tuple[dict[str, Any], str]:
    if not namespace_possible().possible:
        pytest.skip(f"no network namespace here: {namespace_possible().why}")
    return _session(tree, account, services, "netns")


@needs_net
def test_only_the_exposed_address_reaches_roots_service(
    session: tuple[dict[str, Any], str],
) -> None:
    report, _ = session
    assert report["uid"] != 0
    assert report["v4"] == "meant-secret"  # 127.0.0.1:P, forwarded in
    # Landlock allows port P to any address; the namespace has nothing at 127.0.0.2.
    assert report["second"] == "ECONNREFUSED"
    assert report["netns"] != os.stat("/proc/self/ns/net").st_ino
    # [::1]:P inside is the forwarder to the host's 127.0.0.1:P, never root's [::1]:P.
    assert report["v6"] in ("meant-secret", "ECONNREFUSED", "EADDRNOTAVAIL")
    assert report["proxy_env"] == f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"


@needs_net
def test_udp_to_a_root_service_on_loopback_arrives_nowhere(
    session: tuple[dict[str, Any], str], services: _Services
) -> None:
    report, _ = session
    assert report["udp"] in ("sent", "ECONNREFUSED")
    threading.Event().wait(0.5)
    assert services.udp_got == []


@needs_net
def test_the_launch_line_names_the_namespace(session: tuple[dict[str, Any], str]) -> None:
    _, stderr = session
    assert "a network namespace of its own" in stderr
    assert PORTS_ONLY not in stderr


@needs_net
def test_dry_run_names_the_wall_the_launch_gets(
    tree: LaunchTree, account: LiveAccount, services: _Services
) -> None:
    claude = tree.write_script("#!/bin/sh\n", name="claude-dry")
    path = tree.write_config(claude, mode="user", agent_user=account.name, name="dry.toml",
                             loopback_ports=[services.port])  # fmt: skip
    result = run_launcher(path, dry_run=True)
    assert result.returncode == 0, result.stderr
    verdict = namespace_possible()
    if verdict.possible:
        assert "a network namespace of its own" in result.stdout
        assert PORTS_ONLY not in result.stdout
    else:
        assert PORTS_ONLY in result.stdout
    assert json.dumps(verdict.possible)  # a typed answer, not words


@needs_net
def test_the_egress_log_records_the_namespace_session(
    session: tuple[dict[str, Any], str], services: _Services
) -> None:
    # Sandbox mode's egress session, run for user mode: its decision log says so, with
    # the exposed port it forwarded in.
    log = Path(state_home(0)) / "sandbox-setup" / "egress.log"
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert any(
        e.get("event") == "session start"
        and e.get("mode") == "user"
        and services.port in e.get("loopback_ports", [])
        for e in entries
    ), entries[-5:]


@needs_net
def test_an_exposed_3128_moves_the_proxy_inside(
    session: tuple[dict[str, Any], str],
    tree: LaunchTree,
    account: LiveAccount,
    services: _Services,
) -> None:
    # 3128 is the sandbox's proxy port; in user mode it may be an exposed port (it was
    # before the namespace): the proxy then listens on the next free one inside.
    report, _ = _session(tree, account, services, "port-3128", ports=(SANDBOX_PROXY_PORT,))
    assert report["proxy_env"] == f"http://127.0.0.1:{SANDBOX_PROXY_PORT + 1}"
    assert report["v4"] == "meant-secret"
