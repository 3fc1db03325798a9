"""The read-only binds of the workspace boundary, in a real bubblewrap sandbox run
by an unprivileged user (nobody) on a workspace it owns: git keeps committing,
while git's config, hooks and the other protected files cannot be written or
created; afterwards the placeholder mount points are gone from the host."""

from __future__ import annotations

import subprocess

import pytest

from sandbox_setup.boundary import binds as workspace_binds
from sandbox_setup.boundary import scan as workspace_scan
from sandbox_setup.policy.workspace import plan_ro_binds
from tests.integration.workspace_fixtures import (  # noqa: F401 (the fixture)
    NOBODY,
    World,
    chown_tree,
    world_fixture,
)
from tests.tools import require_tool

pytestmark = pytest.mark.integration


def in_sandbox(world: World, binds: list[str], script: str) -> subprocess.CompletedProcess[str]:
    """``script`` as nobody inside bwrap: read-only /, the workspace writable, then
    ``binds``. The script ends by printing a marker, so a sandbox that never
    started cannot pass."""
    bwrap = require_tool("bwrap")
    setpriv = require_tool("setpriv")
    ws = str(world.workspace)
    argv = [
        setpriv,
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--",
        bwrap,
        "--unshare-user",
        "--unshare-pid",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--bind",
        ws,
        ws,
        *binds,
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "GIT_CONFIG_NOSYSTEM",
        "1",
        "--chdir",
        ws,
        "--",
        "sh",
        "-c",
        script + "\necho inside-the-sandbox",
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


AGENT_SCRIPT = r"""
set -u
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=a@x
try() { if sh -c "$1" 2>/dev/null; then echo "WROTE: $2"; else echo "refused: $2"; fi; }
echo work > file.txt
git add file.txt && git commit -q -m "agent work" && echo "committed"
git checkout -q -b agent-branch && echo "branched"
git status --short >/dev/null && echo "status ok"
try 'echo "[core] fsmonitor = evil" >> .git/config' .git/config
try 'printf "#!/bin/sh\n" > .git/hooks/pre-commit' .git/hooks/pre-commit
try 'printf "#!/bin/sh\n" > .git/hooks/x' .git/hooks/x
try 'echo ../../evil > .git/commondir' .git/commondir
try 'echo "[core] pager = evil" > .git/config.worktree' .git/config.worktree
try 'echo "* filter=x" > .git/info/attributes' .git/info/attributes
try 'mkdir -p .claude && echo "{}" > .claude/settings.json' .claude/settings.json
try 'mkdir -p .claude/hooks && echo x > .claude/hooks/h.sh' .claude/hooks/h.sh
try 'echo "{}" > .mcp.json' .mcp.json
try 'echo "{}" > sub/.mcp.json' sub/.mcp.json
try 'echo x > .envrc' .envrc
try 'echo x > .bashrc' .bashrc
try 'mkdir -p .vscode/x' .vscode/x
try 'rm -f .git/config' "rm .git/config"
try 'mv .git/hooks .git/hooks-old' "mv .git/hooks"
try 'echo x > sub/.git/hooks/post-checkout' sub/.git/hooks/post-checkout
try 'echo x > sub/.gitmodules' sub/.gitmodules
git -C sub commit -q --allow-empty -m "agent in sub" && echo "sub committed"
"""


def test_commits_work_and_protected_files_are_read_only(world: World) -> None:
    ws = world.workspace
    world.repo(ws)
    world.repo(ws / "sub")
    (ws / "sub/.gitmodules").write_text("")
    (ws / ".vscode").mkdir()
    (ws / ".mcp.json").write_text("{}\n")
    (ws / "sub/.mcp.json").write_text("{}\n")
    chown_tree(ws)

    before = workspace_scan.snapshot([str(ws)])
    plan = plan_ro_binds(before.layouts[str(ws)])
    prepared = workspace_binds.prepare(str(ws), plan)
    assert sorted(prepared.created) == [
        ".git/commondir",
        ".git/config.worktree",
        "sub/.git/commondir",
        "sub/.git/config.worktree",
    ]
    # Root's git on the host keeps working while the session runs.
    assert world.git(ws, "status", "--short").returncode == 0
    binds = workspace_binds.ro_bind_argv(plan, str(ws), str(ws), prepared)
    result = in_sandbox(world, binds, AGENT_SCRIPT)
    out = result.stdout
    assert "inside-the-sandbox" in out, result.stderr
    for ok in ("committed", "branched", "status ok", "sub committed"):
        assert ok in out, f"{ok} missing: git stopped working\n{out}\n{result.stderr}"
    wrote = [line for line in out.splitlines() if line.startswith("WROTE")]
    # A missing .claude/ has no placeholder (Claude's own Bash sandbox creates mount
    # points inside it): what is written there is the end-of-session scan's.
    assert wrote == ["WROTE: .claude/settings.json", "WROTE: .claude/hooks/h.sh"], wrote
    after = workspace_scan.scan([str(ws)], before)
    assert ".claude/hooks/h.sh" in {h.rel for h in after.to_neutralize}, after.hits

    # Outside: the commits are there, and nothing protected changed.
    assert "agent work" in world.git(ws, "log", "--all", "--format=%s").stdout
    assert "fsmonitor" not in (ws / ".git/config").read_text()
    assert not (ws / ".git/hooks/pre-commit").exists()

    # The placeholders' mount points are on the host now; they go, and nothing else.
    assert (ws / ".bashrc").is_dir() and (ws / ".git/commondir").exists()
    kept = workspace_binds.finish(str(ws), plan, prepared)
    assert kept == []
    for gone in (".bashrc", ".envrc", ".git/commondir", ".git/config.worktree"):
        assert not (ws / gone).exists(), gone
    assert (ws / ".mcp.json").read_text() == "{}\n"
    assert (ws / ".vscode").is_dir() and (ws / "sub/.gitmodules").exists()
    assert world.git(ws, "status", "--short").returncode == 0


def test_git_inside_sees_no_placeholder_as_a_change(world: World) -> None:
    """A placeholder is an empty read-only directory: git status inside does not
    list it, and the agent's `git add -A` neither fails on it nor commits it."""
    ws = world.workspace
    world.repo(ws)
    chown_tree(ws)
    plan = plan_ro_binds(workspace_scan.snapshot([str(ws)]).layouts[str(ws)])
    prepared = workspace_binds.prepare(str(ws), plan)
    binds = workspace_binds.ro_bind_argv(plan, str(ws), str(ws), prepared)
    script = (
        "git status --porcelain --untracked-files=all; echo x > new.txt; git add -A && "
        "git -c user.name=a -c user.email=b commit -qm add && git show --name-only --format="
    )
    result = in_sandbox(world, binds, script)
    assert "inside-the-sandbox" in result.stdout, result.stderr
    listed = [line for line in result.stdout.splitlines() if line and line != "inside-the-sandbox"]
    assert listed == ["new.txt"], (listed, result.stderr)
    assert workspace_binds.finish(str(ws), plan, prepared) == []


def test_the_binds_can_fail_without_them(world: World) -> None:
    """Control: the same script without the read-only binds writes everything, so
    the test above would fail if the binds did nothing."""
    ws = world.workspace
    world.repo(ws)
    world.repo(ws / "sub")
    chown_tree(ws)
    result = in_sandbox(world, [], AGENT_SCRIPT)
    assert "inside-the-sandbox" in result.stdout, result.stderr
    assert "WROTE: .git/config" in result.stdout
    assert "WROTE: .git/hooks/pre-commit" in result.stdout
    assert "WROTE: .claude/settings.json" in result.stdout


def test_a_missing_mcp_json_is_left_to_the_scan(world: World) -> None:
    """The documented gap: a .mcp.json (or .claude/settings.json in an existing
    .claude/) that did not exist gets no placeholder, because Claude Code inside
    would report one as invalid settings. One written during the session is found
    and neutralized by the end-of-session scan."""
    ws = world.workspace
    world.repo(ws)
    (ws / ".claude").mkdir()
    chown_tree(ws)
    before = workspace_scan.snapshot([str(ws)])
    plan = plan_ro_binds(before.layouts[str(ws)])
    prepared = workspace_binds.prepare(str(ws), plan)
    binds = workspace_binds.ro_bind_argv(plan, str(ws), str(ws), prepared)
    script = (
        'echo \'{"mcpServers": {"x": {"command": "sh"}}}\' > .mcp.json && '
        'echo \'{"hooks": {"Stop": [{"hooks": [{"type": "command", '
        '"command": "id"}]}]}}\' > .claude/settings.json && echo planted'
    )
    result = in_sandbox(world, binds, script)
    assert "planted" in result.stdout, result.stderr
    workspace_binds.finish(str(ws), plan, prepared)
    found = {h.rel for h in workspace_scan.scan([str(ws)], before).to_neutralize}
    assert {".mcp.json", ".claude/settings.json"} <= found


def test_a_renamed_git_dir_escapes_the_binds_and_the_scan_catches_it(world: World) -> None:
    """What a mount cannot stop: the agent moves .git aside (its mount points go
    with it) and makes a new one. The end-of-session scan finds the new config."""
    ws = world.workspace
    world.repo(ws)
    chown_tree(ws)
    before = workspace_scan.snapshot([str(ws)])
    plan = plan_ro_binds(before.layouts[str(ws)])
    prepared = workspace_binds.prepare(str(ws), plan)
    binds = workspace_binds.ro_bind_argv(plan, str(ws), str(ws), prepared)
    script = (
        "mv .git .git-old && mkdir .git && cp -r .git-old/objects .git-old/refs .git-old/HEAD .git/"
        f" && printf '[core]\\n\\tfsmonitor = \"{world.command('renamed')}\"\\n' > .git/config"
        " && echo replaced"
    )
    result = in_sandbox(world, binds, script)
    assert "replaced" in result.stdout, result.stderr
    workspace_binds.finish(str(ws), plan, prepared)
    hits = workspace_scan.scan([str(ws)], before).hits
    found = {(h.rel, h.kind) for h in hits if h.action != "report"}
    assert (".git/config", "git-config") in found
