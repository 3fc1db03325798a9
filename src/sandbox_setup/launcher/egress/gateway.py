"""The session's API gateway (docs/design.md invariant 17), served by the egress proxy process.

Claude inside the session talks plain HTTP to ``127.0.0.1:PORT`` of its namespace (its
``ANTHROPIC_BASE_URL``), with placeholders for the credentials
(:mod:`sandbox_setup.policy.credentials`). For each connection the gateway reads one
request head (bounded like the proxy's: :data:`~sandbox_setup.launcher.egress.limits.HEAD_TIMEOUT`,
:data:`~sandbox_setup.launcher.egress.wire.MAX_HEAD`), puts each secret in place of its
placeholder in ``x-api-key`` and ``Authorization`` only, adds the held custom headers,
sends it with its body (``Content-Length``; a chunked request is refused with 411) to
the one upstream (TLS for ``https``, verified against the system's CAs), and relays the
answer as it comes: a streamed (SSE) answer is written to Claude as each read returns,
never buffered. One request per connection (``Connection: close`` both ways), so no
later request on it goes upstream unrewritten. The request target must be a path; the
upstream, its host and its scheme are the operator's, never the agent's.

It runs in the proxy process (another account's process that is not dumpable: the
agent cannot read its memory or environment through ``/proc`` or ptrace it), one thread
per connection, at most :data:`~sandbox_setup.launcher.egress.limits.GATEWAY_CONNECTIONS`
at once. Its listener is made in the session's network namespace like the proxy's.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Sequence

from sandbox_setup.launcher.egress.limits import (
    CONNECT_TIMEOUT,
    GATEWAY_CONNECTIONS,
    HEAD_TIMEOUT,
    IDLE_TIMEOUT,
)
from sandbox_setup.launcher.egress.wire import MAX_HEAD
from sandbox_setup.policy.credentials import CREDENTIAL_HEADERS, GatewaySpec

CHUNK = 65536
# Never forwarded from Claude's request: the gateway sets these itself.
DROPPED = frozenset({"host", "connection", "keep-alive", "proxy-connection",
                     "proxy-authorization", "te", "upgrade", "expect"})  # fmt: skip
DROPPED_ANSWER = frozenset({"connection", "keep-alive"})


class Refusal(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def tls_context() -> ssl.SSLContext:
    """Made before the proxy drops its privileges (the CA files are read here)."""
    return ssl.create_default_context()


class Gateway:
    def __init__(
        self, spec: GatewaySpec, log_fd: int | None, context: ssl.SSLContext | None
    ) -> None:
        self.spec = spec
        self.log_fd = log_fd
        split = urllib.parse.urlsplit(spec.upstream)
        self.tls = split.scheme == "https"
        self.host = split.hostname or ""
        self.port = split.port or (443 if self.tls else 80)
        self.prefix = split.path.rstrip("/")
        default = 443 if self.tls else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = host if self.port == default else f"{host}:{self.port}"
        self.context = context if context is not None or not self.tls else tls_context()
        self.slots = threading.BoundedSemaphore(GATEWAY_CONNECTIONS)

    def start(self, listeners: Sequence[socket.socket]) -> None:
        for sock in listeners:
            threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        listener.setblocking(True)
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                time.sleep(0.05)
                continue
            if not self.slots.acquire(blocking=False):
                with contextlib.suppress(OSError):
                    client.sendall(_answer(503, "the API gateway is busy"))
                client.close()
                continue
            try:
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()
            except RuntimeError:  # no thread to be had: refused like a full gateway
                client.close()
                self.slots.release()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        started = time.monotonic()
        method = target = ""
        status = 0
        try:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head, rest = _read_head(client, started + HEAD_TIMEOUT)
            method, target, lines, length = self._parse(head)
            upstream = self._connect()
            upstream.sendall(self._request(method, target, lines))
            self._send_body(client, upstream, rest, length)
            status = self._relay_answer(upstream, client)
        except Refusal as refusal:
            status = refusal.status
            with contextlib.suppress(OSError):
                client.sendall(_answer(refusal.status, refusal.reason))
        except (OSError, ValueError):
            pass
        finally:
            if upstream is not None:
                upstream.close()
            client.close()
            self.slots.release()
            self._log(method, target, status)

    def _parse(self, head: bytes) -> tuple[str, str, list[tuple[str, str]], int]:
        text = head.decode("latin-1")
        bare = text.replace("\r\n", "")
        if "\n" in bare or "\r" in bare or "\x00" in bare:
            raise Refusal(400, "a bare CR, LF or NUL in the head")
        request, *raw = text.split("\r\n")
        parts = request.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise Refusal(400, "not an HTTP/1.1 request")
        method, target, _version = parts
        if not target.startswith("/") or any(ord(c) <= 32 or ord(c) == 127 for c in target):
            raise Refusal(400, "the gateway takes a path, never another destination")
        lines: list[tuple[str, str]] = []
        length = 0
        for line in raw:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise Refusal(400, "a malformed header line")
            lower = name.lower()
            value = value.strip()
            if lower == "transfer-encoding":
                raise Refusal(411, "the gateway takes a request body with Content-Length only")
            if lower == "content-length":
                if not value.isdigit():
                    raise Refusal(400, "a malformed Content-Length")
                length = int(value)
            if lower in DROPPED:
                continue
            if lower in CREDENTIAL_HEADERS:
                for fake, secret in self.spec.replacements:
                    value = value.replace(fake, secret)
            lines.append((name, value))
        return method, target, lines, length

    def _request(self, method: str, target: str, lines: list[tuple[str, str]]) -> bytes:
        held = {name.lower() for name, _ in self.spec.headers}
        out = [f"{method} {self.prefix}{target} HTTP/1.1", f"Host: {self.authority}"]
        out += [f"{n}: {v}" for n, v in lines if n.lower() not in held]
        out += [f"{n}: {v}" for n, v in self.spec.headers]
        out.append("Connection: close")
        return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")

    def _connect(self) -> socket.socket:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise Refusal(502, f"the API upstream does not answer: {exc.strerror or exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            assert self.context is not None
            try:
                sock = self.context.wrap_socket(sock, server_hostname=self.host)
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                raise Refusal(502, f"TLS to the API upstream failed: {exc}") from None
        sock.settimeout(IDLE_TIMEOUT)
        return sock

    def _send_body(
        self, client: socket.socket, upstream: socket.socket, rest: bytes, length: int
    ) -> None:
        first = rest[:length]
        if first:
            upstream.sendall(first)
        left = length - len(first)
        client.settimeout(IDLE_TIMEOUT)
        while left > 0:
            chunk = client.recv(min(CHUNK, left))
            if not chunk:
                raise OSError("the client closed before its body was sent")
            upstream.sendall(chunk)
            left -= len(chunk)

    def _relay_answer(self, upstream: socket.socket, client: socket.socket) -> int:
        """The answer's head with ``Connection: close``, then its bytes as they come."""
        head, rest = _read_head(upstream, time.monotonic() + IDLE_TIMEOUT)
        status_line, *raw = head.decode("latin-1").split("\r\n")
        fields = status_line.split(" ", 2)
        status = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
        lines = [status_line]
        for line in raw:
            name = line.partition(":")[0].strip().lower()
            if line and name not in DROPPED_ANSWER:
                lines.append(line)
        lines.append("Connection: close")
        client.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + rest)
        while chunk := upstream.recv(CHUNK):
            client.sendall(chunk)
        return status

    def _log(self, method: str, target: str, status: int) -> None:
        if self.log_fd is None:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        path = target.partition("?")[0][:200]
        line = json.dumps({"time": stamp, "event": "gateway", "method": method[:16],
                           "path": path, "status": status}, sort_keys=True)  # fmt: skip
        with contextlib.suppress(OSError):
            os.write(self.log_fd, (line + "\n").encode())


def _read_head(sock: socket.socket, deadline: float) -> tuple[bytes, bytes]:
    """Bytes up to the blank line that ends a head, and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            raise Refusal(431, "the head is too large")
        left = deadline - time.monotonic()
        if left <= 0:
            raise OSError("a stalled head")
        sock.settimeout(left)
        chunk = sock.recv(CHUNK)
        if not chunk:
            raise OSError("closed before its head ended")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _answer(status: int, reason: str) -> bytes:
    body = f"sandbox-launch API gateway: {reason}\n".encode()
    return (
        f"HTTP/1.1 {status} {reason[:60]}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("latin-1", "replace") + body
