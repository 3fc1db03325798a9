"""The end-of-session scan against the attacks of issue 12, with real git.

Each attack is planted in a workspace the way an agent session could leave it,
after a snapshot taken at "session start". Every planted command records
``id -u`` in a marker file. Then root reviews the work with its ordinary git
commands (status, diff, log -p, commit -am, checkout -b) in the repository and
in the workspace root:

- without the scan (the control), a marker appears with uid 0: the attack fires,
  so the protected run below can fail;
- after ``scan`` + ``neutralize`` no marker appears, what was moved is in the
  quarantine with a manifest, and a second scan finds nothing left to do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_setup.boundary import quarantine
from sandbox_setup.boundary import scan as workspace_scan
from tests.integration.workspace_fixtures import (  # noqa: F401 (the fixture)
    World,
    chown_tree,
    world_fixture,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Attack:
    """``before`` builds what existed at session start, ``plant`` what the session
    left; both return nothing. ``review`` lists where root runs git afterwards
    (relative to the workspace)."""

    name: str
    before: Callable[[World], None]
    plant: Callable[[World], None]
    review: tuple[str, ...] = ("repo", ".")
    # The git that first runs it, when older ones do not (config hooks: git 2.54).
    fires_since: tuple[int, int] | None = None


def _repo(w: World) -> None:
    w.repo(w.workspace / "repo")


def _append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def plant_fsmonitor(w: World) -> None:
    _append(
        w.workspace / "repo/.git/config",
        f'[core]\n\tfsmonitor = "{w.command("fsmonitor")}"\n',
    )


def plant_hooks(w: World) -> None:
    hooks = w.workspace / "repo/.git/hooks"
    w.script(hooks / "pre-commit", "pre-commit")
    w.script(hooks / "post-checkout", "post-checkout")


def before_root_dir(w: World) -> None:
    # A directory root made before the session (root-owned: git's ownership
    # check passes for it), in a workspace that is not a repository.
    (w.workspace / "build").mkdir()
    (w.workspace / "README").write_text("root's file\n")


def plant_renamed_git(w: World) -> None:
    ws = w.workspace
    scratch = w.base / "scratch"
    subprocess.run(["git", "init", "-q", str(scratch)], env=w.env(), check=True)
    build = ws / "build"
    for name in ("HEAD", "objects", "refs"):
        subprocess.run(["cp", "-r", str(scratch / ".git" / name), str(build)], check=True)
    (build / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f'\tfsmonitor = "{w.command("renamed")}"\n'
    )
    build.rename(ws / ".git")


def plant_hooks_path(w: World) -> None:
    _append(w.workspace / "repo/.git/config", "[core]\n\thooksPath = .githooks\n")
    w.script(w.workspace / "repo/.githooks/pre-commit", "hookspath")
    w.script(w.workspace / "repo/.githooks/post-checkout", "hookspath-checkout")


def plant_config_hook(w: World) -> None:
    _append(
        w.workspace / "repo/.git/config",
        f'[hook "lint"]\n\tcommand = "{w.command("config-hook")}"\n\tevent = pre-commit\n',
    )


def before_submodule(w: World) -> None:
    lib = w.repo(w.base / "lib-src")
    repo = w.repo(w.workspace / "repo")
    w.git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    w.git(repo, "commit", "-qm", "add lib")


def plant_submodule_config(w: World) -> None:
    _append(
        w.workspace / "repo/.git/modules/lib/config",
        f'[core]\n\tfsmonitor = "{w.command("submodule")}"\n',
    )


def plant_new_repo(w: World) -> None:
    new = w.workspace / "fresh"
    subprocess.run(["git", "init", "-q", str(new)], env=w.env(), check=True)
    (new / "README").write_text("x\n")
    _append(new / ".git/config", f'[core]\n\tfsmonitor = "{w.command("fresh")}"\n')
    w.script(new / ".git/hooks/pre-commit", "fresh-hook")
    chown_tree(new)  # the agent made it


def plant_include(w: World) -> None:
    _append(w.workspace / "repo/.git/config", "[include]\n\tpath = ../../extra.cfg\n")
    (w.workspace / "extra.cfg").write_text(f'[core]\n\tfsmonitor = "{w.command("include")}"\n')


def plant_pointer(w: World) -> None:
    # The work tree's .git swapped for a file sending git to a repository the
    # agent made outside the workspace (say, in its home or /tmp).
    outside = w.base / "agent-home/evil.git"
    subprocess.run(["git", "init", "-q", "--bare", str(outside)], env=w.env(), check=True)
    _append(outside / "config", f'[core]\n\tbare = false\n\tfsmonitor = "{w.command("pointer")}"\n')
    repo = w.workspace / "repo"
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    (repo / ".git").write_text(f"gitdir: {outside}\n")


def plant_bare(w: World) -> None:
    # A bare repository layout planted in a directory of the work tree: git run
    # inside that directory takes it for a repository.
    bare = w.workspace / "repo/docs"
    bare.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], env=w.env(), check=True)
    _append(
        bare / "config",
        f'[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "{w.command("bare")}"\n',
    )


def plant_commondir(w: World) -> None:
    other = w.workspace / "elsewhere"
    subprocess.run(["git", "init", "-q", "--bare", str(other)], env=w.env(), check=True)
    _append(other / "config", f'[core]\n\tbare = false\n\tfsmonitor = "{w.command("commondir")}"\n')
    w.script(other / "hooks/pre-commit", "commondir-hook")
    # git takes config and hooks from the commondir, objects and refs too.
    (w.workspace / "repo/.git/commondir").write_text("../../elsewhere\n")


ATTACKS = [
    Attack("fsmonitor in an existing repo", _repo, plant_fsmonitor),
    Attack("pre-commit and post-checkout hooks", _repo, plant_hooks),
    Attack("root-made dir renamed to .git", before_root_dir, plant_renamed_git, review=(".",)),
    Attack("hooksPath into the workspace", _repo, plant_hooks_path),
    Attack("hook.<name>.command", _repo, plant_config_hook, fires_since=(2, 54)),
    Attack("a submodule's config", before_submodule, plant_submodule_config, ("repo/lib", "repo")),
    Attack("a repository made during the session", _repo, plant_new_repo, ("fresh", ".")),
    Attack("include.path into the workspace", _repo, plant_include),
    Attack(".git file pointing outside", _repo, plant_pointer),
    Attack("a bare repository layout", _repo, plant_bare, review=("repo/docs", "repo")),
    Attack("a planted commondir", _repo, plant_commondir),
]


def _review(w: World, attack: Attack) -> dict[str, str]:
    for where in attack.review:
        w.review(w.workspace / where)
    return w.fired()


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_the_attack_fires_without_the_scan(world: World, attack: Attack) -> None:
    attack.before(world)
    attack.plant(world)
    fired = _review(world, attack)
    if attack.fires_since is not None and _git_version() < attack.fires_since:
        # An older git knows nothing of it: then it must not run (the test below still
        # proves the scan removes it, for the git an operator installs later).
        assert fired == {}, f"{attack.name} ran on git {_git_version()}"
        return
    assert fired, f"{attack.name}: nothing ran, the protected test below would prove nothing"
    assert "0" in fired.values(), fired


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_after_the_scan_nothing_the_agent_wrote_runs_as_root(world: World, attack: Attack) -> None:
    attack.before(world)
    before = workspace_scan.snapshot([str(world.workspace)])
    assert [h for h in before.hits if h.action != "report"] == []
    # The launcher may keep the snapshot in its state directory between start and end.
    before = workspace_scan.Snapshot.from_json(before.to_json())
    attack.plant(world)

    result = workspace_scan.scan([str(world.workspace)], before)
    assert result.truncated == []
    assert result.to_neutralize, f"{attack.name}: the scan found nothing"
    box = world.base / "state/quarantine/session-1"
    done = quarantine.neutralize_all(result.hits, str(box))
    assert all(n.done for n in done), [n.line for n in done if not n.done]

    assert _review(world, attack) == {}, f"{attack.name}: an agent-written command ran"
    # The quarantine holds what was moved, and says how to put it back.
    manifest = json.loads((box / "manifest.json").read_text())
    assert len(manifest["entries"]) == len(done)
    for entry, action in zip(manifest["entries"], done, strict=True):
        assert Path(entry["quarantined"]).exists()
        assert entry["restore"] in action.line
        assert entry["found"]
    # Nothing left to neutralize.
    again = workspace_scan.scan([str(world.workspace)], before)
    assert again.to_neutralize == [], [h.describe() for h in again.to_neutralize]


def _git_version() -> tuple[int, int]:
    """``(major, minor)`` of the git on PATH ("git version 2.39.5" -> (2, 39))."""
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    major, minor = out.split()[2].split(".")[:2]
    return int(major), int(minor)


def test_the_operators_own_settings_survive(world: World) -> None:
    """Pre-existing hooks and settings are reported, not moved; a config the agent
    changed keeps every line of the operator's, only the new key goes."""
    repo = world.repo(world.workspace / "repo")
    world.git(repo, "config", "core.editor", "vim")
    world.git(repo, "config", "remote.origin.url", "https://example.com/r.git")
    world.script(repo / ".git/hooks/pre-push", "operators-hook")
    original = (repo / ".git/config").read_text()
    before = workspace_scan.snapshot([str(world.workspace)])
    kinds = sorted((h.rel, h.action) for h in before.hits)
    assert kinds == [("repo/.git/config", "report"), ("repo/.git/hooks/pre-push", "report")]

    plant_fsmonitor(world)
    result = workspace_scan.scan([str(world.workspace)], before)
    moving = [(h.rel, h.what.split(" = ")[0]) for h in result.to_neutralize]
    assert moving == [("repo/.git/config", "core.fsmonitor")]
    lines = quarantine.neutralize(result.hits, str(world.base / "q"))
    assert len(lines) == 1 and lines[0].startswith("removed from ")
    assert "restore: mv -- " in lines[0]
    assert (repo / ".git/config").read_text() == original + "[core]\n"  # its header stays
    assert (repo / ".git/hooks/pre-push").exists()


def test_claude_project_settings_lose_hooks_and_keep_the_rest(world: World) -> None:
    ws = world.workspace
    (ws / ".claude").mkdir()
    (ws / ".claude/settings.json").write_text('{"model": "opus", "permissions": {"deny": []}}\n')
    before = workspace_scan.snapshot([str(ws)])
    (ws / ".claude/settings.json").write_text(
        json.dumps(
            {
                "model": "opus",
                "permissions": {"deny": []},
                "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "id"}]}]},
                "env": {"NODE_OPTIONS": "--require ./x.js"},
            }
        )
    )
    (ws / ".mcp.json").write_text('{"mcpServers": {"s": {"command": "sh", "args": ["-c", "id"]}}}')
    world.script(ws / ".claude/hooks/format.sh", "claude-hook")
    result = workspace_scan.scan([str(ws)], before)
    rels = sorted({h.rel for h in result.to_neutralize})
    assert rels == [".claude/hooks/format.sh", ".claude/settings.json", ".mcp.json"]
    quarantine.neutralize(result.hits, str(world.base / "q"))
    assert json.loads((ws / ".claude/settings.json").read_text()) == {
        "model": "opus",
        "permissions": {"deny": []},
        "hooks": {},
        "env": {},
    }
    assert json.loads((ws / ".mcp.json").read_text()) == {"mcpServers": {}}
    assert not (ws / ".claude/hooks/format.sh").exists()


def test_a_fifo_where_config_is_expected_is_moved_not_opened(world: World) -> None:
    repo = world.repo(world.workspace / "repo")
    before = workspace_scan.snapshot([str(world.workspace)])
    (repo / ".git/config").unlink()
    subprocess.run(["mkfifo", str(repo / ".git/config")], check=True)
    result = workspace_scan.scan([str(world.workspace)], before)  # would hang if opened
    assert [(h.rel, h.kind) for h in result.to_neutralize] == [("repo/.git/config", "symlink")]
    quarantine.neutralize(result.hits, str(world.base / "q"))
    assert not (repo / ".git/config").exists()


def test_fifos_and_sockets_where_git_opens_files_are_moved_aside(world: World) -> None:
    """git opens HEAD, the index, refs, reflogs and objects expecting regular files:
    a FIFO in any of them makes root's git wait for ever. Each one the session made
    is moved aside; root's git then works (an object swapped for a FIFO is gone,
    which git reports, rather than waited on)."""
    import socket

    repo = world.repo(world.workspace / "repo")
    before = workspace_scan.snapshot([str(world.workspace)])
    git = repo / ".git"
    for rel in ("ORIG_HEAD", "logs/HEAD", "objects/info/alternates", "refs/tags/v1"):
        (git / rel).parent.mkdir(parents=True, exist_ok=True)
        (git / rel).unlink(missing_ok=True)
        os.mkfifo(git / rel)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(git / "objects/info/sock"))
    # git's open follows a symlink: the index, swapped for one to a FIFO in the tree.
    os.mkfifo(repo / "pipe")
    (git / "index").unlink(missing_ok=True)
    (git / "index").symlink_to("../pipe")
    (git / "refs/tags/v0").symlink_to("../heads/main")  # a symlinked ref to a file: git's
    result = workspace_scan.scan([str(world.workspace)], before)  # would hang if opened
    planted = ("ORIG_HEAD", "index", "logs/HEAD", "objects/info/alternates", "objects/info/sock")
    assert sorted((h.rel, h.kind) for h in result.to_neutralize) == [
        (f"repo/.git/{rel}", "special-file") for rel in sorted((*planted, "refs/tags/v1"))
    ]
    done = quarantine.neutralize_all(result.hits, str(world.base / "q"))
    assert all(n.done for n in done), [n.line for n in done]
    assert not (git / "ORIG_HEAD").exists() and not (git / "refs/tags/v1").exists()
    assert not (git / "index").is_symlink() and (git / "refs/tags/v0").is_symlink()
    assert world.git(repo, "log", "-1", "--format=%s").stdout.strip()


def test_the_scan_is_bounded_and_says_so(world: World) -> None:
    from sandbox_setup.base.fdwalk import WalkLimits

    for i in range(30):
        (world.workspace / f"d{i}").mkdir()
    deep = world.workspace
    for i in range(10):
        deep = deep / f"l{i}"
    deep.mkdir(parents=True)
    result = workspace_scan.scan(
        [str(world.workspace)], None, WalkLimits(max_entries=20, max_depth=5)
    )
    assert result.truncated


ON_ANOTHER_MOUNT = """
import json, os, stat, subprocess, sys
sys.path.insert(0, sys.argv[1])
from sandbox_setup.boundary import quarantine
from sandbox_setup.boundary import scan as workspace_scan
ws, box, marker = sys.argv[2], sys.argv[3], sys.argv[4]
subprocess.run(["mount", "-t", "tmpfs", "ws-scan-test", ws], check=True)
env = {"PATH": os.environ["PATH"], "HOME": ws, "GIT_CONFIG_NOSYSTEM": "1"}
subprocess.run(["git", "init", "-q", ws + "/repo"], env=env, check=True)
before = workspace_scan.snapshot([ws])
hook = ws + "/repo/.git/hooks/pre-commit"
with open(hook, "w") as f:
    f.write("#!/bin/sh\\nid -u > " + marker + "\\n")
os.chmod(hook, 0o755)
lines = quarantine.neutralize(workspace_scan.scan([ws], before).hits, box)
boxes = [n for n in os.listdir(ws) if n.startswith(workspace_scan.QUARANTINE_NAME)]
st = os.stat(os.path.join(ws, boxes[0]))
manifest = json.load(open(os.path.join(box, "manifest.json")))
again = workspace_scan.scan([ws], before).to_neutralize
print(json.dumps({"lines": lines, "boxes": boxes, "mode": stat.S_IMODE(st.st_mode),
                  "uid": st.st_uid, "hook_left": os.path.exists(hook),
                  "moved_to": manifest["entries"][0]["quarantined"],
                  "exists": os.path.exists(manifest["entries"][0]["quarantined"]),
                  "again": [h.rel for h in again]}))
"""


def test_on_another_mount_the_quarantine_is_a_root_only_dir_in_the_workspace(
    world: World,
) -> None:
    """The state directory is on another file system than the workspace (EXDEV):
    the hook goes into a root-made 0700 directory at the workspace top instead, in
    a private mount namespace so the host's mount table never changes."""
    from tests.tools import REPO, require_tool

    require_tool("unshare")
    proc = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            sys.executable,
            "-c",
            ON_ANOTHER_MOUNT,
            str(REPO),
            str(world.workspace),
            str(world.base / "state/quarantine/s"),
            str(world.marker("other-mount")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["boxes"]) == 1 and out["mode"] == 0o700 and out["uid"] == 0
    assert not out["hook_left"] and out["exists"]
    assert out["moved_to"].startswith(f"{world.workspace}/{out['boxes'][0]}/")
    assert "restore: mv -- " in out["lines"][0]
    assert out["again"] == []  # the scan does not walk into root's quarantine
