"""Issue 24, layers 2 to 4: the end-of-session scan finds repositories the way git
does, lets only a short allowlist of inert keys change in agent-writable git
metadata, and never stops silently.

Every reproduction runs root's real git (HOME a temp dir without the protected
include of layer 1, so the scan alone is what holds) and is checked twice: the
control shows the plant runs as uid 0 without the scan, then the scan and
neutralize run and the same git commands run nothing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_setup.boundary import quarantine
from sandbox_setup.boundary import scan as workspace_scan
from tests.integration.workspace_fixtures import (  # noqa: F401 (the fixture)
    World,
    world_fixture,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Plant:
    """``plant`` writes what the session left (the repository ``repo`` exists);
    ``trigger`` is root's git afterwards."""

    name: str
    plant: Callable[[World], None]
    trigger: Callable[[World], None]


def _repo(w: World) -> Path:
    return w.workspace / "repo"


def _bare_layout(w: World, kind: str, where: str = "app") -> None:
    # In app/, a directory root made before the session (git checks its owner:
    # root, so no safe.directory is needed): HEAD plus objects and refs that pass
    # access(X_OK) without being directories.
    app = _repo(w) / where
    (app / "HEAD").write_text("ref: refs/heads/main\n")
    up = "../" * (where.count("/") + 1)
    for name in ("objects", "refs"):
        if kind == "symlinks":
            (app / name).symlink_to(f"{up}.git/{name}")
        else:
            (app / name).write_text("")
            (app / name).chmod(0o755)
    (app / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
        f'\tfsmonitor = "{w.command("bare-" + kind)}"\n'
    )


def _status_in_lib(w: World) -> None:
    w.git(_repo(w) / "app/lib", "status", check=False)


def _config(w: World, text: str) -> None:
    with (_repo(w) / ".git/config").open("a") as f:
        f.write(text)


def _alias_upload_pack(w: World) -> None:
    script = w.script(w.workspace / ".p/run.sh", "alias-upload-pack")
    _config(w, f'[alias]\n\tco = "fetch --upload-pack=\\"{script} x;\\" ."\n')


def _alias_rebase_exec(w: World) -> None:
    w.git(_repo(w), "commit", "-q", "--allow-empty", "-m", "second")
    # (a '#' outside quotes would start a comment: a plain command)
    command = f"id -u > {w.marker('alias-exec')}"
    _config(w, f'[alias]\n\tup = rebase -q --exec \\"{command}\\" HEAD~1\n')


def _alias_output(w: World) -> None:
    target = w.marker("alias-output")
    _config(w, f"[alias]\n\tl = log --output={target} -1\n")


def _run_alias(name: str) -> Callable[[World], None]:
    def run(w: World) -> None:
        w.git(_repo(w), name, check=False)

    return run


def _rebase_state(w: World) -> None:
    repo = _repo(w)
    head = w.git(repo, "rev-parse", "HEAD").stdout.strip()
    state = repo / ".git/rebase-merge"
    state.mkdir()
    files = {
        "git-rebase-todo": f"exec {w.command('rebase-exec')}\n",
        "head-name": "refs/heads/main\n",
        "onto": f"{head}\n",
        "orig-head": f"{head}\n",
        "interactive": "",
        "end": "1\n",
        "msgnum": "0\n",
    }
    for name, text in files.items():
        (state / name).write_text(text)


def _rebase_continue(w: World) -> None:
    w.git(_repo(w), "status", check=False)
    w.git(_repo(w), "rebase", "--continue", check=False)


def _fsmonitor_on(w: World) -> None:
    # git reads " on" as a command, not a boolean: ./on runs where root's PATH
    # has "." (here: the work tree top, where git runs the hook from).
    w.script(_repo(w) / "on", "fsmonitor-on")
    _config(w, '[core]\n\tfsmonitor = " on"\n')


def _status_with_dot_path(w: World) -> None:
    env = {**w.env(), "PATH": ".:" + w.env()["PATH"]}
    subprocess.run(["git", "status"], cwd=_repo(w), env=env, capture_output=True, timeout=60)


PLANTS = [
    Plant(
        "bare layout, objects and refs symlinks",
        lambda w: _bare_layout(w, "symlinks"),
        _status_in_lib,
    ),
    Plant(
        "bare layout, objects and refs empty files",
        lambda w: _bare_layout(w, "files"),
        _status_in_lib,
    ),
    Plant("alias fetch --upload-pack", _alias_upload_pack, _run_alias("co")),
    Plant("alias rebase --exec", _alias_rebase_exec, _run_alias("up")),
    Plant("alias log --output", _alias_output, _run_alias("l")),
    Plant("planted rebase-merge state", _rebase_state, _rebase_continue),
    Plant('core.fsmonitor = " on"', _fsmonitor_on, _status_with_dot_path),
]


def _before(w: World) -> None:
    repo = w.repo(_repo(w))
    (repo / "app/lib").mkdir(parents=True)
    (repo / "app/lib/x.txt").write_text("x\n")
    w.git(repo, "add", "app")
    w.git(repo, "commit", "-q", "-m", "app")


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.name)
def test_the_plant_runs_as_root_without_the_scan(world: World, plant: Plant) -> None:
    _before(world)
    plant.plant(world)
    plant.trigger(world)
    assert world.fired(), f"{plant.name}: nothing ran; the test below would prove nothing"
    owners = {p.name: p.stat().st_uid for p in world.markers.iterdir()}
    assert set(owners.values()) == {0}, owners  # written by root's git


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.name)
def test_after_the_end_scan_the_plant_does_not_run(world: World, plant: Plant) -> None:
    _before(world)
    before = workspace_scan.Snapshot.from_json(
        workspace_scan.snapshot([str(world.workspace)]).to_json()
    )
    plant.plant(world)
    result = workspace_scan.scan([str(world.workspace)], before)
    assert result.truncated == []
    assert result.to_neutralize, f"{plant.name}: the scan found nothing"
    done = quarantine.neutralize_all(result.hits, str(world.base / "state/q"))
    assert all(n.done for n in done), [n.line for n in done]
    plant.trigger(world)
    assert world.fired() == {}, f"{plant.name}: ran after the scan"
    again = workspace_scan.scan([str(world.workspace)], before)
    assert again.to_neutralize == [], [h.describe() for h in again.to_neutralize]
    # Root's repository still works.
    assert world.git(_repo(world), "log", "-1", "--format=%s").stdout.strip()
    assert os.path.exists(_repo(world) / ".git/HEAD")


def test_only_the_inert_keys_may_change_and_roots_own_settings_stay(world: World) -> None:
    """Layer 3: what root had before the session stays (an alias and a pull
    setting are not on the list); of what the session wrote, the inert keys stay
    and everything else goes, whatever it is."""
    repo = world.repo(_repo(world))
    world.git(repo, "config", "alias.st", "status -sb")
    world.git(repo, "config", "pull.rebase", "true")
    before = workspace_scan.snapshot([str(world.workspace)])
    assert [h for h in before.hits if h.kind == "git-unlisted"] == []
    original = (repo / ".git/config").read_text()

    world.git(repo, "remote", "add", "origin", "https://example.com/r.git")
    world.git(repo, "config", "branch.main.remote", "origin")
    world.git(repo, "config", "branch.main.merge", "refs/heads/main")
    world.git(repo, "config", "user.email", "agent@example.com")
    inert = world.git(repo, "config", "--local", "--list").stdout
    for key, value in (
        ("alias.lg", "log --graph"),  # harmless today, not on the list: goes
        ("pull.rebase", "false"),  # root's key with another value: goes
        ("gc.auto", "0"),
        ("core.bare", "true"),
    ):
        world.git(repo, "config", "--add", key, value)
    result = workspace_scan.scan([str(world.workspace)], before)
    moving = sorted(h.what for h in result.to_neutralize)
    assert moving == [
        "alias.lg = log --graph",
        "core.bare = true",
        "gc.auto = 0",
        "pull.rebase = false",
    ]
    quarantine.neutralize(result.hits, str(world.base / "q"))
    # (an emptied section's header stays: every other line is kept byte for byte)
    assert world.git(repo, "config", "--local", "--list").stdout == inert
    assert (repo / ".git/config").read_text().startswith(original)
    assert world.git(repo, "config", "alias.st").stdout.strip() == "status -sb"


def _cli_at_ulimit(nofile: int, *args: str) -> subprocess.CompletedProcess[str]:
    import sys

    from tests.tools import REPO

    return subprocess.run(
        ["bash", "-c", f'ulimit -n {nofile} && exec "$@"', "bash", sys.executable, "-m",
         "sandbox_setup", *args],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_wide_directory_needs_no_more_descriptors_for_audit_and_undo(tmp_path: Path) -> None:
    """Layer 4: 1,100 files in one directory at ``ulimit -n 1024``: the walks of
    apply, --audit and --undo hold a bounded number of descriptors (they held
    one per file of a directory)."""
    from tests.core_fixtures import make_target_root
    from tests.tools import require_root, require_tool

    require_root()
    for tool in ("useradd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    tmp_path.chmod(0o755)
    root = make_target_root(tmp_path / "root")
    wide = root / "srv/project/wide"
    wide.mkdir()
    for i in range(1100):
        (wide / f"f{i:04d}").write_text("x\n")
    argv = ("--mode", "sandbox", "--workspace", "/srv/project", "--root", str(root))
    applied = _cli_at_ulimit(1024, "--headless", *argv, "--yes")
    assert applied.returncode == 0, applied.stderr[-2000:]
    gid = next(
        line.split(":")[2]
        for line in (root / "etc/group").read_text().splitlines()
        if line.startswith("sandbox-ws")
    )
    acl = ["getfacl", "--absolute-names", "--numeric", "--omit-header"]
    last = wide / "f1099"
    assert f"group:{gid}:" in subprocess.run([*acl, str(last)], capture_output=True,
                                             text=True, check=True).stdout  # fmt: skip
    audit = _cli_at_ulimit(1024, "--audit", "--root", str(root))
    assert audit.returncode in (0, 1), audit.stderr[-2000:]
    undo = _cli_at_ulimit(1024, "--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0, undo.stderr[-2000:]
    assert f"group:{gid}:" not in subprocess.run([*acl, str(last)], capture_output=True,
                                                 text=True, check=True).stdout  # fmt: skip


DEEP_WALK = """
import os, resource, sys
from sandbox_setup.base import fdwalk
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
top = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
stats = fdwalk.WalkStats()
rels = [v.rel for v in fdwalk.walk(top, fdwalk.UNBOUNDED, stats)]
print(len(rels), max(r.count("/") for r in rels), len(stats.errors), len(stats.skipped))
"""


def test_a_deep_tree_is_walked_whole_with_few_descriptors(tmp_path: Path) -> None:
    """300 nested directories (each with a sibling) at 64 descriptors: every one is
    seen, none is left out for want of a descriptor."""
    import sys

    from tests.tools import SRC

    path = tmp_path
    for _ in range(300):
        path = path / "d"
        (path / "side").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-c", DEEP_WALK, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["601", "300", "0", "0"]


def _many_files(directory: Path, count: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(count):
            os.close(os.open(f"e{i}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_past_210000_entries_the_plant_is_still_found(world: World) -> None:
    """Layer 4: the scan stopped at 200,000 entries ("stopped early") and root's
    git status in app/lib ran the plant below them. Now it walks the whole
    workspace: the plant is neutralized and nothing is marked untrusted."""
    from sandbox_setup.boundary import session

    _before(world)
    state = world.base / "state"
    state.mkdir(mode=0o700)  # as Boundary.start makes it
    before = workspace_scan.snapshot([str(world.workspace)])
    _many_files(_repo(world) / "app", 210_000)
    _bare_layout(world, "symlinks", "app/lib")
    lines = session.check([str(world.workspace)], before, state, "s1").lines
    assert not (state / session.UNTRUSTED).exists(), lines
    assert any(line.startswith("quarantined ") and "app/lib/HEAD" in line for line in lines), lines
    _status_in_lib(world)
    assert world.fired() == {}


def test_a_scan_that_cannot_see_everything_marks_the_workspace_untrusted(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Layer 4: where the end scan cannot finish (here: bounds made small), the
    workspace is marked untrusted; the next launch and the audit say so and tell
    root not to run git there; an audit that sees it whole clears the mark."""
    from sandbox_setup.audit.workspace_scan import scan_findings
    from sandbox_setup.base.fdwalk import WalkLimits
    from sandbox_setup.boundary import session

    _before(world)
    state = world.base / "state"
    state.mkdir(mode=0o700)  # as Boundary.start makes it
    ws = str(world.workspace)
    before = workspace_scan.snapshot([ws])
    _many_files(_repo(world) / "app", 3000)
    _bare_layout(world, "symlinks")
    trust = world.base / "trust"
    trust.mkdir(mode=0o700)
    limits = WalkLimits(max_entries=1000)
    lines = session.check([ws], before, state, "s1", limits, marks_dir=trust).lines
    assert (trust / session.UNTRUSTED).exists()
    warning = [line for line in lines if "untrusted" in line]
    assert warning and "do NOT run git" in warning[0] and "sandbox-setup --audit" in warning[0]

    session.Boundary.start([(ws, ws)], state, sandbox=False, trust=trust).end()
    err = capsys.readouterr().err
    assert f"{ws} is untrusted since " in err and "do NOT run git" in err

    found, _notes = scan_findings([ws], trust)
    untrusted = [f for f in found if f.id == "audit.workspace.untrusted"]
    assert untrusted and untrusted[0].severity.name == "HIGH", found
    assert not (trust / session.UNTRUSTED).exists()  # this audit saw it whole
    again, _notes = scan_findings([ws], trust)
    assert [f for f in again if f.id == "audit.workspace.untrusted"] == []


def test_the_audit_exits_1_on_an_untrusted_workspace_until_it_has_seen_it_whole(
    tmp_path: Path,
) -> None:
    """Layer 4 through the CLI: an end scan that could not finish marked the
    workspace; `sandbox-setup --audit` says so (high: exit 1), and having walked
    it whole, clears the mark: the next audit does not say it again."""
    import json

    from sandbox_setup.base.fdwalk import WalkLimits
    from sandbox_setup.boundary import session
    from tests.core_fixtures import make_target_root, run_cli
    from tests.tools import require_root, require_tool

    require_root()
    for tool in ("useradd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    tmp_path.chmod(0o755)
    root = make_target_root(tmp_path / "root")
    argv = ("--mode", "sandbox", "--workspace", "/srv/project", "--root", str(root))
    applied = run_cli("--headless", *argv, "--yes")
    assert applied.returncode == 0, applied.stderr[-2000:]
    ws = os.path.realpath(root / "srv/project")
    state = root / "root/.local/state/sandbox-setup"
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The host-wide trusted state, under the root (as the audit reads it there).
    trust = root / "var/lib/sandbox-setup/workspaces"
    trust.mkdir(mode=0o700, parents=True, exist_ok=True)
    _many_files(Path(ws) / "many", 50)
    before = workspace_scan.snapshot([ws])
    limits = WalkLimits(max_entries=10)
    lines = session.check([ws], before, state, "s1", limits, marks_dir=trust).lines
    assert (trust / session.UNTRUSTED).exists(), lines

    def audit() -> tuple[int, list[dict[str, object]]]:
        done = run_cli("--audit", "--json", "--root", str(root))
        return done.returncode, json.loads(done.stdout)["findings"]

    code, found = audit()
    untrusted = [f for f in found if f["id"] == "audit.workspace.untrusted"]
    assert code == 1 and untrusted, found
    assert "do NOT run git" in str(untrusted[0]["summary"])
    assert not (trust / session.UNTRUSTED).exists()
    _code, found = audit()
    assert [f for f in found if f["id"] == "audit.workspace.untrusted"] == []
