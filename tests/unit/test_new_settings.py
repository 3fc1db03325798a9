"""The settings this round adds, end to end through their one format each:
--network allowlist and its patterns and ports, --pass-env, the limits, the
account and workspace choices, and the command line's input checks."""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.base.limits import Limits, parse_size, size_bytes
from sandbox_setup.base.paths import Layout
from sandbox_setup.cli import main
from sandbox_setup.configure.answers import Answers, dump_answers, parse_answers, validate_answers
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.configure.plan import build_plan
from sandbox_setup.policy.environment import DEFAULT_PASS, pass_name_problem
from tests.core_fixtures import make_target_root
from tests.host_facts import plan_facts
from tests.unit.test_plan import report

WS = (PurePosixPath("/srv/project"),)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


def test_new_answers_keys_round_trip() -> None:
    answers = Answers(
        Mode.SANDBOX,
        workspaces=WS,
        network=Network.ALLOWLIST,
        allowed_domains=("example.com", "*.example.org:8443"),
        loopback_ports=(8080, 5432),
        pass_env=("MY_TOKEN",),
        reuse_account=True,
        include_private=True,
        install_claude_shim=True,
        limits=Limits(tasks=256, memory="2G", tmpfs="64M"),
    )
    text = dump_answers(answers)
    assert parse_answers(text) == answers
    assert "[limits]" in text and 'memory = "2G"' in text


def test_launcher_config_carries_network_env_and_limits() -> None:
    config = LauncherConfig(
        Mode.SANDBOX,
        PurePosixPath("/usr/bin/claude"),
        "agent",
        PurePosixPath("/home/agent"),
        WS,
        network=Network.ALLOWLIST,
        allowed_domains=("example.com",),
        loopback_ports=(8080,),
        env_pass=("ANTHROPIC_API_KEY",),
        limits=Limits(tasks=100),
    )
    text = render_launcher_config(config)
    assert parse_launcher_config(text) == config
    data = tomllib.loads(text)
    assert data["env"]["pass"] == ["ANTHROPIC_API_KEY"] and data["limits"]["tasks"] == 100
    # A config of the previous version (no env, no limits) is read with the defaults.
    old = text.split("[env]")[0]
    assert (
        parse_launcher_config(old).limits == Limits() and parse_launcher_config(old).env_pass == ()
    )


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (dict(allowed_domains=("https://example.com",)), "https://example.com"),
        (dict(allowed_domains=("ex*.com",)), "ex*.com"),
        (dict(allowed_domains=("*",)), "'*'"),
        (dict(loopback_ports=(0,)), "loopback port 0"),
        (dict(loopback_ports=(70000,)), "loopback port 70000"),
        (dict(loopback_ports=(3128,)), "egress proxy"),
        (dict(network=Network.HOST, allowed_domains=("example.com",)), "needs network"),
        (dict(pass_env=("IS_SANDBOX",)), "sandbox claim"),
        (dict(pass_env=("LD_PRELOAD",)), "never passed"),
        (dict(pass_env=("HTTPS_PROXY",)), "egress proxy"),
        (dict(pass_env=("not a name",)), "not an environment variable name"),
    ],
)
def test_bad_network_and_env_values_are_input_errors(
    layout: Layout, answers: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError, match=message.replace("*", r"\*")):
        validate_answers(Answers(Mode.SANDBOX, workspaces=WS, **answers), layout)  # type: ignore[arg-type]


def test_only_sandbox_mode_has_a_network_of_its_own(layout: Layout) -> None:
    with pytest.raises(InputError, match="needs sandbox mode"):
        validate_answers(Answers(Mode.USER, workspaces=WS, network=Network.ALLOWLIST), layout)
    validate_answers(Answers(Mode.USER, workspaces=WS, network=Network.HOST), layout)


def test_the_plan_defaults_sandbox_mode_to_the_allowlist(layout: Layout) -> None:
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    assert plan.launcher_config.network is Network.ALLOWLIST
    assert plan.answers.network is Network.ALLOWLIST  # recorded, so a replay is identical
    assert plan.launcher_config.env_pass == DEFAULT_PASS
    assert plan.launcher_config.limits == Limits()
    user = build_plan(
        report(), Answers(Mode.USER, workspaces=WS, pass_env=("X_1",)), layout, facts=plan_facts()
    )
    assert user.launcher_config.network is Network.HOST
    assert user.launcher_config.env_pass == (*DEFAULT_PASS, "X_1")


def test_claims_of_a_sandbox_pass_only_outside_sandbox_mode() -> None:
    assert pass_name_problem("IS_SANDBOX", Mode.SANDBOX) is not None
    assert pass_name_problem("IS_SANDBOX", Mode.USER) is None
    assert pass_name_problem("ANTHROPIC_API_KEY", Mode.SANDBOX) is None


@pytest.mark.parametrize(
    ("text", "percent", "ok"),
    [("512M", False, True), ("4g", False, True), ("50%", True, True), ("50%", False, False),
     ("0", False, False), ("101%", True, False), ("1.5G", False, False), ("", False, False)],
)  # fmt: skip
def test_sizes(text: str, percent: bool, ok: bool) -> None:
    if ok:
        assert size_bytes(parse_size(text, "x", percent=percent), 1000) > 0
    else:
        with pytest.raises(InputError, match="x"):
            parse_size(text, "x", percent=percent)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--headless", "--mode", "sandbox", "--root", ""], "--root '': empty"),
        (["--check", "--timeout", "nan"], "finite number"),
        (["--check", "--timeout", "inf"], "finite number"),
        (["--check", "--timeout", "0"], "above 0"),
        (["--headless", "--mod", "sandbox"], "unrecognized arguments: --mod"),
        (["--headless", "--mode", "user", "--accept-unsafe-root", "--root", "/"], "only applies"),
        (["--headless", "--mode", "sandbox", "--allow-loopback-port", "abc"], "'abc'"),
        (["--headless", "--mode", "sandbox", "--network", "open"], "invalid choice: 'open'"),
    ],
)
def test_bad_command_lines_exit_2_naming_the_value(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("sandbox-setup ")
