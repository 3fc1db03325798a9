"""The real Claude Code started by a proxy launcher, through the claude shim, with the
allowlist network and no loopback port configured (issue 28).

A launcher-like parent (what ``ocx claude ...`` does) exports
``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`` of its local API (here the fake Messages
API) to its child only and runs ``claude --print`` from PATH, which is the shim. PORT
was never allowed at apply: the launch exposes it for that session, and Claude inside
the sandbox completes the turn. Everything runs as root in ``np-h-TAG``, a network
namespace this test made (:mod:`tests.integration.egress_world`), never the real one's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from sandbox_setup.configure.claude_shim import find_sandbox_launch, render_shim
from sandbox_setup.policy.environment import passed_names
from tests.claude_run import FAKE_API_KEY
from tests.fake_api import FakeMessagesAPI, TextStep
from tests.integration.egress_world import World, in_netns, make_world
from tests.launch_fixtures import LaunchTree, launch_tree
from tests.tools import SRC, claude_binary, require_tool

pytestmark = pytest.mark.e2e

FINAL = "pong from the fake API behind the proxy launcher"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What a proxy launcher does: its API's URL and token to its child only, then `claude`.
PARENT = """
import os, subprocess, sys
env = dict(os.environ, ANTHROPIC_BASE_URL=sys.argv[1], ANTHROPIC_AUTH_TOKEN=sys.argv[2],
           CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST="1")
sys.exit(subprocess.run(["claude", *sys.argv[3:]], env=env).returncode)
"""
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
         "CLAUDE_CODE_MAX_RETRIES": "2"}  # fmt: skip


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    for tool in ("ip", "openssl", "curl", "socat", "bwrap", "setpriv"):
        require_tool(tool)
    with make_world(prefix="np") as built:
        yield built


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def test_a_proxy_launchers_claude_reaches_its_api_with_no_port_configured(
    world: World, tree: LaunchTree
) -> None:
    config = tree.write_config(
        claude_binary(), network="allowlist", env_pass=passed_names(QUIET)
    )  # no loopback_ports: nothing allowed at apply
    sbin = tree.base / "sbin"
    sbin.mkdir(mode=0o755)
    shim = sbin / "claude"
    shim.write_bytes(render_shim(str(find_sandbox_launch()), str(config)))
    shim.chmod(0o755)
    root_home = tree.base / "root-home"
    root_home.mkdir(mode=0o700)
    api = in_netns(world.host_ns, lambda: FakeMessagesAPI([TextStep(FINAL)]).start())
    try:
        state = str(tree.base / "state")
        env = {"PATH": f"{sbin}:{HOST_PATH}", "HOME": str(root_home), "LANG": "C.UTF-8",
               "PYTHONPATH": str(SRC), "XDG_STATE_HOME": state, **QUIET}  # fmt: skip
        argv = ["ip", "netns", "exec", world.host_ns, sys.executable, "-c", PARENT,
                api.base_url, FAKE_API_KEY, "--dangerously-skip-permissions",
                "--print", "--output-format", "json", "ok"]  # fmt: skip
        result = subprocess.run(
            argv, env=env, cwd=tree.workspace, capture_output=True, text=True,
            timeout=240, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        api.stop()
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert json.loads(result.stdout)["result"] == FINAL, out  # stdout is Claude's alone
    api.assert_conversation_done()
    assert {r.headers.get("authorization") for r in api.main_requests} == {f"Bearer {FAKE_API_KEY}"}
    [line] = [x for x in result.stderr.splitlines() if x.startswith("sandbox-launch: sandbox")]
    assert f"host loopback port {api.port} (from ANTHROPIC_BASE_URL, this session only)" in line
    assert "did not pass CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST" in line
    log = tree.base / "state" / "sandbox-setup" / "egress.log"
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    # The token stays outside: Claude reaches the launcher's API through the session's
    # API gateway (docs/design.md invariant 17), which forwards to the base URL's port.
    assert "API gateway: ANTHROPIC_AUTH_TOKEN kept outside" in line, line
    assert any(e.get("event") == "gateway" and e.get("status") == 200 for e in entries)
    assert any(
        e.get("event") == "session start" and e.get("uid") == tree.agent.uid for e in entries
    )
