"""The real Claude Code through ``sandbox-launch``, with the settings sandbox-setup writes.

Each test is one scripted turn against the fake Messages API: the fake model asks
for a ``Bash`` command that prints a fresh marker and what it sees of its own
confinement (:mod:`tests.bash_evidence`), Claude runs it and sends the
``tool_result`` back. Claude runs as the launcher runs it: sandbox mode (setpriv
to the agent, our bwrap, verified before release) or user mode (setpriv to the
agent), strong or weak inner sandbox, with the managed settings
:func:`sandbox_setup.configure.settings.merge_settings` writes for that choice.

Managed settings never touch the host's /etc: the launcher runs in a private
mount namespace where /etc is an overlay holding them and /tmp is a fresh tmpfs
(Claude's scratch files in user mode stay there); the tree lives in /var/tmp. The
base URL and the key reach Claude through ``--settings`` JSON, since the launcher
passes nothing of the caller's environment. The launcher config uses ``network =
"host"``: the allowlist network has no way out until the egress proxy is wired in.

While Claude runs, a watcher reads the namespaces and seccomp state of the Claude
process itself from /proc, so "inside Claude's inner sandbox" is judged against
Claude's own namespaces, not just the host's (in sandbox mode Claude is in ours).
A run that never reaches the fake API fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.checks.claude import sandbox_binaries
from tests.bash_evidence import BashEvidence, evidence_command, new_marker, parse_evidence
from tests.claude_run import FAKE_API_KEY, ClaudeRun, with_managed_settings
from tests.claude_session import written_settings
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.installed import installed_copy
from tests.launch_fixtures import LaunchTree, launcher_env, make_launch_tree
from tests.tools import claude_binary, require_root, require_tool

pytestmark = pytest.mark.e2e

GUARD = "cannot be used with root/sudo privileges"
FINAL = "The scripted turn is complete."
PROMPT = "Run the scripted command."
KEY_PROBE = "; echo key=${ANTHROPIC_API_KEY:-unset}"
UNAVAILABLE = "sandbox required but unavailable"


@dataclass(frozen=True)
class ClaudeProcess:
    """What /proc said about the Claude process (not its Bash commands) while it ran."""

    pid: int
    uid: int
    user_ns: str
    pid_ns: str
    seccomp: int


class ClaudeWatch:
    """Polls /proc while Claude runs for the process whose cmdline has ``--print`` and
    whose HOME is the test's agent home: Claude itself, as the launcher started it."""

    def __init__(self, home: Path) -> None:
        self.home = f"HOME={home}".encode()
        self.found: dict[int, ClaudeProcess] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> ClaudeWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            for entry in os.scandir("/proc"):
                if entry.name.isdigit() and int(entry.name) not in self.found:
                    self._look(int(entry.name))

    def _look(self, pid: int) -> None:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"--print" not in cmdline or not any(b"claude" in a for a in cmdline[:1]):
                return
            if self.home not in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                return
            status = dict(
                line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            )
            self.found[pid] = ClaudeProcess(
                pid,
                int(status["Uid"].split()[1]),
                os.readlink(f"/proc/{pid}/ns/user"),
                os.readlink(f"/proc/{pid}/ns/pid"),
                int(status["Seccomp"].strip()),
            )
        except (OSError, ValueError, KeyError):
            return  # gone already, or not ours to read

    def claude(self) -> ClaudeProcess:
        assert self.found, "the watcher never saw the Claude process"
        processes = {(p.uid, p.user_ns, p.pid_ns, p.seccomp) for p in self.found.values()}
        assert len(processes) == 1, f"more than one Claude process: {self.found}"
        return next(iter(self.found.values()))


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    require_root()
    for tool in ("bwrap", "setpriv", "socat", "unshare"):
        require_tool(tool)
    with make_launch_tree("/var/tmp") as made:  # /tmp gets a tmpfs of its own below
        yield made


def claude_args(base_url: str) -> list[str]:
    flag = {
        "env": {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": "2",
        }
    }
    return [
        "--print",
        "--output-format",
        "json",
        "--dangerously-skip-permissions",
        "--settings",
        json.dumps(flag),
        "--",
        PROMPT,
    ]


def launch(
    tree: LaunchTree,
    api: FakeMessagesAPI,
    *,
    mode: str,
    inner: str,
    settings: Mapping[str, Any],
    hide_socat: bool = False,
    timeout: float = 180,
) -> ClaudeRun:
    """``sandbox-launch`` as root, in a private mount namespace with ``settings`` as the
    managed settings, a fresh /tmp, and (``hide_socat``) socat gone from /usr/bin."""
    # User mode: Landlock lets the agent connect only to the session's proxy and the
    # exposed loopback ports; the fake API (given through --settings) is one.
    ports = (api.port,) if mode == "user" else ()
    config = tree.write_config(
        claude_binary(), mode=mode, inner_sandbox=inner, network="host", loopback_ports=ports
    )
    # The installed copy under /var/tmp: the fresh /tmp below hides a checkout cloned
    # under /tmp (as CI's is).
    python = str(installed_copy().python)
    launcher = [python, "-m", "sandbox_setup.launcher", "--config", str(config), "--"]
    launcher += claude_args(api.base_url)
    prepare = "mount -t tmpfs -o mode=1777 tmpfs /tmp"
    if hide_socat:
        socat = sandbox_binaries()["socat"]
        prepare += f" && mount --bind /dev/null {socat}"  # as if uninstalled after the apply
    argv = ["/bin/sh", "-c", prepare + ' && exec "$@"', "sh", *launcher]
    argv = with_managed_settings(argv, settings, tree.base)
    env = launcher_env()
    env.pop("PYTHONPATH", None)  # the copy, never the checkout
    env["XDG_STATE_HOME"] = str(tree.base / "state")  # never root's real state directory
    proc = subprocess.run(
        argv,
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return ClaudeRun(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


def scripted_turn(
    tree: LaunchTree, mode: str, inner: str, **extra_input: Any
) -> tuple[ClaudeRun, BashEvidence, str, ClaudeProcess]:
    """One complete turn through the launcher; fails unless Claude ran the command."""
    marker = new_marker()
    step = BashStep(evidence_command(marker) + KEY_PROBE, extra_input=extra_input)
    with FakeMessagesAPI([step, TextStep(FINAL)]) as api, ClaudeWatch(tree.home) as watch:
        run = launch(tree, api, mode=mode, inner=inner, settings=written_settings(inner, mode))
    assert run.returncode == 0, run
    assert GUARD not in run.output, run
    api.assert_conversation_done()
    assert run.result()["result"] == FINAL, run
    text = api.tool_result(0).text
    evidence = parse_evidence(text, marker)
    assert evidence.marker_seen, text
    return run, evidence, text, watch.claude()


MODES = [("sandbox", "strong"), ("sandbox", "weak"), ("user", "strong"), ("user", "weak")]


def assert_in_claudes_inner_sandbox(evidence: BashEvidence, claude: ClaudeProcess) -> None:
    assert evidence.seccomp == 2 and evidence.no_new_privs == 1, evidence
    assert evidence.sandbox_runtime == "1", evidence
    assert evidence.user_ns not in (None, claude.user_ns), (evidence, claude)
    assert evidence.pid_ns not in (None, claude.pid_ns), (evidence, claude)


@pytest.mark.parametrize(("mode", "inner"), MODES, ids=[f"{m}-{i}" for m, i in MODES])
def test_bash_runs_as_the_agent_inside_claudes_inner_sandbox(
    tree: LaunchTree, mode: str, inner: str
) -> None:
    _, evidence, text, claude = scripted_turn(tree, mode, inner)
    assert evidence.uid == tree.agent.uid and claude.uid == tree.agent.uid
    assert claude.seccomp == 0, "the seccomp filter is on the command, not on Claude itself"
    assert_in_claudes_inner_sandbox(evidence, claude)
    # the managed settings deny the API key to sandboxed commands; Claude still has it
    assert "key=unset" in text and FAKE_API_KEY not in text, text


@pytest.mark.parametrize(("mode", "inner"), MODES[::3], ids=["sandbox-strong", "user-weak"])
def test_dangerously_disable_sandbox_is_still_wrapped(
    tree: LaunchTree, mode: str, inner: str
) -> None:
    _, evidence, _, claude = scripted_turn(tree, mode, inner, dangerouslyDisableSandbox=True)
    assert evidence.uid == tree.agent.uid
    assert_in_claudes_inner_sandbox(evidence, claude)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_without_socat_claude_refuses_to_start(tree: LaunchTree, mode: str) -> None:
    marker = new_marker()
    with FakeMessagesAPI([BashStep(evidence_command(marker)), TextStep(FINAL)]) as api:
        run = launch(
            tree, api, mode=mode, inner="strong", settings=written_settings("strong", mode),
            hide_socat=True,
        )  # fmt: skip
    assert run.returncode == 1, run
    assert UNAVAILABLE in run.stderr and "socat" in run.stderr, run
    assert api.main_requests == [], "Claude talked to the model without a sandbox"
    assert marker not in run.output


def test_without_socat_the_old_settings_ran_commands_unsandboxed(tree: LaunchTree) -> None:
    """The control: the managed settings of before (only sandbox.enabled) let the same
    launch run the command unwrapped, so the refusal above is the settings' doing."""
    marker = new_marker()
    old = {"sandbox": {"enabled": True}}
    script = [BashStep(evidence_command(marker)), TextStep(FINAL)]
    with FakeMessagesAPI(script) as api, ClaudeWatch(tree.home) as watch:
        run = launch(tree, api, mode="sandbox", inner="strong", settings=old, hide_socat=True)
    assert run.returncode == 0, run
    assert "Sandbox disabled" in run.stderr, run
    evidence = parse_evidence(api.tool_result(0).text, marker)
    claude = watch.claude()
    assert evidence.marker_seen and evidence.seccomp == 0 and evidence.sandbox_runtime == ""
    assert evidence.user_ns == claude.user_ns and evidence.pid_ns == claude.pid_ns
