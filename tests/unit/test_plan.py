"""build_plan over hand-built reports and fake target roots: pure, refuses what the
report rules out, derives defaults from the probes, and writes nothing."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.configure.answers import Answers, parse_answers
from sandbox_setup.configure.claude_binary import INSTALLED_CLAUDE
from sandbox_setup.configure.host_facts import HostFacts
from sandbox_setup.configure.plan import build_plan
from sandbox_setup.policy.credentials import COPY_LOGIN_NOTE
from tests.core_fixtures import CLAUDE_VERSION, make_target_root, private_claude, snapshot
from tests.host_facts import claude_facts, plan_facts

WS = (PurePosixPath("/srv/project"),)


def report(**statuses: str) -> Report:
    """A report with the given check statuses (``bwrap_sandbox="fail"``)."""
    base = {
        "bwrap.sandbox": "pass",
        "bwrap.nested": "pass",
        "bwrap.nested_weak": "pass",
        "claude.sandbox_deps": "pass",
    }
    base.update({k.replace("_", ".", 1): v for k, v in statuses.items()})
    findings = [
        Finding(cid, cid, Status(st), f"{cid} says {st}", remedy=f"fix {cid} like this")
        for cid, st in base.items()
    ]
    return Report(host={}, findings=findings, recommendation=Recommendation(Mode.USER, "test"))


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


def kinds(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.kind for a in plan.actions]


def test_sandbox_plan_order_targets_and_nothing_written(layout: Layout) -> None:
    before = snapshot(layout.root)
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    assert snapshot(layout.root) == before
    assert kinds(plan) == [
        "create-group",
        "create-user",
        "workspace-access",
        "write-file",
        "git-protected",
        "git-include",
        "write-file",
        "write-file",
        "write-file",
    ]
    targets = [a.target for a in plan.actions]
    assert targets[0] == "sandbox-ws-claude-agent"  # the setup's own group
    assert targets[3:] == [
        "/etc/claude-code/managed-settings.json",
        "/etc/sandbox-setup/git-protected.gitconfig",
        "/root/.gitconfig",
        "/root/.config/sandbox-setup/launcher.toml",
        "/root/.local/state/sandbox-setup/setups.json",
        "/root/.config/sandbox-setup/answers.toml",
    ]
    assert all(a.is_change() for a in plan.actions)
    useradd = plan.actions[1].commands()[0]
    assert useradd[:3] == ["useradd", "--prefix", str(layout.root)]
    assert "HOME_MODE=0700" in useradd and "--user-group" in useradd
    assert "-p" not in useradd and "--password" not in useradd
    cfg = plan.launcher_config
    assert (cfg.mode, cfg.agent_user, cfg.agent_home) == (
        Mode.SANDBOX,
        "claude-agent",
        PurePosixPath("/home/claude-agent"),
    )
    assert cfg.claude == PurePosixPath("/usr/local/bin/claude")
    assert cfg.claude_version == CLAUDE_VERSION
    assert cfg.inner_sandbox == "strong"


def test_sandbox_mode_refused_when_bwrap_sandbox_failed(layout: Layout) -> None:
    with pytest.raises(RefusedError) as err:
        build_plan(
            report(bwrap_sandbox="fail"),
            Answers(Mode.SANDBOX, workspaces=WS),
            layout,
            facts=plan_facts(),
        )
    text = str(err.value)
    assert "bwrap.sandbox is fail" in text and "fix bwrap.sandbox like this" in text
    assert "--mode user" in text


@pytest.mark.parametrize(
    ("nested", "weak", "expected"),
    [("pass", "pass", "strong"), ("fail", "pass", "weak"), ("fail", "fail", "off")],
)
def test_inner_sandbox_comes_from_the_nested_probes(
    layout: Layout, nested: str, weak: str, expected: str
) -> None:
    plan = build_plan(
        report(bwrap_nested=nested, bwrap_nested_weak=weak),
        Answers(Mode.SANDBOX, workspaces=WS),
        layout,
        facts=plan_facts(),
    )
    assert plan.answers.inner_sandbox == expected
    settings = plan.actions[3].desired()
    assert (b'"enableWeakerNestedSandbox": true' in settings) is (expected == "weak")
    assert (b'"enabled": false' in settings) is (expected == "off")


def test_an_unverified_inner_strength_is_refused(layout: Layout) -> None:
    answers = Answers(Mode.SANDBOX, workspaces=WS, inner_sandbox="strong")
    with pytest.raises(RefusedError, match="inner sandbox 'strong' was not verified"):
        build_plan(report(bwrap_nested="fail"), answers, layout, facts=plan_facts())


@pytest.mark.parametrize(
    ("mode", "extra", "scope", "settings"),
    [
        (Mode.SANDBOX, {"workspaces": WS}, "managed", "/etc/claude-code/managed-settings.json"),
        (Mode.USER, {}, "managed", "/etc/claude-code/managed-settings.json"),
        (Mode.UNSAFE, {"accept_unsafe_root": True}, "user", "/root/.claude/settings.json"),
    ],
)
def test_settings_scope_defaults(layout: Layout, mode, extra, scope, settings) -> None:  # type: ignore[no-untyped-def]
    plan = build_plan(report(), Answers(mode, **extra), layout, facts=plan_facts())
    assert plan.answers.settings_scope == scope
    assert settings in [a.target for a in plan.actions]


def test_user_scope_in_user_mode_targets_the_agent_home(layout: Layout) -> None:
    plan = build_plan(
        report(), Answers(Mode.USER, settings_scope="user"), layout, facts=plan_facts()
    )
    write = next(a for a in plan.actions if "settings" in a.target)
    assert write.target == "/home/claude-agent/.claude/settings.json"
    assert write.owner == "claude-agent"


def test_unsafe_needs_acceptance_and_records_it(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUDO_USER", raising=False)
    with pytest.raises(RefusedError, match="accept-unsafe-root"):
        build_plan(report(), Answers(Mode.UNSAFE), layout, facts=plan_facts())
    plan = build_plan(
        report(), Answers(Mode.UNSAFE, accept_unsafe_root=True), layout, facts=plan_facts()
    )
    assert kinds(plan) == ["write-file"] * 3  # no user, no group, no ACLs
    unsafe = plan.launcher_config.unsafe
    assert unsafe is not None and unsafe.accepted_by == "root (uid 0)"
    assert plan.answers.accepted_at == unsafe.accepted_at
    assert plan.launcher_config.agent_user == "root"
    launcher = tomllib.loads(plan.actions[1].desired().decode())
    assert launcher["unsafe"]["accepted_at"] == unsafe.accepted_at


def test_the_acceptance_names_the_person_behind_sudo(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUDO_USER", "alice")
    plan = build_plan(
        report(), Answers(Mode.UNSAFE, accept_unsafe_root=True), layout, facts=plan_facts()
    )
    unsafe = plan.launcher_config.unsafe
    assert unsafe is not None and unsafe.accepted_by == "root (uid 0, via sudo by alice)"


def test_an_earlier_acceptance_is_kept(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_USER", raising=False)
    cfg = layout.real(layout.launcher_config)
    cfg.parent.mkdir(parents=True)
    cfg.write_text(
        'schema = 1\nmode = "unsafe"\nclaude = "/usr/local/bin/claude"\n'
        '[agent]\nuser = "root"\nhome = "/root"\n'
        '[unsafe]\naccepted_by = "root (uid 0)"\naccepted_at = "2020-01-01T00:00:00+00:00"\n'
        'statement = "x"\n'
    )
    plan = build_plan(
        report(), Answers(Mode.UNSAFE, accept_unsafe_root=True), layout, facts=plan_facts()
    )
    assert plan.answers.accepted_at == "2020-01-01T00:00:00+00:00"


def test_private_claude_gets_a_root_owned_copy(layout: Layout) -> None:
    link = private_claude(layout.root)
    answers = Answers(Mode.USER, claude=PurePosixPath("/root/.local/bin/claude"))
    facts = plan_facts(claude=claude_facts(layout, answers.claude))
    plan = build_plan(report(), answers, layout, facts=facts)
    install = next(a for a in plan.actions if a.kind == "install-claude")
    assert install.target == str(INSTALLED_CLAUDE)
    assert install.desired() == link.read_bytes()
    assert install.mode == 0o755 and install.owner == "root"
    assert "binary content differs" in install.diff()
    assert plan.launcher_config.claude == INSTALLED_CLAUDE
    assert plan.launcher_config.claude_version == CLAUDE_VERSION
    # The answers keep the source, so a replay copies it again.
    assert plan.answers.claude == PurePosixPath("/root/.local/bin/claude")


def test_world_readable_claude_is_used_in_place(layout: Layout) -> None:
    facts = plan_facts(claude=claude_facts(layout))
    plan = build_plan(report(), Answers(Mode.USER), layout, facts=facts)
    assert "install-claude" not in kinds(plan)


def test_invalid_settings_json_is_an_input_error_and_nothing_changes(layout: Layout) -> None:
    managed = layout.real(layout.managed_settings)
    managed.parent.mkdir(parents=True)
    managed.write_text('{\n  "model": "opus",\n  oops\n}\n')
    before = snapshot(layout.root)
    with pytest.raises(InputError) as err:
        build_plan(report(), Answers(Mode.USER), layout, facts=plan_facts())
    assert "/etc/claude-code/managed-settings.json" in str(err.value)
    assert "line 3, column 3" in str(err.value)
    assert snapshot(layout.root) == before


def test_settings_symlink_is_refused(layout: Layout) -> None:
    managed = layout.real(layout.managed_settings)
    managed.parent.mkdir(parents=True)
    managed.symlink_to("/etc/shadow")
    with pytest.raises(InputError, match="is a symlink"):
        build_plan(report(), Answers(Mode.USER), layout, facts=plan_facts())


def test_untrusted_directory_symlink_on_the_path_is_refused(layout: Layout) -> None:
    home = layout.real(PurePosixPath("/home/mallory"))
    home.mkdir()
    (home / ".claude").symlink_to(layout.real(PurePosixPath("/etc")))
    os.lchown(home / ".claude", 4242, 4242)
    with open(layout.real(PurePosixPath("/etc/passwd")), "a") as passwd:
        passwd.write("mallory:x:4242:4242::/home/mallory:/bin/sh\n")
    answers = Answers(Mode.USER, agent_user="mallory", settings_scope="user", reuse_account=True)
    with pytest.raises(InputError, match="symlink owned by uid 4242"):
        build_plan(report(), answers, layout, facts=plan_facts())


def test_copy_login_without_a_login_is_an_input_error(layout: Layout) -> None:
    with pytest.raises(InputError, match="no Claude login to copy"):
        build_plan(report(), Answers(Mode.USER, copy_login=True), layout, facts=plan_facts())


def test_copy_login_secrets_are_never_shown(layout: Layout) -> None:
    creds = layout.real(PurePosixPath("/root/.claude/.credentials.json"))
    creds.parent.mkdir(parents=True)
    creds.write_text('{"token": "sk-very-secret"}')
    plan = build_plan(report(), Answers(Mode.USER, copy_login=True), layout, facts=plan_facts())
    copy = next(a for a in plan.actions if a.kind == "copy-login")
    assert copy.target == "/home/claude-agent/.claude/.credentials.json"
    assert copy.mode == 0o600 and copy.owner == "claude-agent"
    assert "sk-very-secret" not in copy.diff() and "secret content" in copy.diff()
    # What the session's API gateway cannot keep outside is said where it is chosen.
    assert COPY_LOGIN_NOTE in plan.notes
    assert (
        COPY_LOGIN_NOTE
        not in build_plan(report(), Answers(Mode.USER), layout, facts=plan_facts()).notes
    )


def test_answers_record_resolved_choices(layout: Layout) -> None:
    plan = build_plan(
        report(bwrap_nested="fail"),
        Answers(Mode.SANDBOX, workspaces=WS),
        layout,
        facts=plan_facts(),
    )
    recorded = parse_answers(plan.actions[-1].desired().decode())
    assert recorded == plan.answers
    assert (recorded.settings_scope, recorded.inner_sandbox) == ("managed", "weak")
    assert recorded.claude == PurePosixPath("/usr/local/bin/claude")


def test_non_root_operator_cannot_create_users(layout: Layout) -> None:
    from dataclasses import replace

    from sandbox_setup.base.accounts import Account

    alice = Account("alice", 1500, 1500, Path("/home/alice"), "/bin/sh")
    as_alice = replace(layout, operator=alice)
    with pytest.raises(RefusedError, match="creating users needs root"):
        build_plan(
            report(), Answers(Mode.USER, settings_scope="user"), as_alice, facts=plan_facts()
        )
    with pytest.raises(InputError, match=r"managed.*needs root"):
        build_plan(
            report(),
            Answers(Mode.USER, agent_user="alice", settings_scope="managed"),
            as_alice,
            facts=plan_facts(),
        )
    # The operator's own account can be the agent: nothing to create, user-scope settings.
    plan = build_plan(
        report(), Answers(Mode.USER, agent_user="alice"), as_alice, facts=plan_facts()
    )
    assert kinds(plan) == ["write-file"] * 3
    assert plan.actions[0].target == "/home/alice/.claude/settings.json"


def test_a_workspace_inside_a_private_home_is_refused(layout: Layout) -> None:
    project = layout.real(PurePosixPath("/root/project"))
    project.mkdir()
    answers = Answers(Mode.SANDBOX, workspaces=(PurePosixPath("/root/project"),))
    with pytest.raises(InputError, match=r"cannot enter /root \(mode 0700\)"):
        build_plan(report(), answers, layout, facts=plan_facts())
    # The operator's own account (unsafe mode) needs no such access.
    build_plan(
        report(),
        Answers(Mode.UNSAFE, accept_unsafe_root=True, workspaces=answers.workspaces),
        layout,
        facts=plan_facts(),
    )


def test_a_version_that_cannot_be_read_now_keeps_the_recorded_one(layout: Layout) -> None:
    cfg = layout.real(layout.launcher_config)
    cfg.parent.mkdir(parents=True)
    cfg.write_text(
        'schema = 1\nmode = "user"\nclaude = "/usr/local/bin/claude"\nclaude_version = "9.9.9"\n'
    )
    broken = layout.real(PurePosixPath("/usr/local/bin/claude"))
    broken.write_text("#!/bin/sh\nexit 1\n")
    unread = plan_facts(claude=claude_facts(layout))
    plan = build_plan(report(), Answers(Mode.USER), layout, facts=unread)
    assert plan.launcher_config.claude_version == "9.9.9"
    cfg.write_text(
        'schema = 1\nmode = "user"\nclaude = "/other/claude"\nclaude_version = "9.9.9"\n'
    )
    assert (
        build_plan(
            report(), Answers(Mode.USER), layout, facts=unread
        ).launcher_config.claude_version
        is None
    )


def found(layout: Layout, answers: Answers) -> HostFacts:
    """Facts with the Claude Code the edge finds now for ``answers`` in ``layout``."""
    return plan_facts(claude=claude_facts(layout, answers.claude))


def test_a_binary_others_can_change_is_never_run_as_root(layout: Layout, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    agent_bin = layout.real(PurePosixPath("/home/agent/bin"))
    agent_bin.mkdir(parents=True)
    claude = agent_bin / "claude"
    claude.write_text(f"#!/bin/sh\ntouch {marker}\necho 1.0.0\n")
    claude.chmod(0o755)
    os.chown(claude, 4242, 4242)
    answers = Answers(Mode.USER, claude=PurePosixPath("/home/agent/bin/claude"))
    # Refused in every mode: the launcher would refuse it anyway (owner must be root).
    for mode in (Mode.USER, Mode.SANDBOX):
        with pytest.raises(RefusedError, match="can be changed by a user other than root"):
            build_plan(
                report(),
                Answers(mode, workspaces=WS, claude=answers.claude),
                layout,
                facts=plan_facts(claude=claude_facts(layout, answers.claude)),
            )
    assert not marker.exists(), "root executed a binary another user owns"
    unsafe = Answers(Mode.UNSAFE, accept_unsafe_root=True, claude=answers.claude)
    with pytest.raises(RefusedError, match="can be changed by a user other than root"):
        build_plan(report(), unsafe, layout, facts=found(layout, unsafe))
    os.chown(claude, 0, 0)
    claude.chmod(0o757)  # world-writable: same verdict
    with pytest.raises(RefusedError):
        build_plan(report(), unsafe, layout, facts=found(layout, unsafe))
    claude.chmod(0o755)
    assert (
        build_plan(
            report(), unsafe, layout, facts=found(layout, unsafe)
        ).launcher_config.claude_version
        == "1.0.0"
    )
    assert marker.exists()


def _existing_agent(layout: Layout, *, password: str = "!", groups: str = "") -> None:
    """An account ``bob`` (uid 1500) in the target tree, optionally in ``groups``."""
    etc = layout.real(PurePosixPath("/etc"))
    with open(etc / "passwd", "a") as f:
        f.write("bob:x:1500:1500::/home/bob:/bin/bash\n")
    with open(etc / "group", "a") as f:
        f.write("bob:x:1500:\nsudo:x:27:" + groups + "\n")
    with open(etc / "shadow", "a") as f:
        f.write(f"bob:{password}:20000:0:99999:7:::\n")


@pytest.mark.parametrize(
    ("password", "groups", "sudoers", "expected"),
    [
        ("$6$salt$hash", "", None, "usable password"),
        ("", "", None, "EMPTY password"),
        ("!", "bob", None, "in group sudo"),
        ("!", "", "bob ALL=(ALL) NOPASSWD: ALL\n", "NOPASSWD"),
    ],
    ids=["password", "empty-password", "sudo-group", "sudoers"],
)
def test_an_existing_agent_that_can_become_root_is_refused(
    layout: Layout, password: str, groups: str, sudoers: str | None, expected: str
) -> None:
    _existing_agent(layout, password=password, groups=groups)
    if sudoers is not None:
        d = layout.real(PurePosixPath("/etc/sudoers.d"))
        d.mkdir()
        (d / "bob").write_text(sudoers)
    before = snapshot(layout.root)
    answers = Answers(Mode.USER, workspaces=WS, agent_user="bob")
    with pytest.raises(RefusedError, match=expected):
        build_plan(report(), answers, layout, facts=plan_facts())
    assert snapshot(layout.root) == before


def test_a_locked_existing_agent_is_accepted_only_when_reused_and_uid_0_is_refused(
    layout: Layout,
) -> None:
    _existing_agent(layout)
    before = snapshot(layout.root)
    with pytest.raises(RefusedError, match=r"\[existing account\] bob already exists"):
        build_plan(
            report(),
            Answers(Mode.USER, workspaces=WS, agent_user="bob"),
            layout,
            facts=plan_facts(),
        )
    assert snapshot(layout.root) == before
    answers = Answers(Mode.USER, workspaces=WS, agent_user="bob", reuse_account=True)
    plan = build_plan(report(), answers, layout, facts=plan_facts())
    assert plan.launcher_config.agent_user == "bob"
    user = next(a for a in plan.actions if a.kind == "create-user")
    assert not user.is_change()
    assert user.describe() == ("user bob already exists (reused: --reuse-account); it is the agent")
    passwd = layout.real(PurePosixPath("/etc/passwd"))
    passwd.write_text(passwd.read_text() + "toor:x:0:0::/root:/bin/sh\n")
    with pytest.raises(RefusedError, match="uid 0"):
        build_plan(
            report(),
            Answers(Mode.USER, workspaces=WS, agent_user="toor"),
            layout,
            facts=plan_facts(),
        )
