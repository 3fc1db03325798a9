"""The real Claude Code, started the way people and launchers start it (issue 16),
against the fake Messages API.

* Through ``sandbox-launch`` with nothing but an exported ``ANTHROPIC_BASE_URL`` and
  ``ANTHROPIC_API_KEY`` (no ``--settings``), Claude completes a scripted Bash turn in
  sandbox and user modes; a decoy ``AWS_SECRET_ACCESS_KEY`` and ``GITHUB_TOKEN``
  exported beside them never reach the Bash tool; ``--pass-env`` adds one.
  Sandbox mode uses ``network = "host"`` here: the allowlist's egress proxy (issue 11)
  is not wired in yet, and the fake API listens on the host's loopback.
* The claude shim's matrix (the first bug report's): root via the shim with
  ``--dangerously-skip-permissions`` gets past the guard because it runs sandboxed;
  root with ``IS_SANDBOX=0`` exported keeps the guard; a non-root user gets the real
  binary with its environment unchanged; a launcher-like parent that sets
  ``ANTHROPIC_BASE_URL`` and runs ``claude --print`` from PATH gets clean output.

The shim is the one the plan renders, in the test's temp tree (never /usr/local).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.configure.claude_shim import find_sandbox_launch, render_shim
from sandbox_setup.policy.environment import DEFAULT_PASS, passed_names
from tests.bash_evidence import evidence_command, host_namespaces, new_marker, parse_evidence
from tests.claude_run import FAKE_API_KEY
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.launch_fixtures import LaunchTree, launch_tree, run_launcher
from tests.tools import SRC, claude_binary

pytestmark = pytest.mark.e2e

FINAL = "The scripted turn is complete."
PROMPT = "Run the scripted command."
GUARD = "cannot be used with root/sudo privileges"
DECOYS = {"AWS_SECRET_ACCESS_KEY": "decoy-aws-secret-0042", "GITHUB_TOKEN": "ghp_decoy0042"}
EXTRA = {"MY_EXTRA": "extra-passed-0042"}
PRINT = ["--print", "--output-format", "json", "--dangerously-skip-permissions", "--", PROMPT]
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def scratch(tree: LaunchTree, name: str, owner: int | None = None) -> Path:
    """A directory of ``owner``'s (None: the agent's) in the tree (Claude's TMPDIR, a
    root HOME)."""
    path = tree.base / name
    path.mkdir(mode=0o700)
    uid, gid = (tree.agent.uid, tree.agent.gid) if owner is None else (owner, owner)
    os.chown(path, uid, gid)
    return path


@dataclass(frozen=True)
class Turn:
    api: FakeMessagesAPI
    result: subprocess.CompletedProcess[str]
    marker: str
    uid: int  # whom Bash must run as: the tree's agent

    @property
    def text(self) -> str:
        return self.api.tool_result(0).text

    def env(self) -> dict[str, str]:
        """The Bash tool's environment (``env -0`` after the evidence)."""
        dump = self.text.split("--env--", 1)[1].strip("\n")
        return dict(e.split("=", 1) for e in dump.split("\x00") if "=" in e)

    def assert_completed(self) -> dict[str, Any]:
        out = self.result.stdout + self.result.stderr
        assert self.result.returncode == 0, out
        self.api.assert_conversation_done()
        report: dict[str, Any] = json.loads(self.result.stdout)  # stdout is Claude's alone
        assert report["result"] == FINAL, out
        evidence = parse_evidence(self.text, self.marker)
        assert evidence.marker_seen and evidence.uid == self.uid, self.text
        return report


def bash_script(marker: str) -> list[Any]:
    command = evidence_command(marker) + "; echo IS_SANDBOX=$IS_SANDBOX; echo --env--; env -0"
    return [BashStep(command), TextStep(FINAL)]


def caller_env(api: FakeMessagesAPI, **more: str) -> dict[str, str]:
    """Only the endpoint and the key, plus what the test names (the decoys...)."""
    env = {"PATH": HOST_PATH, "LANG": "C.UTF-8", "PYTHONPATH": str(SRC)}
    env |= {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": FAKE_API_KEY}
    return env | more


# -- through sandbox-launch ------------------------------------------------------------


def launched_turn(tree: LaunchTree, mode: str, pass_env: Sequence[str]) -> Turn:
    marker = new_marker()
    config = tree.write_config(
        claude_binary(), mode=mode, network="host", env_pass=passed_names(pass_env)
    )
    with FakeMessagesAPI(bash_script(marker)) as api:
        env = caller_env(api, **DECOYS, **EXTRA, TMPDIR=str(scratch(tree, "claude-tmp")))
        result = run_launcher(config, PRINT, env=env, cwd=tree.workspace, timeout=180)
    return Turn(api, result, marker, tree.agent.uid)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_exported_endpoint_and_key_complete_the_turn_and_decoys_stay_out(
    tree: LaunchTree, mode: str
) -> None:
    # user mode also passes TMPDIR (into the tree): Claude's scratch files stay there.
    turn = launched_turn(tree, mode, ["MY_EXTRA"] + (["TMPDIR"] if mode == "user" else []))
    turn.assert_completed()
    assert {r.headers.get("x-api-key") for r in turn.api.main_requests} == {FAKE_API_KEY}
    env = turn.env()
    for name, value in DECOYS.items():
        assert name not in env and value not in turn.text
    assert env["MY_EXTRA"] == EXTRA["MY_EXTRA"]  # --pass-env adds one
    evidence = parse_evidence(turn.text, turn.marker)
    if mode == "sandbox":
        assert evidence.user_ns != host_namespaces()["user"] and env["IS_SANDBOX"] == "1"
    else:
        assert evidence.user_ns == host_namespaces()["user"] and "IS_SANDBOX" not in env
    # The launch notice once (the session's notes, e.g. on limits, are lines of their own).
    lines = turn.result.stderr.splitlines()
    notice = [line for line in lines if "sandbox-launch:" in line and " mode; " in line]
    assert len(notice) == 1 and f"{mode} mode" in notice[0], turn.result.stderr


def test_without_pass_env_the_extra_variable_stays_out(tree: LaunchTree) -> None:
    turn = launched_turn(tree, "sandbox", [])
    turn.assert_completed()
    assert "MY_EXTRA" not in turn.env() and EXTRA["MY_EXTRA"] not in turn.text


def _reads(binary: bytes, name: bytes) -> bool:
    """``name`` occurs in ``binary`` as a whole name (not as a prefix of a longer one)."""
    at = binary.find(name)
    while at >= 0:
        after = binary[at + len(name) : at + len(name) + 1]
        if not (after.isalnum() or after == b"_"):
            return True
        at = binary.find(name, at + 1)
    return False


def test_every_default_is_a_variable_the_real_claude_code_reads() -> None:
    binary = Path(os.path.realpath(claude_binary())).read_bytes()
    assert [n for n in DEFAULT_PASS if not _reads(binary, n.encode())] == []
    assert not _reads(binary, b"ANTHROPIC_NO_SUCH_VARIABLE")  # the check can fail


# -- the claude shim ------------------------------------------------------------------


@dataclass(frozen=True)
class Shimmed:
    tree: LaunchTree
    shim: Path

    @property
    def path(self) -> str:
        # The shim first, as /usr/local/sbin is on root's PATH; the real claude after it.
        return f"{self.shim.parent}:{Path(claude_binary()).parent}:{HOST_PATH}"


@pytest.fixture
def shimmed(tree: LaunchTree) -> Shimmed:
    config = tree.write_config(claude_binary(), network="host", env_pass=DEFAULT_PASS)
    sbin = tree.base / "sbin"
    sbin.mkdir(mode=0o755)
    shim = sbin / "claude"
    shim.write_bytes(render_shim(str(find_sandbox_launch()), str(config)))
    shim.chmod(0o755)
    return Shimmed(tree, shim)


def run_shim(
    shimmed: Shimmed, env: Mapping[str, str], as_user: int | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [str(shimmed.shim), *PRINT]
    if as_user is not None:
        argv = ["/usr/bin/setpriv", f"--reuid={as_user}", f"--regid={as_user}",
                "--clear-groups", "--", *argv]  # fmt: skip
    return subprocess.run(
        argv, env=dict(env), cwd=shimmed.tree.workspace, capture_output=True, text=True,
        timeout=180, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_root_via_the_shim_passes_the_guard_because_it_is_sandboxed(shimmed: Shimmed) -> None:
    marker = new_marker()
    with FakeMessagesAPI(bash_script(marker)) as api:
        env = caller_env(api, PATH=shimmed.path, HOME=str(scratch(shimmed.tree, "root-home", 0)))
        result = run_shim(shimmed, env)
    turn = Turn(api, result, marker, shimmed.tree.agent.uid)
    turn.assert_completed()
    assert GUARD not in result.stdout + result.stderr
    evidence = parse_evidence(turn.text, marker)
    assert evidence.user_ns != host_namespaces()["user"] and turn.env()["IS_SANDBOX"] == "1"
    assert "sandbox-launch: sandbox mode" in result.stderr


def test_root_with_is_sandbox_0_exported_keeps_the_guard(shimmed: Shimmed) -> None:
    with FakeMessagesAPI(bash_script(new_marker())) as api:
        home = scratch(shimmed.tree, "root-home", 0)
        env = caller_env(api, PATH=shimmed.path, HOME=str(home), IS_SANDBOX="0")
        result = run_shim(shimmed, env)
    assert result.returncode != 0
    assert GUARD in result.stdout + result.stderr, result.stderr
    assert "steps aside" in result.stderr and "sandbox-launch:" not in result.stderr
    assert api.main_requests == []


def test_a_non_root_user_gets_the_real_claude_with_the_same_environment(
    shimmed: Shimmed,
) -> None:
    tree = shimmed.tree
    seen: dict[str, dict[str, str]] = {}
    for via in ("direct", "shim"):
        marker = new_marker()
        with FakeMessagesAPI(bash_script(marker)) as api:
            env = caller_env(
                api, **DECOYS, PATH=shimmed.path, HOME=str(tree.home),
                TMPDIR=str(scratch(tree, f"tmp-{via}")), IFS=" \t\n", CLAUDE_CODE_MAX_RETRIES="2",
            )  # fmt: skip
            if via == "direct":
                agent = tree.agent
                argv = ["/usr/bin/setpriv", f"--reuid={agent.uid}", f"--regid={agent.gid}",
                        "--clear-groups", "--", claude_binary(), *PRINT]  # fmt: skip
                result = subprocess.run(
                    argv, env=env, cwd=tree.workspace, capture_output=True, text=True,
                    timeout=180, check=False, stdin=subprocess.DEVNULL,
                )  # fmt: skip
            else:
                result = run_shim(shimmed, env, as_user=tree.agent.uid)
        turn = Turn(api, result, marker, tree.agent.uid)
        turn.assert_completed()
        assert result.stderr == "", result.stderr  # no notice: the shim is not there for them
        bash_env = turn.env()
        # The decoys reach Bash here: the shim changes nothing for other users.
        assert all(bash_env.get(k) == v for k, v in env.items() if k != "TMPDIR"), bash_env
        seen[via] = bash_env
    # The same variables as without the shim, with the same values but for the ones
    # each run has its own of (the API's port and TMPDIR here, and what Claude sets for
    # its tools per session: its session id; since 2.1.2xx its pid, its messaging
    # socket and token and its child notes directory).
    assert set(seen["direct"]) == set(seen["shim"])
    differ = {n for n in seen["direct"] if seen["direct"][n] != seen["shim"][n]}
    assert differ <= {"ANTHROPIC_BASE_URL", "TMPDIR", *CLAUDE_PER_SESSION}, differ


# What Claude Code sets in its tools' environment, with a value of each session's own.
CLAUDE_PER_SESSION = {
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PID",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "CLAUDE_CODE_MESSAGING_TOKEN",
    "CLAUDE_CODE_CHILD_NOTES_DIR",
}


PARENT = """
import os, subprocess, sys
env = dict(os.environ)
env["ANTHROPIC_BASE_URL"] = sys.argv[1]  # what a proxy launcher does for its local proxy
env["ANTHROPIC_API_KEY"] = sys.argv[2]
if sys.argv[3] == "claims":
    env["IS_SANDBOX"] = "1"  # as launchers that "fix" the guard do: ignored in sandbox mode
sys.exit(subprocess.run(["claude", *sys.argv[4:]], env=env).returncode)
"""


@pytest.mark.parametrize("claims", ["claims", "no-claim"])
def test_a_launcher_like_parent_runs_claude_print_through_the_shim(
    shimmed: Shimmed, claims: str
) -> None:
    marker = new_marker()
    with FakeMessagesAPI(bash_script(marker)) as api:
        home = scratch(shimmed.tree, "root-home", 0)
        env = {"PATH": shimmed.path, "HOME": str(home), "LANG": "C.UTF-8"}
        argv = [sys.executable, "-c", PARENT, api.base_url, FAKE_API_KEY, claims, *PRINT]
        result = subprocess.run(
            argv, env=env, cwd=shimmed.tree.workspace, capture_output=True, text=True,
            timeout=180, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    turn = Turn(api, result, marker, shimmed.tree.agent.uid)
    turn.assert_completed()  # stdout parses as Claude's one JSON object: clean
    assert parse_evidence(turn.text, marker).user_ns != host_namespaces()["user"]
    assert turn.env()["IS_SANDBOX"] == "1"
    assert "sandbox-launch: sandbox mode" in result.stderr and GUARD not in result.stderr
