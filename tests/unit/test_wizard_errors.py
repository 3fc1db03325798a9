"""The errors the wizard shows are typed: an option a message names is a value, worded
by the face that shows it (the command line: its flag; the wizard: its field), and the
field at fault is the error's, never read from its text (docs/design.md: behaviour
never depends on text written for people).

The proof: the command line's spelling of an option is reworded here, and the wizard
still names, and marks, the right field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox_setup.base import message as message_module
from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError, RefusedError, SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.message import Act, Message, Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.claude import judge_given_shim, judge_untrusted_claude
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.commands.wording import error_text, wizard_text
from sandbox_setup.configure.accounts.agent_account import refusal
from sandbox_setup.configure.claude_binary import find_claude
from sandbox_setup.configure.inner_sandbox import check_sandbox_deps
from sandbox_setup.configure.network_plan import check_egress
from sandbox_setup.policy.accounts import AccountProblem, AccountRule, new_agent_name_problem
from sandbox_setup.policy.domains import parse_domain_pattern
from sandbox_setup.policy.network_words import allowance_warning, allowances_problem
from tests.core_fixtures import make_target_root
from tests.tui.fake_findings import SANDBOX_HOST, FakeProvider, fake_report
from tests.wizard_words import names_a_flag


def _core(tmp_path: Path) -> InteractiveCore:
    return InteractiveCore.for_root(make_target_root(tmp_path / "root"), FakeProvider(SANDBOX_HOST))


@pytest.mark.parametrize(
    ("ports_flag", "domains_flag"),
    [("--allow-loopback-port", "--allow-domain"), ("--expose-port", "--reach")],
)
def test_the_wizard_names_the_field_however_the_command_line_spells_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ports_flag: str, domains_flag: str
) -> None:
    flags = message_module.CLI_FLAGS
    monkeypatch.setitem(flags, Option.ALLOW_LOOPBACK_PORT, ports_flag)
    monkeypatch.setitem(flags, Option.ALLOW_DOMAIN, domains_flag)
    core = _core(tmp_path)
    # A loopback port without the allowlist: the ports field is at fault, in its words.
    _, _, error, at = core.validate_network(Mode.SANDBOX, Network.HOST, "", "8080")
    assert at == "ports", (at, error)
    assert error is not None and "the loopback ports field" in error, error
    assert "--" not in error, error
    # ... while the command line says the flag as it is spelled now.
    cli = str(allowances_problem(Mode.SANDBOX, Network.HOST, "allow-loopback-port"))
    assert cli.startswith(f"{ports_flag} needs network"), cli
    # The same for a domain: the domains field.
    _, _, error, at = core.validate_network(Mode.SANDBOX, Network.HOST, "x.test", "")
    assert at == "domains", (at, error)
    assert error is not None and "the allowed domains field" in error, error
    assert "--" not in error, error


def test_the_command_line_says_the_flag_as_it_spells_it(monkeypatch: pytest.MonkeyPatch) -> None:
    said = message("log in first or ", Ref(Option.COPY_LOGIN, Act.DROP))
    assert said == "log in first or drop --copy-login"
    monkeypatch.setitem(message_module.CLI_FLAGS, Option.COPY_LOGIN, "--bring-login")
    error = InputError(message("log in first or ", Ref(Option.COPY_LOGIN, Act.DROP)))
    assert str(error) == "log in first or drop --bring-login"
    assert error.option is Option.COPY_LOGIN
    assert error_text(error) == "log in first or untick 'Copy my Claude login'"


def test_a_raise_site_keeps_the_command_lines_text_and_types_its_option(tmp_path: Path) -> None:
    root = make_target_root(tmp_path / "root")
    (root / "usr/local/bin/claude").unlink()
    layout = Layout.for_root(root)
    with pytest.raises(InputError) as missing:
        find_claude(layout)
    text = str(missing.value)
    assert text.startswith("Claude Code not found (") and text.endswith(
        "); install it or pass --claude PATH"
    )
    assert missing.value.option is Option.CLAUDE
    assert missing.value.exit_code is ExitCode.USAGE  # the same exit code as before
    shown = error_text(missing.value)
    assert shown.endswith("install it or fill in the Claude Code field"), shown


def test_the_exception_is_not_rewritten_when_the_wizard_shows_it(tmp_path: Path) -> None:
    """The wizard words an error where it shows it; the exception (its args, its
    type, its exit code) stays the core's."""
    core = _core(tmp_path)
    error = RefusedError(message("or ", Ref(Option.MODE, Act.CHOOSE, value="user")))
    args = error.args
    shown = core.error_words(error)
    assert shown == "or choose the path 'user'"
    assert error.args is args and str(error) == "or choose --mode user"
    assert isinstance(error, SetupError) and error.exit_code is ExitCode.REFUSED
    assert core.error_words(RuntimeError()) == "RuntimeError"


SERVICE = (
    "www-data is the name of a well-known service account; an agent with that name would be "
    "mistaken for the service (and get its data once the service is installed); "
)
ACCOUNT = "the account bob cannot be the agent user: [existing account] not created (fix: "
REUSE = "to make it the agent (it must pass every rule)); "
LOCKED = "(sandbox-setup creates a new one, locked)); or "


def _converted(layout: Layout) -> list[tuple[str, str, str]]:
    """(a converted site's message, the command line's text as before the change, the
    wizard's); the command line's were taken from the code before the change."""
    problems = [
        AccountProblem(AccountRule.NOT_OURS, "not created"),
        AccountProblem(AccountRule.PROCESSES, "3 running"),
        AccountProblem(AccountRule.SYSTEM, "uid 5"),
    ]
    refused = refusal(layout, "bob", problems).words
    assert refused is not None
    deps = fake_report(
        [
            Finding(
                "claude.sandbox_deps",
                "deps",
                Status.FAIL,
                "missing: rg",
                "",
                "apt-get install -y ripgrep",
            )
        ]
    )
    egress = fake_report([Finding("net.egress", "egress", Status.FAIL, "proxy failed")])
    return [
        (
            allowances_problem(Mode.UNSAFE, Network.HOST, "allow-domain") or "",
            "--allow-domain needs sandbox or user mode (in unsafe mode Claude runs as you on "
            "the host's whole network: nothing filters it)",
            "the allowed domains field needs sandbox or user mode (in unsafe mode",
        ),
        (
            allowances_problem(Mode.SANDBOX, Network.HOST, "allow-loopback-port") or "",
            "--allow-loopback-port needs network \"allowlist\" (network is 'host': everything "
            "is reachable)",
            'the loopback ports field needs network "allowlist"',
        ),
        (
            new_agent_name_problem("www-data") or "",
            SERVICE + "choose another --agent-user",
            SERVICE + "pick a new agent user",
        ),
        (
            refused,
            ACCOUNT + "pass --reuse-account " + REUSE + "[running processes] 3 running (fix: "
            "stop them, or pass --reuse-account if this account is meant for the agent); "
            "[system account] uid 5 (fix: choose another --agent-user " + LOCKED + "pick a "
            "new --agent-user (sandbox-setup creates it locked)",
            ACCOUNT + "tick 'Reuse an existing account' " + REUSE,
        ),
        (
            judge_untrusted_claude("/x", "r").remedy,
            "install Claude Code where only root can write (e.g. npm install -g as root) and "
            "pass that path as --claude",
            "(e.g. npm install -g as root) and fill in the Claude Code field",
        ),
        (
            judge_given_shim("/x").remedy,
            "pass the real binary: --claude /path/to/real/claude (the `claude` path in "
            "launcher.toml names it)",
            "fill in the Claude Code field (the `claude` path in launcher.toml names it)",
        ),
        (
            allowance_warning(parse_domain_pattern("127.0.0.1")) or "",
            "allowed domain 127.0.0.1 is loopback: the agent can reach it; every service "
            "listening on this host's loopback (databases, admin and debug ports) becomes "
            "reachable through the proxy; to expose one port use --allow-loopback-port PORT "
            "instead",
            "to expose one port fill in the loopback ports field instead",
        ),
        (
            _raised(parse_domain_pattern, "0.0.0.0"),
            "allowed domain '0.0.0.0': the unspecified address means this host; use "
            "--allow-loopback-port (expected example.com, *.example.com, 203.0.113.7 or "
            "[2001:db8::7], each with an optional :PORT)",
            "means this host; fill in the loopback ports field (expected",
        ),
        (
            _raised(check_sandbox_deps, deps, "strong"),
            "inner sandbox 'strong' needs socat and ripgrep, but claude.sandbox_deps is fail: "
            "missing: rg; without them Claude Code's own sandbox cannot start (Claude refuses "
            "to start, or runs every command unsandboxed). Remedy: apt-get install -y ripgrep"
            "  (or choose --inner-sandbox off: the launcher's own sandbox or user still "
            "applies)",
            "(or choose the inner sandbox 'off': the launcher's own",
        ),
        (
            _raised(check_egress, egress, Mode.SANDBOX, Network.ALLOWLIST),
            "network allowlist needs the egress proxy, but net.egress failed: proxy failed. "
            "Remedy: sandbox-setup --check net.egress; or choose --network none (closed, and "
            "Claude cannot reach its API).",
            "; or choose the network 'none' (closed,",
        ),
    ]


def _raised(call: Callable[..., object], *args: object) -> Message:
    with pytest.raises(SetupError) as raised:
        call(*args)
    assert raised.value.words is not None, str(raised.value)
    return raised.value.words


def test_the_converted_sites_say_on_the_command_line_what_they_said_before(
    tmp_path: Path,
) -> None:
    """Byte for byte the command line's text; the wizard's from the same parts."""
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    for said, cli, wizard in _converted(layout):
        assert isinstance(said, Message), said
        assert str(said) == cli
        shown = wizard_text(said)
        assert wizard in shown and names_a_flag(shown) == [], shown  # commands to paste stay


def test_a_typed_error_keeps_its_parts_when_copied_or_pickled() -> None:
    """A finding's remedy is deep-copied (asdict) and an error may cross a process: the
    parts survive, and the text for JSON is the command line's."""
    import copy
    import json
    import pickle

    said = message("log in first or ", Ref(Option.COPY_LOGIN, Act.DROP))
    for copied in (copy.deepcopy(said), pickle.loads(pickle.dumps(said))):
        assert isinstance(copied, Message) and copied.parts == said.parts
    error = pickle.loads(pickle.dumps(InputError(said)))
    assert error.option is Option.COPY_LOGIN and str(error) == str(said)
    assert json.dumps(said) == '"log in first or drop --copy-login"'


def test_every_option_a_message_can_name_is_an_option_of_the_command_line() -> None:
    from sandbox_setup.cli import build_parser

    options = {o for action in build_parser()._actions for o in action.option_strings}
    assert {message_module.CLI_FLAGS[o] for o in Option} <= options


def test_a_probes_finding_names_the_wizards_choices_however_the_command_line_spells_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """launch.path is judged from what the launcher's start-up probe (another process)
    reported as JSON; its remedy names the network and the mode. With the command
    line's spellings reworded, the checks screen still says the wizard's choices, and
    the recommendation built from such findings too."""
    import json

    from sandbox_setup.checks.launch import judge_launch_path
    from sandbox_setup.checks.model import Report
    from sandbox_setup.checks.recommend import recommend

    flags = message_module.CLI_FLAGS
    monkeypatch.setitem(flags, Option.NETWORK, "--net")
    monkeypatch.setitem(flags, Option.MODE, "--path")
    probe_said = json.dumps(
        {"sandbox": "ok", "verify": "ok", "network": "setns(3): Operation not permitted"}
    )
    verdict = judge_launch_path(json.loads(probe_said), None, user="u", platform="docker")
    launch = Finding(
        "launch.path", "launch", verdict.status, verdict.summary, verdict.detail, verdict.remedy
    )
    assert "; or --net none (no network in the sandbox)" in launch.remedy  # the CLI's, reworded
    assert "; or choose --path user" in launch.remedy
    deps = Finding("claude.sandbox_deps", "deps", Status.FAIL, "socat not found", "", "apt x")
    findings = [f for f in SANDBOX_HOST if f.id != deps.id] + [deps, launch]

    def provide(on_finding: Callable[[Finding], object]) -> Report:
        for finding in findings:
            on_finding(finding)
        return Report(host={}, findings=findings, recommendation=recommend(findings, euid=0))

    core = InteractiveCore.for_root(make_target_root(tmp_path / "root"), provide)
    seen: list[Finding] = []
    report = core.run_checks(seen.append)
    shown = report.get("launch.path")
    assert shown is not None and seen[-1] == shown
    assert (
        "; or the network 'none' (no network in the sandbox) or the network 'host'" in shown.remedy
    )
    assert "; or choose the path 'user', which needs none of this" in shown.remedy
    reason = report.recommendation.reason
    assert "to allow it: " in reason and "the network 'none'" in reason, reason
    for text in (shown.remedy, reason):
        assert "--net" not in text and "--path" not in text, text
        assert names_a_flag(text) == [], text


def test_a_plan_refusal_quoting_a_finding_keeps_the_findings_typed_remedy() -> None:
    """The plan's refusal of a mode quotes the finding that rules it out, remedy and
    all: the remedy's options stay typed parts, so the wizard words them and the
    command line spells them (it used to be an f-string, flags and all)."""
    from sandbox_setup.base.message import Act, Option, Ref, message
    from sandbox_setup.checks.model import Finding, Status
    from sandbox_setup.configure.plan import _findings_text
    from tests.tui.fake_findings import fake_report

    remedy = message("run it with ", Ref(Option.NETWORK, Act.CHOOSE, value="none"))
    found = Finding("launch.path", "t", Status.FAIL, "the namespace is refused", remedy=remedy)
    text = _findings_text(fake_report([found]), ["launch.path", "bwrap.sandbox"])
    assert str(text).startswith("launch.path is fail: the namespace is refused Remedy: run it")
    assert "choose --network none" in str(text)
    assert "--network" not in wizard_text(text)
    assert "the network 'none'" in wizard_text(text)
