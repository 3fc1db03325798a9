"""The egress proxy's event loop: HTTP CONNECT, plain HTTP forwarding and SOCKS5 on one socket.

Imported only in the proxy process (asyncio costs the launcher ~50 ms it never
needs); :func:`wizard.launcher.proxy.serve` is the entry point.

One listening unix socket serves all three protocols: the first byte tells them
apart (``0x05`` is a SOCKS5 greeting, anything else an HTTP request line). That is
what lets Claude Code's inner sandbox use one bridge for both of its ports
(``sandbox.network.httpProxyPort`` = ``socksProxyPort``), as sandbox-runtime's own
mux does.

Per connection: read the destination, ask :meth:`EgressPolicy.precheck` (a name off
the allowlist is refused before any lookup), resolve the name here, ask
:meth:`EgressPolicy.decide` with every address, log the decision as one JSON line,
then connect to the checked addresses in order: the address dialled is one that was
checked, never a second lookup's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from wizard.launcher import proxy_wire as wire
from wizard.policy.addresses import parse_address
from wizard.policy.network import Decision, EgressPolicy, normalize_host

BUFFER = 256 * 1024  # per direction; big reads keep Python's per-chunk cost negligible
HEAD_TIMEOUT = 30.0  # to send a request head or a SOCKS request
RESOLVE_TIMEOUT = 10.0
CONNECT_TIMEOUT = 15.0
MAX_CLIENTS = 512
PIPE_SIZE = 1024 * 1024  # splice's pipe (the default pipe-max-size): 1 MiB per direction
SPLICE = hasattr(os, "splice")
RELAY_STACK = 256 * 1024  # a relay thread only loops over splice(2)
HOST_ADDRESS_REFRESH = 30.0  # seconds between re-reads of this host's interface addresses


@dataclass
class Outcome:
    """What opening one destination gave: a connected socket, or why not."""

    decision: Decision
    upstream: socket.socket | None = None
    error: OSError | None = None


class _Buffered:
    """Reads from a non-blocking socket through the loop, keeping what was read past a head."""

    def __init__(self, sock: socket.socket, data: bytes = b"") -> None:
        self.sock = sock
        self.buffer = bytearray(data)

    async def _more(self) -> None:
        chunk = await asyncio.get_running_loop().sock_recv(self.sock, BUFFER)
        if not chunk:
            raise wire.WireError("the client closed the connection")
        self.buffer += chunk

    async def until(self, separator: bytes, limit: int) -> bytes:
        while (end := self.buffer.find(separator)) == -1:
            if len(self.buffer) > limit:
                raise wire.WireError("request head too large", status=431)
            await self._more()
        if end > limit:
            raise wire.WireError("request head too large", status=431)
        head = bytes(self.buffer[:end])
        del self.buffer[: end + len(separator)]
        return head

    async def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self._more()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def rest(self) -> bytes:
        data, self.buffer = bytes(self.buffer), bytearray()
        return data


class EgressProxy:
    """One proxy: the policy, the resolver, the decision log."""

    def __init__(
        self,
        policy: EgressPolicy,
        log_fd: int | None,
        test_resolve: Mapping[str, Iterable[str]] | None = None,
        host_addresses: Iterable[str] = (),
    ) -> None:
        self.base_policy = policy
        self.policy = policy.with_host_addresses(host_addresses)
        self.log_fd = log_fd
        self.test_resolve = (
            None
            if test_resolve is None
            else {normalize_host(k): tuple(v) for k, v in test_resolve.items()}
        )
        self.clients = 0

    # --- decisions ------------------------------------------------------------------

    def log(self, **fields: object) -> None:
        if self.log_fd is None:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        line = json.dumps({"time": stamp + "Z", **fields}, sort_keys=True) + "\n"
        data = line.encode()
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(self.log_fd, data) :]

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address of ``host``, in the resolver's order, without duplicates."""
        name = normalize_host(host)
        if self.test_resolve is not None:
            # Tests only: the map replaces DNS (names it lacks do not resolve); what it
            # answers still goes through every address rule.
            return list(dict.fromkeys(self.test_resolve.get(name, ())))
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(name, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT
            )
        except (TimeoutError, OSError, UnicodeError):
            return []
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    async def open(self, host: str, port: int, protocol: str) -> Outcome:
        """Decide, log, and (when allowed) connect to ``host:port``."""
        addresses: list[str] = []
        decision = self.policy.precheck(host, port)
        if decision is None:
            literal = parse_address(normalize_host(host))
            addresses = [literal.compressed] if literal else await self.resolve(host, port)
            decision = self.policy.decide(host, port, addresses)
        self.log(
            event="decision",
            protocol=protocol,
            host=host,
            port=port,
            addresses=addresses,
            allowed=decision.allowed,
            rule=decision.rule,
            message=decision.message,
        )
        if not decision.allowed:
            return Outcome(decision)
        error: OSError | None = None
        for address in addresses:
            try:
                upstream = await asyncio.wait_for(self._connect(address, port), CONNECT_TIMEOUT)
            except TimeoutError:
                error = TimeoutError(errno.ETIMEDOUT, "connection timed out")
            except OSError as exc:
                error = exc
            else:
                return Outcome(decision, upstream)
        self.log(event="connect failed", protocol=protocol, host=host, port=port,
                 addresses=addresses, error=str(error))  # fmt: skip
        return Outcome(decision, error=error)

    async def _connect(self, address: str, port: int) -> socket.socket:
        ip = parse_address(address)
        assert ip is not None  # decide() accepted it, so it parses
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, (ip.compressed, port))
        except BaseException:
            sock.close()
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    # --- protocols ------------------------------------------------------------------

    async def handle(self, client: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        self.clients += 1
        try:
            if self.clients > MAX_CLIENTS:
                await loop.sock_sendall(
                    client, wire.proxy_response(503, "too many connections", "busy")
                )
                return
            first = await asyncio.wait_for(loop.sock_recv(client, BUFFER), HEAD_TIMEOUT)
            if not first:
                return
            if first[0] == wire.SOCKS_VERSION:
                await self._socks(client, _Buffered(client, first))
            else:
                await self._http(client, _Buffered(client, first))
        except (TimeoutError, OSError, wire.WireError):
            pass  # the client went away or stalled; nothing was connected for it
        finally:
            self.clients -= 1
            client.close()

    async def _http(self, client: socket.socket, reader: _Buffered) -> None:
        loop = asyncio.get_running_loop()
        try:
            head = wire.parse_request_head(
                await asyncio.wait_for(reader.until(b"\r\n\r\n", wire.MAX_HEAD), HEAD_TIMEOUT)
            )
            if head.method == "CONNECT":
                host, port = wire.split_authority(head.target)
                protocol = "connect"
            else:
                target = wire.parse_absolute_uri(head.target)
                host, port = target.host, target.port
                protocol = "http"
        except wire.WireError as exc:
            if exc.status >= 400:  # a client that hung up mid-head gets no answer
                message = f"sandbox-launch egress proxy: {exc}"
                await loop.sock_sendall(client, wire.proxy_response(exc.status, message, "bad"))
            return
        outcome = await self.open(host, port, protocol)
        if outcome.upstream is None:
            if not outcome.decision.allowed:
                await loop.sock_sendall(client, wire.refusal_response(outcome.decision))
            else:
                status = 504 if isinstance(outcome.error, TimeoutError) else 502
                message = (
                    f"sandbox-launch egress proxy: cannot reach {host}:{port}: "
                    f"{outcome.error.strerror if outcome.error else 'no address'}"
                )
                await loop.sock_sendall(client, wire.proxy_response(status, message, "unreachable"))
            return
        if protocol == "connect":
            await loop.sock_sendall(client, wire.CONNECT_ESTABLISHED)
            await relay(client, outcome.upstream, reader.rest(), until_response_ends=False)
        else:
            first = wire.forwarded_head(head, target) + reader.rest()
            await relay(client, outcome.upstream, first, until_response_ends=True)

    async def _socks(self, client: socket.socket, reader: _Buffered) -> None:
        loop = asyncio.get_running_loop()
        greeting = await asyncio.wait_for(reader.exactly(2), HEAD_TIMEOUT)
        greeting += await asyncio.wait_for(reader.exactly(greeting[1]), HEAD_TIMEOUT)
        method = wire.socks_choose_method(greeting)
        await loop.sock_sendall(client, bytes((wire.SOCKS_VERSION, method)))
        if method == wire.SOCKS_NO_ACCEPTABLE:
            return
        try:
            request = await asyncio.wait_for(reader.exactly(4), HEAD_TIMEOUT)
            need = wire.socks_address_length(request)
            if request[3] == wire.ATYP_DOMAIN:
                request += await asyncio.wait_for(reader.exactly(1), HEAD_TIMEOUT)
                need = wire.socks_address_length(request)
            request += await asyncio.wait_for(reader.exactly(need), HEAD_TIMEOUT)
            command, host, port = wire.parse_socks_request(request)
        except wire.WireError as exc:
            code = exc.status if exc.status < 256 else wire.SOCKS_FAILURE
            await loop.sock_sendall(client, wire.socks_reply(code))
            return
        if command != wire.SOCKS_CONNECT:
            await loop.sock_sendall(client, wire.socks_reply(wire.SOCKS_CMD_UNSUPPORTED))
            return
        outcome = await self.open(host, port, "socks5")
        if outcome.upstream is None:
            await loop.sock_sendall(client, wire.socks_reply(_socks_code(outcome)))
            return
        await loop.sock_sendall(client, wire.socks_reply(wire.SOCKS_OK))
        await relay(client, outcome.upstream, reader.rest(), until_response_ends=False)


def _socks_code(outcome: Outcome) -> int:
    if not outcome.decision.allowed:
        if outcome.decision.rule == "unresolved":
            return wire.SOCKS_HOST_UNREACHABLE
        return wire.SOCKS_NOT_ALLOWED
    code = outcome.error.errno if outcome.error else None
    return {
        errno.ECONNREFUSED: wire.SOCKS_REFUSED,
        errno.ENETUNREACH: wire.SOCKS_NET_UNREACHABLE,
        errno.EHOSTUNREACH: wire.SOCKS_HOST_UNREACHABLE,
        errno.ETIMEDOUT: wire.SOCKS_HOST_UNREACHABLE,
    }.get(code or 0, wire.SOCKS_FAILURE)


async def _pump(src: socket.socket, dst: socket.socket, first: bytes) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst`` (TLS needs both halves).

    The portable path, where :func:`_splice_pump` cannot run.
    """
    loop = asyncio.get_running_loop()
    buffer = bytearray(BUFFER)
    view = memoryview(buffer)
    if first:
        await loop.sock_sendall(dst, first)
    while count := await loop.sock_recv_into(src, buffer):
        await loop.sock_sendall(dst, view[:count])
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _splice_pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` in the kernel (splice through a pipe), then half-close ``dst``.

    Runs in a thread of its own on blocking sockets: no byte crosses into Python,
    which is what keeps a download through the proxy near direct speed.
    """
    read_end, write_end = os.pipe()
    try:
        with contextlib.suppress(OSError):
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        # No SPLICE_F_MORE: it becomes MSG_MORE on the socket, which holds data back
        # (measured: a tenth of the throughput into the unix socket).
        src_fd, dst_fd = src.fileno(), dst.fileno()
        while count := os.splice(src_fd, write_end, PIPE_SIZE):
            while count:
                count -= os.splice(read_end, dst_fd, count)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
    finally:
        os.close(read_end)
        os.close(write_end)


def _in_thread(loop: asyncio.AbstractEventLoop, work: Callable[[], None]) -> asyncio.Future[None]:
    """``work()`` in a thread of its own (not the loop's executor: a tunnel can last hours,
    and the executor's few threads also resolve names)."""
    future: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    def run() -> None:
        error: BaseException | None = None
        try:
            work()
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: the proxy is exiting
            loop.call_soon_threadsafe(settle, error)

    threading.Thread(target=run, name="egress-relay", daemon=True).start()
    return future


async def relay(
    client: socket.socket, upstream: socket.socket, to_upstream: bytes, *, until_response_ends: bool
) -> None:
    """Copy both ways until both ends closed (or, for one forwarded request, until the answer
    ended); an error on either side ends both."""
    loop = asyncio.get_running_loop()
    if SPLICE:
        if to_upstream:
            await loop.sock_sendall(upstream, to_upstream)
        client.setblocking(True)
        upstream.setblocking(True)
        up = _in_thread(loop, lambda: _splice_pump(client, upstream))
        down = _in_thread(loop, lambda: _splice_pump(upstream, client))
    else:
        up = asyncio.ensure_future(_pump(client, upstream, to_upstream))
        down = asyncio.ensure_future(_pump(upstream, client, b""))
    pending: set[asyncio.Future[None]] = {up, down}
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(task.exception() is not None for task in done):
                break
            if until_response_ends and down in done:
                break
    finally:
        for sock in (client, upstream):  # wakes a splice thread still blocked on either
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if not SPLICE:
            for task in pending:
                task.cancel()
        # A splice thread is never cancelled, only woken: it must be done with both fds
        # before they are closed (a closed fd number is soon another connection's).
        await asyncio.gather(*pending, return_exceptions=True)
        upstream.close()


async def run(
    sock: socket.socket,
    proxy: EgressProxy,
    ready_fd: int | None,
    read_host_addresses: object = None,
) -> None:
    """Accept on ``sock`` forever; one byte on ``ready_fd`` once accepting."""
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    threading.stack_size(RELAY_STACK)
    tasks: set[asyncio.Task[None]] = set()
    if ready_fd is not None:
        os.write(ready_fd, b"R")
        os.close(ready_fd)
    next_refresh = time.monotonic() + HOST_ADDRESS_REFRESH
    while True:
        client, _ = await loop.sock_accept(sock)
        client.setblocking(False)
        if callable(read_host_addresses) and time.monotonic() > next_refresh:
            # Interfaces change (DHCP, VPNs): the host's own addresses are re-read.
            with contextlib.suppress(OSError):
                proxy.policy = proxy.base_policy.with_host_addresses(read_host_addresses())
            next_refresh = time.monotonic() + HOST_ADDRESS_REFRESH
        task = asyncio.ensure_future(proxy.handle(client))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
