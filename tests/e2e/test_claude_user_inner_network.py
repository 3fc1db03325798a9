"""The real Claude Code in user mode: its own Bash sandbox reaches the allowlist.

User mode with Landlock's network rules (ABI >= 4, the default) and the session in a
network namespace of its own. Claude's Bash sandbox (inner sandbox strong) runs each
command in a network namespace of *its* own, bridged to the session's proxy by a
``socat`` that listens on ``localhost:3128`` (HTTP) and ``localhost:1080`` (SOCKS)
inside it. Landlock's TCP rules know ports, not namespaces: a domain that allowed no
bind at all refused that listener, and every sandboxed command had no network, the
allowed domains included (measured with both releases: "Failed to connect to
localhost port 3128").

Here the launcher runs in a world this test makes
(:func:`tests.integration.egress_world.make_world`: a web server for ``allowed.test``
and ``denied.test`` in a namespace of its own, names given to the session's proxy
through ``--seam-resolve``), as a live agent account. The Bash command's curl to the
allowed domain shows the page; the denied one gets the session proxy's 403, and its
decision log has both.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.launcher.egress.netns import namespace_possible
from tests.claude_session import AgentTree, agent_tree, launch_session
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.integration.egress_world import (
    ALLOWED_PATTERNS,
    WORLD_GREETING,
    World,
    in_netns,
    make_world,
)
from tests.tools import ClaudeRelease, require_tool

pytestmark = pytest.mark.e2e

ABI = landlock.abi_version()
MARK = "user-inner-network"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    for tool in ("ip", "openssl", "curl", "socat", "bwrap", "setpriv"):
        require_tool(tool)
    with make_world(prefix="ui") as built:
        yield built


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


def bash_command(ca: Path) -> str:
    # --retry-connrefused: the first command can race sandbox-runtime's own listener
    # on localhost:3128 starting (as in tests/e2e/test_claude_network.py).
    c = f"curl -sS --max-time 30 --retry 3 --retry-connrefused --retry-delay 1 --cacert {ca}"
    return (
        f"echo {MARK} runtime=$SANDBOX_RUNTIME net=$(readlink /proc/self/ns/net); "
        f"echo allowed=$({c} https://allowed.test/hello.txt 2>&1); "
        f"echo denied=$({c} -w '%{{http_code}}' http://denied.test/hello.txt 2>&1); "
        # The bridge's SOCKS port (what ALL_PROXY and git's ssh use in Claude's sandbox).
        f"echo socks=$({c} -x socks5h://localhost:1080 https://allowed.test/hello.txt 2>&1); "
        "echo all_proxy=$ALL_PROXY"
    )


@pytest.mark.skipif(ABI < 4, reason=f"needs Landlock's TCP rules, ABI 4 (kernel: {ABI})")
def test_claudes_bash_sandbox_reaches_an_allowed_domain_under_landlock(
    world: World, agent: AgentTree, claude_under_test: ClaudeRelease
) -> None:
    verdict = namespace_possible()
    if not verdict.possible:
        pytest.skip(f"no network namespace for user mode here: {verdict.why}")
    ca = agent.tree.workspace / "ca.pem"  # Claude's sandbox hides /tmp
    ca.write_bytes(world.ca.read_bytes())
    ca.chmod(0o644)
    script = [BashStep(bash_command(ca)), TextStep("done")]
    api = in_netns(world.host_ns, lambda: FakeMessagesAPI(script).start())
    try:
        session = launch_session(
            agent, api, mode="user", inner="strong", allowed_domains=ALLOWED_PATTERNS,
            seams=[f"--seam-resolve={world.resolve_map}"], netns=world.host_ns,
        )  # fmt: skip
    finally:
        api.stop()
    assert session.run.returncode == 0, session.run
    api.assert_conversation_done()
    stderr = session.run.stderr
    # The walls this test is about: Landlock's network rules and the session's namespace.
    assert "a network namespace of its own" in stderr, stderr
    assert f"Landlock ABI {ABI}: network" in stderr, stderr
    text = api.tool_result(0).text
    assert MARK in text, text
    first, *lines = text[text.index(MARK) :].splitlines()
    report = dict(field.split("=", 1) for field in first.split()[1:])
    report |= dict(line.split("=", 1) for line in lines if "=" in line)
    assert report["runtime"] == "1", text  # Claude's own sandbox ran the command
    assert report["net"] != os.readlink("/proc/self/ns/net"), text
    assert report["allowed"] == WORLD_GREETING.strip(), text
    assert report["denied"].endswith("403"), text
    assert report["socks"] == WORLD_GREETING.strip(), text
    log = agent.tree.base / "state" / "sandbox-setup" / "egress.log"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    decided = {(e["host"], e["allowed"]) for e in entries if e.get("event") == "decision"}
    assert {("allowed.test", True), ("denied.test", False)} <= decided, decided
