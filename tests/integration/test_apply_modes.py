"""Headless apply under a temp root (``--root``), with the real useradd, groupadd and
setfacl: the files of each mode with their modes and owners, the merge keeping
foreign keys and comments, idempotency, and byte-identical replay from answers.toml.
The host's /etc/passwd, group, shadow and gshadow are asserted unchanged."""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CLAUDE_VERSION,
    CONFIG,
    MANAGED,
    group_entry,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    private_claude,
    run_cli,
    snapshot,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before, "the host's account files changed"


def apply(root: Path, *args: str) -> str:
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def owner(path: Path) -> tuple[int, int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def acl(path: Path) -> str:
    import subprocess

    return subprocess.run(
        ["getfacl", "--numeric", "--absolute-names", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_sandbox_mode_files_user_and_workspace_access(root: Path) -> None:
    out = apply(root, "--mode", "sandbox", "--workspace", "/srv/project")
    assert "changed: create user claude-agent" in out
    agent = passwd_entry(root, "claude-agent")
    assert agent is not None and agent[5] == "/home/claude-agent"
    uid, gid = int(agent[2]), int(agent[3])
    assert uid != 0
    shadow = [
        ln
        for ln in (root / "etc/shadow").read_text().splitlines()
        if ln.startswith("claude-agent:")
    ]
    assert shadow and shadow[0].split(":")[1].startswith("!"), "password must be locked"
    assert group_entry(root, "claude-agent") is not None  # its own group
    ws_group = group_entry(root, "sandbox-ws-claude-agent")
    assert ws_group is not None and "claude-agent" in ws_group[3].split(",")
    assert owner(root / "home/claude-agent") == (uid, gid, 0o700)
    # Workspace: ACLs for the group, owners untouched, setgid dirs, default ACL.
    ws = root / "srv/project"
    ws_gid = ws_group[2]
    assert owner(ws)[:2] == (0, 0) and owner(ws / "README.md")[:2] == (0, 0)
    assert ws.stat().st_mode & stat.S_ISGID and (ws / "src").stat().st_mode & stat.S_ISGID
    assert f"group:{ws_gid}:rwx" in acl(ws) and f"default:group:{ws_gid}:rwx" in acl(ws)
    assert f"group:{ws_gid}:rw-" in acl(ws / "README.md")
    assert f"default:group:{ws_gid}:rwx" in acl(ws / "src")
    # Files: managed settings (root 0644), launcher config and answers (operator's).
    assert owner(root / MANAGED) == (0, 0, 0o644)
    settings = json.loads((root / MANAGED).read_text())
    assert settings["sandbox"]["enabled"] is True
    assert "Read(~/.ssh/**)" in settings["permissions"]["deny"]
    launcher = tomllib.loads((root / CONFIG / "launcher.toml").read_text())
    assert launcher["mode"] == "sandbox" and launcher["agent"]["user"] == "claude-agent"
    assert launcher["sandbox"]["workspaces"] == ["/srv/project"]
    assert launcher["sandbox"]["inner_sandbox"] == settings_inner(settings)
    assert owner(root / CONFIG / "launcher.toml") == (0, 0, 0o644)
    assert owner(root / CONFIG) == (0, 0, 0o700)
    assert (root / CONFIG / "answers.toml").is_file()


def settings_inner(settings: dict) -> str:
    sandbox = settings["sandbox"]
    if not sandbox["enabled"]:
        return "off"
    return "weak" if sandbox.get("enableWeakerNestedSandbox") else "strong"


def test_user_mode_user_scope_login_copy_and_private_claude(root: Path) -> None:
    private_claude(root)
    (root / "root/.claude").mkdir(mode=0o700)
    (root / "root/.claude/.credentials.json").write_text('{"token": "secret"}')
    (root / "root/.claude.json").write_text('{"userID": "x"}')
    apply(
        root,
        "--mode", "user",
        "--settings-scope", "user",
        "--copy-login",
        "--claude", "/root/.local/bin/claude",
    )  # fmt: skip
    agent = passwd_entry(root, "claude-agent")
    assert agent is not None
    uid, gid = int(agent[2]), int(agent[3])
    home = root / "home/claude-agent"
    assert owner(home / ".claude") == (uid, gid, 0o700)
    assert owner(home / ".claude/settings.json") == (uid, gid, 0o644)
    for name in (".claude/.credentials.json", ".claude.json"):
        assert owner(home / name) == (uid, gid, 0o600)
        assert (home / name).read_bytes() == (root / "root" / name).read_bytes()
    copy = root / "usr/local/lib/sandbox-setup/claude"
    assert owner(copy) == (0, 0, 0o755)
    assert copy.read_bytes() == (root / "root/.local/bin/claude").read_bytes()
    launcher = tomllib.loads((root / CONFIG / "launcher.toml").read_text())
    assert launcher["claude"] == "/usr/local/lib/sandbox-setup/claude"
    assert launcher["claude_version"] == CLAUDE_VERSION
    assert not (root / MANAGED).exists()


def test_unsafe_mode_writes_the_operators_settings_and_records_acceptance(root: Path) -> None:
    apply(root, "--mode", "unsafe", "--accept-unsafe-root")
    assert passwd_entry(root, "claude-agent") is None
    assert owner(root / "root/.claude/settings.json") == (0, 0, 0o644)
    launcher = tomllib.loads((root / CONFIG / "launcher.toml").read_text())
    assert launcher["mode"] == "unsafe"
    assert launcher["unsafe"]["accepted_by"] == "root (uid 0)"
    assert launcher["unsafe"]["accepted_at"].startswith("20")


def test_merge_keeps_foreign_keys_order_and_comments(root: Path) -> None:
    managed = root / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text(
        json.dumps(
            {
                "model": "opus",
                "permissions": {"deny": ["Read(./secrets/**)"], "defaultMode": "plan"},
                "hooks": {"Stop": []},
            },
            indent=4,
        )
    )
    os.chmod(managed, 0o444)  # not the default mode, and one the agent can read
    config = root / CONFIG / "launcher.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "# my notes about this launcher\n"
        'schema = 1\nmode = "user"\nclaude = "/old/claude"\n'
        "my_key = 42  # keep me\n\n"
        '[agent]\nuser = "claude-agent"\nhome = "/home/claude-agent"\n'
        "# agent comment\nfavourite = true\n"
    )
    apply(root, "--mode", "user")
    settings = json.loads(managed.read_text())
    # Ours after the operator's, in the order the apply adds them (the floor: the fake
    # Claude reports a release at or above it).
    assert list(settings) == [
        "model", "permissions", "hooks", "sandbox", "allowManagedHooksOnly",
        "requiredMinimumVersion",
    ]  # fmt: skip
    assert settings["allowManagedHooksOnly"] is True  # the operator's managed hooks still run
    assert settings["model"] == "opus" and settings["hooks"] == {"Stop": []}
    assert settings["permissions"]["defaultMode"] == "plan"
    assert settings["permissions"]["deny"][0] == "Read(./secrets/**)"
    assert owner(managed) == (0, 0, 0o444), "mode and owner of a replaced file are kept"
    text = config.read_text()
    for kept in ("# my notes about this launcher", "my_key = 42  # keep me", "# agent comment"):
        assert kept in text
    data = tomllib.loads(text)
    assert data["agent"]["favourite"] is True and data["claude"] == "/usr/local/bin/claude"


def mtimes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): p.lstat().st_mtime_ns for p in root.rglob("*") if not p.is_dir()
    }


@pytest.mark.parametrize(
    "args",
    [
        ("--mode", "sandbox", "--workspace", "/srv/project"),
        ("--mode", "user", "--settings-scope", "user"),
        ("--mode", "unsafe", "--accept-unsafe-root"),
    ],
    ids=["sandbox", "user", "unsafe"],
)
def test_second_apply_changes_nothing_and_rewrites_nothing(
    root: Path, args: tuple[str, ...]
) -> None:
    apply(root, *args)
    state, times = snapshot(root), mtimes(root)
    out = apply(root, *args)
    assert "No change" in out
    proc = run_cli("--headless", "--root", str(root), "--yes", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["changed"] is False and data["changed_actions"] == []
    assert not any(a["change"] for a in data["actions"])
    assert snapshot(root) == state
    assert mtimes(root) == times


@pytest.mark.parametrize(
    "args",
    [
        ("--mode", "sandbox", "--workspace", "/srv/project", "--network", "none"),
        ("--mode", "unsafe", "--accept-unsafe-root"),
    ],
    ids=["sandbox", "unsafe"],
)
def test_answers_replay_is_byte_identical(
    tmp_path: Path, root: Path, args: tuple[str, ...]
) -> None:
    apply(root, *args)
    replica = make_target_root(tmp_path / "replica")
    answers = root / CONFIG / "answers.toml"
    apply(replica, "--answers", str(answers))
    for rel in ("launcher.toml", "answers.toml"):
        assert (replica / CONFIG / rel).read_bytes() == (root / CONFIG / rel).read_bytes()
    settings = MANAGED if args[1] == "sandbox" else "root/.claude/settings.json"
    assert (replica / settings).read_bytes() == (root / settings).read_bytes()


def test_reapply_refuses_group_world_write_and_a_foreign_owner(root: Path) -> None:
    """Never laundered into root's (docs/design.md invariant 12): the plan and the apply
    refuse (exit 3) naming the file, and nothing changes until the operator fixes it."""
    apply(root, "--mode", "sandbox", "--workspace", "/srv/project")
    agent = passwd_entry(root, "claude-agent")
    assert agent is not None
    config = root / CONFIG / "launcher.toml"
    managed = root / MANAGED
    config.chmod(0o666)
    os.chown(managed, int(agent[2]), int(agent[3]))  # the agent must not own its policy
    content = (config.read_bytes(), managed.read_bytes())
    for extra in ("--dry-run", "--yes"):
        proc = run_cli("--headless", "--root", str(root), extra, "--mode", "sandbox",
                       "--workspace", "/srv/project")  # fmt: skip
        assert proc.returncode == 3, proc.stderr
        assert str(managed) in proc.stderr or str(config) in proc.stderr, proc.stderr
    assert owner(config) == (0, 0, 0o666)
    assert owner(managed) == (int(agent[2]), int(agent[3]), 0o644)
    config.chmod(0o644)
    os.chown(managed, 0, 0)
    apply(root, "--mode", "sandbox", "--workspace", "/srv/project")
    assert (config.read_bytes(), managed.read_bytes()) == content


def test_workspace_acls_do_not_follow_symlinks_out_of_the_workspace(root: Path) -> None:
    outside = root / "srv/outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the agent\n")
    (root / "srv/project/escape").symlink_to("../outside")
    apply(root, "--mode", "sandbox", "--workspace", "/srv/project")
    ws_group = group_entry(root, "sandbox-ws-claude-agent")
    assert ws_group is not None
    assert f"group:{ws_group[2]}:" in acl(root / "srv/project/README.md")
    assert f"group:{ws_group[2]}:" not in acl(outside)
    assert f"group:{ws_group[2]}:" not in acl(outside / "secret.txt")
    assert not outside.stat().st_mode & stat.S_ISGID


def test_a_narrowed_acl_mask_is_seen_and_repaired(root: Path) -> None:
    args = ("--mode", "sandbox", "--workspace", "/srv/project")
    apply(root, *args)
    ws = root / "srv/project"
    ws.chmod(ws.stat().st_mode & ~0o020)  # chmod g-w narrows the ACL mask
    proc = run_cli("--headless", "--root", str(root), "--json", *args)
    access = [a for a in json.loads(proc.stdout)["actions"] if a["kind"] == "workspace-access"]
    assert access and access[0]["change"] is True
    apply(root, *args)
    assert "mask::rwx" in acl(ws)


PRIVILEGED_GROUPS = ("root", "sudo", "wheel", "admin")
SUDOERS = (
    "Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n"
    "@includedir /etc/sudoers.d\n"
)


def seed_sudo(root: Path) -> None:
    """A Debian-like sudo setup in the target root, so a grant would have a place to go."""
    (root / "etc/sudoers").write_text(SUDOERS)
    (root / "etc/sudoers").chmod(0o440)
    (root / "etc/sudoers.d").mkdir(mode=0o755)
    (root / "etc/sudoers.d/README").write_text("# files here are read by sudo\n")
    with open(root / "etc/group", "a") as group:
        group.write("adm:x:4:\nwheel:x:10:\nsudo:x:27:\nadmin:x:115:\n")


def privilege_problems(root: Path, agent: str) -> list[str]:
    """Ways ``agent`` could become root in ``root`` (docs/design.md invariant 5): a sudoers
    entry naming it or one of its groups, any NOPASSWD, membership of a privileged
    group, a uid/gid of 0, or a usable password."""
    fields = passwd_entry(root, agent)
    assert fields is not None, f"{agent} was not created"
    groups = {
        g[0]
        for g in (ln.split(":") for ln in (root / "etc/group").read_text().splitlines())
        if g[2] == fields[3] or agent in g[3].split(",")
    }
    problems = [f"member of {g}" for g in sorted(groups & set(PRIVILEGED_GROUPS))]
    if fields[2] == "0" or fields[3] == "0":
        problems.append(f"uid/gid {fields[2]}/{fields[3]}")
    sudoers = [root / "etc/sudoers", *sorted((root / "etc/sudoers.d").iterdir())]
    for path in sudoers:
        text = path.read_text()
        if "NOPASSWD" in text:
            problems.append(f"NOPASSWD in {path.name}")
        # A rule names a user as a word and a group as %group.
        names = [(agent, agent)] + [(f"%{g}", g) for g in sorted(groups)]
        for token, name in names:
            if re.search(rf"(?<![\w.-]){re.escape(token)}(?![\w.-])", text):
                problems.append(f"{path.name} mentions {name}")
    shadow = [ln.split(":") for ln in (root / "etc/shadow").read_text().splitlines()]
    password = next(s[1] for s in shadow if s[0] == agent)
    if fields[1] not in ("x", "*", "!") or not password.startswith(("!", "*")):
        problems.append(f"usable password ({fields[1]!r} in passwd, {password[:2]!r}... in shadow)")
    return problems


@pytest.mark.parametrize(
    "args",
    [("--mode", "sandbox", "--workspace", "/srv/project"), ("--mode", "user")],
    ids=["sandbox", "user"],
)
def test_the_agent_gets_no_sudo_no_privileged_group_and_no_password(
    root: Path, args: tuple[str, ...]
) -> None:
    seed_sudo(root)
    sudoers_before = {p.name: p.read_bytes() for p in (root / "etc/sudoers.d").iterdir()}
    sudoers_before["sudoers"] = (root / "etc/sudoers").read_bytes()
    apply(root, *args)
    assert privilege_problems(root, "claude-agent") == []
    sudoers_after = {p.name: p.read_bytes() for p in (root / "etc/sudoers.d").iterdir()}
    sudoers_after["sudoers"] = (root / "etc/sudoers").read_bytes()
    assert sudoers_after == sudoers_before, "the apply touched sudo's configuration"
    # Control: the same check sees each kind of grant, so an empty list means something.
    (root / "etc/sudoers.d/agent").write_text("claude-agent ALL=(ALL) NOPASSWD: ALL\n")
    group = (root / "etc/group").read_text().replace("sudo:x:27:", "sudo:x:27:claude-agent")
    (root / "etc/group").write_text(group)
    shadow = (root / "etc/shadow").read_text().replace("claude-agent:!", "claude-agent:$6$x")
    (root / "etc/shadow").write_text(shadow)
    assert set(privilege_problems(root, "claude-agent")) == {
        "member of sudo",
        "sudoers mentions sudo",  # the %sudo rule now covers the agent
        "NOPASSWD in agent",
        "agent mentions claude-agent",
        "usable password ('x' in passwd, '$6'... in shadow)",
    }
