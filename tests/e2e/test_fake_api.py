"""The real Claude Code, run as ``nobody``, against the fake Messages API.

Each test scripts one turn: the fake model asks for a ``Bash`` tool call, Claude
runs it and sends the ``tool_result`` back, the fake model ends the turn. The
command prints a fresh marker and what it can see of its own confinement
(:mod:`tests.bash_evidence`), so a run where the command never ran, or ran
somewhere else, cannot pass.

Besides proving the harness, these tests pin what Claude Code 2.1.197 really
does with its sandbox settings when run unprivileged directly on this host
(issue 13 builds on them): ``sandbox.enabled`` wraps the command in bwrap with a
seccomp filter; ``dangerouslyDisableSandbox`` unwraps it unless
``allowUnsandboxedCommands`` is false; a missing socat silently disables the
sandbox unless ``failIfUnavailable`` is set; ``bwrapPath``/``socatPath`` count
only in managed settings, and managed settings beat ``--settings``. The
findings, with the exact messages, are in ``docs/claude-code-behaviour.md``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from sandbox_setup.base.accounts import Account, lookup_user
from tests.bash_evidence import BashEvidence, evidence_command, new_marker, parse_evidence
from tests.claude_run import (
    FAKE_API_KEY,
    ClaudeRun,
    ClaudeTree,
    claude_tree,
    path_without,
    run_claude_turn,
)
from tests.claude_session import changed_since_oldest
from tests.fake_api import BashStep, FakeMessagesAPI, Step, TextStep
from tests.tools import (
    CLAUDE_OLDEST,
    ClaudeRelease,
    claude_binary,
    release_tuple,
    require_root,
    require_tool,
)

pytestmark = pytest.mark.e2e

FINAL = "The scripted turn is complete."
SANDBOX = {"sandbox": {"enabled": True}}
MISSING_SOCAT = "socat not installed"


@pytest.fixture(scope="module")
def nobody() -> Account:
    require_root()
    require_tool("setpriv")
    account = lookup_user("nobody")
    if account is None:
        pytest.fail("this host has no nobody account")
    return account


@pytest.fixture
def tree(nobody: Account) -> Iterator[ClaudeTree]:
    with claude_tree(nobody) as made:
        yield made


@pytest.fixture
def marker() -> str:
    return new_marker()


def bash_turn(marker: str, **extra_input: Any) -> list[Step]:
    return [BashStep(evidence_command(marker), extra_input=extra_input), TextStep(FINAL)]


def run_as_nobody(
    api: FakeMessagesAPI, tree: ClaudeTree, nobody: Account, **options: Any
) -> ClaudeRun:
    options.setdefault("base_url", api.base_url)
    return run_claude_turn(
        claude_binary(),
        home=tree.home,
        cwd=tree.workspace,
        tmpdir=tree.tmp,
        as_user=nobody,
        **options,
    )


def scripted_turn(
    tree: ClaudeTree,
    nobody: Account,
    marker: str,
    extra_input: Mapping[str, Any] | None = None,
    **options: Any,
) -> tuple[FakeMessagesAPI, ClaudeRun, BashEvidence]:
    """One complete scripted turn; fails unless Claude ran the command and finished."""
    with FakeMessagesAPI(bash_turn(marker, **(extra_input or {}))) as api:
        run = run_as_nobody(api, tree, nobody, **options)
    assert run.returncode == 0, run
    api.assert_conversation_done()
    assert run.result()["result"] == FINAL, run
    evidence = parse_evidence(api.tool_result(0).text, marker)
    assert evidence.marker_seen and evidence.uid == nobody.uid, api.tool_result(0).text
    return api, run, evidence


def closed_port_url() -> str:
    """A loopback URL where nothing listens (the port was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- the harness -------------------------------------------------------------------


@pytest.mark.parametrize("via", ["env", "settings", "user-settings"])
def test_nobody_completes_a_scripted_bash_turn(
    tree: ClaudeTree, nobody: Account, marker: str, via: str
) -> None:
    api, _, evidence = scripted_turn(tree, nobody, marker, credentials_via=via)
    assert evidence.unsandboxed  # no sandbox settings: the command runs on the host
    assert not api.tool_result(0).is_error
    main = api.main_requests
    assert len(main) == 2 and [r.step for r in main] == [0, 1]
    assert {r.headers.get("x-api-key") for r in main} == {FAKE_API_KEY}
    assert all(r.query == {"beta": ["true"]} and r.body["stream"] is True for r in main)
    assert all(r.headers.get("user-agent", "").startswith("claude-cli/") for r in main)


def test_stream_json_output_carries_the_tool_call_and_the_result(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    _, run, _ = scripted_turn(tree, nobody, marker, output_format="stream-json")
    events = run.events()
    assert events[0]["type"] == "system" and events[0]["subtype"] == "init"
    blocks = [
        b for e in events if e["type"] in ("assistant", "user") for b in e["message"]["content"]
    ]
    assert any(b.get("type") == "tool_use" and b.get("name") == "Bash" for b in blocks)
    assert any(b.get("type") == "tool_result" and marker in str(b.get("content")) for b in blocks)


def test_a_run_that_never_reaches_the_fake_api_fails(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    with FakeMessagesAPI(bash_turn(marker)) as api:
        run = run_as_nobody(api, tree, nobody, base_url=closed_port_url())
    assert run.returncode != 0, run
    # 2.1.197: "Unable to connect to API"; 2.1.332: "API Error: Connection refused".
    assert "Unable to connect to API" in run.output or "ECONNREFUSED" in run.output, run
    with pytest.raises(AssertionError, match="never sent a main conversation request"):
        api.assert_conversation_done()
    with pytest.raises(AssertionError, match="no tool_result for step 0"):
        api.tool_result(0)


# -- the API key reaches the Bash tool ---------------------------------------------------

KEY_PROBE = "echo key=${ANTHROPIC_API_KEY:-unset}; echo SANDBOX_RUNTIME=$SANDBOX_RUNTIME"


def key_seen_by_bash(tree: ClaudeTree, nobody: Account, **options: Any) -> str:
    with FakeMessagesAPI([BashStep(KEY_PROBE), TextStep(FINAL)]) as api:
        run = run_as_nobody(api, tree, nobody, **options)
    assert run.returncode == 0, run
    api.assert_conversation_done()
    return api.tool_result(0).text


@pytest.mark.parametrize("via", ["env", "settings"])
def test_the_api_key_is_visible_to_bash_commands_even_sandboxed(
    tree: ClaudeTree, nobody: Account, via: str
) -> None:
    text = key_seen_by_bash(tree, nobody, credentials_via=via, settings=SANDBOX)
    assert f"key={FAKE_API_KEY}" in text and "SANDBOX_RUNTIME=1" in text


def test_sandbox_credentials_env_deny_hides_the_key_from_sandboxed_commands(
    tree: ClaudeTree, nobody: Account
) -> None:
    deny = {"envVars": [{"name": "ANTHROPIC_API_KEY", "mode": "deny"}]}
    settings = {"sandbox": {"enabled": True, "credentials": deny}}
    text = key_seen_by_bash(tree, nobody, settings=settings)
    assert "key=unset" in text and "SANDBOX_RUNTIME=1" in text


# -- Claude's own sandbox, run as nobody directly on the host --------------------------


@pytest.fixture
def bwrap_and_socat() -> None:
    require_tool("bwrap")
    require_tool("socat")


@pytest.mark.usefixtures("bwrap_and_socat")
@pytest.mark.parametrize("where", ["settings", "user_settings"])
@pytest.mark.parametrize("weaker", [False, True], ids=["strong", "weak"])
def test_sandbox_enabled_wraps_the_bash_command(
    tree: ClaudeTree, nobody: Account, marker: str, where: str, weaker: bool
) -> None:
    keys = {"enabled": True, "enableWeakerNestedSandbox": weaker}
    _, _, evidence = scripted_turn(tree, nobody, marker, **{where: {"sandbox": keys}})
    assert evidence.sandboxed, evidence
    assert evidence.no_new_privs == 1


@pytest.mark.usefixtures("bwrap_and_socat")
def test_sandboxed_commands_run_without_a_prompt_when_auto_allow_is_written(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    # What sandbox-setup writes (autoAllowBashIfSandboxed = true where the inner
    # sandbox is on): no --dangerously-skip-permissions needed, on every release.
    settings = {"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True}}
    _, run, evidence = scripted_turn(
        tree, nobody, marker, settings=settings, skip_permissions=False
    )
    assert evidence.sandboxed, evidence
    assert run.result()["permission_denials"] == []


@pytest.mark.usefixtures("bwrap_and_socat")
def test_auto_allow_of_sandboxed_commands_is_no_longer_the_default(
    tree: ClaudeTree,
    nobody: Account,
    marker: str,
    claude_under_test: ClaudeRelease,
) -> None:
    """``autoAllowBashIfSandboxed`` defaulted to true up to 2.1.197; 2.1.332's schema
    says false and its code reads a server-side flag, which this fake API never sets:
    left out, a sandboxed command is not run in the default permission mode."""
    with FakeMessagesAPI(bash_turn(marker)) as api:
        run = run_as_nobody(api, tree, nobody, settings=SANDBOX, skip_permissions=False)
    denials = run.result()["permission_denials"]
    if release_tuple(claude_under_test.version) <= release_tuple(CLAUDE_OLDEST):
        assert denials == [], run
    else:
        assert [d["tool_name"] for d in denials] == ["Bash"], run


@pytest.mark.usefixtures("bwrap_and_socat")
def test_dangerously_disable_sandbox_runs_the_command_unwrapped_by_default(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    extra = {"dangerouslyDisableSandbox": True}
    _, run, evidence = scripted_turn(tree, nobody, marker, extra, settings=SANDBOX)
    assert evidence.unsandboxed, evidence  # no prompt, nothing on stderr
    assert run.stderr == ""


@pytest.mark.usefixtures("bwrap_and_socat")
def test_dangerously_disable_sandbox_is_ignored_when_unsandboxed_commands_are_not_allowed(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    extra = {"dangerouslyDisableSandbox": True}
    settings = {"sandbox": {"enabled": True, "allowUnsandboxedCommands": False}}
    _, _, evidence = scripted_turn(tree, nobody, marker, extra, settings=settings)
    assert evidence.sandboxed, evidence


@pytest.mark.usefixtures("bwrap_and_socat")
def test_dangerously_disable_sandbox_is_denied_in_the_default_permission_mode(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    script = bash_turn(marker, dangerouslyDisableSandbox=True)
    with FakeMessagesAPI(script) as api:
        run = run_as_nobody(api, tree, nobody, settings=SANDBOX, skip_permissions=False)
    assert run.returncode == 0, run
    api.assert_conversation_done()
    assert api.tool_result(0).is_error and marker not in api.tool_result(0).text
    assert [d["tool_name"] for d in run.result()["permission_denials"]] == ["Bash"]


@pytest.fixture
def no_socat_path(tree: ClaudeTree) -> str:
    require_tool("socat")
    return path_without({"socat"}, tree.base / "bin-without-socat")


@pytest.mark.usefixtures("bwrap_and_socat")
def test_without_socat_the_sandbox_is_silently_dropped_with_a_warning(
    tree: ClaudeTree, nobody: Account, marker: str, no_socat_path: str
) -> None:
    _, run, evidence = scripted_turn(tree, nobody, marker, settings=SANDBOX, path=no_socat_path)
    assert evidence.unsandboxed, evidence
    assert "Sandbox disabled" in run.stderr and MISSING_SOCAT in run.stderr
    assert "Commands will run WITHOUT sandboxing" in run.stderr


@pytest.mark.usefixtures("bwrap_and_socat")
def test_fail_if_unavailable_refuses_to_start_without_socat(
    tree: ClaudeTree, nobody: Account, marker: str, no_socat_path: str
) -> None:
    settings = {"sandbox": {"enabled": True, "failIfUnavailable": True}}
    with FakeMessagesAPI(bash_turn(marker)) as api:
        run = run_as_nobody(api, tree, nobody, settings=settings, path=no_socat_path)
    assert run.returncode == 1, run
    assert "sandbox required but unavailable" in run.stderr and MISSING_SOCAT in run.stderr
    assert api.main_requests == []  # it stops before the first model request


# -- managed settings (a private /etc overlay, the host's /etc untouched) --------------


@pytest.fixture
def managed_capable() -> None:
    require_root()
    require_tool("unshare")


@pytest.mark.usefixtures("bwrap_and_socat", "managed_capable")
def test_socat_path_counts_in_managed_settings_only(
    tree: ClaudeTree, nobody: Account, marker: str, no_socat_path: str
) -> None:
    socat = require_tool("socat")
    keys = {"enabled": True, "failIfUnavailable": True, "socatPath": socat}
    with FakeMessagesAPI(bash_turn(marker)) as api:
        flag = run_as_nobody(api, tree, nobody, settings={"sandbox": keys}, path=no_socat_path)
    assert flag.returncode == 1 and MISSING_SOCAT in flag.stderr, flag
    _, _, evidence = scripted_turn(
        tree, nobody, marker, managed_settings={"sandbox": keys}, path=no_socat_path
    )
    assert evidence.sandboxed, evidence


@pytest.mark.usefixtures("bwrap_and_socat", "managed_capable")
def test_bwrap_path_counts_in_managed_settings_only(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    bwrap = require_tool("bwrap")
    no_bwrap = path_without({"bwrap"}, tree.base / "bin-without-bwrap")
    keys = {"enabled": True, "failIfUnavailable": True, "bwrapPath": bwrap}
    with FakeMessagesAPI(bash_turn(marker)) as api:
        flag = run_as_nobody(api, tree, nobody, settings={"sandbox": keys}, path=no_bwrap)
    assert flag.returncode == 1 and "bubblewrap (bwrap) not installed" in flag.stderr, flag
    _, _, evidence = scripted_turn(
        tree, nobody, marker, managed_settings={"sandbox": keys}, path=no_bwrap
    )
    assert evidence.sandboxed, evidence


@pytest.mark.usefixtures("bwrap_and_socat", "managed_capable")
def test_managed_sandbox_keys_beat_the_settings_flag(
    tree: ClaudeTree, nobody: Account, marker: str
) -> None:
    managed = {"sandbox": {"enabled": True, "allowUnsandboxedCommands": False}}
    flag = {"sandbox": {"enabled": False, "allowUnsandboxedCommands": True}}
    extra = {"dangerouslyDisableSandbox": True}
    _, _, evidence = scripted_turn(
        tree, nobody, marker, extra, managed_settings=managed, settings=flag
    )
    assert evidence.sandboxed, evidence


@pytest.mark.usefixtures("bwrap_and_socat", "managed_capable")
def test_managed_fail_if_unavailable_beats_the_settings_flag(
    tree: ClaudeTree, nobody: Account, marker: str, no_socat_path: str
) -> None:
    managed = {"sandbox": {"enabled": True, "failIfUnavailable": True}}
    flag = {"sandbox": {"enabled": False, "failIfUnavailable": False}}
    with FakeMessagesAPI(bash_turn(marker)) as api:
        run = run_as_nobody(
            api, tree, nobody, managed_settings=managed, settings=flag, path=no_socat_path
        )
    assert run.returncode == 1 and "sandbox required but unavailable" in run.stderr, run
    assert api.main_requests == []


@pytest.mark.usefixtures("bwrap_and_socat")
def test_dangerously_disable_sandbox_with_allowed_tools_bash_in_print_mode(
    tree: ClaudeTree, nobody: Account, marker: str, claude_under_test: ClaudeRelease
) -> None:
    """``--allowedTools=Bash`` without ``--dangerously-skip-permissions``: 2.1.197 runs
    the request to leave the sandbox unwrapped; 2.1.332 denies it in ``--print`` mode
    (the allow rule no longer covers it; the tool result says "Run outside of the
    sandbox")."""
    script = bash_turn(marker, dangerouslyDisableSandbox=True)
    with FakeMessagesAPI(script) as api:
        run = run_as_nobody(
            api,
            tree,
            nobody,
            settings=SANDBOX,
            skip_permissions=False,
            extra_args=["--allowedTools=Bash"],
        )
    assert run.returncode == 0, run
    api.assert_conversation_done()
    result = api.tool_result(0)
    denials = [d["tool_name"] for d in run.result()["permission_denials"]]
    if changed_since_oldest(claude_under_test):
        assert result.is_error and marker not in result.text, result
        assert denials == ["Bash"]
    else:
        assert not result.is_error and denials == [], (result, denials)
        assert parse_evidence(result.text, marker).unsandboxed, result.text
