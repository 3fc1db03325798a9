"""The real OpenCodex (``ocx``, npm ``@bitkyc08/opencodex``) runs the real Claude Code
through the claude shim, with no loopback port configured (issue 28).

``ocx claude --dangerously-skip-permissions --print ok`` as root, as the issue's
operator ran it: ocx routes Claude to its own API proxy on the host's loopback (port P,
chosen by this test, in ocx's ``config.json``), whose one provider is the fake Messages
API (ocx's ``anthropic`` adapter; ``allowPrivateNetwork`` lets it be local). ocx exports
``ANTHROPIC_BASE_URL=http://127.0.0.1:P`` to its child only and runs ``claude`` from
PATH: the shim, so the session is sandbox-launch's, in sandbox mode with the allowlist
network, and P was never allowed at apply. Everything runs as root in ``no-h-TAG``, a
network namespace this test made, never the real one's; ocx's state is a temp
``OPENCODEX_HOME``, and the proxy is a process of this test's, stopped after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.base.netwall import PORTS_ONLY
from sandbox_setup.configure.claude_shim import find_sandbox_launch, render_shim
from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.policy.environment import passed_names
from tests.claude_run import FAKE_API_KEY
from tests.fake_api import FakeMessagesAPI, TextStep
from tests.integration.egress_world import World, in_netns, make_world
from tests.launch_fixtures import LaunchTree, launch_tree
from tests.tools import SRC, claude_binary, ocx_binary, require_tool

pytestmark = pytest.mark.e2e

FINAL = "pong from the fake API behind OpenCodex"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
         "CLAUDE_CODE_MAX_RETRIES": "2"}  # fmt: skip
OCX_WARNING = "OpenCodex did not create an OS sandbox"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    for tool in ("ip", "openssl", "curl", "socat", "bwrap", "setpriv"):
        require_tool(tool)
    with make_world(prefix="no") as built:
        yield built


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def free_port(world: World) -> int:
    def pick() -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    return in_netns(world.host_ns, pick)


def answers(world: World, port: int) -> bool:
    def attempt() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    return in_netns(world.host_ns, attempt)


@contextlib.contextmanager
def ocx_proxy(world: World, env: dict[str, str], port: int) -> Iterator[subprocess.Popen[str]]:
    """``ocx start --port PORT`` in the world's host namespace, a process group of ours."""
    log = Path(env["OPENCODEX_HOME"]) / "test-proxy.log"
    with log.open("w") as out:
        proxy = subprocess.Popen(
            ["ip", "netns", "exec", world.host_ns, ocx_binary(), "start", "--port", str(port)],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not answers(world, port):
            assert proxy.poll() is None, f"ocx start exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"ocx never listened:\n{log.read_text()}"
            time.sleep(0.2)
        yield proxy
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proxy.pid, signal.SIGTERM)
        try:
            proxy.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proxy.pid, signal.SIGKILL)
            proxy.wait()


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_ocx_claude_print_runs_sandboxed_through_the_shim_with_no_port_configured(
    world: World, tree: LaunchTree, mode: str
) -> None:
    """Sandbox mode with the allowlist network, and user mode (in its own network
    namespace where root may make one, Landlock's ports otherwise): ocx's port is
    forwarded in for this session only, with nothing configured."""
    if mode == "user":
        abi = landlock.abi_version()
        if abi < 4:
            pytest.skip(f"user mode's proxy needs Landlock ABI 4 (kernel: {abi})")
        network = "host"
    else:
        network = "allowlist"
    config = tree.write_config(claude_binary(), mode=mode, network=network,
                               env_pass=passed_names(QUIET))  # fmt: skip
    assert "loopback_ports = []" in config.read_text()  # nothing allowed at apply
    sbin = tree.base / "sbin"
    sbin.mkdir(mode=0o755)
    shim = sbin / "claude"
    shim.write_bytes(render_shim(str(find_sandbox_launch()), str(config)))
    shim.chmod(0o755)
    homes = {name: tree.base / name for name in ("root-home", "ocx-home")}
    for path in homes.values():
        path.mkdir(mode=0o700)
    api = in_netns(world.host_ns, lambda: FakeMessagesAPI([TextStep(FINAL)]).start())
    port = free_port(world)
    ocx_config = {
        "port": port,
        "providers": {
            "fake": {"adapter": "anthropic", "baseUrl": api.base_url, "apiKey": FAKE_API_KEY,
                     "models": ["claude-sonnet-4-5"], "allowPrivateNetwork": True},
        },
        "defaultProvider": "fake",
    }  # fmt: skip
    (homes["ocx-home"] / "config.json").write_text(json.dumps(ocx_config))
    env = {
        # The shim first (as /usr/local/sbin is on root's PATH), then ocx's directory,
        # which holds the real claude too: only the shim is found as `claude`.
        "PATH": f"{sbin}:{Path(ocx_binary()).parent}:{HOST_PATH}",
        "HOME": str(homes["root-home"]),
        "OPENCODEX_HOME": str(homes["ocx-home"]),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(SRC),
        "XDG_STATE_HOME": str(tree.base / "state"),
        **QUIET,
    }
    try:
        with ocx_proxy(world, env, port):
            result = subprocess.run(
                ["ip", "netns", "exec", world.host_ns, ocx_binary(), "claude",
                 "--dangerously-skip-permissions", "--print", "ok"],
                env=env, cwd=tree.workspace, capture_output=True, text=True, timeout=240,
                check=False, stdin=subprocess.DEVNULL,
            )  # fmt: skip
    finally:
        api.stop()
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert result.stdout.strip() == FINAL, out  # stdout is Claude's alone
    api.assert_conversation_done()  # through ocx's proxy, from inside the sandbox
    assert {r.headers.get("x-api-key") for r in api.main_requests} == {FAKE_API_KEY}
    lines = result.stderr.splitlines()
    [launch] = [x for x in lines if x.startswith(f"sandbox-launch: {mode} mode; ")]
    if mode == "sandbox":
        assert f"host loopback port {port} (from ANTHROPIC_BASE_URL, this session only)" in launch
    elif namespace_possible().possible:
        assert "a network namespace of its own" in launch, launch
    else:
        assert PORTS_ONLY in launch, launch
    dropped = launch.split("; did not pass ", 1)[1].split(" (", 1)[0].split(", ")
    assert {"CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY", "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
            "CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST"} <= set(dropped), launch  # fmt: skip
    # ocx's own warning is printed, and the sandbox-launch line after it says what ran.
    warned = [i for i, x in enumerate(lines) if OCX_WARNING in x]
    assert warned and warned[0] < lines.index(launch), result.stderr
    log = tree.base / "state" / "sandbox-setup" / "egress.log"
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert any(
        e.get("event") == "session start" and e.get("uid") == tree.agent.uid for e in entries
    )
    if mode == "sandbox" or namespace_possible().possible:
        # ocx's token stays outside: Claude reaches ocx through the session's API gateway
        # (docs/design.md invariant 17), which the launch line names.
        assert "API gateway: ANTHROPIC_" in launch, launch
        assert any(e.get("event") == "gateway" and e.get("status") == 200 for e in entries)
    else:
        assert "API key passed to Claude as it is" in result.stderr, result.stderr
        assert any(e.get("event") == "loopback" and e.get("port") == port for e in entries)
