"""Nothing the agent writes in a workspace runs as root later (docs/design.md invariant 8).

Real git, real sessions through sandbox-launch, both modes. A fake Claude (the agent,
as the agent) plants what makes root's ordinary git run code: ``core.fsmonitor`` in a
root-made repository's config, ``post-checkout``/``pre-commit`` hooks, a hooksPath
into the workspace, ``hook.<name>.command``, a submodule's config, a repository
``git init``ed during the session, and a root-made directory renamed to ``.git``.
Then root runs ``git status``, ``log``, ``commit`` and ``checkout -b`` in each, with
``safe.directory=*`` (what many roots have), and every planted command would write
``id -u`` into a marker file. The control runs the same plants on the host without
a session: root's git runs them there, so the markers prove something.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.audit.workspace_scan import scan_findings
from sandbox_setup.boundary.trust_record import HostRecord
from tests.launch_fixtures import (
    HOST_TRUST,
    LaunchTree,
    as_agent,
    launch_tree,
    launcher_env,
    run_launcher,
)

pytestmark = pytest.mark.integration

# The agent's plants: each prints "name=result" (ok, or the errno name) as JSON.
PLANT = r"""#!/usr/bin/python3
import errno, json, os, subprocess, sys, time
WS, M = {workspace!r}, {markers!r}
R = os.path.join(WS, "repo")
HOLD = {hold!r}
res = {{}}

def attempt(name, fn):
    try:
        fn()
        res[name] = "ok"
    except OSError as exc:
        res[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    except subprocess.CalledProcessError as exc:
        res[name] = "git failed: " + (exc.stderr or b"").decode()[-200:]

def cmd(name):
    return "id -u >> %s/%s; true" % (M, name)

def append(path, text):
    with open(path, "a") as f:
        f.write(text)

def hook(path, name):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + cmd(name) + "\n")
    os.chmod(path, 0o755)

def git(*args):
    env = dict(os.environ, HOME=os.environ.get("HOME", "/nonexistent"),
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", *args], check=True, capture_output=True, env=env)

def renamed_git():
    d = os.path.join(WS, "plain")  # a directory root made: root owns it, the ACL lets us in
    os.makedirs(os.path.join(d, "objects"), exist_ok=True)
    os.makedirs(os.path.join(d, "refs", "heads"), exist_ok=True)
    with open(os.path.join(d, "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    with open(os.path.join(d, "config"), "w") as f:
        f.write('[core]\n\trepositoryformatversion = 0\n\tbare = false\n'
                '\tfsmonitor = "%s"\n' % cmd("renamed-fsmonitor"))
    os.rename(d, os.path.join(WS, ".git"))

def new_repo():
    n = os.path.join(WS, "newrepo")
    git("init", "-q", n)
    append(os.path.join(n, ".git", "config"), '[core]\n\tfsmonitor = "%s"\n' % cmd("new-fsmonitor"))
    hook(os.path.join(n, ".git", "hooks", "post-checkout"), "new-post-checkout")

attempt("fsmonitor", lambda: append(os.path.join(R, ".git", "config"),
        '[core]\n\tfsmonitor = "%s"\n' % cmd("fsmonitor")))
attempt("pre-commit", lambda: hook(os.path.join(R, ".git", "hooks", "pre-commit"), "pre-commit"))
attempt("post-checkout",
        lambda: hook(os.path.join(R, ".git", "hooks", "post-checkout"), "post-checkout"))
attempt("hooks-path-dir", lambda: hook(os.path.join(WS, "evilhooks", "pre-commit"), "hookspath"))
attempt("hooks-path", lambda: append(os.path.join(R, ".git", "config"),
        "[core]\n\thooksPath = %s/evilhooks\n" % WS))
attempt("hook-command", lambda: append(os.path.join(R, ".git", "config"),
        '[hook "audit"]\n\tcommand = "%s"\n\tevent = pre-commit\n' % cmd("hook-command")))
attempt("submodule", lambda: append(os.path.join(R, ".git", "modules", "sm", "config"),
        '[core]\n\tfsmonitor = "%s"\n' % cmd("submodule-fsmonitor")))
attempt("new-repo", new_repo)
attempt("commit", lambda: git("-c", "safe.directory=*", "-c", "user.name=agent",
        "-c", "user.email=agent@example.test", "-C", R, "commit", "-q", "--allow-empty",
        "-m", "the agent's work"))

def claude_hooks():
    os.makedirs(os.path.join(WS, ".claude"), exist_ok=True)
    with open(os.path.join(WS, ".claude", "settings.json"), "w") as f:
        json.dump({{"model": "opus", "hooks": {{"SessionStart": [{{"hooks": [
            {{"type": "command", "command": cmd("claude-hook")}}]}}]}}}}, f)
attempt("claude-hooks", claude_hooks)
attempt("renamed-git", renamed_git)
print(json.dumps(res), flush=True)
if HOLD:
    open(os.path.join(HOLD, "planted"), "w").close()
    while not os.path.exists(os.path.join(HOLD, "go")):
        time.sleep(0.05)
"""

ROOT_GIT_CONFIG = "[safe]\n\tdirectory = *\n[user]\n\tname = Root Op\n\temail = root@example.test\n"


def root_git(tree: LaunchTree, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    home = tree.base / "root-home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(ROOT_GIT_CONFIG)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "LANG": "C.UTF-8"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def acl_for_agent(path: Path, agent: str) -> None:
    """What sandbox-setup's workspace ACLs give the agent on root's files (rwX, inherited)."""
    for spec in (f"u:{agent}:rwX", f"d:u:{agent}:rwX"):
        subprocess.run(["setfacl", "-R", "-m", spec, str(path)], check=True)


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("git", "setfacl")


def prepare_workspace(tree: LaunchTree) -> tuple[Path, Path]:
    """A root-made repository with a submodule, a root-made directory, markers outside."""
    ws = tree.workspace
    repo = ws / "repo"
    sub_src = tree.base / "sub-src"
    for path in (sub_src, repo):
        root_git(tree, "init", "-q", "-b", "main", str(path), cwd=tree.base)
    (sub_src / "s.txt").write_text("s\n")
    root_git(tree, "add", "s.txt", cwd=sub_src)
    root_git(tree, "commit", "-q", "-m", "sub", cwd=sub_src)
    (repo / "a.txt").write_text("a\n")
    root_git(tree, "add", "a.txt", cwd=repo)
    root_git(tree, "config", "user.name", "Root Op In Repo", cwd=repo)  # the operator's own
    added = root_git(
        tree, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_src), "sm",
        cwd=repo,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    committed = root_git(tree, "commit", "-q", "-m", "first", cwd=repo)
    assert committed.returncode == 0, committed.stderr
    (ws / "plain").mkdir()
    os.chown(ws, 0, 0)
    ws.chmod(0o755)
    acl_for_agent(ws, tree.agent.name)
    markers = tree.base / "markers"
    markers.mkdir()
    markers.chmod(0o777)  # root's git writes them; the control's plants run as root there too
    return repo, markers


def plant_script(tree: LaunchTree, markers: Path, hold: Path | None = None) -> Path:
    text = PLANT.format(
        workspace=str(tree.workspace), markers=str(markers), hold=str(hold) if hold else ""
    )
    return tree.write_script(text, name="claude-plants")


def roots_ordinary_work(tree: LaunchTree, repo: Path) -> None:
    ws = tree.workspace
    for where in (repo, ws / "newrepo", ws):
        if not where.exists():
            continue
        for args in (["status"], ["log", "-1"], ["commit", "-q", "--allow-empty", "-m", "x"],
                     ["checkout", "-q", "-b", f"review-{where.name}"], ["status"]):  # fmt: skip
            root_git(tree, *args, cwd=where)


def ran_as_root(markers: Path) -> dict[str, str]:
    """The markers written by uid 0 (the agent's own git runs what it planted as the
    agent: that is not a crossing)."""
    found = {p.name: p.read_text().split() for p in markers.iterdir()}
    return {name: " ".join(uids) for name, uids in found.items() if "0" in uids}


def test_the_control_root_runs_what_the_agent_plants_without_a_session(tree: LaunchTree) -> None:
    # The attack, as reproduced: planted on the host as the agent, no launcher, no scan.
    repo, markers = prepare_workspace(tree)
    result = as_agent(tree, [str(plant_script(tree, markers))])
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    assert planted["fsmonitor"] == planted["pre-commit"] == planted["renamed-git"] == "ok", planted
    roots_ordinary_work(tree, repo)
    ran = ran_as_root(markers)
    # (pre-commit gives way to the hooksPath the agent set: that one ran instead)
    for name in (
        "fsmonitor",
        "hookspath",
        "new-fsmonitor",
        "new-post-checkout",
        "renamed-fsmonitor",
    ):
        assert name in ran, (name, ran)
    # and the audit's scan, with no session state saved, lists them (present, not judged)
    findings, notes = scan_findings([str(tree.workspace)], tree.base / "no-state")
    assert any("fsmonitor" in f.summary for f in findings) and notes


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_after_a_session_roots_git_runs_nothing_the_agent_wrote(
    tree: LaunchTree, mode: str
) -> None:
    repo, markers = prepare_workspace(tree)
    config = tree.write_config(plant_script(tree, markers), mode=mode)
    state = tree.base / "state"
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    if mode == "sandbox":
        # read-only inside: the repository's config and hooks, the submodule's config
        for name in ("fsmonitor", "pre-commit", "post-checkout", "hooks-path", "submodule"):
            assert planted[name] in ("EROFS", "EACCES", "EPERM"), (name, planted)
    else:
        assert planted["fsmonitor"] == planted["pre-commit"] == "ok", planted  # no mounts
    # committing still works, even where the repository's config and hooks are read-only
    assert planted["commit"] == "ok", planted
    assert "the agent's work" in root_git(tree, "log", "--format=%s", cwd=repo).stdout
    roots_ordinary_work(tree, repo)
    assert ran_as_root(markers) == {}, (ran_as_root(markers), result.stderr)
    # Claude project settings with hooks (root's claude would run them): hooks gone
    assert planted["claude-hooks"] == "ok", planted
    settings = tree.workspace / ".claude" / "settings.json"
    assert not settings.exists() or not json.loads(settings.read_text()).get("hooks")
    # the operator's own setting in the same config file is kept
    assert "Root Op In Repo" in (repo / ".git" / "config").read_text()
    # what was moved aside is in the quarantine, with a manifest, and the operator was told
    quarantine = state / "sandbox-setup" / "quarantine"
    manifests = list(quarantine.glob("*/manifest.json"))
    assert manifests, result.stderr
    told = [line for line in result.stderr.splitlines() if line.startswith("sandbox-launch: ")]
    moved = json.loads(manifests[-1].read_text())
    assert moved and len(told) >= 2, (moved, result.stderr)
    assert "fsmonitor" in result.stderr


def test_the_audit_reports_a_plant_while_the_session_runs_and_not_after_its_end(
    tree: LaunchTree,
) -> None:
    repo, markers = prepare_workspace(tree)
    hold = tree.base / "hold"
    hold.mkdir()
    hold.chmod(0o777)
    config = tree.write_config(plant_script(tree, markers, hold), mode="user")
    state = tree.base / "state"
    env = launcher_env({"XDG_STATE_HOME": str(state)})
    launcher = subprocess.Popen(
        [*_launcher_argv(config)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = 60.0
        while not (hold / "planted").exists():
            assert launcher.poll() is None, launcher.communicate()
            deadline -= 0.05
            assert deadline > 0, "the agent did not plant"
            subprocess.run(["sleep", "0.05"], check=True)
        during, _ = scan_findings([str(tree.workspace)], HOST_TRUST)
        planted = [f for f in during if f.id == "audit.workspace.planted"]
        assert any("fsmonitor" in f.summary for f in planted), during
        assert all(f.remedy for f in planted)
        (hold / "go").write_text("")
        _, stderr = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 0, stderr
    after, _ = scan_findings([str(tree.workspace)], HOST_TRUST)
    assert not [f for f in after if f.id == "audit.workspace.planted"], after
    roots_ordinary_work(tree, repo)
    assert ran_as_root(markers) == {}


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_a_session_whose_launcher_was_killed_is_scanned_by_the_next_launch(
    tree: LaunchTree, mode: str
) -> None:
    repo, markers = prepare_workspace(tree)
    hold = tree.workspace / "hold"  # the sandbox sees only the workspace
    hold.mkdir()
    hold.chmod(0o777)
    config = tree.write_config(plant_script(tree, markers, hold), mode=mode)
    state = tree.base / "state"
    env = launcher_env({"XDG_STATE_HOME": str(state)})
    launcher = subprocess.Popen(_launcher_argv(config), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = 600
    while not (hold / "planted").exists() and deadline:
        assert launcher.poll() is None, launcher.communicate()
        subprocess.run(["sleep", "0.1"], check=True)
        deadline -= 1
    launcher.kill()  # no end hook: the plants stay
    launcher.communicate(timeout=60)
    if mode == "sandbox":  # bwrap's mount points for the placeholders stay on the host
        assert (tree.workspace / ".bashrc").is_dir() and (repo / ".git" / "commondir").exists()
    found, _ = scan_findings([str(tree.workspace)], HOST_TRUST)
    assert any(f.id == "audit.workspace.unfinished" for f in found), found
    assert any(f.id == "audit.workspace.planted" for f in found), found
    (hold / "go").write_text("")  # the next session's agent does not wait
    quiet = tree.write_script("#!/bin/sh\nexit 0\n", name="claude-quiet")
    result = run_launcher(tree.write_config(quiet, mode=mode, name="next.toml"), env=env)
    assert result.returncode == 0, result.stderr
    assert "ended without its workspace scan" in result.stderr, result.stderr
    # the dead session's placeholders went with the recovery (else this session would
    # have taken them for the operator's and left them)
    assert not (tree.workspace / ".bashrc").exists()
    assert not (repo / ".git" / "commondir").exists()
    roots_ordinary_work(tree, repo)
    assert ran_as_root(markers) == {}
    found, _ = scan_findings([str(tree.workspace)], HOST_TRUST)
    assert not [
        f for f in found if f.id in ("audit.workspace.planted", "audit.workspace.unfinished")
    ]


def _launcher_argv(config: Path) -> list[str]:
    import sys

    return [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config), "--"]


def test_the_quarantine_is_out_of_the_agents_reach(tree: LaunchTree) -> None:
    """Root's, 0700: the agent can neither read what was moved nor put it back."""
    _repo, markers = prepare_workspace(tree)
    config = tree.write_config(plant_script(tree, markers), mode="user")
    state = tree.base / "state"
    state.mkdir(mode=0o755)
    assert run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)})).returncode == 0
    quarantine = state / "sandbox-setup" / "quarantine"
    sessions = list(quarantine.iterdir())
    assert sessions
    for path in (state / "sandbox-setup", quarantine, *sessions):
        info = path.lstat()
        assert info.st_uid == 0 and info.st_mode & 0o077 == 0, path
    listing = as_agent(tree, ["ls", str(sessions[0])])
    assert listing.returncode != 0 and "Permission denied" in listing.stderr


def test_a_launch_refused_after_the_snapshot_leaves_no_session_behind(tree: LaunchTree) -> None:
    # Refused in build_launch (the agent does not exist), after the boundary started:
    # no session file stays for the audit to call unfinished, no placeholder stays.
    repo, markers = prepare_workspace(tree)
    config = tree.write_config(plant_script(tree, markers), agent_user="h12-no-such-user")
    state = tree.base / "state"
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 3, result.stderr
    record = HostRecord.load(HOST_TRUST)
    assert not [s for s in record.sessions.values() if s.touches(str(tree.workspace))]
    assert record.trusted[str(tree.workspace)].settled
    found, _ = scan_findings([str(tree.workspace)], HOST_TRUST)
    assert not [
        f for f in found if f.id.startswith(("audit.workspace.planted", "audit.workspace.unf"))
    ]
    assert not (repo / ".git" / "commondir").exists()  # the prepared placeholder went
