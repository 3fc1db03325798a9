"""User mode's allowed domains and loopback ports (issue 29's Landlock network wall):
accepted by the command line, the answers file and the TUI, written to launcher.toml,
said by the plan; unsafe mode keeps refusing them; a re-apply keeps them."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.launcher_config import parse_launcher_config
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.cli import build_parser, main
from sandbox_setup.commands.apply import _changed
from sandbox_setup.configure.answers import (
    Answers,
    dump_answers,
    parse_answers,
    validate_answers,
)
from sandbox_setup.configure.plan import build_plan
from sandbox_setup.tui.details import fields_for
from sandbox_setup.tui.draft import Draft
from tests.core_fixtures import make_target_root
from tests.host_facts import plan_facts
from tests.unit.test_plan import report

WS = (PurePosixPath("/srv/project"),)
LISTS = {"allowed_domains": ("pypi.org", "*.github.com"), "loopback_ports": (4000, 3128)}


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


def test_user_mode_takes_allowed_domains_and_loopback_ports(layout: Layout) -> None:
    # 3128 is the sandbox's proxy port inside its namespace; user mode's proxy has an
    # ephemeral port, so a host service on 3128 may be allowed there.
    validate_answers(Answers(Mode.USER, workspaces=WS, **LISTS), layout)  # type: ignore[arg-type]
    validate_answers(
        Answers(Mode.USER, workspaces=WS, network=Network.HOST, **LISTS),  # type: ignore[arg-type]
        layout,
    )


@pytest.mark.parametrize("key", ["allowed_domains", "loopback_ports"])
def test_unsafe_mode_keeps_refusing_them(layout: Layout, key: str) -> None:
    answers = Answers(Mode.UNSAFE, accept_unsafe_root=True, **{key: LISTS[key][:1]})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="needs sandbox or user mode") as caught:
        validate_answers(answers, layout)
    assert "nothing filters it" in str(caught.value)


def test_the_messages_stop_saying_everything_is_reachable_in_user_mode(layout: Layout) -> None:
    with pytest.raises(InputError) as caught:
        validate_answers(Answers(Mode.USER, workspaces=WS, network=Network.ALLOWLIST), layout)
    message = str(caught.value)
    assert "needs sandbox mode" in message and "Landlock ABI >= 4" in message
    assert "everything is reachable" not in message
    # Sandbox mode with the host's network: there it is true, and still said.
    sandbox = Answers(Mode.SANDBOX, workspaces=WS, network=Network.HOST, allowed_domains=("a.b",))
    with pytest.raises(InputError, match="everything is reachable"):
        validate_answers(sandbox, layout)
    with pytest.raises(InputError, match="egress proxy inside the sandbox"):
        validate_answers(Answers(Mode.SANDBOX, workspaces=WS, loopback_ports=(3128,)), layout)


def test_a_bad_pattern_or_port_is_still_refused_in_user_mode(layout: Layout) -> None:
    with pytest.raises(InputError, match="allowed_domains"):
        validate_answers(Answers(Mode.USER, workspaces=WS, allowed_domains=("*",)), layout)
    with pytest.raises(InputError, match="loopback_ports"):
        validate_answers(Answers(Mode.USER, workspaces=WS, loopback_ports=(0,)), layout)


def test_the_answers_file_round_trips_them(layout: Layout) -> None:
    answers = Answers(Mode.USER, workspaces=WS, **LISTS)  # type: ignore[arg-type]
    again = parse_answers(dump_answers(answers))
    assert again == answers
    validate_answers(again, layout)


def landlock(abi: int) -> Finding:
    return Finding("landlock.abi", "t", Status.PASS, f"Landlock ABI {abi}: ...", facts={"abi": abi})


def user_wall(netns: bool) -> Finding:
    return Finding("net.user_wall", "t", Status.PASS, "", facts={"netns": netns})


def test_the_plan_writes_them_and_says_where_they_apply(layout: Layout) -> None:
    seven = report()
    seven.findings.append(landlock(7))
    answers = Answers(Mode.USER, workspaces=WS, **LISTS)  # type: ignore[arg-type]
    plan = build_plan(seven, answers, layout, facts=plan_facts())
    assert plan.launcher_config.allowed_domains == LISTS["allowed_domains"]
    assert plan.launcher_config.loopback_ports == LISTS["loopback_ports"]
    written = next(a for a in plan.actions if a.describe().startswith("create launcher config"))
    config = parse_launcher_config(written.desired().decode())  # type: ignore[attr-defined]
    assert config.mode is Mode.USER and config.network is Network.HOST
    assert config.allowed_domains == LISTS["allowed_domains"]
    assert config.loopback_ports == LISTS["loopback_ports"]
    lines = "\n".join(plan.network)
    assert "(--allow-domain), through the session's proxy: pypi.org, *.github.com" in lines
    assert "(--allow-loopback-port): 4000, 3128" in lines
    assert "change nothing" not in lines  # Landlock ABI 7's ports take them
    three = report()
    three.findings.append(landlock(3))
    lines = "\n".join(build_plan(three, answers, layout, facts=plan_facts()).network)
    assert "they apply where the session gets a network namespace of its own" in lines
    assert "[user] landlock = false" in lines
    three.findings.append(user_wall(False))
    lines = "\n".join(build_plan(three, answers, layout, facts=plan_facts()).network)
    assert "they change nothing on this host" in lines
    three.findings[-1] = user_wall(True)  # the namespace takes them below ABI 4 too
    assert "change nothing" not in "\n".join(
        build_plan(three, answers, layout, facts=plan_facts()).network
    )


def test_a_private_allowance_is_warned_about_in_user_mode_too(layout: Layout) -> None:
    answers = Answers(Mode.USER, workspaces=WS, allowed_domains=("10.0.0.5:5432",))
    warnings = build_plan(report(), answers, layout, facts=plan_facts()).warnings
    assert any("10.0.0.5" in w for w in warnings), warnings


def test_the_command_line_takes_them_in_user_mode(
    layout: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--headless", "--mode", "user", "--workspace", "/srv/project", "--root",
            str(layout.root), "--allow-domain", "pypi.org", "--allow-loopback-port", "4000",
            "--dry-run"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "allowed by you (--allow-domain), through the session's proxy: pypi.org" in out
    assert main([*argv, "--network", "allowlist"]) == 2
    assert "everything is reachable" not in capsys.readouterr().err


def test_a_reapply_keeps_what_the_user_had(layout: Layout) -> None:
    saved = Answers(Mode.USER, workspaces=WS, **LISTS)  # type: ignore[arg-type]
    args = build_parser().parse_args(
        ["--headless", "--allow-domain", "example.org", "--no-allow-loopback-port", "3128"]
    )
    changed = _changed(saved, args, layout)
    assert changed.allowed_domains == (*LISTS["allowed_domains"], "example.org")
    assert changed.loopback_ports == (4000,)
    validate_answers(changed, layout)


def test_the_tui_shows_and_keeps_them_in_user_mode() -> None:
    assert {"domains", "ports"} <= fields_for(Mode.USER)
    assert "network" not in fields_for(Mode.USER)
    draft = Draft(mode=Mode.USER, details=Answers(Mode.USER, network=Network.HOST, **LISTS))  # type: ignore[arg-type]
    answers = draft.answers()
    assert answers.allowed_domains == LISTS["allowed_domains"]
    assert answers.loopback_ports == LISTS["loopback_ports"]
    assert answers.network is None


def test_the_plan_reads_landlock_off_from_the_kept_user_table(layout: Layout) -> None:
    seven = report()
    seven.findings.append(landlock(7))
    config = layout.real(layout.launcher_config)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('schema = 1\nmode = "user"\n\n[user]\nlandlock = false\n')
    answers = Answers(Mode.USER, workspaces=WS, allowed_domains=("pypi.org",))
    lines = "\n".join(build_plan(seven, answers, layout, facts=plan_facts()).network)
    assert "Landlock: off ([user] landlock = false" in lines
    assert "Landlock ABI 7" not in lines
    assert "they apply where the session gets a network namespace of its own" in lines
    # Landlock off turns off Landlock only: with a namespace the lists still apply.
    seven.findings.append(user_wall(True))
    lines = "\n".join(build_plan(seven, answers, layout, facts=plan_facts()).network)
    assert "a network namespace of its own" in lines and "change nothing" not in lines
    seven.findings[-1] = user_wall(False)
    lines = "\n".join(build_plan(seven, answers, layout, facts=plan_facts()).network)
    assert "they change nothing on this host" in lines
