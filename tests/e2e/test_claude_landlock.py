"""The real Claude Code in user mode under Landlock: its own Bash sandbox still wraps
its commands, inside the session's Landlock domain (network and scope rules; issue 29).

The scripted Bash command reports where it ran (:mod:`tests.bash_evidence`: Claude's
bwrap, its seccomp filter, namespaces of its own) and then tries to bind a TCP port on
its own loopback. Claude's sandbox allows that (its network namespace is its own); the
session's Landlock domain, which no namespace leaves, refuses it (no TCP bind but on
the two ports of Claude's sandbox bridge, :func:`sandbox_setup.policy.landlock.bridge_ports`).
The twin, ``[user] landlock = false``, binds: the refusal is Landlock's. The twin still
runs in the session's own network namespace where root can make one (Landlock off is
not the namespace off), and Claude completes its turn through it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.launcher.egress.netns import namespace_possible
from tests.bash_evidence import evidence_command, new_marker, parse_evidence
from tests.claude_session import AgentTree, agent_tree, launch_session
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.tools import ClaudeRelease

pytestmark = pytest.mark.e2e

ABI = landlock.abi_version()
BIND_PROBE = (
    'python3 -c "import errno, socket\n'
    "try:\n    socket.socket().bind(('127.0.0.1', 0)); print('bind=ok')\n"
    "except OSError as exc:\n    print('bind=' + errno.errorcode[exc.errno])\""
)
FINAL = "done"


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


def _bash_in_session(agent: AgentTree, on: bool) -> tuple[str, str]:
    marker = new_marker()
    script = [BashStep(f"{evidence_command(marker)}; {BIND_PROBE}"), TextStep(FINAL)]
    with FakeMessagesAPI(script) as api:
        session = launch_session(agent, api, mode="user", inner="strong", landlock=on)
    assert session.run.returncode == 0, session.run
    api.assert_conversation_done()
    text = api.tool_result(0).text
    evidence = parse_evidence(text, marker)
    # Claude's own Bash sandbox wrapped the command, with or without Landlock.
    assert evidence.marker_seen and evidence.sandboxed, (evidence, text)
    assert evidence.uid == agent.agent.uid, evidence
    return text, session.run.stderr


@pytest.mark.skipif(ABI < 4, reason=f"TCP rules need Landlock ABI 4 (kernel: {ABI})")
def test_claudes_bash_sandbox_runs_inside_the_landlock_domain(
    agent: AgentTree, claude_under_test: ClaudeRelease
) -> None:
    inside, stderr = _bash_in_session(agent, on=True)
    assert "Landlock ABI" in stderr and "network" in stderr, stderr
    assert "bind=EACCES" in inside, inside
    twin, twin_err = _bash_in_session(agent, on=False)
    assert "bind=ok" in twin, twin
    # [user] landlock = false turns off Landlock only: where root can make one, the
    # twin's turn went through the session's own network namespace and its proxy.
    if namespace_possible().possible:
        assert "a network namespace of its own" in twin_err, twin_err
        assert "no second wall" in twin_err, twin_err
