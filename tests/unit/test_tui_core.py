"""What the wizard's core tells the screens (issue 17): no CLI flags in its messages,
one answer to "where is Claude Code" for the checks, the details and the plan
(under ``--root`` too, saying where it looked), and plan steps that say what already
exists instead of "create ... unchanged"."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import wizard.commands.interactive as interactive
from checks.model import Finding, Status
from tests.core_fixtures import make_target_root
from tests.tui.fake_findings import SANDBOX_HOST, FakeProvider, fake_report
from wizard.base.choices import Mode
from wizard.base.errors import SetupError
from wizard.base.paths import Layout
from wizard.cli import build_parser
from wizard.commands.interactive import InteractiveCore
from wizard.commands.wording import FIELD_WORDS, names_a_flag, tui_words
from wizard.configure.actions import CreateGroup, CreateUser, WriteFile
from wizard.configure.answers import Answers

# Options that are actions of their own, not settings a screen could have a field for.
ACTIONS = {"--help", "--version", "--check", "--audit", "--headless", "--undo", "--list-checks",
           "--json"}  # fmt: skip


def test_every_option_has_the_wizards_words() -> None:
    options = {
        option
        for action in build_parser()._actions
        for option in action.option_strings
        if option.startswith("--")
    }
    missing = options - ACTIONS - set(FIELD_WORDS)
    assert not missing, f"add these to wording.FIELD_WORDS: {sorted(missing)}"


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (
            "Claude Code not found (looked for 'claude' in /usr/bin); install it or pass "
            "--claude PATH",
            "enter its path in the Claude Code field",
        ),
        ("copy_login: no Claude login to copy (...); log in first or drop --copy-login",
         "untick 'Copy my Claude login'"),
        ("the existing account bob cannot be the agent user: ...; or pick a new --agent-user "
         "(sandbox-setup creates it locked)", "pick a new agent user name"),
        ("sandbox mode needs ... Or choose --mode user (a dedicated non-root user).",
         "choose the dedicated user path"),
        ("inner sandbox 'strong' was not verified. Choose --inner-sandbox off (what ...)",
         "choose the inner sandbox 'off'"),
        ("answers: --allow-domain needs network \"allowlist\" (network is 'host': ...)",
         "allowed domains need"),
        ("agent user bob does not exist and creating users needs root; run as root or pass "
         "--agent-user alice (your own account)", "enter alice as the agent user"),
        ("install Claude Code where only root can write and pass that path as --claude",
         "enter that path in the Claude Code field"),
    ],
)  # fmt: skip
def test_core_messages_come_in_the_wizards_words(message: str, words: str) -> None:
    shown = tui_words(message)
    assert words in shown, shown
    assert names_a_flag(shown) == [], shown


def test_commands_to_paste_and_other_programs_flags_are_kept() -> None:
    remedy = "fix: sandbox-setup --headless --answers /r/answers.toml --yes --root /r"
    assert tui_words(remedy) == remedy
    docker = "docker run --security-opt systempaths=unconfined ..."
    assert tui_words(docker) == docker
    assert names_a_flag(tui_words("usermod --prefix /r --lock bob")) == []


def _core(root: Path, findings: list[Finding] = SANDBOX_HOST) -> InteractiveCore:
    return InteractiveCore.for_root(root, FakeProvider(findings))


def test_without_claude_under_the_root_the_checks_and_the_review_say_the_same(
    tmp_path: Path,
) -> None:
    root = make_target_root(tmp_path / "root")
    (root / "usr/local/bin/claude").unlink()
    # The probes found a Claude Code on the live system (the bug: the review then
    # said "not found"); the wizard's lookup is the plan's, under the root.
    live = Finding(
        "claude.installed", "Claude Code", Status.PASS, "Claude Code 2.1 at /usr/bin/claude"
    )
    core = _core(root, [*SANDBOX_HOST[:-2], live])
    seen: list[Finding] = []
    report = core.run_checks(seen.append)
    shown = report.get("claude.installed")
    assert shown is not None and shown.status is Status.WARN
    assert seen[-1] == shown  # the live row says the same as the report
    assert f"under the root {core.layout.root}" in shown.summary
    assert "enter its path in the Claude Code field" in shown.remedy
    with pytest.raises(SetupError) as refused:
        core.build_plan(fake_report(SANDBOX_HOST), Answers(Mode.USER))
    message = str(refused.value)
    looked = shown.summary.removeprefix("Claude Code not found (").removesuffix(")")
    assert looked in message, (looked, message)
    assert names_a_flag(message) == [] and "--claude" not in message
    found, where = core.claude_lookup()
    assert found is None and where == looked


def test_with_claude_under_the_root_every_screen_names_that_binary(tmp_path: Path) -> None:
    from screens.flow import claude_hint

    root = make_target_root(tmp_path / "root")
    core = _core(root)
    found, _ = core.claude_lookup()
    assert found == PurePosixPath("/usr/local/bin/claude")
    shown = core.run_checks(lambda f: None).get("claude.installed")
    assert shown is not None and shown.summary.endswith(f"(under the root {core.layout.root})")
    assert claude_hint(core).startswith("empty: /usr/local/bin/claude under the root")


def test_the_live_probes_run_the_binary_the_plan_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_target_root(tmp_path / "root")
    asked: dict[str, Any] = {}

    def fake_live(**kwargs: Any) -> Any:
        asked.update(kwargs)
        return fake_report(SANDBOX_HOST)

    monkeypatch.setattr(interactive, "run_live_checks", fake_live)
    core = InteractiveCore.for_root(root)
    core.run_checks(lambda f: None)
    assert asked["claude"] == str(core.layout.real(PurePosixPath("/usr/local/bin/claude")))


def _layout(tmp_path: Path) -> Layout:
    root = make_target_root(tmp_path / "root")
    with (root / "etc/passwd").open("a") as passwd:
        passwd.write("claude-agent:x:1001:1001::/home/claude-agent:/bin/bash\n")
    with (root / "etc/group").open("a") as group:
        group.write("sandbox-ws:x:1002:claude-agent\n")
    return Layout.for_root(root)


def test_existing_accounts_read_already_exists(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    assert CreateGroup(layout, "sandbox-ws").describe() == (
        "group sandbox-ws already exists (workspace access; members: claude-agent)"
    )
    home = PurePosixPath("/home/claude-agent")
    assert CreateUser(layout, "claude-agent", home).describe() == (
        "user claude-agent already exists (created by sandbox-setup); it is the agent"
    )
    new = CreateUser(layout, "other-agent", PurePosixPath("/home/other-agent"))
    assert new.describe().startswith("create user other-agent")
    for action in (CreateGroup(layout, "sandbox-ws"), CreateUser(layout, "claude-agent", home)):
        assert "unchanged" not in action.describe()
        assert not action.describe().startswith("create")


def test_a_file_as_planned_already_exists_and_a_description_stays_as_shown(
    tmp_path: Path,
) -> None:
    layout = _layout(tmp_path)
    target = PurePosixPath("/etc/example.conf")
    real = layout.real(target)
    write = WriteFile(layout, target, lambda current: b"x\n", owner="root", label="example")
    assert write.describe().startswith("create example /etc/example.conf")
    real.write_bytes(b"x\n")  # as if applied: the plan as shown still says "create"
    real.chmod(0o644)
    assert write.describe().startswith("create example")
    again = WriteFile(layout, target, lambda current: b"x\n", owner="root", label="example")
    assert again.describe() == "example /etc/example.conf already exists as planned"
