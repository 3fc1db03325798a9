"""The operator's API key stays outside the session (docs/design.md invariant 17).

The real Claude Code, with ``ANTHROPIC_API_KEY=<secret>`` and the fake Messages API's
``ANTHROPIC_BASE_URL`` exported to ``sandbox-launch`` (as an operator or a proxy launcher
exports them), completes a turn in both modes; the fake API receives the secret (the
session's gateway put it in place of Claude's placeholder). The turn's Bash command,
with Claude's own sandbox off (nothing of Claude's hides anything from it), looks for
the secret in every ``/proc/*/environ`` and ``/proc/*/cmdline`` it can read and in
every file it can read under the places a session writes or reads its configuration
(its home, the workspace, /tmp, /var/tmp, /etc, /run, /dev/shm): it finds none. Before
the gateway the key was Claude's environment variable and the probe found it there.

The probe's own command line holds the secret in two halves, never whole.

* Sandbox mode, network allowlist: everything runs as root in ``ng-h-TAG``, a network
  namespace this test made, where the fake API listens on loopback; the agent is
  the launch tree's live ``ac-`` account.
* User mode in the session's own network namespace: a live ``ac-`` account (see
  :mod:`tests.claude_session`), the fake API on the host's loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.policy.environment import passed_names
from tests.claude_session import AgentTree, agent_tree, launch_session
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.integration.egress_world import World, in_netns, make_world
from tests.launch_fixtures import LaunchTree, launch_tree
from tests.tools import SRC, ClaudeRelease, claude_binary, require_tool

pytestmark = pytest.mark.e2e

HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
         "CLAUDE_CODE_MAX_RETRIES": "2"}  # fmt: skip
FINAL = "The scripted turn is complete."
PROBE = r"""python3 -c '
import os, sys
secret = (sys.argv[1] + sys.argv[2]).encode()
hits, procs, files = [], 0, 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for name in ("environ", "cmdline"):
        try:
            with open("/proc/%s/%s" % (pid, name), "rb") as f:
                data = f.read()
        except OSError:
            continue
        procs += name == "environ"
        if secret in data:
            hits.append("/proc/%s/%s" % (pid, name))
for top in sys.argv[3:]:
    for d, _, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            try:
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                with open(p, "rb") as f:
                    data = f.read(1 << 24)
            except OSError:
                continue
            files += 1
            if secret in data:
                hits.append(p)
print("probe environs=%d files=%d" % (procs, files))
print("hits=" + (",".join(hits) or "none"))
' {first} {second} "$HOME" "$PWD" /tmp /var/tmp /etc /run /dev/shm"""


def new_secret() -> str:
    return f"sk-ant-api03-h39b-secret-{uuid.uuid4().hex}"


def probe(secret: str) -> str:
    half = len(secret) // 2
    return PROBE.format(first=secret[:half], second=secret[half:])


def report(text: str) -> dict[str, str]:
    assert "probe environs=" in text, text
    line = text[text.index("probe environs=") :].splitlines()
    fields = dict(f.split("=", 1) for f in line[0].split()[1:])
    fields["hits"] = line[1].removeprefix("hits=")
    return fields


def check(api: FakeMessagesAPI, secret: str) -> None:
    api.assert_conversation_done()
    keys = {r.headers.get("x-api-key") for r in api.main_requests}
    assert keys == {secret}, "the fake API did not receive the secret"
    found = report(api.tool_result(0).text)
    assert int(found["environs"]) > 0 and int(found["files"]) > 0, found  # it looked
    assert found["hits"] == "none", found


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    for tool in ("ip", "openssl", "curl", "socat", "bwrap", "setpriv"):
        require_tool(tool)
    with make_world(prefix="ng") as built:
        yield built


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def test_sandbox_mode_keeps_an_exported_api_key_outside(
    world: World, tree: LaunchTree, claude_under_test: ClaudeRelease
) -> None:
    secret = new_secret()
    config = tree.write_config(
        claude_binary(), network="allowlist", inner_sandbox="off", env_pass=passed_names(QUIET)
    )
    script = [BashStep(probe(secret)), TextStep(FINAL)]
    api = in_netns(world.host_ns, lambda: FakeMessagesAPI(script).start())
    try:
        state = str(tree.base / "state")
        env = {"PATH": HOST_PATH, "LANG": "C.UTF-8", "PYTHONPATH": str(SRC),
               "XDG_STATE_HOME": state, "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": secret, **QUIET}  # fmt: skip
        argv = ["ip", "netns", "exec", world.host_ns, sys.executable, "-m",
                "sandbox_setup.launcher", "--config", str(config), "--",
                "--dangerously-skip-permissions", "--print", "--output-format", "json",
                "--", "Run the scripted command."]  # fmt: skip
        result = subprocess.run(
            argv, env=env, cwd=tree.workspace, capture_output=True, text=True,
            timeout=240, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        api.stop()
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert json.loads(result.stdout)["result"] == FINAL, out
    check(api, secret)
    [line] = [x for x in result.stderr.splitlines() if x.startswith("sandbox-launch: sandbox")]
    assert "API gateway: ANTHROPIC_API_KEY kept outside" in line, line
    log = tree.base / "state" / "sandbox-setup" / "egress.log"
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert any(e.get("event") == "gateway" and e.get("status") == 200 for e in entries)
    assert secret not in log.read_text()


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


@pytest.mark.skipif(
    landlock.abi_version() < 4, reason="user mode's own network namespace needs Landlock ABI 4"
)
def test_user_mode_keeps_an_exported_api_key_outside(
    agent: AgentTree, claude_under_test: ClaudeRelease
) -> None:
    verdict = namespace_possible()
    if not verdict.possible:
        pytest.skip(f"no network namespace for user mode here: {verdict.why}")
    secret = new_secret()
    script = [BashStep(probe(secret)), TextStep(FINAL)]
    with FakeMessagesAPI(script) as api:
        caller = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": secret}
        session = launch_session(
            agent, api, mode="user", inner="off", caller_env=caller, api_in_settings=False
        )
    assert session.run.returncode == 0, session.run
    check(api, secret)
    assert "API gateway: ANTHROPIC_API_KEY kept outside" in session.run.stderr
