"""What the wizard's core tells the screens (issue 17): no CLI flags in its messages,
one answer to "where is Claude Code" for the checks, the details and the plan
(under ``--root`` too, saying where it looked), and plan steps that say what already
exists instead of "create ... unchanged"."""

from __future__ import annotations

import ast
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import sandbox_setup.commands.interactive as interactive
import sandbox_setup.configure.host_facts as host_facts
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.message import CLI_FLAGS, Act, Option, Ref
from sandbox_setup.base.message import message as typed
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Report, Status
from sandbox_setup.cli import build_parser
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.commands.wording import FIELD_WORDS, tui_words, wizard_text
from sandbox_setup.configure.actions import CreateGroup, CreateUser, WriteFile
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apply import apply_plan
from sandbox_setup.configure.host_facts import HostFacts
from sandbox_setup.configure.plan import Plan
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


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("copy_login: no Claude login to copy (...); log in first or drop --copy-login",
         "untick 'Copy my Claude login'"),
        ("sandbox mode needs ... Or choose --mode user (a dedicated non-root user).",
         "choose the dedicated user path"),
        ("inner sandbox 'strong' was not verified. Choose --inner-sandbox off (what ...)",
         "Choose the inner sandbox 'off'"),
        ("answers: --allow-domain needs network \"allowlist\" (network is 'host': ...)",
         "allowed domains need"),
        ("install Claude Code where only root can write and pass that path as --claude",
         "enter that path in the Claude Code field"),
        # The ones below read as nonsense or lost their value before (issue 17).
        ("...: pass --reuse-account to make it the agent (it must pass every rule)",
         "tick 'Reuse an existing account' to make it the agent"),
        ("user bob already exists (reused: --reuse-account); it is the agent",
         "(reused: 'Reuse an existing account' is ticked)"),
        ("ANTHROPIC_BASE_URL points at 127.0.0.1 port 8080 ...; the sandbox (network allowlist) "
         "reaches only the loopback ports allowed; to allow it: sandbox-setup --headless "
         "--allow-loopback-port 8080 --yes",
         "to allow it, enter 8080 in the loopback ports field"),
        ("..., so Claude Code cannot reach it; to allow it: sandbox-setup --headless --network "
         "allowlist --allow-loopback-port 8080 --root /r --yes",
         "choose the network 'allowlist' and enter 8080 in the loopback ports field"),
        ("Live probes run as root here; ...: re-check as the agent once it exists (here with the "
         "default name): sandbox-setup --check --as-user claude-agent",
         "re-run the checks once the agent user exists"),
        ("refused x.test:443: not on the allowlist; to allow it: sandbox-setup --headless "
         "--allow-domain x.test:443 --yes", "to allow it, enter x.test:443 in the allowed domains"),
        ("set network = \"allowlist\" in /a.toml (--network allowlist of a headless apply), then "
         "re-apply: sandbox-setup --headless --answers /a.toml --yes",
         'set network = "allowlist" in /a.toml, then re-apply: sandbox-setup --headless'),
        ("--pass-env LD_PRELOAD: the dynamic loader runs it", "variable LD_PRELOAD: the dynamic"),
        ("--include-private was not given: pass --include-private to open them",
         "tick 'Include private files' to open them"),
        ("--allow-domain 169.254.169.254: link-local", "allowed domain 169.254.169.254: link"),
        # (The messages of the core that name an option as a typed part are worded from
        # their parts: tests/unit/test_wizard_errors.py.)
    ],
)  # fmt: skip
def test_core_messages_come_in_the_wizards_words(message: str, words: str) -> None:
    shown = tui_words(message)
    assert words in shown, shown
    assert names_a_flag(shown) == [], shown


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


def test_every_flag_bearing_message_of_the_core_comes_without_a_flag() -> None:
    """A new message in the core that names an option reaches the screens with no
    option in it (commands to paste, ``sandbox-setup --headless ...``, are kept)."""
    messages = core_messages()
    named = {m for text in messages for m in re.findall(r"--[a-z-]+", text)}
    # Not vacuous: the options the issue found on screens, and more, are there.
    # (Those a message names as a typed part, base/message.py, are not text here: see
    # test_every_typed_option_reference_comes_in_the_wizards_words.)
    for option in ("--claude", "--allow-domain", "--allow-loopback-port",
                   "--reuse-account", "--inner-sandbox", "--network",
                   "--as-user", "--accept-unsafe-root", "--workspace"):  # fmt: skip
        assert option in named, option
    assert any("--7" in text for text in messages)  # check_network's f"--{what} needs"
    left = {}
    for text, where in messages.items():
        # An option named by a value ("--7") may be any of them.
        for filled in {text.replace("--7", option) for option in FIELD_WORDS}:
            shown = tui_words(filled)
            if names_a_flag(shown) or GARBLED.search(shown):
                left[where] = shown
    assert not left, "\n".join(f"{where}: {shown}" for where, shown in left.items())


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


@pytest.mark.parametrize("flag", ["--pass-env", "--include-private", "--install-claude-shim"])
def test_options_no_message_names_yet_come_in_words_too(flag: str) -> None:
    for message in (f"pass {flag}", f"drop {flag}", f"{flag} NAME: refused", f"see {flag}"):
        shown = tui_words(message)
        assert names_a_flag(shown) == [] and not GARBLED.search(shown), shown


def test_commands_to_paste_and_other_programs_flags_are_kept() -> None:
    remedy = "fix: sandbox-setup --headless --answers /r/answers.toml --yes --root /r"
    assert tui_words(remedy) == remedy
    docker = "docker run --security-opt systempaths=unconfined ..."
    assert tui_words(docker) == docker
    assert names_a_flag(tui_words("usermod --prefix /r --lock bob")) == []


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
