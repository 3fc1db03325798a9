"""The core as the interactive wizard sees it: :class:`InteractiveCore` implements
:class:`sandbox_setup.tui.core.Core` for one target root.

Nothing here imports Textual; every method may block (the screens call them
from thread workers). The report provider is injectable: the real one runs the
live probes, tests hand in fixed fake findings (the TUI is not the probe).

Two things the screens get only from here: the core's messages in the wizard's
words (:mod:`sandbox_setup.commands.wording`: no CLI flags on a screen; that is errors,
worded from their typed parts by :meth:`InteractiveCore.error_words`, findings, the
recommendation, plan notes and plan steps), and
one answer to "where is Claude Code" (:meth:`InteractiveCore.claude_lookup`), the
one the plan will use, so the checks screen and the review never disagree.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER, lookup_user
from sandbox_setup.base.choices import InnerSandbox, Mode, Network, SettingsScope
from sandbox_setup.base.errors import InputError, SetupError
from sandbox_setup.base.limits import Limits, parse_size, parse_tasks
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Report, Status
from sandbox_setup.commands.wording import error_text, wizard_text
from sandbox_setup.policy.claude_release import INSTALL_NEWEST
from sandbox_setup.policy.credentials import passed_credential
from sandbox_setup.policy.domains import parse_domain_pattern, parse_port
from sandbox_setup.policy.environment import passed_names, validate_pass_names
from sandbox_setup.policy.names import agent_name_problem
from sandbox_setup.policy.network_words import (
    allowances_problem,
    network_choice_problem,
    proxy_port_problem,
)
from sandbox_setup.policy.unsafe import acceptance_label

if TYPE_CHECKING:
    from sandbox_setup.audit.model import AuditReport
    from sandbox_setup.configure.actions import Action
    from sandbox_setup.configure.answers import Answers
    from sandbox_setup.configure.apply import ApplyResult
    from sandbox_setup.configure.plan import Blocker, Plan

# The rest of the core (checks, configure, audit) is imported where it is first used,
# each import marked "why: first paint": the wizard's first screen waits for none of it
# (bench/tui.py), and the probes, the plan and the audit load in the worker threads that
# run them.

FindingCallback = Callable[[Finding], object]
ReportProvider = Callable[[FindingCallback], Report]
ProgressCallback = Callable[[str, bool], object]
CLAUDE_CHECK = "claude.installed"
_LIST_SPLIT = re.compile(r"[,\s]+")


def live_report_provider(
    on_finding: FindingCallback, layout: Layout | None = None, claude: str | None = None
) -> Report:
    """Run the real probes; each finding is reported as it is ready.

    They run as ``--check``'s do: as this setup's agent (a re-run), or the default
    agent user, when it exists, else as an unprivileged stand-in
    (:mod:`sandbox_setup.configure.probes`): a probe as root would not speak for the
    agent. ``claude`` is the binary the plan would use (see
    :meth:`InteractiveCore.run_checks`).
    """
    # why: first paint (see the note at the top)
    from sandbox_setup.configure.probes import choose_probe_user, configured_agent

    as_user = None
    if layout is not None:
        # The mode is not chosen yet: an unsafe setup's "agent" is the operator, and
        # the checks must still speak for a separate agent.
        mode, agent = configured_agent(layout)
        as_user, _ = choose_probe_user(
            None, DEFAULT_AGENT_USER if mode is Mode.UNSAFE else agent, layout
        )
    return run_live_checks(on_finding=on_finding, as_user=as_user, claude=claude)


def run_live_checks(**kwargs: object) -> Report:
    """:func:`sandbox_setup.configure.probes.run_live_checks` (imported when first run)."""
    # why: first paint (see the note at the top)
    from sandbox_setup.configure.probes import run_live_checks as run

    return run(**kwargs)  # type: ignore[arg-type]


def check_titles() -> list[tuple[str, str]]:
    """(id, title) of every registered check, for placeholder rows."""
    # why: first paint (see the note at the top)
    from sandbox_setup.checks.registry import CHECKS

    return [(check.id, check.title) for check in CHECKS]


def _in_words(finding: Finding) -> Finding:
    return dataclasses.replace(
        finding,
        summary=wizard_text(finding.summary),
        detail=wizard_text(finding.detail),
        remedy=wizard_text(finding.remedy),
    )


# The answer a new workspace's refusal names -> the details screen's field.
NEW_WORKSPACE_FIELDS = {"workspace_owner": "new-ws-owner", "workspace_mode": "new-ws-mode"}


# Where the wizard's answers come from, in the messages that name it.
SOURCE = "your answers"


def _items(text: str) -> list[str]:
    return [item for item in _LIST_SPLIT.split(text.strip()) if item]


@dataclass
class InteractiveCore:
    """The core for one root (see :class:`sandbox_setup.tui.core.Core`)."""

    layout: Layout
    report_provider: ReportProvider = live_report_provider
    # The rows the checks screen shows as "running"; None: every registered check,
    # read when first asked for (see pending).
    pending_checks: list[tuple[str, str]] | None = field(default_factory=list)
    last_audit: AuditReport | None = None
    # Set by for_root for the live probes: they take the binary the plan will use.
    probes_take_claude: bool = False

    @classmethod
    def for_root(
        cls, root: Path | str = "/", report_provider: ReportProvider | None = None
    ) -> InteractiveCore:
        layout = Layout.for_root(root)
        if report_provider is None:
            provider = partial(live_report_provider, layout=layout)
            return cls(layout, provider, None, probes_take_claude=True)
        return cls(layout, report_provider, [])

    @property
    def pending(self) -> list[tuple[str, str]]:
        """(id, title) of every check the probes will report."""
        if self.pending_checks is None:
            self.pending_checks = check_titles()
        return self.pending_checks

    @pending.setter
    def pending(self, rows: list[tuple[str, str]]) -> None:
        self.pending_checks = list(rows)

    @property
    def operator_is_root(self) -> bool:
        return self.layout.operator.uid == 0

    def existing_setup(self) -> bool:
        return self.layout.real(self.layout.launcher_config).is_file()

    def other_setups(self) -> list[str]:
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.ledger import host_setups

        try:
            found = host_setups(self.layout)
        except SetupError:  # a record that fails the trust rule: the audit says so
            return []
        return sorted(state for state in found if state != str(self.layout.state_dir))

    def applies_in_effect(self) -> int:
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.history import open_applies

        try:
            return max(1, len(open_applies(self.layout)))
        except SetupError:  # a journal that fails the trust rule: the audit says so
            return 1

    # -- Claude Code: one lookup for the checks, the details and the plan ----
    def claude_lookup(self) -> tuple[PurePosixPath | None, str]:
        """(the binary the plan would use when no path is entered, where it looked)."""
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.claude_binary import locate_claude, search_description

        return locate_claude(self.layout), search_description(self.layout)

    def _claude_finding(self, finding: Finding, found: PurePosixPath | None, where: str) -> Finding:
        """claude.installed as the plan sees it: the same binary, or "not found" with
        the places the plan looked (under the root, when there is one)."""
        if found is None:
            return Finding(
                finding.id,
                finding.title,
                Status.WARN,
                f"Claude Code not found ({where})",
                "cause: claude-missing",
                f"install Claude Code ({INSTALL_NEWEST}), or enter "
                "its path in the Claude Code field on the details step",
                cause="claude-missing",
            )
        if self.layout.live:
            return finding
        # The probes name the binary they ran (its host path, under the root): the
        # plan's name for it, on the target, is said after (never edited into their words).
        summary = f"{finding.summary}; the plan uses {found} (under the root {self.layout.root})"
        return dataclasses.replace(finding, summary=summary)

    # -- probes and what they allow --------------------------------------
    def run_checks(self, on_finding: FindingCallback) -> Report:
        found, where = self.claude_lookup()

        def shown(finding: Finding) -> Finding:
            if finding.id == CLAUDE_CHECK:
                finding = self._claude_finding(finding, found, where)
            return _in_words(finding)

        provider = self.report_provider
        if self.probes_take_claude and found is not None:
            provider = partial(provider, claude=str(self.layout.real(found)))  # type: ignore[call-arg]
        report = provider(lambda finding: on_finding(shown(finding)))
        report.findings = [shown(finding) for finding in report.findings]
        # The path step shows the recommendation's reason ("re-check with --as-user").
        rec = report.recommendation
        report.recommendation = dataclasses.replace(rec, reason=wizard_text(rec.reason))
        return report

    def mode_blocker(self, report: Report, mode: Mode) -> Blocker | None:
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.plan import mode_blocker

        blocker = mode_blocker(report, mode)
        if blocker is None:
            return None
        return dataclasses.replace(
            blocker, reason=wizard_text(blocker.reason), remedy=wizard_text(blocker.remedy)
        )

    def inner_sandbox_preset(self, report: Report, mode: Mode) -> InnerSandbox:
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.plan import default_inner_sandbox

        return default_inner_sandbox(report, mode)

    def apparmor_restricted(self, report: Report) -> bool:
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.apparmor import restriction_found

        return restriction_found(report)

    def default_settings_scope(self, mode: Mode) -> SettingsScope:
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.plan import default_settings_scope

        return default_settings_scope(mode, self.operator_is_root)

    # -- answers (the same rules as the headless path) -------------------
    def validate_workspaces(
        self, text: str, mode: Mode, agent_user: str, create: bool = False
    ) -> tuple[tuple[PurePosixPath, ...], str | None]:
        """Parse a comma-separated list; the error names the path and why (``create``:
        a missing directory is the plan's to create, not an error)."""
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.answers import workspace_problem

        paths: list[PurePosixPath] = []
        for raw in (part.strip() for part in text.split(",")):
            if not raw:
                continue
            path = PurePosixPath(raw)
            problem = workspace_problem(path, self.layout, mode, agent_user, create)
            if problem is not None:
                return (), wizard_text(problem)
            if path not in paths:
                paths.append(path)
        return tuple(paths), None

    def validate_new_workspace(
        self, owner: str, mode_text: str, mode: Mode, agent_user: str
    ) -> tuple[str, int, str | None, str | None]:
        """The owner and mode of a workspace the plan creates, by the headless path's
        rules (:func:`sandbox_setup.configure.answers.new_workspace_problem`)."""
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.answers import Answers, new_workspace_problem
        from sandbox_setup.policy.new_workspace import DEFAULT_MODE, parse_mode

        owner = owner.strip() or self.layout.operator.name
        parsed = parse_mode(mode_text or f"{DEFAULT_MODE:04o}")
        if isinstance(parsed, str):
            return owner, DEFAULT_MODE, wizard_text(parsed), "new-ws-mode"
        answers = Answers(
            mode, agent_user=agent_user, create_workspaces=True, workspace_owner=owner,
            workspace_mode=parsed,
        )  # fmt: skip
        refused = new_workspace_problem(answers, self.layout)
        if refused is None:
            return owner, parsed, None, None
        key, problem = refused
        return owner, parsed, wizard_text(problem), NEW_WORKSPACE_FIELDS[key]

    def validate_agent_user(
        self, name: str, mode: Mode, reuse: bool = False
    ) -> tuple[str | None, str | None]:
        """(error, the field at fault: "agent-user", or "reuse-account" for an existing
        account not asked to be reused). The name's rules, then, for an account that
        exists already and would be a separate agent: the headless path's judgement. An
        account sandbox-setup created (this setup's agent, on a re-run) is its own, no
        reuse needed; any other is reused only when asked to, and only if it passes
        every rule (the refusal's reasons are the message)."""
        problem = agent_name_problem(name, unsafe=mode is Mode.UNSAFE)
        if problem is not None:
            return wizard_text(problem), "agent-user"
        if mode is Mode.UNSAFE or name == self.layout.operator.name:
            return None, None
        account = lookup_user(name, self.layout.root)
        if account is None:
            return None, None
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.accounts.agent_account import check_agent_account
        from sandbox_setup.configure.ledger import created_accounts

        try:
            if not reuse and name not in created_accounts(self.layout):
                return (
                    f"the account {name} already exists; tick 'Reuse an existing account' to "
                    "make it the agent (it must pass every rule), or pick a new name"
                ), "reuse-account"
            check_agent_account(self.layout, name, account, reuse=reuse)
        except SetupError as exc:  # a refused rule, or a ledger that fails the trust rule
            return error_text(exc), "agent-user"
        return None, None

    def validate_claude(self, text: str) -> tuple[PurePosixPath | None, str | None]:
        raw = text.strip()
        if not raw:
            return None, None
        path = PurePosixPath(raw)
        if not path.is_absolute():
            return None, f"Claude binary {raw!r} is not an absolute path"
        if not self.layout.real(path).is_file():
            where = "" if self.layout.live else f" (under the root {self.layout.root})"
            return None, f"Claude binary {raw} is not a file{where}"
        return path, None

    def validate_network(
        self, mode: Mode, network: Network, domains: str, ports: str
    ) -> tuple[tuple[str, ...], tuple[int, ...], str | None, str | None]:
        """(patterns, ports, error, the field at fault: "domains" or "ports"), by the
        rules of the flags, in their order
        (:func:`sandbox_setup.configure.answers.check_network`); each rule is asked
        about one field, so the field at fault is known, never read from the text."""
        patterns = tuple(dict.fromkeys(_items(domains)))
        numbers: list[int] = []
        try:
            for item in _items(ports):
                numbers.append(parse_port(item, "loopback port"))
        except InputError as exc:
            return (), (), error_text(exc), "ports"
        loopback = tuple(dict.fromkeys(numbers))
        problem = network_choice_problem(mode, network)
        if problem is not None:  # not a choice the details step offers
            return (), (), wizard_text(problem), "domains"
        if patterns or loopback:
            at = "domains" if patterns else "ports"
            what = "allow-domain" if patterns else "allow-loopback-port"
            problem = allowances_problem(mode, network, what)
            if problem is not None:
                return (), (), wizard_text(problem), at
        for pattern in patterns:
            try:
                parse_domain_pattern(pattern)
            except InputError as exc:
                return (), (), error_text(exc), "domains"
        for port in loopback:
            problem = proxy_port_problem(mode, port)
            if problem is not None:
                return (), (), wizard_text(problem), "ports"
        return patterns, loopback, None, None

    def validate_pass_env(self, text: str, mode: Mode) -> tuple[tuple[str, ...], str | None]:
        try:
            return validate_pass_names(_items(text), mode, "variable"), None
        except InputError as exc:
            return (), error_text(exc)

    def validate_limits(
        self, tasks: str, memory: str, tmpfs: str
    ) -> tuple[Limits | None, str | None, str | None]:
        """(limits, error, the field at fault: "tasks", "memory" or "tmpfs")."""
        text = tasks.strip()
        try:
            number = parse_tasks(int(text) if text.isdigit() else text, "tasks")
        except InputError as exc:
            return None, error_text(exc), "tasks"
        try:
            mem = parse_size(memory, "memory", percent=True)
        except InputError as exc:
            return None, error_text(exc), "memory"
        try:
            tmp = parse_size(tmpfs, "tmpfs size")
        except InputError as exc:
            return None, error_text(exc), "tmpfs"
        return Limits(number, mem, tmp), None, None

    def acceptance_label(self) -> str:
        operator = self.layout.operator
        return acceptance_label(operator.name, operator.uid, os.environ)

    def saved_answers(self) -> Answers | None:
        """The answers of the last apply, if any (for the audit's fix)."""
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.answers import load_answers
        from sandbox_setup.configure.state_trust import check_setup_file

        path = self.layout.real(self.layout.answers)
        if not path.is_file():
            return None
        # Its fix replays them as root: they must pass the trust rule (exit 3). The
        # audit view shows why a file is refused (error_words).
        check_setup_file(self.layout, self.layout.answers, "answers file")
        return load_answers(path)

    # -- plan and apply --------------------------------------------------
    def build_plan(self, report: Report, answers: Answers) -> Plan:
        """Raises ``RefusedError``/``InputError`` (reason and remedy; the screen
        words them, :meth:`error_words`) when the report or the answers rule the plan
        out."""
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.host_facts import gather_host_facts
        from sandbox_setup.configure.plan import build_plan

        facts = gather_host_facts(report, self.layout, answers)
        plan = build_plan(report, answers, self.layout, source=SOURCE, facts=facts)
        # Notes are only shown (the review), never applied: in the wizard's words.
        plan.notes = [wizard_text(note) for note in plan.notes]
        plan.network = [wizard_text(line) for line in plan.network]
        plan.warnings = [wizard_text(warning) for warning in plan.warnings]
        return plan

    def describe(self, action: Action) -> str:
        """What a plan step does, in the wizard's words ("reused: --reuse-account"
        is the CLI's); the review and the apply log say the same."""
        return wizard_text(action.describe())

    def apply(self, plan: Plan, progress: ProgressCallback) -> ApplyResult:
        """Apply ``plan``; on failure the core rolls back and re-raises. Progress
        reports each action once, when it has finished (``running`` is not a line)."""
        # why: first paint (see the note at the top)
        from sandbox_setup.configure.apply import apply_plan

        def report_progress(action: Action, status: str, description: str) -> None:
            if status == "running":
                progress(wizard_text(description), False)
            else:
                progress(f"{status:>9}  {wizard_text(description)}", True)

        return apply_plan(plan, progress=report_progress)

    def error_words(self, exc: BaseException) -> str:
        """What a screen shows for an error the core raised: in the wizard's words
        (its typed parts worded here; the exception itself is left as it was)."""
        return error_text(exc)

    def login_note(self, answers: Answers, environ: Mapping[str, str] | None = None) -> str | None:
        """What the done screen says when the agent has no Claude login, and how to
        give it one; None when it has one, runs as the operator (with theirs), or the
        operator's environment (``environ``, default this process's) has a key or token
        the launcher passes (Claude uses that)."""
        if answers.mode is Mode.UNSAFE or answers.agent_user == self.layout.operator.name:
            return None
        environ = os.environ if environ is None else environ
        if passed_credential(environ, passed_names(answers.pass_env)) is not None:
            return None
        account = lookup_user(answers.agent_user, self.layout.root)
        home = (
            PurePosixPath(account.home) if account else PurePosixPath("/home") / answers.agent_user
        )
        login = self.layout.real(home / ".claude/.credentials.json")
        try:
            if login.is_file():
                return None
        except OSError:
            pass
        launch = (
            "sandbox-launch" if self.layout.live else f"sandbox-launch (under {self.layout.root})"
        )
        return (
            f"The agent {answers.agent_user} has no Claude login yet ({home}/.claude/"
            ".credentials.json is missing). Give it one: start Claude with "
            f"{launch} and type /login (the login stays in the agent's home); or export "
            "ANTHROPIC_API_KEY before sandbox-launch (it is passed by default); or run the "
            "wizard again with 'Copy my Claude login' ticked."
        )

    # -- audit -----------------------------------------------------------
    def status_text(self, width: int) -> tuple[str, str]:
        # why: only when the status is opened
        from sandbox_setup.commands.status import status_text

        return status_text(self.layout, width)

    def undo_preview(self) -> list[str]:
        # why: only when Undo is opened
        from sandbox_setup.commands.undo import undo_preview

        return undo_preview(self.layout)

    def undo_last(self) -> tuple[list[str], bool]:
        # why: only when Undo is confirmed
        from sandbox_setup.commands.undo import undo_last_lines

        return undo_last_lines(self.layout)

    def audit(self) -> AuditReport:
        # why: first paint (see the note at the top)
        from sandbox_setup.audit.runner import audit

        report = audit(self.layout)
        report.findings = [
            dataclasses.replace(
                f,
                summary=wizard_text(f.summary),
                detail=wizard_text(f.detail),
                remedy=wizard_text(f.remedy),
            )
            for f in report.findings
        ]
        if report.report is not None:
            report.report.findings = [_in_words(f) for f in report.report.findings]
        self.last_audit = report
        return report

    def report_for_fix(self) -> Report:
        if self.last_audit is None or self.last_audit.report is None:
            raise RuntimeError("report_for_fix before an audit")
        return self.last_audit.report
