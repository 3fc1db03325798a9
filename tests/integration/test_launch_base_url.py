"""Proxy launchers with nothing to configure (issue 28): the launch's own
``ANTHROPIC_BASE_URL`` on the host's loopback is reachable from the sandbox for that
session, an unreachable one is refused in seconds, and the launch line names the
Claude-related variables it did not pass.

The launcher runs as root in ``nb-h-TAG``, a network namespace this test made
(:mod:`tests.integration.egress_world`), where the fake Messages API listens on an
ephemeral loopback port that no config allows. A stand-in ``claude`` (a script the
launcher trusts) sends one Messages request to ``$ANTHROPIC_BASE_URL`` from inside the
sandbox, as the agent; the fake API records it, so a run that never reached it cannot
pass.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from sandbox_setup.policy.environment import DEFAULT_PASS
from tests.claude_run import FAKE_API_KEY
from tests.fake_api import FakeMessagesAPI, TextStep
from tests.integration.egress_world import World, in_netns, make_world
from tests.launch_fixtures import LaunchTree, launch_tree, launcher_env
from tests.seams import LAUNCH_WITH_SEAMS
from tests.tools import REPO, require_tool

pytestmark = pytest.mark.integration

REAL_HOST_NETNS = os.readlink("/proc/self/ns/net")
# One Messages request to $ANTHROPIC_BASE_URL, as Claude would send it (through the
# proxy variables the sandbox has: NO_PROXY names the exposed loopback port), and a
# report of where it ran.
MESSAGES_CLAUDE = r"""#!/usr/bin/python3 -I
import json, os, urllib.request
body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 16, "stream": False,
                   "messages": [{"role": "user", "content": "ok"}]}).encode()
request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", body,
    {"content-type": "application/json", "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
     "anthropic-version": "2023-06-01"})
try:
    reply = json.load(urllib.request.urlopen(request, timeout=10))
    text = "".join(b.get("text", "") for b in reply.get("content", []))
except Exception as exc:
    text = "FAILED " + repr(exc)
print(json.dumps({"uid": os.getuid(), "net": os.readlink("/proc/self/ns/net"), "text": text}))
"""


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    for tool in ("ip", "openssl", "curl", "socat", "bwrap", "setpriv"):
        require_tool(tool)
    with make_world(prefix="nb") as built:
        yield built


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("ip")


@pytest.fixture
def api(world: World) -> Iterator[FakeMessagesAPI]:
    served = in_netns(world.host_ns, lambda: FakeMessagesAPI([TextStep("pong")]).start())
    try:
        yield served
    finally:
        served.stop()


def launch(
    world: World,
    tree: LaunchTree,
    config: Path,
    env: Mapping[str, str],
    args: Sequence[str] = ("--print", "ok"),
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``sandbox-launch`` as root in the world's host namespace (never the real one's)."""
    return subprocess.run(
        ["ip", "netns", "exec", world.host_ns, sys.executable, str(LAUNCH_WITH_SEAMS),
         f"--seam-resolve={world.resolve_map}", "--config", str(config), "--", *args],
        env=launcher_env({"XDG_STATE_HOME": str(tree.base / "state"), **env}),
        cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def report(stdout: str) -> dict[str, object]:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            data: dict[str, object] = json.loads(line)
            return data
    raise AssertionError(f"the stand-in claude printed no report:\n{stdout}")


def caller(api: FakeMessagesAPI, **more: str) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": FAKE_API_KEY, **more}


def test_a_base_url_port_not_allowed_at_apply_is_reached_for_that_session(
    world: World, tree: LaunchTree, api: FakeMessagesAPI
) -> None:
    claude = tree.write_script(MESSAGES_CLAUDE)
    config = tree.write_config(claude, network="allowlist", env_pass=DEFAULT_PASS)
    assert "loopback_ports = []" in config.read_text()  # nothing allowed at apply
    result = launch(world, tree, config, caller(api))
    assert result.returncode == 0, result.stderr
    seen = report(result.stdout)
    # The fake API's answer to a request without tools (not the script's turn).
    assert seen["text"] and not str(seen["text"]).startswith("FAILED"), (seen, result.stderr)
    assert seen["uid"] == tree.agent.uid and seen["net"] != REAL_HOST_NETNS
    [request] = api.requests  # the stand-in's, from the sandbox
    assert request.is_messages and request.headers.get("x-api-key") == FAKE_API_KEY
    # The launch line names the port it exposed, and why.
    line = f"host loopback port {api.port} (from ANTHROPIC_BASE_URL, this session only)"
    assert line in result.stderr, result.stderr
    assert "--allow-loopback-port" not in result.stderr  # no hint: nothing to do
    # Exposed as a configured port would be; the key stays outside, so Claude's request
    # came through the session's API gateway, which put the key in (docs/design.md invariant 17).
    log = tree.base / "state" / "sandbox-setup" / "egress.log"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    start = next(e for e in entries if e.get("event") == "session start")
    assert start["loopback_ports"] == [api.port], start
    assert any(e.get("event") == "gateway" and e.get("status") == 200 for e in entries)


def test_with_base_url_port_off_the_port_stays_closed_and_the_launch_says_how(
    world: World, tree: LaunchTree, api: FakeMessagesAPI
) -> None:
    claude = tree.write_script(MESSAGES_CLAUDE)
    config = tree.write_config(claude, network="allowlist", env_pass=DEFAULT_PASS)
    text = config.read_text().replace("[sandbox]\n", '[sandbox]\nbase_url_port = "off"\n', 1)
    config.write_text(text)
    result = launch(world, tree, config, caller(api))
    assert result.returncode == 0, result.stderr
    assert report(result.stdout)["text"].startswith("FAILED"), result.stdout  # type: ignore[union-attr]
    assert f"--allow-loopback-port {api.port}" in result.stderr
    assert 'with base_url_port "off"' in result.stderr  # why, in the plan's words too
    assert not api.requests


def test_the_agents_own_settings_never_choose_the_port(
    world: World, tree: LaunchTree, api: FakeMessagesAPI
) -> None:
    # The agent writes its ~/.claude/settings.json: a base URL there must not expose a
    # loopback service of the host to the next session.
    claude_dir = tree.home / ".claude"
    claude_dir.mkdir()
    settings = {"env": {"ANTHROPIC_BASE_URL": api.base_url}}
    (claude_dir / "settings.json").write_text(json.dumps(settings))
    for path in (claude_dir, claude_dir / "settings.json"):
        os.chown(path, tree.agent.uid, tree.agent.gid)
    plain = tree.write_script("#!/bin/sh\necho ran\n", name="claude-plain")
    config = tree.write_config(plain, network="allowlist", env_pass=DEFAULT_PASS)
    result = launch(world, tree, config, {}, args=())
    assert result.returncode == 0, result.stderr
    assert "host loopback port" not in result.stderr, result.stderr
    log = tree.base / "state" / "sandbox-setup" / "egress.log"
    start = next(json.loads(x) for x in log.read_text().splitlines() if "session start" in x)
    assert start["loopback_ports"] == []


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_an_unreachable_base_url_is_refused_within_5_seconds(
    world: World, tree: LaunchTree, mode: str
) -> None:
    # A port nothing listens on: bound, then closed, in the launcher's namespace.
    def free_port() -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    port = in_netns(world.host_ns, free_port)
    config = tree.write_config(tree.write_script(MESSAGES_CLAUDE), mode=mode,
                               network="allowlist", env_pass=DEFAULT_PASS)  # fmt: skip
    for url, where in (
        (f"http://127.0.0.1:{port}", f"127.0.0.1 port {port}"),
        ("https://no-such-gateway.invalid", "no-such-gateway.invalid port 443"),
    ):
        started = time.monotonic()
        result = launch(world, tree, config, {"ANTHROPIC_BASE_URL": url}, timeout=30)
        took = time.monotonic() - started
        assert result.returncode == 3, result.stderr
        assert f"refused: ANTHROPIC_BASE_URL (from your environment) points at {where}" in (
            result.stderr
        )
        assert took < 5, f"{took:.1f}s"
        assert not tree.marker.exists()
        assert "report" not in result.stdout and not result.stdout.strip()


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_the_launch_line_names_the_claude_variables_it_did_not_pass(
    world: World, tree: LaunchTree, api: FakeMessagesAPI, mode: str
) -> None:
    ocx = {  # what OpenCodex exports to its child, beside the endpoint and the token
        "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "1",
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000",
        "CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST": "1",
        "GITHUB_TOKEN": "not-claude-related",
    }
    if mode == "sandbox":
        ocx["CLAUDE_CODE_BUBBLEWRAP"] = "1"  # a sandbox claim: never passed there
    config = tree.write_config(tree.write_script(MESSAGES_CLAUDE), mode=mode,
                               network="allowlist", env_pass=DEFAULT_PASS)  # fmt: skip
    result = launch(world, tree, config, caller(api, **ocx))
    assert result.returncode == 0, result.stderr
    dropped = ("CLAUDE_CODE_AUTO_COMPACT_WINDOW, CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY, "
               "CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST")  # fmt: skip
    how = ("sandbox-setup --headless --pass-env CLAUDE_CODE_AUTO_COMPACT_WINDOW "
           "--pass-env CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY "
           "--pass-env CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST --yes")  # fmt: skip
    assert f"did not pass {dropped} (to pass them: {how})" in result.stderr, result.stderr
    assert "GITHUB_TOKEN" not in result.stderr  # not Claude's: nothing to say
    if mode == "sandbox":
        assert "never passes CLAUDE_CODE_BUBBLEWRAP (a sandbox claim)" in result.stderr
    assert "200000" not in result.stderr  # names only, never values
    [line] = [x for x in result.stderr.splitlines() if "did not pass" in x]
    assert line.startswith(f"sandbox-launch: {mode} mode; "), line  # the one launch line
