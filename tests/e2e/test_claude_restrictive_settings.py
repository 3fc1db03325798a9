"""The restrictive settings an apply pins in managed settings, measured with the real
Claude Code (as ``nobody``, against the fake Messages API; Claude's own sandbox
runs its proxy, as in user mode and sandbox mode without the allowlist network).

* ``sandbox.network.strictAllowlist``: a host outside the allowlist is denied by
  the rule itself ("host is not on the allow list"), never left to a prompt or a
  permission mode; without it the denial comes from another rule.
* ``sandbox.network.allowManagedDomainsOnly``: a domain the agent's own settings
  allow is still denied; without it (the control) the same settings let it through.
* ``sandbox.allowNestedUserNamespaces: false``: a sandboxed ``unshare -U`` fails.
* ``allowManagedHooksOnly: true``: the hooks of a project's ``.claude/settings.json``
  in the workspace (a file the agent can write) do not run; without it they do.
* 2.1.197 ignores the keys it does not know: the same managed settings complete
  the turn there.
* User mode leaves ``allowManagedDomainsOnly`` off: with it, 2.1.332 ignores the
  session proxy's port (``--settings``, not managed) and starts a filtering proxy of
  its own on 127.0.0.1, which the session's Landlock domain cannot bind, so every Bash
  command fails; with Landlock off the same settings work (the twin).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.boundary.claude_mountpoints import MOUNT_POINTS
from tests.bash_evidence import new_marker
from tests.claude_run import ClaudeTree, claude_tree, run_claude_turn
from tests.claude_session import (
    AgentTree,
    agent_tree,
    changed_since_oldest,
    launch_session,
    written_settings,
)
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.tools import ClaudeRelease, claude_binary, release_tuple, require_root, require_tool

pytestmark = pytest.mark.e2e

FINAL = "The scripted turn is complete."
CURL = "curl -sS --max-time 30 -o /dev/null -w 'code=%{http_code}' http://example.com/ 2>&1; echo"
STRICT_DENIAL = "deny network-outbound example.com:80 (host is not on the allow list)"
MANAGED_ONLY_DENIAL = "the organization's managed allowlist does not include this host"


@pytest.fixture
def nobody_tree() -> Iterator[tuple[Account, ClaudeTree]]:
    require_root()
    for tool in ("setpriv", "bwrap", "socat", "curl", "unshare"):
        require_tool(tool)
    nobody = lookup_user("nobody")
    assert nobody is not None, "this host has no nobody account"
    with claude_tree(nobody) as tree:
        yield nobody, tree


def bash_result(
    nobody_tree: tuple[Account, ClaudeTree],
    managed: dict[str, Any],
    command: str,
    user_settings: dict[str, Any] | None = None,
) -> str:
    nobody, tree = nobody_tree
    with FakeMessagesAPI([BashStep(command), TextStep(FINAL)]) as api:
        run = run_claude_turn(
            claude_binary(), base_url=api.base_url, home=tree.home, cwd=tree.workspace,
            tmpdir=tree.tmp, as_user=nobody, managed_settings=managed,
            user_settings=user_settings,
        )  # fmt: skip
        assert run.returncode == 0 and FINAL in run.output, run.output
        return api.tool_result(0).text


def _newest_only(release: ClaudeRelease) -> None:
    if release_tuple(release.version) < release_tuple("2.1.304"):
        pytest.skip(f"Claude Code {release.version} predates these settings (2.1.304)")


def test_strict_allowlist_denies_by_its_own_rule(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    _newest_only(claude_under_test)
    managed = written_settings("strong")
    assert managed["sandbox"]["network"]["strictAllowlist"] is True
    out = bash_result(nobody_tree, managed, CURL)
    assert "code=403" in out and STRICT_DENIAL in out, out
    del managed["sandbox"]["network"]["strictAllowlist"]  # the control
    out = bash_result(nobody_tree, managed, CURL)
    assert STRICT_DENIAL not in out and MANAGED_ONLY_DENIAL in out, out


def test_managed_domains_only_ignores_the_agents_own_allowlist(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    _newest_only(claude_under_test)
    own = {"sandbox": {"network": {"allowedDomains": ["example.com"]}}}
    managed = written_settings("strong")
    assert managed["sandbox"]["network"]["allowManagedDomainsOnly"] is True
    out = bash_result(nobody_tree, managed, CURL, user_settings=own)
    assert "code=403" in out and "deny network-outbound example.com:80" in out, out
    for key in ("allowManagedDomainsOnly", "strictAllowlist"):  # the control
        del managed["sandbox"]["network"][key]
    out = bash_result(nobody_tree, managed, CURL, user_settings=own)
    assert "deny network-outbound example.com" not in out, out


def test_nested_user_namespaces_are_refused(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    _newest_only(claude_under_test)
    managed = written_settings("strong")
    assert managed["sandbox"]["allowNestedUserNamespaces"] is False
    out = bash_result(nobody_tree, managed, "unshare -U true && echo nested=yes || echo nested=no")
    assert "nested=no" in out and "nested=yes" not in out, out


def _project_hooks(tree: ClaudeTree, nobody: Account) -> Path:
    """A project ``.claude/settings.json`` in the workspace whose SessionStart and
    PreToolUse hooks each append a line to a marker file; the marker's path."""
    marker = tree.tmp / "hook-ran"
    hook = {"type": "command", "command": f"echo ran >> {marker}"}
    project = {
        "hooks": {
            "SessionStart": [{"hooks": [hook]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [hook]}],
        }
    }
    folder = tree.workspace / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(project))
    for path in (folder, folder / "settings.json"):
        os.chown(path, nobody.uid, nobody.gid)
    return marker


def test_managed_hooks_only_keeps_the_projects_hooks_from_running(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    """A hook runs outside Claude's Bash sandbox; with ``allowManagedHooksOnly`` in
    managed settings, the project's hooks never run and the turn completes (its Bash
    command too); the control, without the key, shows the same hooks do run."""
    nobody, tree = nobody_tree
    marker = _project_hooks(tree, nobody)
    managed = written_settings("strong")
    assert managed["allowManagedHooksOnly"] is True
    out = bash_result(nobody_tree, managed, "echo bash-ran")
    assert "bash-ran" in out, out
    assert not marker.exists(), marker.read_text()
    del managed["allowManagedHooksOnly"]  # the control
    out = bash_result(nobody_tree, managed, "echo bash-ran")
    assert "bash-ran" in out, out
    assert marker.exists() and "ran" in marker.read_text(), "the project's hooks never ran"


def test_a_release_that_does_not_know_the_keys_ignores_them(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    """Every restrictive key is in the file; each release completes the turn and its
    Bash command runs (2.1.197 knows neither allowNestedUserNamespaces nor
    filesystem.disabled, and ignores them)."""
    managed = written_settings("strong")
    assert managed["sandbox"]["filesystem"] == {"disabled": False}
    out = bash_result(nobody_tree, managed, "echo ran-in-claudes-sandbox=$SANDBOX_RUNTIME")
    assert "ran-in-claudes-sandbox=" in out, out


def test_claude_daemon_install_fails_for_the_agent(
    nobody_tree: tuple[Account, ClaudeTree], claude_under_test: ClaudeRelease
) -> None:
    """No persistence outside a session through Claude: ``claude daemon install`` (a
    systemd user service, which would run outside sandbox-launch) fails as the agent
    and writes no unit; both releases have it switched off."""
    import subprocess

    nobody, tree = nobody_tree
    argv = [
        "setpriv", f"--reuid={nobody.uid}", f"--regid={nobody.gid}", "--clear-groups",
        "env", "-i", f"HOME={tree.home}", "PATH=/usr/bin:/bin", "DISABLE_AUTOUPDATER=1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", claude_binary(), "daemon", "install",
    ]  # fmt: skip
    done = subprocess.run(
        argv, cwd=tree.workspace, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "disabled in this version" in said, said
    units = tree.home / ".config/systemd/user"
    assert not units.exists() or not any(units.iterdir()), list(units.iterdir())


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


def _shown(st: os.stat_result) -> str:
    return f"mode {st.st_mode:o} uid {st.st_uid} size {st.st_size} links {st.st_nlink}"


def test_a_session_leaves_none_of_claudes_mount_point_files(
    agent: AgentTree, claude_under_test: ClaudeRelease
) -> None:
    """A real session through sandbox-launch in a git workspace: whatever mount points
    Claude's own bwrap made for its Bash command, none is left when the session ends."""
    import subprocess

    workspace = agent.tree.workspace
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for path in [workspace, *workspace.rglob("*")]:
        os.chown(path, agent.agent.uid, agent.agent.gid, follow_symlinks=False)
    with FakeMessagesAPI([BashStep("echo ran-in-session"), TextStep(FINAL)]) as api:
        session = launch_session(agent, api, mode="sandbox", inner="strong")
    assert session.run.returncode == 0, session.run
    assert "ran-in-session" in api.tool_result(0).text
    left = {
        "/".join(p.parts): _shown(workspace.joinpath(*p.parts).lstat())
        for p in MOUNT_POINTS
        if os.path.lexists(workspace.joinpath(*p.parts))
    }
    assert left == {}, (agent.agent.uid, left, session.run.output[-2000:])


# allowManagedDomainsOnly in user mode (see configure/plan.py, where the mode decides):
# 2.1.332 then serves its sandbox's network with a proxy of its own, which must listen.
CANNOT_LISTEN = "listen EACCES"
MANAGED_DOMAIN = "managed-only.example.org"


def _user_turn(
    agent: AgentTree, managed: dict[str, Any], command: str, landlock_on: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """One user-mode turn (inner sandbox strong) with ``managed`` as the managed
    settings: the Bash command's result and what this turn added to the session
    proxy's decision log (the tree's log holds every turn's)."""
    log = agent.tree.base / "state" / "sandbox-setup" / "egress.log"
    before = len(log.read_text().splitlines()) if log.exists() else 0
    with FakeMessagesAPI([BashStep(command), TextStep(FINAL)]) as api:
        session = launch_session(
            agent, api, mode="user", inner="strong", settings=managed, landlock=landlock_on
        )
    assert session.run.returncode == 0, session.run
    api.assert_conversation_done()
    lines = log.read_text().splitlines()[before:] if log.exists() else []
    return api.tool_result(0).text, [json.loads(line) for line in lines]


def _decided_hosts(entries: list[dict[str, Any]]) -> set[str]:
    return {str(e.get("host")) for e in entries if e.get("event") == "decision"}


@pytest.mark.skipif(
    landlock.abi_version() < 4,
    reason=f"needs Landlock's TCP rules, ABI 4 (kernel: {landlock.abi_version()})",
)
def test_user_mode_leaves_managed_domains_only_off_because_claude_could_not_listen(
    agent: AgentTree, claude_under_test: ClaudeRelease
) -> None:
    """What user mode writes runs the Bash command, its network through the session's
    proxy (Claude's sandbox bridge may listen: policy.landlock.bridge_ports). The same
    file with ``allowManagedDomainsOnly`` (and the operator's domain in the managed allowlist, as
    sandbox mode writes it): 2.1.332 fails every Bash command ("Sandbox is required but
    failed to initialize: listen EACCES"), 2.1.197 runs it. The twin with ``[user]
    landlock = false`` shows the cause is Landlock's bind rule: there 2.1.332's own proxy
    listens, denies a host outside the managed allowlist itself and hands the managed
    domain on to the session's proxy (whose log then names it)."""
    marker = new_marker()
    command = (
        f"echo {marker}; for h in example.com {MANAGED_DOMAIN}; do "
        'curl -sS --max-time 30 -o /dev/null -w "$h=%{http_code}" http://$h/ 2>&1; echo; done'
    )
    written = written_settings("strong", mode="user")
    assert written["sandbox"]["network"].get("allowManagedDomainsOnly") is not True, written
    text, entries = _user_turn(agent, written, command)
    assert marker in text, text
    # Its Bash sandbox's bridge listens (policy.landlock.bridge_ports): the session's
    # proxy decides (403: no domain is allowed here) and logs it.
    assert "example.com=403" in text and "example.com" in _decided_hosts(entries), text

    managed_only = written_settings("strong", mode="sandbox")
    network = managed_only["sandbox"]["network"]
    assert network["allowManagedDomainsOnly"] is True
    network["allowedDomains"] = [MANAGED_DOMAIN]
    text, _ = _user_turn(agent, managed_only, command)
    if not changed_since_oldest(claude_under_test):
        # 2.1.197 keeps the session proxy's port from --settings: nothing to listen on.
        assert marker in text and CANNOT_LISTEN not in text, text
        return
    assert CANNOT_LISTEN in text and marker not in text, text

    # The twin: Landlock off (the session's own network namespace stays where root can
    # make one). Claude's proxy listens and decides first.
    text, entries = _user_turn(agent, managed_only, command, landlock_on=False)
    assert marker in text and CANNOT_LISTEN not in text, text
    assert "example.com=403" in text, text
    decided = _decided_hosts(entries)
    assert MANAGED_DOMAIN in decided and "example.com" not in decided, (decided, text)
