"""The egress proxy's server: HTTP CONNECT, plain HTTP forwarding and SOCKS5 on one socket.

Loaded before the proxy's fork; :func:`sandbox_setup.launcher.egress.proxy.serve` is the entry
point. One thread runs one epoll loop over every connection; the bytes
of a tunnel are moved by ``splice(2)`` through a pipe, in the kernel, never through
Python. Not asyncio: the launcher waits for the proxy to accept (and probes it) before
it releases Claude, and importing asyncio alone cost 50-150 ms of that wait on a loaded
machine; asyncio's streams would also copy every byte through Python. The only other
threads are a fixed pool of resolvers (``getaddrinfo`` blocks and cannot be
interrupted); they never touch a connection, and their answers come back to the loop
through a wake-up pipe.

What the proxy holds is bounded (:mod:`sandbox_setup.launcher.egress.limits`, where each
limit and its reason is stated): connections at once, descriptors per connection (the
soft ``RLIMIT_NOFILE`` raised to what they need, within the hard limit), the bytes of a
head, and time: to send a head, to resolve, to connect, and without a byte in a tunnel.

One listener serves all three protocols: the first byte tells them apart (``0x05`` is a
SOCKS5 greeting, anything else an HTTP request line). That is what lets Claude Code's
inner sandbox use one port for both of its settings (``sandbox.network.httpProxyPort``
= ``socksProxyPort``), as sandbox-runtime's own mux does.

Per connection: read the destination, ask :meth:`EgressPolicy.precheck` (a name off
the allowlist is refused before any lookup), resolve the name, ask
:meth:`EgressPolicy.decide` with every address, log the decision as one JSON line,
then connect to the checked addresses in order: the address dialled is one that was
checked, never a second lookup's answer. The policy's answer to the same question (the
destination, its port, the addresses it resolved to) is kept while the policy is the
same (:data:`~sandbox_setup.launcher.egress.limits.DECISIONS_KEPT`): the tunnels of a
keep-alive pool ask it over and over; each tunnel's decision is still logged.

The exposed loopback ports (``--allow-loopback-port``) have listeners of their own,
served by the same loop: each connection is passed to ``127.0.0.1:PORT``.
"""

from __future__ import annotations

import _thread
import collections
import contextlib
import errno
import fcntl
import json
import os
import queue
import resource
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from sandbox_setup.launcher.egress import wire
from sandbox_setup.launcher.egress.limits import (
    DECISIONS_KEPT,
    HEAD_READ,
    PIPE_SIZE,
    PIPE_SPARE,
    RESOLVE_WORKERS,
    RESOLVE_WORKERS_MAX,
    ProxyLimits,
)
from sandbox_setup.policy.addresses import parse_address
from sandbox_setup.policy.domains import normalize_host
from sandbox_setup.policy.network import Decision, EgressPolicy

THREAD_STACK = 256 * 1024  # a resolver thread runs getaddrinfo, nothing else
HOST_ADDRESS_REFRESH = 30.0  # seconds between re-reads of this host's interface addresses
TICK = 1.0  # seconds between sweeps for deadlines
ACCEPT_BATCH = 64  # connections accepted per turn of the loop, per listener
SPLICE_TURNS = 4  # pipe-fulls moved per readiness event before other connections get a turn
SPLICE_FLAGS = os.SPLICE_F_NONBLOCK | os.SPLICE_F_MOVE
# accept() errors that mean "not now" (no fd, no memory), not "the socket is broken".
ACCEPT_RETRY = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_SKIP = frozenset({errno.ECONNABORTED, errno.EINTR, errno.EPROTO})
READ, WRITE = select.EPOLLIN, select.EPOLLOUT
# epoll reports these whether asked or not: the socket is ready for whatever is watched.
HANGUP = select.EPOLLERR | select.EPOLLHUP
LISTENER, WAKE = 1, 2  # the loop's own descriptors, in Server.targets (else a Connection)

Resolver = Callable[[str, int], Iterable[str]]
"""``(name, port) -> addresses``: how the proxy resolves a normalized name. A name
it cannot resolve gives no address (refused as ``unresolved``); whatever it gives
still goes through every address rule."""


def resolve_by_dns(name: str, port: int) -> list[str]:
    """The proxy's resolver: ``getaddrinfo`` (run by a resolver thread; the loop gives up
    on it after :data:`~sandbox_setup.launcher.egress.limits.RESOLVE_TIMEOUT`)."""
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [str(info[4][0]) for info in infos]


class EgressProxy:
    """One proxy: the policy, the resolver, the decision log."""

    def __init__(
        self,
        policy: EgressPolicy,
        log_fd: int | None,
        resolver: Resolver | None = None,
        host_addresses: Iterable[str] = (),
        launcher: int | None = None,
    ) -> None:
        self.base_policy = policy
        self.launcher = launcher  # in every record: the session's launcher pid
        self.policy = policy.with_host_addresses(host_addresses)
        self.log_fd = log_fd
        self.resolver = resolver or resolve_by_dns
        self._lock = threading.Lock()
        self._second = -1  # the log's time stamp, made once a second
        self._stamp = ""
        # The policy's answers, asked again for the same destination (each tunnel of a
        # keep-alive pool asks the same question): the policy is plain data, its answer
        # a function of the question; forgotten when the policy is replaced.
        self._asked: EgressPolicy | None = None
        self._lookups: dict[tuple[str, int], bool] = {}  # needs_lookup's answers
        self._decisions: dict[tuple[str, int, tuple[str, ...]], tuple[Decision, list[str]]] = {}

    def log(self, **fields: object) -> None:
        if self.log_fd is None:
            return
        mine = {"launcher": self.launcher} if self.launcher is not None else {}
        with self._lock, contextlib.suppress(OSError):  # one line at a time, whole
            second = int(time.time())
            if second != self._second:
                self._second = second
                self._stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
            record = {"time": self._stamp, **mine, **fields}
            data = (json.dumps(record, sort_keys=True) + "\n").encode()
            while data:
                data = data[os.write(self.log_fd, data) :]

    def resolve(self, host: str, port: int) -> list[str]:
        """Every address of ``host``, in the resolver's order, without duplicates."""
        return list(dict.fromkeys(self.resolver(normalize_host(host), port)))

    def _remembered(self) -> None:
        """Forget the policy's answers once the policy is replaced (the host's addresses
        re-read), or once :data:`~sandbox_setup.launcher.egress.limits.DECISIONS_KEPT`
        of them are kept."""
        if self._asked is not self.policy or len(self._decisions) >= DECISIONS_KEPT:
            self._lookups.clear()
            self._decisions.clear()
            self._asked = self.policy
        elif len(self._lookups) >= DECISIONS_KEPT:
            self._lookups.clear()

    def needs_lookup(self, host: str, port: int) -> bool:
        """Must ``host`` be resolved before :meth:`decide`? Not a literal address, nor a
        name :meth:`EgressPolicy.precheck` refuses (never looked up)."""
        self._remembered()
        lookup = self._lookups.get((host, port))
        if lookup is None:
            lookup = self.policy.precheck(host, port) is None and (
                parse_address(normalize_host(host)) is None
            )
            self._lookups[(host, port)] = lookup
        return lookup

    def decide(
        self, host: str, port: int, protocol: str, resolved: Sequence[str] = ()
    ) -> tuple[Decision, list[str]]:
        """Decide on ``host:port`` (with the addresses it ``resolved`` to), and log it;
        the decision and the addresses to dial, in order."""
        self._remembered()
        key = (host, port, tuple(resolved))
        known = self._decisions.get(key)
        if known is None:
            addresses: list[str] = []
            decision = self.policy.precheck(host, port)
            if decision is None:
                literal = parse_address(normalize_host(host))
                addresses = [literal.compressed] if literal else list(resolved)
                decision = self.policy.decide(host, port, addresses)
            known = self._decisions[key] = (decision, addresses)
        decision, addresses = known
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
        return decision, list(addresses) if decision.allowed else []


def _socks_code(decision: Decision, error: int | None) -> int:
    if not decision.allowed:
        if decision.rule == "unresolved":
            return wire.SOCKS_HOST_UNREACHABLE
        return wire.SOCKS_NOT_ALLOWED
    return {
        errno.ECONNREFUSED: wire.SOCKS_REFUSED,
        errno.ENETUNREACH: wire.SOCKS_NET_UNREACHABLE,
        errno.EHOSTUNREACH: wire.SOCKS_HOST_UNREACHABLE,
        errno.ETIMEDOUT: wire.SOCKS_HOST_UNREACHABLE,
    }.get(error or 0, wire.SOCKS_FAILURE)


# --- pipes --------------------------------------------------------------------------------


class Pipes:
    """The splice pipes: taken for a move, given back once empty; a few spares kept."""

    def __init__(self) -> None:
        self.spare: list[tuple[int, int]] = []

    def take(self) -> tuple[int, int]:
        if self.spare:
            return self.spare.pop()
        read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # over the account's pipe pages: the default size
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        return read_end, write_end

    def give(self, pipe: tuple[int, int]) -> None:
        """Take back an empty pipe."""
        if len(self.spare) < PIPE_SPARE:
            self.spare.append(pipe)
        else:
            self.close(pipe)

    @staticmethod
    def close(pipe: tuple[int, int]) -> None:
        for fd in pipe:
            with contextlib.suppress(OSError):
                os.close(fd)

    def trim(self) -> None:
        while self.spare:
            self.close(self.spare.pop())


# --- connections --------------------------------------------------------------------------

HEAD, RESOLVING, CONNECTING, RELAY, CLOSING, GONE = range(6)


class Direction:
    """One direction of a tunnel: ``src`` spliced into ``dst``; ``first`` is sent before."""

    __slots__ = ("dst", "dst_fd", "eof", "first", "pending", "pipe", "shut", "src", "src_fd")

    def __init__(self, src: socket.socket, dst: socket.socket, first: bytes) -> None:
        self.src, self.dst = src, dst
        self.src_fd, self.dst_fd = src.fileno(), dst.fileno()
        self.first = first
        self.pipe: tuple[int, int] | None = None
        self.pending = 0  # bytes in the pipe, not yet in dst
        self.eof = False  # src has ended
        self.shut = False  # dst has been told (SHUT_WR)

    @property
    def waiting(self) -> bool:
        """Bytes wait for ``dst`` to take them."""
        return bool(self.first) or self.pending > 0


class Connection:
    """One client connection, through its states: HEAD, RESOLVING, CONNECTING, RELAY."""

    __slots__ = (
        "active",
        "addresses",
        "buffer",
        "client",
        "deadline",
        "decision",
        "down",
        "error",
        "forward",
        "host",
        "masks",
        "out",
        "port",
        "protocol",
        "socks",
        "state",
        "to_client",
        "to_upstream",
        "until_response_ends",
        "up",
        "upstream",
    )  # fmt: skip

    def __init__(self, client: socket.socket, deadline: float, forward: int = 0) -> None:
        self.client = client
        self.state = HEAD
        self.buffer = bytearray()
        self.deadline = deadline  # of the current state (HEAD, RESOLVING, CONNECTING)
        self.active = 0.0  # last byte relayed (RELAY)
        self.socks = 0  # 1 once a SOCKS5 greeting is answered (its request to read)
        self.protocol = ""
        self.host = ""
        self.port = 0
        self.addresses: list[str] = []
        self.decision: Decision | None = None
        self.upstream: socket.socket | None = None
        self.error: int | None = None
        self.to_client = b""
        self.to_upstream = b""
        self.up: Direction | None = None
        self.down: Direction | None = None
        self.until_response_ends = False
        self.forward = forward  # the loopback port, for an exposed port's connection
        self.masks: dict[int, int] = {}  # fd -> events registered
        self.out = b""  # the proxy's own answer, still to be sent (CLOSING)


Ready = tuple[Connection | int | None, int, int]
"""A polled event: its target when polled (a Connection, LISTENER, WAKE or None), fd, mask."""


class Server:
    """The loop: every listener and connection of one proxy process."""

    def __init__(
        self,
        proxy: EgressProxy,
        listeners: Sequence[socket.socket],
        forwards: Sequence[tuple[socket.socket, int]] = (),
        limits: ProxyLimits | None = None,
        read_host_addresses: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.proxy = proxy
        self.limits = limits or ProxyLimits()
        self.max_connections = self.limits.connections
        self.read_host_addresses = read_host_addresses
        # epoll itself, not ``selectors``: the selector builds a key lookup and a tuple for
        # every event (with the lean _pump, 9 % of the proxy's CPU on many small requests).
        self.epoll = select.epoll()
        self.targets: dict[int, Connection | int] = {}  # fd -> its Connection, LISTENER or WAKE
        self.listening: dict[int, tuple[socket.socket, int]] = {}  # a listener's fd -> it, port
        self.connections: set[Connection] = set()
        self.pipes = Pipes()
        self.listeners: list[tuple[socket.socket, int]] = [*((s, 0) for s in listeners), *forwards]
        self.paused: list[tuple[socket.socket, int]] = []
        self.jobs: queue.SimpleQueue[Connection | None] = queue.SimpleQueue()
        self.answers: collections.deque[tuple[Connection, list[str]]] = collections.deque()
        self.resolvers = 0  # resolver threads started
        self.lookups = 0  # lookups handed to them and not answered yet (stuck ones too)
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.next_refresh = time.monotonic() + HOST_ADDRESS_REFRESH
        self.now = time.monotonic()

    # --- set-up -----------------------------------------------------------------------

    def raise_descriptor_limit(self) -> None:
        """Raise the soft RLIMIT_NOFILE to what the limits need (within the hard limit);
        under a lower hard limit, serve as many connections as fit."""
        listeners = len(self.listeners)
        need = self.limits.descriptors(listeners)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        if target > soft:
            with contextlib.suppress(OSError, ValueError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
        self.max_connections = self.limits.connections_within(soft, listeners)
        if self.max_connections < self.limits.connections:
            self.proxy.log(event="limits", connections=self.max_connections,
                           wanted=self.limits.connections, nofile=soft)  # fmt: skip

    def start(self) -> None:
        self.raise_descriptor_limit()
        self.batch_scheduling()
        for listener, port in self.listeners:
            listener.setblocking(False)
            self.listening[listener.fileno()] = (listener, port)
            self._listen(listener)
        self.epoll.register(self.wake_r, READ)
        self.targets[self.wake_r] = WAKE
        for _ in range(RESOLVE_WORKERS):
            self._start_resolver()

    @staticmethod
    def batch_scheduling() -> None:
        """Run the proxy (and the resolvers it starts) as ``SCHED_BATCH``: the same share of
        the CPU as before (its nice value and weight do not change), but a wake-up of the
        proxy no longer preempts the process running on that CPU. Each relayed answer wakes
        the proxy's client (curl, npm, Claude) and each request wakes the proxy: with
        wake-up preemption the proxy ran for some 12 events a wake-up on
        ``bench/connections.py``'s 200 tunnels, preempting its client each time; without
        it, some 50, four times fewer wake-ups and context switches for the same relay
        (docs/performance.md). Allowed to any process; where it is refused, nothing else
        changes."""
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))

    def _start_resolver(self) -> None:
        stack = threading.stack_size(THREAD_STACK)
        try:
            # _thread, not Thread.start, which waits until the new thread has run: under
            # SCHED_BATCH on a busy machine some ms a thread, before the proxy is ready.
            _thread.start_new_thread(self._resolver, ())
            self.resolvers += 1
        except RuntimeError:  # no thread to be had (the session's task limit): the others
            pass
        finally:
            threading.stack_size(stack)

    def _resolver(self) -> None:
        """A resolver thread: look names up, hand the answers to the loop (every job
        gets one, also those the loop gave up on, so that it counts the busy threads)."""
        while (conn := self.jobs.get()) is not None:
            found: list[str] = []
            if conn.state == RESOLVING:  # else the loop gave up on it already
                try:
                    found = self.proxy.resolve(conn.host, conn.port)
                except Exception:  # a resolver (a seam) that fails: the name does not resolve
                    found = []
            self.answers.append((conn, found))
            with contextlib.suppress(BlockingIOError):
                os.write(self.wake_w, b"!")

    # --- the loop ---------------------------------------------------------------------

    def serve_forever(self, ready: Callable[[], None] | None = None) -> None:
        self.start()
        if ready is not None:
            ready()
        monotonic = time.monotonic
        next_tick = monotonic() + TICK
        poll = self.epoll.poll
        while True:
            events = poll(max(0.0, next_tick - monotonic()))
            self.now = monotonic()
            # Each event's target is looked up before any is handled: an event may close a
            # connection and free its fd numbers, and an accept later in the same batch
            # may take one. The closed connection's own event must still go to it (GONE:
            # nothing happens), never to the new connection that took its number.
            self._dispatch(self._ready(events))
            if self.now >= next_tick:
                self._sweep()
                next_tick = self.now + TICK

    def _ready(self, events: list[tuple[int, int]]) -> list[Ready]:
        """A polled batch with each event's target as it is now (see serve_forever)."""
        targets = self.targets
        return [(targets.get(fd), fd, mask) for fd, mask in events]

    def _dispatch(self, ready: list[Ready]) -> None:
        """Handle one batch of events, each with the target it had when it was polled."""
        for target, fd, mask in ready:
            if isinstance(target, Connection):
                if mask & HANGUP:  # an error or a hang-up: whatever is watched is ready
                    mask = target.masks.get(fd, 0)
                self._event(target, fd, mask)
            elif target == LISTENER:
                self._accept(*self.listening[fd])
            elif target == WAKE:
                self._answers()

    def _sweep(self) -> None:
        """Once a tick: deadlines, idle tunnels, paused listeners, the host's addresses."""
        now = self.now
        idle = self.limits.idle_timeout
        for conn in list(self.connections):
            if conn.state == RELAY:
                if now - conn.active > idle:
                    self._close(conn)
            elif now > conn.deadline:
                try:
                    self._expire(conn)
                except (OSError, wire.WireError):
                    self._close(conn)
        for listener, _ in self.paused:
            self._listen(listener)
        self.paused.clear()
        if not self.connections:
            self.pipes.trim()
        if self.read_host_addresses is not None and now > self.next_refresh:
            # Interfaces change (DHCP, VPNs): the host's own addresses are re-read.
            with contextlib.suppress(OSError):
                hosts = self.read_host_addresses()
                self.proxy.policy = self.proxy.base_policy.with_host_addresses(hosts)
            self.next_refresh = now + HOST_ADDRESS_REFRESH

    def _expire(self, conn: Connection) -> None:
        if conn.state == RESOLVING:  # refused as unresolved, as a lookup that found nothing
            conn.state = HEAD  # the resolver drops its answer
            self._decided(conn, [])
        elif conn.state == CONNECTING:
            self._connect_failed(conn, errno.ETIMEDOUT)
        else:  # HEAD (stalled) or CLOSING (an answer nobody reads)
            self._close(conn)

    # --- registration -----------------------------------------------------------------

    def _listen(self, listener: socket.socket) -> None:
        self.epoll.register(listener.fileno(), READ)
        self.targets[listener.fileno()] = LISTENER

    def _watch(self, conn: Connection, sock: socket.socket, events: int) -> None:
        fd = sock.fileno()
        old = conn.masks.get(fd, 0)
        if events == old:
            return
        if not old:
            self.epoll.register(fd, events)
            self.targets[fd] = conn
        elif not events:
            self.epoll.unregister(fd)
            del self.targets[fd]
        else:
            self.epoll.modify(fd, events)
        conn.masks[fd] = events

    # --- accepting --------------------------------------------------------------------

    def _accept(self, listener: socket.socket, port: int) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                client, _ = listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in ACCEPT_SKIP:
                    continue
                if exc.errno in ACCEPT_RETRY:  # wait for the next tick
                    self.epoll.unregister(listener)
                    del self.targets[listener.fileno()]
                    self.paused.append((listener, port))
                    return
                raise
            client.setblocking(False)
            if client.family != socket.AF_UNIX:  # the relay writes whole answers: no Nagle
                with contextlib.suppress(OSError):
                    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if len(self.connections) >= self.max_connections:
                self._refuse_busy(client, port)
                continue
            conn = Connection(client, self.now + self.limits.head_timeout, port)
            self.connections.add(conn)
            try:
                if port:
                    self._connect_forward(conn)
                else:
                    self._watch(conn, client, READ)
            except OSError:
                self._close(conn)

    @staticmethod
    def _refuse_busy(client: socket.socket, port: int) -> None:
        """Over the limit: ``503`` (a proxy client's; an exposed port's gets nothing), closed."""
        with contextlib.suppress(OSError), client:
            if not port:
                with contextlib.suppress(BlockingIOError):
                    client.recv(HEAD_READ)  # what already came: not to be reset by the close
                client.send(wire.proxy_response(503, "sandbox-launch egress proxy: "
                                                "too many connections", "busy"))  # fmt: skip
                client.shutdown(socket.SHUT_WR)

    def _connect_forward(self, conn: Connection) -> None:
        conn.protocol = "loopback"
        conn.host, conn.port = "127.0.0.1", conn.forward
        conn.addresses = ["127.0.0.1"]
        conn.decision = Decision(True, "loopback port", "an exposed loopback port")
        self._connect_next(conn)

    # --- events -----------------------------------------------------------------------

    def _event(self, conn: Connection, fd: int, mask: int) -> None:
        try:
            state = conn.state
            if state == RELAY:
                self._relay_event(conn, fd, mask)
            elif state == HEAD:
                self._read_head(conn)
            elif state == CONNECTING:
                self._connected(conn)
            elif state == CLOSING:
                self._flush_out(conn)
        except (OSError, wire.WireError):
            self._close(conn)

    def _read_head(self, conn: Connection) -> None:
        room = wire.MAX_HEAD + 4 - len(conn.buffer)
        chunk = conn.client.recv(max(1, min(HEAD_READ, room)))
        if not chunk:  # gone mid-head: no answer
            self._close(conn)
            return
        conn.buffer += chunk
        if conn.socks or conn.buffer[0] == wire.SOCKS_VERSION:
            self._socks_head(conn)
        else:
            self._http_head(conn)

    def _answer(self, conn: Connection, data: bytes) -> None:
        """Send the proxy's own last answer, then close."""
        conn.state = CLOSING
        conn.out = data
        conn.deadline = self.now + self.limits.head_timeout
        self._flush_out(conn)

    def _flush_out(self, conn: Connection) -> None:
        try:
            sent = conn.client.send(conn.out) if conn.out else 0
        except BlockingIOError:
            sent = 0
        conn.out = conn.out[sent:]
        if conn.out:
            self._watch(conn, conn.client, WRITE)
        else:
            self._close(conn)

    def _http_head(self, conn: Connection) -> None:
        buffer = conn.buffer
        end = buffer.find(b"\r\n\r\n")
        try:
            if end == -1:
                if len(buffer) > wire.MAX_HEAD:
                    raise wire.WireError("request head too large", status=431)
                return
            if end > wire.MAX_HEAD:
                raise wire.WireError("request head too large", status=431)
            head = wire.parse_request_head(bytes(buffer[:end]))
            rest = bytes(buffer[end + 4 :])
            if head.method == "CONNECT":
                host, port = wire.split_authority(head.target)
                conn.protocol = "connect"
                conn.to_client = wire.CONNECT_ESTABLISHED
                conn.to_upstream = rest
            else:
                target = wire.parse_absolute_uri(head.target)
                host, port = target.host, target.port
                conn.protocol = "http"
                conn.to_upstream = wire.forwarded_head(head, target) + rest
                conn.until_response_ends = True
        except wire.WireError as exc:
            self._answer(conn, wire.proxy_response(exc.status, f"sandbox-launch egress proxy: "
                                                   f"{exc}", "bad"))  # fmt: skip
            return
        conn.buffer = bytearray()
        self._destination(conn, host, port)

    def _socks_head(self, conn: Connection) -> None:
        buffer = conn.buffer
        if not conn.socks:  # VER NMETHODS METHODS...
            if len(buffer) < 2 or len(buffer) < 2 + buffer[1]:
                return
            size = 2 + buffer[1]
            method = wire.socks_choose_method(bytes(buffer[:size]))
            del buffer[:size]
            if method == wire.SOCKS_NO_ACCEPTABLE:
                self._answer(conn, bytes((wire.SOCKS_VERSION, method)))
                return
            conn.socks = 1
            conn.client.send(bytes((wire.SOCKS_VERSION, method)))  # 2 bytes: never blocks
        try:
            if len(buffer) < 4:
                return
            if buffer[3] == wire.ATYP_DOMAIN:
                if len(buffer) < 5:
                    return
                size = 5 + wire.socks_address_length(bytes(buffer[:5]))
            else:
                size = 4 + wire.socks_address_length(bytes(buffer[:4]))
            if len(buffer) < size:
                return
            command, host, port = wire.parse_socks_request(bytes(buffer[:size]))
        except wire.WireError as exc:
            code = exc.status if exc.status < 256 else wire.SOCKS_FAILURE
            self._answer(conn, wire.socks_reply(code))
            return
        if command != wire.SOCKS_CONNECT:
            self._answer(conn, wire.socks_reply(wire.SOCKS_CMD_UNSUPPORTED))
            return
        conn.protocol = "socks5"
        conn.to_client = wire.socks_reply(wire.SOCKS_OK)
        conn.to_upstream = bytes(buffer[size:])
        conn.buffer = bytearray()
        self._destination(conn, host, port)

    # --- deciding and connecting ------------------------------------------------------

    def _destination(self, conn: Connection, host: str, port: int) -> None:
        conn.host, conn.port = host, port
        self._watch(conn, conn.client, 0)  # nothing more is read before the relay
        if self.proxy.needs_lookup(host, port):
            conn.state = RESOLVING
            conn.deadline = self.now + self.limits.resolve_timeout
            self.lookups += 1
            if self.lookups > self.resolvers and self.resolvers < RESOLVE_WORKERS_MAX:
                self._start_resolver()  # every thread busy (some stuck, perhaps): one more
            self.jobs.put(conn)
        else:
            self._decided(conn, [])

    def _answers(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.wake_r, 4096)
        while self.answers:
            conn, found = self.answers.popleft()
            self.lookups -= 1
            if conn.state == RESOLVING and conn in self.connections:
                self._decided(conn, found)

    def _decided(self, conn: Connection, resolved: list[str]) -> None:
        try:
            decision, addresses = self.proxy.decide(conn.host, conn.port, conn.protocol, resolved)
            conn.decision, conn.addresses = decision, addresses
            if not decision.allowed:
                self._unreachable(conn)
                return
            self._connect_next(conn)
        except (OSError, wire.WireError):
            self._close(conn)

    def _connect_next(self, conn: Connection) -> None:
        """Dial the next checked address (non-blocking); none left: the client is told."""
        while conn.addresses:
            address = conn.addresses.pop(0)
            ip = parse_address(address)
            assert ip is not None  # decide() accepted it, so it parses
            family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex((ip.compressed, conn.port))
            if code in (0, errno.EINPROGRESS):
                conn.upstream = sock
                conn.state = CONNECTING
                conn.deadline = self.now + self.limits.connect_timeout
                self._watch(conn, sock, WRITE)
                return
            sock.close()
            conn.error = code
        self._connect_failed(conn, conn.error)

    def _connected(self, conn: Connection) -> None:
        upstream = conn.upstream
        assert upstream is not None
        code = upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self._connect_failed(conn, code)
            return
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if conn.forward:
            self.proxy.log(event="loopback", port=conn.forward, connected=True)
        # upstream stays registered (for WRITE): _interest below modifies its events, one
        # epoll_ctl where unregistering and registering again took two.
        conn.state = RELAY
        conn.active = self.now
        conn.up = Direction(conn.client, upstream, conn.to_upstream)
        conn.down = Direction(upstream, conn.client, conn.to_client)
        conn.to_client = conn.to_upstream = b""
        self._pump(conn, conn.down)
        if conn.state == RELAY:
            self._pump(conn, conn.up)
        if conn.state == RELAY:
            self._interest(conn)

    def _connect_failed(self, conn: Connection, code: int | None) -> None:
        if conn.upstream is not None:
            self._watch(conn, conn.upstream, 0)
            conn.masks.pop(conn.upstream.fileno(), None)
            conn.upstream.close()
            conn.upstream = None
        conn.error = code
        if conn.addresses:
            self._connect_next(conn)
            return
        text = os.strerror(code) if code else "no address"
        if conn.forward:
            self.proxy.log(event="loopback", port=conn.forward, connected=False, error=text)
            self._close(conn)
            return
        self.proxy.log(event="connect failed", protocol=conn.protocol, host=conn.host,
                       port=conn.port, error=text)  # fmt: skip
        self._unreachable(conn)

    def _unreachable(self, conn: Connection) -> None:
        """Tell the client its destination was refused, or could not be reached."""
        decision = conn.decision
        assert decision is not None
        if conn.protocol == "socks5":
            self._answer(conn, wire.socks_reply(_socks_code(decision, conn.error)))
        elif not decision.allowed:
            self._answer(conn, wire.refusal_response(decision))
        else:
            status = 504 if conn.error == errno.ETIMEDOUT else 502
            text = os.strerror(conn.error) if conn.error else "no address"
            message = f"sandbox-launch egress proxy: cannot reach {conn.host}:{conn.port}: {text}"
            self._answer(conn, wire.proxy_response(status, message, "unreachable"))

    # --- relaying ---------------------------------------------------------------------

    def _relay_event(self, conn: Connection, fd: int, mask: int) -> None:
        conn.active = self.now
        up, down = conn.up, conn.down
        assert up is not None and down is not None
        # fd is the client's or the upstream's: the direction it feeds, the one it drains.
        if fd == up.src_fd:
            feeds, drains = up, down
        else:
            feeds, drains = down, up
        if mask & WRITE:
            self._pump(conn, drains)
        if mask & READ and conn.state == RELAY:
            self._pump(conn, feeds)

    def _pump(self, conn: Connection, d: Direction) -> None:
        """Move what ``d`` can now: its first bytes, what waits in its pipe, then reads.

        The sockets' interest changes only when ``d`` starts or stops waiting on its
        destination, or ends: a request or an answer that goes straight through (read
        into the pipe, all of it spliced on) leaves epoll as it was.

        This runs for every request and every answer of every tunnel (some 9,000 times
        for ``bench/connections.py``'s 4,000 GETs), so it keeps ``d``'s fields in locals,
        calls ``splice`` with positional arguments and takes and gives pipes without a
        method call (with the epoll dispatch: 9 % of the proxy's CPU there)."""
        pending, pipe, first = d.pending, d.pipe, d.first
        waited, ended = pending > 0 or bool(first), d.eof
        splice, spare = os.splice, self.pipes.spare
        try:
            if first:
                first = d.first = first[d.dst.send(first) :]
            if not first:
                turns = SPLICE_TURNS
                while True:
                    if pending:
                        assert pipe is not None
                        pending -= splice(pipe[0], d.dst_fd, pending, None, None, SPLICE_FLAGS)
                        d.pending = pending
                        if pending:
                            continue
                        d.pipe = None  # empty: back to the spares (Pipes.give)
                        if len(spare) < PIPE_SPARE:
                            spare.append(pipe)
                        else:
                            Pipes.close(pipe)
                        pipe = None
                    if d.eof or not turns:
                        break
                    turns -= 1
                    pipe = d.pipe = spare.pop() if spare else self.pipes.take()
                    moved = splice(d.src_fd, pipe[1], PIPE_SIZE, None, None, SPLICE_FLAGS)
                    if not moved:
                        self.pipes.give(pipe)
                        d.pipe = pipe = None
                        d.eof = True
                        break
                    d.pending = pending = moved
                    if moved < PIPE_SIZE:  # src is drained for now (no read just to see EAGAIN)
                        turns = 0
        except BlockingIOError:
            if d.pipe is not None and not d.pending:  # nothing to read after all
                self.pipes.give(d.pipe)
                d.pipe = None
        except OSError:
            self._close(conn)
            return
        waiting = d.pending > 0 or bool(d.first)
        if d.eof and not waiting and not d.shut:
            d.shut = True
            if conn.until_response_ends and d is conn.down:
                self._close(conn)  # one forwarded request: its answer has ended
                return
            with contextlib.suppress(OSError):
                d.dst.shutdown(socket.SHUT_WR)  # TLS needs both halves: half-close only
        if d.eof != ended or waiting != waited:
            self._interest(conn)

    def _interest(self, conn: Connection) -> None:
        up, down = conn.up, conn.down
        assert up is not None and down is not None and conn.upstream is not None
        if up.shut and down.shut:
            self._close(conn)
            return
        for sock, feeds, drains in ((conn.client, up, down), (conn.upstream, down, up)):
            events = 0
            if not feeds.eof and not feeds.waiting:
                events |= READ
            if drains.waiting:
                events |= WRITE
            self._watch(conn, sock, events)

    # --- closing ----------------------------------------------------------------------

    def _close(self, conn: Connection) -> None:
        if conn not in self.connections:
            return
        self.connections.discard(conn)
        conn.state = GONE  # a resolver's late answer is dropped
        # Both sockets are closed below, and closing a descriptor takes it out of epoll
        # (epoll(7): the proxy never duplicates them): no epoll_ctl to unregister them.
        for fd in conn.masks:
            self.targets.pop(fd, None)
        conn.masks.clear()
        up, down = conn.up, conn.down
        for d in (up, down):
            if d is not None and d.pipe is not None:
                (self.pipes.give if not d.pending else self.pipes.close)(d.pipe)
                d.pipe = None
        # A tunnel that ended both ways has sent both FINs already (SHUT_WR in _pump).
        ended = up is not None and down is not None and up.shut and down.shut
        for sock in (conn.client, conn.upstream):
            if sock is not None:
                if not ended:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                sock.close()


def run(
    sock: socket.socket,
    proxy: EgressProxy,
    ready_fd: int | None,
    read_host_addresses: Callable[[], Iterable[str]] | None = None,
    forwards: Sequence[tuple[socket.socket, int]] = (),
    more: Sequence[socket.socket] = (),
    limits: ProxyLimits | None = None,
) -> None:
    """Serve ``sock`` (and each of ``more``) forever; one byte on ``ready_fd`` once accepting.

    ``forwards``: listening sockets whose connections go to ``127.0.0.1:PORT`` (the
    exposed loopback ports), unfiltered: the operator named the port, so there is
    nothing to decide, only to log.
    """
    server = Server(proxy, [sock, *more], forwards, limits, read_host_addresses)

    def ready() -> None:
        if ready_fd is not None:
            os.write(ready_fd, b"R")
            os.close(ready_fd)

    server.serve_forever(ready)
