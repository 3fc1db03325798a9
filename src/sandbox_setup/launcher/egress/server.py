"""The egress proxy's server: HTTP CONNECT, plain HTTP forwarding and SOCKS5 on one socket.

Imported only in the proxy process; :func:`sandbox_setup.launcher.egress.proxy.serve` is the entry
point. Threads on blocking sockets, not asyncio: the launcher waits for the proxy to
accept (and probes it) before it releases Claude, and importing asyncio alone cost the
proxy 50-150 ms of that wait. A client connection gets a thread of its own (at most
:data:`MAX_CLIENTS`); every read of a request head runs against one deadline
(:data:`HEAD_TIMEOUT`, so a client that trickles bytes cannot hold a thread forever);
the copy loops run in the kernel (``splice(2)``), one thread per direction.

One listener serves all three protocols: the first byte tells them
apart (``0x05`` is a SOCKS5 greeting, anything else an HTTP request line). That is
what lets Claude Code's inner sandbox use one port for both of its settings
(``sandbox.network.httpProxyPort`` = ``socksProxyPort``), as sandbox-runtime's own
mux does.

Per connection: read the destination, ask :meth:`EgressPolicy.precheck` (a name off
the allowlist is refused before any lookup), resolve the name here, ask
:meth:`EgressPolicy.decide` with every address, log the decision as one JSON line,
then connect to the checked addresses in order: the address dialled is one that was
checked, never a second lookup's answer.

The exposed loopback ports (``--allow-loopback-port``) have listeners of their own in
the same process; :func:`forward` passes each connection to ``127.0.0.1:PORT``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sandbox_setup.launcher.egress import wire
from sandbox_setup.policy.addresses import parse_address
from sandbox_setup.policy.network import Decision, EgressPolicy, normalize_host

BUFFER = 256 * 1024  # per direction, for the copy loop where splice cannot run
HEAD_TIMEOUT = 30.0  # to send a request head or a SOCKS request, in all
RESOLVE_TIMEOUT = 10.0
CONNECT_TIMEOUT = 15.0
MAX_CLIENTS = 512
PIPE_SIZE = 1024 * 1024  # splice's pipe (the default pipe-max-size): 1 MiB per direction
SPLICE = hasattr(os, "splice")
THREAD_STACK = 512 * 1024  # a client's thread parses one head, resolves, then splices
HOST_ADDRESS_REFRESH = 30.0  # seconds between re-reads of this host's interface addresses
# accept() errors that mean "not now" (no fd, no memory), not "the socket is broken".
ACCEPT_RETRY = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_SKIP = frozenset({errno.ECONNABORTED, errno.EINTR, errno.EPROTO})


@dataclass(slots=True)
class Outcome:
    """What opening one destination gave: a connected socket, or why not."""

    decision: Decision
    upstream: socket.socket | None = None
    error: OSError | None = None


class _Reader:
    """Reads a blocking socket against one deadline, keeping what was read past a head."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = bytearray()

    def arm(self) -> None:
        """Give the socket's next operation what is left of the deadline."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the client took too long")
        self.sock.settimeout(remaining)

    def more(self) -> None:
        self.arm()
        chunk = self.sock.recv(BUFFER)
        if not chunk:
            raise wire.WireError("the client closed the connection")
        self.buffer += chunk

    def send(self, data: bytes) -> None:
        self.arm()
        self.sock.sendall(data)

    def until(self, separator: bytes, limit: int) -> bytes:
        while (end := self.buffer.find(separator)) == -1:
            if len(self.buffer) > limit:
                raise wire.WireError("request head too large", status=431)
            self.more()
        if end > limit:
            raise wire.WireError("request head too large", status=431)
        head = bytes(self.buffer[:end])
        del self.buffer[: end + len(separator)]
        return head

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self.more()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def rest(self) -> bytes:
        data, self.buffer = bytes(self.buffer), bytearray()
        return data


Resolver = Callable[[str, int], Iterable[str]]
"""``(name, port) -> addresses``: how the proxy resolves a normalized name. A name
it cannot resolve gives no address (refused as ``unresolved``); whatever it gives
still goes through every address rule."""


def resolve_by_dns(name: str, port: int) -> list[str]:
    """The proxy's resolver: ``getaddrinfo``, abandoned after :data:`RESOLVE_TIMEOUT`."""
    found: list[str] = []
    done = threading.Event()

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
            found.extend(str(info[4][0]) for info in infos)
        except (OSError, UnicodeError):
            pass
        finally:
            done.set()

    # getaddrinfo cannot be interrupted: a stuck lookup is abandoned to its thread.
    threading.Thread(target=lookup, name="egress-resolve", daemon=True).start()
    if not done.wait(RESOLVE_TIMEOUT):
        return []
    return found


class EgressProxy:
    """One proxy: the policy, the resolver, the decision log."""

    def __init__(
        self,
        policy: EgressPolicy,
        log_fd: int | None,
        resolver: Resolver | None = None,
        host_addresses: Iterable[str] = (),
    ) -> None:
        self.base_policy = policy
        self.policy = policy.with_host_addresses(host_addresses)
        self.log_fd = log_fd
        self.resolver = resolver or resolve_by_dns
        self.clients = 0
        self._lock = threading.Lock()

    # --- bookkeeping ----------------------------------------------------------------

    def log(self, **fields: object) -> None:
        if self.log_fd is None:
            return
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        data = (json.dumps({"time": stamp + "Z", **fields}, sort_keys=True) + "\n").encode()
        with self._lock, contextlib.suppress(OSError):  # one line at a time, whole
            while data:
                data = data[os.write(self.log_fd, data) :]

    def enter(self) -> bool:
        """Count a client in; False (and not counted) when there are too many."""
        with self._lock:
            if self.clients >= MAX_CLIENTS:
                return False
            self.clients += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.clients -= 1

    # --- decisions ------------------------------------------------------------------

    def resolve(self, host: str, port: int) -> list[str]:
        """Every address of ``host``, in the resolver's order, without duplicates."""
        return list(dict.fromkeys(self.resolver(normalize_host(host), port)))

    def open(self, host: str, port: int, protocol: str) -> Outcome:
        """Decide, log, and (when allowed) connect to ``host:port``."""
        addresses: list[str] = []
        decision = self.policy.precheck(host, port)
        if decision is None:
            literal = parse_address(normalize_host(host))
            addresses = [literal.compressed] if literal else self.resolve(host, port)
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
                return Outcome(decision, connect(address, port))
            except OSError as exc:
                error = exc
        self.log(event="connect failed", protocol=protocol, host=host, port=port,
                 addresses=addresses, error=str(error))  # fmt: skip
        return Outcome(decision, error=error)

    # --- protocols ------------------------------------------------------------------

    def handle(self, client: socket.socket) -> None:
        """One client connection, start to end (its own thread)."""
        try:
            if not self.enter():
                with contextlib.suppress(OSError):
                    client.settimeout(1.0)
                    client.sendall(wire.proxy_response(503, "too many connections", "busy"))
                return
            try:
                reader = _Reader(client, time.monotonic() + HEAD_TIMEOUT)
                reader.more()
                if reader.buffer[0] == wire.SOCKS_VERSION:
                    self._socks(client, reader)
                else:
                    self._http(client, reader)
            finally:
                self.leave()
        except (OSError, wire.WireError):  # TimeoutError is an OSError
            pass  # the client went away or stalled; nothing was connected for it
        finally:
            client.close()

    def _http(self, client: socket.socket, reader: _Reader) -> None:
        try:
            head = wire.parse_request_head(reader.until(b"\r\n\r\n", wire.MAX_HEAD))
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
                reader.send(wire.proxy_response(exc.status, message, "bad"))
            return
        outcome = self.open(host, port, protocol)
        if outcome.upstream is None:
            if not outcome.decision.allowed:
                reader.send(wire.refusal_response(outcome.decision))
            else:
                status = 504 if isinstance(outcome.error, TimeoutError) else 502
                message = (
                    f"sandbox-launch egress proxy: cannot reach {host}:{port}: "
                    f"{outcome.error.strerror if outcome.error else 'no address'}"
                )
                reader.send(wire.proxy_response(status, message, "unreachable"))
            return
        if protocol == "connect":
            try:
                reader.send(wire.CONNECT_ESTABLISHED)
            except OSError:
                outcome.upstream.close()
                raise
            relay(client, outcome.upstream, reader.rest(), until_response_ends=False)
        else:
            first = wire.forwarded_head(head, target) + reader.rest()
            relay(client, outcome.upstream, first, until_response_ends=True)

    def _socks(self, client: socket.socket, reader: _Reader) -> None:
        greeting = reader.exactly(2)
        greeting += reader.exactly(greeting[1])
        method = wire.socks_choose_method(greeting)
        reader.send(bytes((wire.SOCKS_VERSION, method)))
        if method == wire.SOCKS_NO_ACCEPTABLE:
            return
        try:
            request = reader.exactly(4)
            need = wire.socks_address_length(request)
            if request[3] == wire.ATYP_DOMAIN:
                request += reader.exactly(1)
                need = wire.socks_address_length(request)
            request += reader.exactly(need)
            command, host, port = wire.parse_socks_request(request)
        except wire.WireError as exc:
            code = exc.status if exc.status < 256 else wire.SOCKS_FAILURE
            reader.send(wire.socks_reply(code))
            return
        if command != wire.SOCKS_CONNECT:
            reader.send(wire.socks_reply(wire.SOCKS_CMD_UNSUPPORTED))
            return
        outcome = self.open(host, port, "socks5")
        if outcome.upstream is None:
            reader.send(wire.socks_reply(_socks_code(outcome)))
            return
        try:
            reader.send(wire.socks_reply(wire.SOCKS_OK))
        except OSError:
            outcome.upstream.close()
            raise
        relay(client, outcome.upstream, reader.rest(), until_response_ends=False)


def connect(address: str, port: int) -> socket.socket:
    """A TCP connection to a checked address (never a name: nothing is looked up here)."""
    ip = parse_address(address)
    assert ip is not None  # decide() accepted it, so it parses
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect((ip.compressed, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        sock.close()
        raise
    return sock


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


# --- copying ----------------------------------------------------------------------------


def _copy_pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, through a buffer: where splice cannot run."""
    buffer = bytearray(BUFFER)
    view = memoryview(buffer)
    while count := src.recv_into(buffer):
        dst.sendall(view[:count])


def _splice_pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` in the kernel (splice through a pipe) until EOF.

    No byte crosses into Python, which is what keeps a download through the proxy
    near direct speed.
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
    finally:
        os.close(read_end)
        os.close(write_end)


def _shutdown(*socks: socket.socket) -> None:
    for sock in socks:  # wakes a pump still blocked on either
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _direction(pump: Callable[[socket.socket, socket.socket], None],
               src: socket.socket, dst: socket.socket) -> None:  # fmt: skip
    """One direction: at EOF half-close ``dst`` (TLS needs both halves); an error ends both."""
    try:
        pump(src, dst)
    except OSError:
        _shutdown(src, dst)
        return
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def relay(
    client: socket.socket, upstream: socket.socket, to_upstream: bytes, *, until_response_ends: bool
) -> None:
    """Copy both ways until both ends closed (or, for one forwarded request, until the answer
    ended); an error on either side ends both. Closes ``upstream``."""
    try:
        client.settimeout(None)
        upstream.settimeout(None)
        if to_upstream:
            upstream.sendall(to_upstream)
        pump = _splice_pump if SPLICE else _copy_pump
        up = threading.Thread(
            target=_direction, args=(pump, client, upstream), name="egress-up", daemon=True
        )
        up.start()
        try:
            _direction(pump, upstream, client)
            if until_response_ends:
                _shutdown(client, upstream)
        finally:
            # The other direction must be done with both fds before they are closed
            # (a closed fd number is soon another connection's).
            up.join()
    except OSError:
        pass
    finally:
        _shutdown(client, upstream)
        upstream.close()


# --- serving ----------------------------------------------------------------------------


def forward(proxy: EgressProxy, client: socket.socket, port: int) -> None:
    """One connection of an exposed loopback port: to ``127.0.0.1:PORT``, unfiltered.

    The operator named this port (``--allow-loopback-port``); it is the only thing the
    socket reaches, so there is nothing to decide, only to log.
    """
    try:
        if not proxy.enter():
            return
        try:
            try:
                upstream = connect("127.0.0.1", port)
            except OSError as exc:
                proxy.log(event="loopback", port=port, connected=False,
                          error=str(exc) or "timeout")  # fmt: skip
                return
            proxy.log(event="loopback", port=port, connected=True)
            relay(client, upstream, b"", until_response_ends=False)
        finally:
            proxy.leave()
    finally:
        client.close()


def _start(target: Callable[..., None], *args: object, name: str) -> bool:
    try:
        threading.Thread(target=target, args=args, name=name, daemon=True).start()
    except RuntimeError:  # no thread to be had (the session's task limit): drop this one
        return False
    return True


def _accept(listener: socket.socket) -> socket.socket | None:
    """The next connection (blocking), or None after an error worth waiting out."""
    try:
        client, _ = listener.accept()
    except OSError as exc:
        if exc.errno in ACCEPT_RETRY:
            time.sleep(0.05)
            return None
        if exc.errno in ACCEPT_SKIP:
            return None
        raise
    client.setblocking(True)
    return client


def _accept_forwards(proxy: EgressProxy, listener: socket.socket, port: int) -> None:
    while True:
        client = _accept(listener)
        if client is not None and not _start(forward, proxy, client, port, name="egress-fwd"):
            client.close()


def _accept_clients(proxy: EgressProxy, sock: socket.socket, read_host_addresses: object) -> None:
    """Accept proxy clients on ``sock`` forever, each handled in a thread of its own."""
    next_refresh = time.monotonic() + HOST_ADDRESS_REFRESH
    while True:
        client = _accept(sock)
        if client is None:
            continue
        if callable(read_host_addresses) and time.monotonic() > next_refresh:
            # Interfaces change (DHCP, VPNs): the host's own addresses are re-read.
            with contextlib.suppress(OSError):
                proxy.policy = proxy.base_policy.with_host_addresses(read_host_addresses())
            next_refresh = time.monotonic() + HOST_ADDRESS_REFRESH
        if not _start(proxy.handle, client, name="egress-client"):
            client.close()


def run(
    sock: socket.socket,
    proxy: EgressProxy,
    ready_fd: int | None,
    read_host_addresses: object = None,
    forwards: Sequence[tuple[socket.socket, int]] = (),
    more: Sequence[socket.socket] = (),
) -> None:
    """Accept on ``sock`` (and each of ``more``, in threads) forever; one byte on
    ``ready_fd`` once accepting.

    ``forwards``: listening sockets whose connections :func:`forward` passes to
    ``127.0.0.1:PORT`` (the exposed loopback ports), each accepted in a thread.
    """
    threading.stack_size(THREAD_STACK)
    for listener in (sock, *more, *(f for f, _ in forwards)):
        listener.setblocking(True)
    for listener, port in forwards:
        threading.Thread(target=_accept_forwards, args=(proxy, listener, port),
                         name=f"egress-accept-{port}", daemon=True).start()  # fmt: skip
    for listener in more:
        threading.Thread(target=_accept_clients, args=(proxy, listener, read_host_addresses),
                         name="egress-accept", daemon=True).start()  # fmt: skip
    if ready_fd is not None:
        os.write(ready_fd, b"R")
        os.close(ready_fd)
    _accept_clients(proxy, sock, read_host_addresses)
