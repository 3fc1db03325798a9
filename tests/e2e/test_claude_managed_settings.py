"""What the real Claude Code takes from the managed settings besides the keys
sandbox-setup owns (issue 25, "Track what changed"): both releases, as ``nobody``.

* ``/etc/claude-code/managed-settings.d/*.json`` is read beside
  ``managed-settings.json`` (both releases): a drop-in alone can refuse a start. An
  apply writes only ``managed-settings.json``; a drop-in of someone else's still
  reaches every user's Claude, the agent's included.
* ``requiredMinimumVersion`` / ``requiredMaximumVersion`` (both releases): a Claude
  outside the range exits 1 before any Messages request, saying which bound it
  missed. The floor a fleet can set (not one sandbox-setup writes).
* The credential rules an apply writes (``permissions.deny``) hold three glob
  patterns (``Read(./.env.*)``, ``Read(**/.env)``, ``Read(**/.env.*)``) that
  ``claude doctor`` calls not fully supported on Linux (both releases; pinned in
  ``test_claude_settings.py``). Measured through ``sandbox-launch``: each Bash
  command's sandbox expands them when the command starts, so a ``.env`` anywhere in
  the workspace, the ones an earlier command made included, is unreadable to Bash and
  to the Read tool; only a file a command creates and reads itself slips through,
  which is no secret from the agent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox_setup.base.accounts import Account, lookup_user
from tests.claude_run import ClaudeTree, claude_tree, run_claude_turn
from tests.claude_session import AgentTree, agent_tree, assert_contained, launch_session
from tests.fake_api import BashStep, FakeMessagesAPI, Step, TextStep, ToolUseStep
from tests.tools import ClaudeRelease, claude_binary, require_root, require_tool

pytestmark = pytest.mark.e2e

FINAL = "The scripted turn is complete."
TOO_OLD = "is older than the minimum version required by your organization (99.0.0)"
TOO_NEW = "is newer than the maximum version allowed by your organization (2.1.0)"


@pytest.fixture
def nobody_tree() -> Iterator[tuple[Account, ClaudeTree]]:
    require_root()
    require_tool("setpriv")
    nobody = lookup_user("nobody")
    assert nobody is not None, "this host has no nobody account"
    with claude_tree(nobody) as tree:
        yield nobody, tree


def refused_start(
    nobody_tree: tuple[Account, ClaudeTree],
    managed: dict[str, Any],
    drop_ins: dict[str, dict[str, Any]] | None = None,
) -> tuple[str, FakeMessagesAPI, int]:
    nobody, tree = nobody_tree
    with FakeMessagesAPI([BashStep("echo never"), TextStep(FINAL)]) as api:
        run = run_claude_turn(
            claude_binary(), base_url=api.base_url, home=tree.home, cwd=tree.workspace,
            tmpdir=tree.tmp, as_user=nobody, managed_settings=managed, managed_drop_ins=drop_ins,
        )  # fmt: skip
    return run.output, api, run.returncode


@pytest.mark.parametrize(
    ("managed", "said"),
    [
        ({"requiredMinimumVersion": "99.0.0"}, TOO_OLD),
        ({"requiredMaximumVersion": "2.1.0"}, TOO_NEW),
    ],
    ids=["minimum", "maximum"],
)
def test_a_claude_outside_the_required_versions_refuses_to_start(
    nobody_tree: tuple[Account, ClaudeTree],
    claude_under_test: ClaudeRelease,
    managed: dict[str, Any],
    said: str,
) -> None:
    output, api, code = refused_start(nobody_tree, managed)
    assert code == 1 and f"Claude Code {claude_under_test.version} {said}" in output, output
    assert api.main_requests == [], api.describe()


def test_a_drop_in_of_managed_settings_d_is_read(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    # the control first (the drop-in stays in the tree): without it, Claude goes on
    output, api, code = refused_start(nobody_tree, {})
    assert TOO_OLD not in output and api.main_requests, output
    drop_in = {"50-fleet.json": {"requiredMinimumVersion": "99.0.0"}}
    output, api, code = refused_start(nobody_tree, {}, drop_in)
    assert code == 1 and TOO_OLD in output, output
    assert api.main_requests == [], api.describe()


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


ENV_FILES = (".env", "sub/.env", ".env.local", "sub/.env.local")


def test_env_files_the_glob_credential_rules_name_stay_unreadable_to_bash(
    agent: AgentTree, claude_under_test: ClaudeRelease
) -> None:
    workspace = agent.tree.workspace
    (workspace / "sub").mkdir()
    for name in ENV_FILES:
        (workspace / name).write_text(f"SECRET {name}\n")
    for path in [workspace / "sub", *workspace.rglob("*")]:
        os.chown(path, agent.agent.uid, agent.agent.gid)
    read_all = "; ".join(f"cat {name}" for name in ENV_FILES)
    script: list[Step] = [
        BashStep("mkdir later && echo SECRET-later > later/.env && echo made"),
        BashStep(f"{read_all}; cat later/.env; echo SECRET-own > own.env.x; cat own.env.x"),
        BashStep("echo SECRET-now > .env.now && cat .env.now"),
        ToolUseStep("Read", {"file_path": str(workspace / "sub" / ".env")}),
        TextStep(FINAL),
    ]
    with FakeMessagesAPI(script) as api:
        session = launch_session(agent, api, mode="sandbox", inner="strong")
    assert session.run.returncode == 0, session.run
    api.assert_conversation_done()
    assert "made" in api.tool_result(0).text
    reads = api.tool_result(1).text
    assert "SECRET-own" in reads, reads  # the command ran, and reads what is not denied
    for name in (*ENV_FILES, "later/.env"):
        assert f"cat: {name}: Permission denied" in reads, (claude_under_test.version, reads)
    assert "SECRET " not in reads and "SECRET-later" not in reads, reads
    # the gap the doctor's warning is about: created and read within one command
    assert "SECRET-now" in api.tool_result(2).text
    denied = api.tool_result(3)
    assert denied.is_error and "denied by your permission settings" in denied.text, denied
    assert_contained(session, agent)
