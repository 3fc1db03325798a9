"""The egress proxy's limits: how much it serves at once, how long it waits, what it holds.

Stated once, here; :mod:`sandbox_setup.launcher.egress.server` enforces them. The
proxy's clients are the agent's processes (a prompt-injected agent among them), so the
limits are what keeps the proxy from taking the host's memory and descriptors: at worst
the agent denies its own network, never the host's resources.

Why these values:

- :data:`MAX_CONNECTIONS` (2048): every client connection counts, whatever its state
  (sending its head, waiting for DNS or a connect, relaying), and the exposed loopback
  ports' connections too. ``npm install`` opens some 15-200 tunnels at once
  (``bench/connections.py`` uses 200); 2048 is ten times that, and 1,000 idle tunnels
  plus 100 slow clients fit (``tests/integration/test_egress_limits.py``). A client over
  the limit gets ``503`` at once and is closed: it is never queued.
- :data:`FDS_PER_CONNECTION` (6): the client's socket and the destination's, and for
  each direction a pipe (two descriptors) for ``splice(2)``. A pipe is held only while
  bytes wait in it for a slow reader; otherwise it goes back to a small spare pool
  (:data:`PIPE_SPARE`), so an idle tunnel holds 2 descriptors and a busy one at most 6.
- :data:`FD_RESERVE` (32): the proxy's own descriptors beyond the listeners (stdio, the
  decision log, epoll, the resolvers' wake-up pipe, the lookups' sockets,
  ``/proc/net`` while the host's addresses are re-read). The proxy raises its soft
  ``RLIMIT_NOFILE`` to ``listeners + FD_RESERVE + FDS_PER_CONNECTION * MAX_CONNECTIONS``
  (12,322 with the two listeners of a session), within the hard limit; under a lower hard limit
  it serves fewer connections at once, as many as fit, and logs that it did.
- :data:`HEAD_TIMEOUT` (30 s): from the accept to a whole request head (or SOCKS5
  greeting and request). A client that trickles bytes, or sends nothing, is closed
  then: slow clients hold a slot for 30 s at most.
- :data:`HEAD_READ` (16 KiB): the most read at once while a head is incomplete; with
  :data:`sandbox_setup.launcher.egress.wire.MAX_HEAD` (64 KiB) a client's buffer holds at
  most ``MAX_HEAD + 4`` bytes before it is refused (431), and is freed once the head is
  parsed. A relayed byte never enters Python (``splice``).
- :data:`CONNECTION_MEMORY` (16 KiB): what one open connection may cost the proxy in
  memory once its head is parsed (its Python objects, its epoll entry, the
  kernel's socket bookkeeping counted in the process's RSS); measured at about 2 KiB
  (1,000 idle tunnels and 100 slow clients: 1.9 KiB each), the bound leaves room for
  the allocator's slack. Worst case, every
  connection sending a full head at once: ``MAX_CONNECTIONS * (MAX_HEAD + 4 +
  CONNECTION_MEMORY)``, about 160 MiB, for 30 s.
- :data:`IDLE_TIMEOUT` (15 min): a tunnel with no byte in either direction for that
  long is closed (squid's ``read_timeout``). Long enough for a model's long answer, a
  slow build behind a registry, an idle keep-alive pool; short enough that tunnels left
  half-open by a vanished peer do not pile up.
- :data:`RESOLVE_TIMEOUT` (10 s), :data:`RESOLVE_WORKERS` (8) and
  :data:`RESOLVE_WORKERS_MAX` (64): names are looked up (``getaddrinfo`` blocks and
  cannot be interrupted) by a pool of threads; a lookup not back in 10 s is refused as
  ``unresolved`` and its thread's answer dropped. Eight threads start with the proxy;
  while every one is busy (a lookup stuck on a dead name server holds its thread until
  glibc gives up, some 30 s with two servers) one more starts, up to 64, so a few dead
  names do not hold up the rest. The pool never shrinks, and never grows with
  connections, only with lookups in flight; a thread's stack is 256 KiB, little of it
  touched.
- :data:`CONNECT_TIMEOUT` (15 s): per address of the destination, tried in order.
- :data:`PIPE_SIZE` (1 MiB) and :data:`PIPE_SPARE` (16): the splice pipes' size (the
  default ``pipe-max-size``; a download through 64 KiB pipes takes more loop turns per
  megabyte), and how many empty pipes are kept for the next burst. Pipes count against
  the proxy's account's pipe pages (``pipe-user-pages-soft``, shared with the agent's own
  processes): only pipes holding bytes and the spares exist, and the spares are closed
  once no connection is open.
- :data:`DECISIONS_KEPT` (1,024): the policy's answers the proxy keeps, per question
  (the destination as asked, its port, the addresses it resolved to), so that the
  tunnels of a keep-alive pool, which all ask the same, do not each run the policy
  again (some 60-100 us a tunnel); every tunnel's decision is still logged. Kept only
  for the policy they came from (the host's addresses re-read every 30 s make a new
  one), and all forgotten once 1,024 are kept: a few hundred KiB at most.
- :data:`GATEWAY_CONNECTIONS` (64): the session's API gateway
  (:mod:`sandbox_setup.launcher.egress.gateway`) serves one request per connection on a
  thread of its own (Claude keeps a few connections open at a time; a 65th gets ``503``
  at once). Each holds two sockets and a thread (256 KiB stack), its head bounded as
  the proxy's (:data:`HEAD_TIMEOUT`, ``MAX_HEAD``); the answer is relayed in 64 KiB reads.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_CONNECTIONS = 2048
FDS_PER_CONNECTION = 6
FD_RESERVE = 32
HEAD_TIMEOUT = 30.0
HEAD_READ = 16 * 1024
CONNECTION_MEMORY = 16 * 1024
IDLE_TIMEOUT = 15 * 60.0
RESOLVE_TIMEOUT = 10.0
RESOLVE_WORKERS = 8
RESOLVE_WORKERS_MAX = 64
CONNECT_TIMEOUT = 15.0
PIPE_SIZE = 1024 * 1024
PIPE_SPARE = 16
GATEWAY_CONNECTIONS = 64
DECISIONS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class ProxyLimits:
    """The limits one proxy runs with: the values above (a test passes smaller ones)."""

    connections: int = MAX_CONNECTIONS
    head_timeout: float = HEAD_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    resolve_timeout: float = RESOLVE_TIMEOUT
    connect_timeout: float = CONNECT_TIMEOUT

    def descriptors(self, listeners: int) -> int:
        """The descriptors the proxy needs for ``listeners`` listening sockets."""
        return listeners + FD_RESERVE + FDS_PER_CONNECTION * self.connections

    def connections_within(self, descriptors: int, listeners: int) -> int:
        """How many connections fit in ``descriptors`` (at most :attr:`connections`)."""
        room = (descriptors - listeners - FD_RESERVE) // FDS_PER_CONNECTION
        return max(0, min(self.connections, room))
