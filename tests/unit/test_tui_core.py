"""What the wizard's core tells the screens (issue 17): no CLI flags in its messages,
one answer to "where is Claude Code" for the checks, the details and the plan
(under ``--root`` too, saying where it looked), and plan steps that say what already
exists instead of "create ... unchanged"."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import sandbox_setup.commands.interactive as interactive
import sandbox_setup.configure.host_facts as host_facts
from sandbox_setup.audit.network import network_findings
from sandbox_setup.base.choices import BaseUrlPort, Mode, Network
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.message import (
    CLI_FLAGS,
    Act,
    Change,
    CliOnly,
    Message,
    Option,
    Recheck,
    Ref,
)
from sandbox_setup.base.message import message as typed
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.identity import judge_identity
from sandbox_setup.checks.launch import judge_launch_path
from sandbox_setup.checks.model import Finding, Report, Status
from sandbox_setup.checks.recommend import recommend
from sandbox_setup.cli import build_parser
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.commands.wording import FIELD_WORDS, wizard_text
from sandbox_setup.configure.actions import CreateGroup, CreateUser, WriteFile
from sandbox_setup.configure.answers import Answers, validate_answers
from sandbox_setup.configure.apply import apply_plan
from sandbox_setup.configure.host_facts import HostFacts
from sandbox_setup.configure.network_plan import check_egress
from sandbox_setup.configure.plan import Plan
from sandbox_setup.policy.environment import loopback_port_hint
from sandbox_setup.policy.network_words import describe_network
from tests.core_fixtures import make_target_root
from tests.host_facts import claude_facts, plan_facts
from tests.tools import REPO
from tests.tui.fake_findings import SANDBOX_HOST, FakeProvider, fake_report
from tests.wizard_words import names_a_flag

# Options that are actions of their own, not settings a screen could have a field for.
ACTIONS = {"--help", "--version", "--check", "--audit", "--status", "--headless", "--undo",
           "--list-checks", "--json"}  # fmt: skip


def test_every_option_has_the_wizards_words() -> None:
    options = {
        option
        for action in build_parser()._actions
        for option in action.option_strings
        if option.startswith("--")
    }
    missing = options - ACTIONS - set(FIELD_WORDS)
    assert not missing, f"add these to wording.FIELD_WORDS: {sorted(missing)}"


def _raised(call: Callable[..., object], *args: object) -> str:
    with pytest.raises(SetupError) as raised:
        call(*args)
    error = raised.value
    return error.words if error.words is not None else str(error)


def _answers_refusal(tmp_path: Path, answers: Answers) -> str:
    return _raised(validate_answers, answers, Layout.for_root(make_target_root(tmp_path / "r")))


LAUNCH_REPORT = {"sandbox": "ok", "verify": "ok", "network": "setns(3): Operation not permitted"}
BASE_URL = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}
HOST_CONFIG = LauncherConfig(
    Mode.SANDBOX, PurePosixPath("/c"), "a", PurePosixPath("/h"), network=Network.HOST
)


def _sources(tmp_path: Path) -> list[tuple[str, str, str]]:
    """(a message of the core as its source makes it, what the command line says,
    what the wizard says): the sources whose options reached the screens as text
    before they were typed."""
    sandbox = fake_report(SANDBOX_HOST).findings
    deps = Finding("claude.sandbox_deps", "deps", Status.FAIL, "socat not found", "", "apt x")
    egress = Finding("net.egress", "egress", Status.FAIL, "proxy down")
    no_ws = Answers(Mode.SANDBOX)
    missing_ws = Answers(Mode.SANDBOX, workspaces=(PurePosixPath("/nowhere"),))
    unsafe = Answers(Mode.UNSAFE, agent_user="root")
    missing_claude = Answers(
        Mode.USER, workspaces=(PurePosixPath("/srv/project"),), claude=PurePosixPath("/no/claude")
    )
    launch = judge_launch_path(LAUNCH_REPORT, None, user="u", platform="docker")
    return [
        (launch.remedy, "; or --network none (no network in the sandbox) or --network host",
         "; or the network 'none' (no network in the sandbox) or the network 'host'"),
        (launch.remedy, "; or choose --mode user, which needs none of this",
         "; or choose the path 'user', which needs none of this"),
        (recommend([*[f for f in sandbox if f.id != deps.id], deps], euid=0).reason,
         "re-check as the agent once it exists (here with the default name): "
         "sandbox-setup --check --as-user claude-agent",
         "Probed as root: re-run the checks once the agent user exists"),
        (recommend([*[f for f in sandbox if f.id != deps.id], deps], euid=0).reason,
         "; apt x, or choose --inner-sandbox off)", "; apt x, or choose the inner sandbox 'off')"),
        (recommend([*sandbox, egress], as_user="u").reason,
         "until it passes, only --network none launches",
         "until it passes, only the network 'none' launches"),
        (judge_identity(0, 0, None, None, 0).detail,
         "sandbox-setup --check --as-user claude-agent",
         "re-run the checks once the agent user exists"),
        (_answers_refusal(tmp_path, unsafe),
         "acceptance: add --accept-unsafe-root (or accept_unsafe_root = true in answers)",
         "acceptance: type the acceptance phrase"),
        (_answers_refusal(tmp_path, no_ws),
         "answers: sandbox mode needs at least one workspace (--workspace DIR)",
         "answers: sandbox mode needs at least one workspace"),
        (_answers_refusal(tmp_path, missing_ws), "; an undo removes it while it is empty): add "
         "--create-workspace", "; an undo removes it while it is empty): tick 'Create"),
        (_answers_refusal(tmp_path, missing_claude), "answers: --claude /no/claude: no such file",
         "answers: Claude Code /no/claude: no such file"),
        (loopback_port_hint(BASE_URL, ["ANTHROPIC_BASE_URL"], Network.ALLOWLIST, (),
                            BaseUrlPort.OFF, "/r") or "",
         "; to allow it: sandbox-setup --headless --allow-loopback-port 8080 --root /r --yes",
         "; to allow it, enter 8080 in the loopback ports field"),
        (loopback_port_hint(BASE_URL, ["ANTHROPIC_BASE_URL"], Network.NONE, (),
                            BaseUrlPort.AUTO) or "",
         "; to allow it: sandbox-setup --headless --network allowlist --allow-loopback-port 8080 "
         "--yes",
         "; to allow it, choose the network 'allowlist' and enter 8080 in the loopback ports"),
        (network_findings(HOST_CONFIG, fake_report([]), "/a.toml",
                          "sandbox-setup --headless --yes")[0].remedy,
         'set network = "allowlist" in /a.toml (--network allowlist of a headless apply), then',
         'set network = "allowlist" in /a.toml, then re-apply: sandbox-setup --headless --yes'),
        (describe_network(Network.ALLOWLIST, ["x.test"], [8080])[2],
         "allowed by you (--allow-domain): x.test", "allowed by you (the allowed domains field)"),
        (describe_network(Network.ALLOWLIST, ["x.test"], [8080])[3],
         "127.0.0.1 (--allow-loopback-port): 8080", "127.0.0.1 (the loopback ports field): 8080"),
        (_raised(check_egress, fake_report([egress_failed()]), Mode.SANDBOX, Network.ALLOWLIST),
         "Remedy: a launch with network allowlist would be refused; until this is fixed, "
         "--network none keeps the sandbox closed",
         "Remedy: a launch with network allowlist would be refused; until this is fixed, the "
         "network 'none' keeps the sandbox closed"),
        (_reused(tmp_path),
         "user bob already exists (reused: --reuse-account); it is the agent",
         "(reused: 'Reuse an existing account' is ticked)"),
    ]  # fmt: skip


def egress_failed() -> Finding:
    """net.egress judged from what the egress proxy's probe (another process) reported
    as JSON: it could not run."""
    import json

    from sandbox_setup.checks.facts import HostFacts
    from sandbox_setup.checks.net import judge_egress
    from tests.unit.test_check_egress import facts

    said = json.loads(json.dumps({"uid": 65534, "proxy": "bind: Permission denied"}))
    verdict = judge_egress(facts(proxy=said), HostFacts(), uid=65534, platform="none")
    assert verdict.status is Status.FAIL, verdict
    return Finding("net.egress", "egress", verdict.status, verdict.summary, verdict.detail,
                   verdict.remedy)  # fmt: skip


def _reused(tmp_path: Path) -> str:
    """The plan's step for bob, an account the operator made and reuses as the agent."""
    from sandbox_setup.configure.accounts.agent_setup import account_actions
    from sandbox_setup.policy.accounts import AccountFacts, PasswordState

    bob = AccountFacts("bob", 1500, "/home/bob", "/bin/bash", PasswordState.LOCKED, {}, (),
                       1000, 60000, None, created_by_setup=False)  # fmt: skip
    layout = Layout.for_root(make_target_root(tmp_path / "bob"))
    steps = account_actions(layout, "bob", PurePosixPath("/home/bob"), bob, None, [], reused=True)
    made = next(step for step in steps if isinstance(step, CreateUser))
    return made.describe_existing()


def test_the_core_types_the_options_its_messages_name(tmp_path: Path) -> None:
    """The command line's text, byte for byte as before; the wizard's from the parts,
    with no flag (and no regex rewriting: plain text is shown as it is)."""
    for said, cli, wizard in _sources(tmp_path):
        assert isinstance(said, Message), said
        assert cli in str(said), (cli, str(said))
        shown = wizard_text(said)
        assert wizard in shown, (wizard, shown)
        assert names_a_flag(shown) == [] and not GARBLED.search(shown), shown


# What a flag put in words must not turn into: a verb before the words for a field
# ("choose another the agent user field"), a metavar after them ("field PATH").
GARBLED = re.compile(
    r"\b(?:another|pass|use|choose|add) the [\w ]+ (?:field|choice)\b"
    r"|\b(?:field|choice) [A-Z][A-Z_]+\b"
)
# Where messages are only the command line's: argparse, the headless output.
CLI_ONLY = ("src/sandbox_setup/cli.py", "src/sandbox_setup/commands/")
# The screens have their own wording tests; the TUI's entry point is core.
SCREENS = "src/sandbox_setup/tui/"
TUI_APP = "src/sandbox_setup/tui/app.py"


def _string(node: ast.AST) -> str | None:
    """The text of a string literal, an f-string (each value as "7") or a + of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "7" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left), _string(node.right)
        return None if left is None or right is None else left + right
    return None


def core_messages() -> dict[str, str]:
    """Every whole string in the core (src/sandbox_setup/ but the screens and the CLI's own
    output, no docstrings) that names one of sandbox-setup's options: text -> where it is."""
    flag = re.compile(r"--(?:[a-z][a-z-]*[a-z]|7\b)")
    found: dict[str, str] = {}
    for path in sorted(REPO.glob("src/sandbox_setup/**/*.py")):
        rel = str(path.relative_to(REPO))
        if rel.startswith(CLI_ONLY) or (rel.startswith(SCREENS) and rel != TUI_APP):
            continue
        tree = ast.parse(path.read_text(), rel)
        parts: set[int] = set()  # pieces of a larger string, and docstrings
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                parts.update(id(value) for value in node.values)
            elif isinstance(node, ast.BinOp) and _string(node) is not None:
                parts.update((id(node.left), id(node.right)))
            elif isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr):
                    parts.add(id(first.value))
        for node in ast.walk(tree):
            text = _string(node)
            if text is None or id(node) in parts:
                continue
            # "--7": an option whose name is filled in (check_network's f"--{what}").
            named = {m for m in flag.findall(text) if m in FIELD_WORDS or m == "--7"}
            if named:
                found.setdefault(text, f"{rel}:{getattr(node, 'lineno', 0)}")
    return found


# Where a string may still spell an option as the command line does: text no screen
# shows. path (a folder ends with "/") -> why.
CLI_TEXT = {
    "src/sandbox_setup/base/answer_fields.py": "the parser's option names and help",
    "src/sandbox_setup/base/message.py": "the command line's spelling of each option (CLI_FLAGS)",
    "src/sandbox_setup/base/apparmor.py": "the comment of the profile it writes",
    "src/sandbox_setup/base/remedies.py": "the commands to paste, built where they are spelled",
    "src/sandbox_setup/checks/runner.py": "--check's own options refused: the wizard passes none",
    "src/sandbox_setup/configure/answers.py": "the answers file's header: a command to paste",
    "src/sandbox_setup/configure/claude_shim.py": "the shim script it writes",
    "src/sandbox_setup/launcher/": "sandbox-launch's own output; no screen of the wizard shows it",
}
# Not typed yet, in a file another change is rewriting (the claude lookup at the edge):
# its refusal reaches the wizard with the flag. path -> why.
NOT_YET: dict[str, str] = {}


def test_every_flag_bearing_message_of_the_core_is_typed() -> None:
    """A string of the core that spells one of sandbox-setup's options (outside a
    command to paste) is text only the command line shows; any other must name it as
    a typed part (base/message.py), since the wizard rewrites no text."""
    messages = core_messages()
    # Not vacuous: the scan finds the options the command line spells.
    named = {m for text in messages for m in re.findall(r"--[a-z-]+", text)}
    assert {"--as-user", "--timeout", "--claude", "--reuse-account"} <= named, named
    left = {}
    for text, where in messages.items():
        path = where.split(":")[0]
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in CLI_TEXT):
            continue
        if path in NOT_YET:
            continue
        if names_a_flag(text.replace("--7", "--network")):
            left[where] = text
    assert not left, "type these (base/message.py):\n" + "\n".join(
        f"{where}: {text}" for where, text in left.items()
    )


def test_the_scan_finds_an_untyped_flag_in_the_core() -> None:
    assert names_a_flag("until it passes, only --network none launches") == ["--network"]
    assert names_a_flag("re-apply: sandbox-setup --headless --network none --yes") == []


@pytest.mark.parametrize("option", list(Option))
def test_every_typed_option_reference_comes_in_the_wizards_words(option: Option) -> None:
    """Whatever a message asks of an option (pass, drop, choose, ... with a value, a
    placeholder or neither), the wizard says it without a flag and without garbling."""
    for act in Act:
        for value, metavar in ((None, None), ("v1", None), (None, "PATH")):
            for capital in (False, True):
                ref = Ref(option, act, value=value, metavar=metavar, capital=capital)
                shown = wizard_text(typed("or ", ref, " (why)"))
                assert "--" not in shown and not GARBLED.search(shown), (ref, shown)
                assert str(typed(ref)).count(CLI_FLAGS[option]) == 1  # the CLI's says it


def test_other_typed_parts_come_in_the_wizards_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change of the setup, a re-check and words only for the command line: each
    face says them its way, and the command line's spelling is CLI_FLAGS'."""
    change = Change(
        "to allow it",
        (Ref(Option.NETWORK, Act.CHOOSE, "allowlist"), Ref(Option.ALLOW_DOMAIN, Act.USE, "x.test")),
        "/r",
    )
    said = typed("refused; ", change, CliOnly((" (", Ref(Option.NETWORK), ")",)), "; ",
                 Recheck("that user", "bob"))  # fmt: skip
    assert str(said) == (
        "refused; to allow it: sandbox-setup --headless --network allowlist --allow-domain "
        "x.test --root /r --yes (--network); re-check as that user (here with the default "
        "name): sandbox-setup --check --as-user bob"
    )
    assert wizard_text(said) == (
        "refused; to allow it, choose the network 'allowlist' and enter x.test in the allowed "
        "domains field; re-run the checks once the agent user exists"
    )
    monkeypatch.setitem(CLI_FLAGS, Option.ALLOW_DOMAIN, "--reach")
    assert "sandbox-setup --headless --network allowlist --reach x.test" in str(typed(change))


def test_plain_text_is_shown_as_it_is() -> None:
    """The wizard rewrites no text: commands to paste and other programs' flags stay."""
    for text in (
        "fix: sandbox-setup --headless --answers /r/answers.toml --yes --root /r",
        "docker run --security-opt systempaths=unconfined ...",
        "usermod --prefix /r --lock bob",
    ):
        assert wizard_text(text) == text


def _core(root: Path, findings: list[Finding] = SANDBOX_HOST) -> InteractiveCore:
    return InteractiveCore.for_root(root, FakeProvider(findings))


def test_without_claude_under_the_root_the_checks_and_the_review_say_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host's bwrap and socat are facts handed in (this host may have neither);
    # Claude Code is looked up as the edge does, under the root.
    def gather(report: Report, layout: Layout, answers: Answers) -> HostFacts:
        return plan_facts(claude=claude_facts(layout, answers.claude))

    monkeypatch.setattr(host_facts, "gather_host_facts", gather)
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
    assert refused.value.option is Option.CLAUDE  # the field at fault, typed
    message = core.error_words(refused.value)
    assert "--claude" in str(refused.value)  # the exception itself is the CLI's, untouched
    looked = shown.summary.removeprefix("Claude Code not found (").removesuffix(")")
    assert looked in message, (looked, message)
    assert names_a_flag(message) == [] and "--claude" not in message
    found, where = core.claude_lookup()
    assert found is None and where == looked


def test_with_claude_under_the_root_every_screen_names_that_binary(tmp_path: Path) -> None:
    from sandbox_setup.tui.flow import claude_hint

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


def test_a_description_is_of_now_and_the_apply_reports_it_as_before_the_step(
    tmp_path: Path,
) -> None:
    """describe() holds no state: like is_change() it says what the target is now. The
    apply takes it before each step runs, so its reports (the TUI's log, the CLI's lines,
    ApplyResult) still say "create" for what the step created."""
    layout = _layout(tmp_path)
    target = PurePosixPath("/etc/example.conf")
    real = layout.real(target)
    write = WriteFile(layout, target, lambda current: b"x\n", owner="root", label="example")
    assert write.describe().startswith("create example /etc/example.conf")
    config = LauncherConfig(
        Mode.USER, PurePosixPath("/usr/bin/claude"), "claude-agent",
        PurePosixPath("/home/claude-agent"),
    )  # fmt: skip
    seen: list[tuple[str, str]] = []
    result = apply_plan(
        Plan(Answers(Mode.USER), layout, config, [write]),
        progress=lambda action, status, description: seen.append((status, description)),
    )
    assert real.read_bytes() == b"x\n"
    assert [status for status, _ in seen] == ["running", "changed"]
    assert all(d.startswith("create example /etc/example.conf") for _, d in seen), seen
    assert result.changed == [seen[0][1]] and result.changed_steps == [write]
    assert write.describe() == "example /etc/example.conf already exists as planned"
