"""The session's API gateway as the egress proxy serves it (docs/design.md invariant 17).

The real proxy process is forked as ``nobody`` with a gateway spec and handed a
gateway listener (on this test's loopback, as a session's is on its namespace's); a
small upstream of this test's records what arrives and answers as the Messages API
streams (SSE). Shown: the secret replaces the placeholder in ``x-api-key`` and
``Authorization`` and nowhere else, the held custom headers are added, the host and
path prefix are the upstream's; a streamed answer reaches the client event by event
(the upstream sends its second event only once the client has read the first);
requests for another destination and chunked bodies are refused without reaching the
upstream; and the agent's account cannot read the proxy's environment or memory.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from sandbox_setup.launcher.egress.proxy import ProxyProcess, ProxyStart, fork_proxy
from sandbox_setup.policy.credentials import GatewaySpec, placeholder
from sandbox_setup.policy.network import EgressPolicy
from tests.integration.egress_world import NOBODY
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

SECRET = "sk-ant-api03-h39b-integration-secret"
FAKE = placeholder("nobody", "ANTHROPIC_API_KEY")
TOKEN_FAKE = placeholder("nobody", "ANTHROPIC_AUTH_TOKEN")
FIRST = b"event: message_start\ndata: {}\n\n"
SECOND = b"event: message_stop\ndata: {}\n\n"


@dataclass
class Upstream:
    sock: socket.socket
    heads: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    client_read_first: threading.Event = field(default_factory=threading.Event)
    streamed: list[bool] = field(default_factory=list)  # the client had the first event

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(4096)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(x.split(b":")[1]) for x in head.split(b"\r\n")
                               if x.lower().startswith(b"content-length:")), 0)  # fmt: skip
                while len(body) < length:
                    body += conn.recv(4096)
                self.heads.append(head)
                self.bodies.append(body)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Connection: keep-alive\r\n\r\n" + FIRST)  # fmt: skip
                # The second event only once the client has the first: a gateway that
                # buffered the answer would hold the first until the end, and time out.
                self.streamed.append(self.client_read_first.wait(10))
                conn.sendall(SECOND)


@dataclass
class Served:
    upstream: Upstream
    gateway_port: int
    proxy: ProxyProcess


@pytest.fixture
def served() -> Iterator[Served]:
    require_root()
    require_tool("setpriv")
    up = socket.create_server(("127.0.0.1", 0))
    upstream = Upstream(up)
    threading.Thread(target=upstream.serve, daemon=True).start()
    spec = GatewaySpec(
        port=0, upstream=f"http://127.0.0.1:{upstream.port}/prefix",
        replacements=((FAKE, SECRET), (TOKEN_FAKE, "real-token")),
        headers=(("X-Held", "held-secret"),), names=("ANTHROPIC_API_KEY",),
    )  # fmt: skip
    proxy = fork_proxy(ProxyStart(EgressPolicy.build(()), NOBODY, NOBODY, later=True, gateway=spec))
    listener = socket.create_server(("127.0.0.1", 0))
    gateway = socket.create_server(("127.0.0.1", 0))
    port = int(gateway.getsockname()[1])
    proxy.hand_over([listener], [], [gateway])
    proxy.wait_ready()
    try:
        yield Served(upstream, port, proxy)
    finally:
        proxy.stop()
        up.close()


def exchange(port: int, request: bytes, upstream: Upstream | None = None) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            if upstream is not None and FIRST in answer:
                upstream.client_read_first.set()
        return answer


def test_the_secret_goes_upstream_in_place_of_the_placeholder_only(served: Served) -> None:
    body = b'{"model": "x", "echo": "' + FAKE.encode() + b'"}'
    request = (
        f"POST /v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:{served.gateway_port}\r\n"
        f"x-api-key: {FAKE}\r\nAuthorization: Bearer {TOKEN_FAKE}\r\nX-Other: {FAKE}\r\n"
        f"X-Held: from-the-agent\r\nConnection: keep-alive\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    answer = exchange(served.gateway_port, request, served.upstream)
    head, _, streamed = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert b"Connection: close" in head and b"keep-alive" not in head
    assert streamed == FIRST + SECOND
    assert served.upstream.streamed == [True]  # relayed as it came, event by event
    [sent] = served.upstream.heads
    lines = sent.decode().split("\r\n")
    assert lines[0] == "POST /prefix/v1/messages?beta=true HTTP/1.1"
    assert f"Host: 127.0.0.1:{served.upstream.port}" in lines
    assert f"x-api-key: {SECRET}" in lines and "Authorization: Bearer real-token" in lines
    assert f"X-Other: {FAKE}" in lines  # only the credential headers are rewritten
    assert "X-Held: held-secret" in lines and "X-Held: from-the-agent" not in lines
    assert "Connection: close" in lines
    assert served.upstream.bodies == [body]  # the body as Claude sent it


@pytest.mark.parametrize(
    ("request_line", "extra", "status"),
    [
        ("GET http://evil.test/ HTTP/1.1", "", b"400"),
        ("GET //evil.test/ HTTP/1.1", "", None),  # a path: it stays the upstream's
        ("POST /v1/messages HTTP/1.1", "Transfer-Encoding: chunked\r\n", b"411"),
        ("GET /v1/models HTTP/1.1", "X-A: b\nHost: evil.test\r\n", b"400"),
    ],
)
def test_another_destination_or_a_chunked_body_never_reaches_the_upstream(
    served: Served, request_line: str, extra: str, status: bytes | None
) -> None:
    request = f"{request_line}\r\nx-api-key: {FAKE}\r\n{extra}\r\n".encode()
    served.upstream.client_read_first.set()
    answer = exchange(served.gateway_port, request)
    if status is None:
        assert served.upstream.heads[0].startswith(b"GET /prefix//evil.test/ HTTP/1.1")
        return
    assert answer.split(b" ")[1] == status, answer
    assert served.upstream.heads == []


def test_the_agents_account_cannot_read_the_proxys_environment_or_memory(
    served: Served,
) -> None:
    pid = served.proxy.pid
    for name in ("environ", "mem", "maps"):
        result = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "head", "-c", "64", f"/proc/{pid}/{name}"],
            capture_output=True, text=True, check=False, timeout=10,
        )  # fmt: skip
        assert result.returncode != 0 and "Permission denied" in result.stderr, (name, result)
