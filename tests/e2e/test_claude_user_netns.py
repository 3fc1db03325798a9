"""The real Claude Code in user mode, in the session's own network namespace.

Where root may make a network namespace, a user-mode session runs in one of its own
(loopback only; the session's proxy listens there; the exposed loopback ports, here the
fake Messages API's, are forwarded in). Claude completes a scripted turn through it,
with its own Bash sandbox on (its proxies pointed at the session's) and off. The Bash
command reports its network namespace (not the host's) and tries root's service on
``127.0.0.2`` at the API's port, which Landlock's ports alone would let through.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.launcher.egress.netns import namespace_possible
from tests.claude_session import AgentTree, agent_tree, launch_session
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.tools import ClaudeRelease

pytestmark = pytest.mark.e2e

ABI = landlock.abi_version()
SECOND = b"second-address-secret"
PROBE = (
    'python3 -c "import errno, os, socket, sys\n'
    "print('netns=%d' % os.stat('/proc/self/ns/net').st_ino)\n"
    "try:\n    s = socket.create_connection(('127.0.0.2', int(sys.argv[1])), timeout=5)\n"
    "    print('second=' + s.recv(100).decode())\n"
    "except OSError as exc:\n    print('second=' + errno.errorcode.get(exc.errno, 'timeout'))\""
    " {port}"
)


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


def _serve_second() -> tuple[socket.socket, threading.Event]:
    """Root's service on 127.0.0.2 at a free port (the API then listens at 127.0.0.1 on
    the same port, which the session exposes)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.2", 0))
    server.listen(4)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(SECOND)

    threading.Thread(target=serve, daemon=True).start()
    return server, stop


@pytest.mark.skipif(ABI < 4, reason=f"the session's proxy needs Landlock ABI 4 (kernel: {ABI})")
@pytest.mark.parametrize("inner", ["strong", "off"])
def test_claude_completes_a_turn_in_the_sessions_network_namespace(
    agent: AgentTree, claude_under_test: ClaudeRelease, inner: str
) -> None:
    verdict = namespace_possible()
    if not verdict.possible:
        pytest.skip(f"no network namespace for user mode here: {verdict.why}")
    server, stop = _serve_second()
    port = server.getsockname()[1]
    try:
        script = [BashStep(PROBE.format(port=port)), TextStep("done")]
        with FakeMessagesAPI(script, port=port) as api:
            session = launch_session(agent, api, mode="user", inner=inner)
    finally:
        stop.set()
        server.close()
    assert session.run.returncode == 0, session.run
    api.assert_conversation_done()
    text = api.tool_result(0).text
    assert "netns=" in text, text
    # Landlock alone allows the API's port at any address: the namespace has no 127.0.0.2.
    assert SECOND.decode() not in text, text
    assert f"netns={os.stat('/proc/self/ns/net').st_ino}" not in text, text
    assert "a network namespace of its own" in session.run.stderr, session.run.stderr
