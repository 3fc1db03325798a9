"""The proxy's loop hands each polled event to the connection it was polled for: a
connection closed earlier in the same batch frees its fd number, and one accepted
later in that batch may take it; the stale event must not reach the new connection."""

from __future__ import annotations

import select
import socket

from sandbox_setup.launcher.egress.server import GONE, HEAD, EgressProxy, Server
from sandbox_setup.policy.network import EgressPolicy


def test_an_event_of_a_closed_connection_never_reaches_the_one_that_took_its_fd() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    server = Server(EgressProxy(EgressPolicy.build(["a.test"]), None), [listener])
    server.listening[listener.fileno()] = (listener, 0)
    server._listen(listener)
    port = listener.getsockname()[1]
    clients = []
    try:
        clients.append(socket.create_connection(("127.0.0.1", port)))
        server._accept(listener, 0)
        (first,) = server.connections
        fd = first.client.fileno()
        # One batch: an event for the first connection's socket, polled while it was open...
        stale = server._ready([(fd, select.EPOLLIN)])
        # ...then, earlier in that batch, the connection closed and a new one accepted
        # (its client connected before, so that the accept is what takes the number).
        clients.append(socket.create_connection(("127.0.0.1", port)))
        server._close(first)
        server._accept(listener, 0)
        (second,) = server.connections
        assert second.client.fileno() == fd, "the new connection took the freed fd number"
        server._dispatch(stale)
        assert first.state == GONE
        # The new client has sent nothing yet: a read handed to it in error would find
        # nothing (EAGAIN) and close it.
        assert second in server.connections and second.state == HEAD
    finally:
        for conn in list(server.connections):
            server._close(conn)
        for client in clients:
            client.close()
        listener.close()
        server.epoll.close()
