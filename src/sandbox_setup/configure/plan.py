"""``build_plan``: answers + the probe report -> an ordered list of actions.

Public API (the TUI, the audit and the headless path build on it):

- :func:`build_plan` ``(report, answers, layout, *, facts) -> Plan``. It reads no
  live host fact and runs no program: the probed bwrap and socat (and whether root may
  trust them), the operator's environment, the clock and the Claude Code binary with its
  ``--version`` (or why none was found) come in ``facts``
  (:func:`sandbox_setup.configure.host_facts.gather_host_facts`, called once at the
  edge, for these answers). It reads the target's own files under ``layout.root``
  (passwd, the existing files it merges) and writes nothing. It
  raises :class:`~sandbox_setup.base.errors.RefusedError` (exit 3) with the reason and the
  remedy when the report rules the choice out (sandbox mode where
  ``bwrap.sandbox`` failed, an inner sandbox strength the nested probes did not
  verify or whose ``claude.sandbox_deps`` failed, unsafe without acceptance) and
  :class:`~sandbox_setup.base.errors.InputError` (exit 2) for bad input (a workspace
  that does not exist, a settings file that is not valid JSON or is a symlink, ...).
- :class:`Plan`: ``.actions`` (see :mod:`sandbox_setup.configure.actions`), ``.launcher_config``,
  ``.answers`` (resolved: every default filled in, what answers.toml records so
  a replay is byte-identical), ``.layout``, ``.notes``; ``.changes()``.

Order of actions: workspace group (one per setup, :func:`sandbox_setup.policy.accounts.
workspace_group`), agent user (created, or an existing one the account rules
accept: :mod:`sandbox_setup.configure.accounts.agent_account`), group membership, leaving the
legacy shared group, workspace ACLs, Claude binary copy, login copy, Claude
settings, root's protected git settings and the includes of them
(:mod:`sandbox_setup.configure.git_protect`), the agent's login routes, on request the
AppArmor profile for bwrap (:mod:`sandbox_setup.configure.apparmor`), launcher.toml, the
setup ledger (:mod:`sandbox_setup.configure.ledger`), answers.toml, and
(``install_claude_shim``) the claude shim (:mod:`sandbox_setup.configure.claude_shim`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox_setup.base import remedies
from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.base.choices import (
    EVERY_USER,
    BaseUrlPort,
    InnerSandbox,
    Mode,
    Network,
    SettingsScope,
)
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig, UnsafeAcceptance, load_toml
from sandbox_setup.base.limits import Limits
from sandbox_setup.base.message import Act, Message, Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.causes import SWITCH_CAUSE
from sandbox_setup.checks.model import Report, Status, cause_key
from sandbox_setup.configure import fsops
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.accounts.agent_account import check_agent_account
from sandbox_setup.configure.accounts.agent_setup import account_actions, ledger_action
from sandbox_setup.configure.accounts.login_routes import login_route_actions
from sandbox_setup.configure.actions import Action, CreateWorkspace, WorkspaceAccess, WriteFile
from sandbox_setup.configure.answers import (
    Answers,
    default_network,
    new_workspace_mode,
    new_workspace_owner,
    validate_answers,
)
from sandbox_setup.configure.answers_file import render_answers
from sandbox_setup.configure.apparmor import apparmor_actions
from sandbox_setup.configure.claude_binary import INSTALLED_CLAUDE, ClaudeBinary
from sandbox_setup.configure.claude_shim import leftover_shim_note, shim_actions, shim_removal
from sandbox_setup.configure.git_protect import protected_git_actions
from sandbox_setup.configure.host_facts import HostFacts
from sandbox_setup.configure.inner_sandbox import check_sandbox_deps, sandbox_keys
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.configure.ledger import SetupRecord
from sandbox_setup.configure.network_plan import check_egress, plan_network, user_mode_lines
from sandbox_setup.configure.probes import STAND_IN
from sandbox_setup.configure.settings import SandboxKeys, managed_domains_only, merge_settings
from sandbox_setup.policy.accounts import AccountFacts, workspace_group
from sandbox_setup.policy.claude_release import required_minimum
from sandbox_setup.policy.credentials import COPY_LOGIN_NOTE
from sandbox_setup.policy.environment import base_url_plan_note, passed_names
from sandbox_setup.policy.network import inner_proxy_port
from sandbox_setup.policy.tool_paths import tools_problem
from sandbox_setup.policy.unsafe import UNSAFE_STATEMENT, acceptance_label


@dataclass
class Plan:
    """What an apply would do, in order, and the configuration it records."""

    answers: Answers
    layout: Layout
    launcher_config: LauncherConfig
    actions: list[Action]
    notes: list[str] = field(default_factory=list)
    # What the agent's network is (sandbox_setup.configure.network_plan), shown with the actions.
    network: list[str] = field(default_factory=list)
    # What the operator must know before applying (an allowance that opens loopback, ...).
    warnings: list[str] = field(default_factory=list)

    def changes(self) -> list[Action]:
        """The actions that would change something now."""
        return [a for a in self.actions if a.is_change()]


def _finding_text(report: Report, check_id: str) -> Message:
    """What a check found, with its remedy, keeping the finding's typed parts (each face
    words the options its remedy names: base/message.py)."""
    finding = report.get(check_id)
    if finding is None:
        return message(f"{check_id} was not run")
    remedy = (" Remedy: ", finding.remedy) if finding.remedy else ()
    return message(f"{check_id} is {finding.status}: ", finding.summary, *remedy)


def _findings_text(report: Report, check_ids: Sequence[str]) -> Message:
    """:func:`_finding_text` of each check, joined by "; "."""
    parts: list[str] = []
    for index, check_id in enumerate(check_ids):
        parts += ["; "] if index else []
        parts.append(_finding_text(report, check_id))
    return message(*parts)


@dataclass(frozen=True)
class Blocker:
    """Why the host rules a mode out, and the command that fixes it."""

    check_id: str
    reason: str
    remedy: str


# launch.path's cause when only the allowlist network's set-up was refused: a launch
# with --network host or none does not make it (sandbox_setup.checks.launch).
LAUNCH_NETWORK_CAUSE = "launch-network"


def _launch_blocker(report: Report, network: Network | None) -> Blocker | None:
    """launch.path failed: a launch would be refused (when it ran; older reports lack it)."""
    finding = report.get("launch.path")
    if finding is None or finding.status in (Status.PASS, Status.SKIP):
        return None
    if cause_key(finding) == LAUNCH_NETWORK_CAUSE and network not in (None, Network.ALLOWLIST):
        return None
    return Blocker(
        "launch.path",
        f"launch.path: {finding.summary}",
        finding.remedy or remedies.rerun_checks("launch.path"),
    )


def _switch_blocker(report: Report) -> Blocker | None:
    """Root here cannot become another account (the probes' and the launcher's id
    change was refused: a container without CAP_SETUID or CAP_SETGID), and every
    launch of sandbox and user mode runs the agent as one."""
    for check_id in ("launch.path", "bwrap.sandbox"):
        finding = report.get(check_id)
        if finding is not None and cause_key(finding) == SWITCH_CAUSE:
            return Blocker(
                check_id,
                f"{check_id}: {finding.summary}",
                finding.remedy or remedies.rerun_checks(check_id),
            )
    return None


def mode_blocker(report: Report, mode: Mode, network: Network | None = None) -> Blocker | None:
    """Whether ``report`` rules ``mode`` out. ``sandbox`` needs bubblewrap that can
    start a sandbox here, and a launcher that can verify it (and, with ``network``
    allowlist, the default, set up its network); ``user`` (and ``sandbox``) a root
    that can become the agent: the TUI greys the mode out with this reason; the plan
    refuses with it."""
    if mode is Mode.USER:
        return _switch_blocker(report)
    if mode is not Mode.SANDBOX:
        return None
    # bwrap.sandbox is the live experiment; a missing bwrap fails it with that cause.
    check_id = "bwrap.sandbox"
    finding = report.get(check_id)
    if finding is not None and finding.status is Status.PASS:
        return _launch_blocker(report, network)
    summary = finding.summary if finding else f"{check_id} was not checked"
    remedy = finding.remedy if finding else remedies.rerun_checks(check_id)
    return Blocker(check_id, f"{check_id}: {summary}", remedy or remedies.rerun_checks(check_id))


def _check_mode(report: Report, answers: Answers) -> None:
    network = answers.network or default_network(answers.mode)
    blocker = mode_blocker(report, answers.mode, network)
    if blocker is not None and answers.mode is Mode.USER:
        raise RefusedError(
            message(
                "user mode needs a root that can become the agent, but ",
                _finding_text(report, blocker.check_id),
            )
        )
    if blocker is not None:
        needs = (
            "a launcher that can verify its sandbox and set up its network"
            if blocker.check_id == "launch.path"
            else "a working bubblewrap sandbox"
        )
        raise RefusedError(
            message(
                f"sandbox mode needs {needs}, but ",
                _finding_text(report, blocker.check_id),
                " ",
                Ref(Option.MODE, Act.CHOOSE, value="user", capital=True, cli="or choose"),
                " (a dedicated non-root user).",
            )
        )


# Which probes verify each inner-sandbox strength: in sandbox mode Claude's sandbox runs
# inside the launcher's (the nested probes); in user and unsafe modes nothing wraps it
# (the direct probes). A stronger form that works verifies the weaker one too.
INNER_PROBES = {
    Mode.SANDBOX: {"strong": ("bwrap.nested",), "weak": ("bwrap.nested", "bwrap.nested_weak")},
    Mode.USER: {"strong": ("bwrap.direct",), "weak": ("bwrap.direct", "bwrap.direct_weak")},
}
# A report without the direct probes (made by an older version): bwrap.sandbox stood in.
LEGACY_DIRECT = ("bwrap.sandbox",)


def inner_probes(report: Report, mode: Mode, inner: str) -> tuple[str, ...]:
    """The check IDs any one of which verifies ``inner`` (strong/weak) for ``mode``."""
    probes = INNER_PROBES[Mode.SANDBOX if mode is Mode.SANDBOX else Mode.USER][inner]
    if mode is not Mode.SANDBOX and not any(report.get(c) for c in probes):
        return LEGACY_DIRECT
    return probes


def default_inner_sandbox(report: Report, mode: Mode) -> InnerSandbox:
    """The strongest inner-sandbox form the probes of ``mode`` verified: Claude's own
    sandbox in the form it would start in that mode (never weaker by default)."""
    for strength in (InnerSandbox.STRONG, InnerSandbox.WEAK):
        if any(report.passed(c) for c in inner_probes(report, mode, strength)):
            return strength
    return InnerSandbox.OFF


def unsandboxed_note(report: Report, mode: Mode) -> str:
    """What the plan says when Claude's own sandbox is off: where its Bash runs, and why."""
    probes = inner_probes(report, mode, "weak")
    why = _findings_text(report, probes)
    if mode is Mode.SANDBOX:
        return message(
            "Claude Code's own sandbox is off: its Bash commands run without it, contained "
            "only by the launcher's sandbox (",
            why,
            ")",
        )
    who = "as root" if mode is Mode.UNSAFE else "as the agent"
    return message(
        f"Claude Code's Bash will run unsandboxed ({who}, with nothing but the account's "
        "own rights around it): no form of Claude Code's own sandbox works here (",
        why,
        ")",
    )


def default_settings_scope(mode: Mode, operator_is_root: bool) -> SettingsScope:
    """Managed (root-owned, out of the agent's reach) where root sets up a separate
    agent; the user's own settings in unsafe mode and for a non-root operator."""
    if mode is Mode.UNSAFE or not operator_is_root:
        return SettingsScope.USER
    return SettingsScope.MANAGED


def _check_inner(report: Report, mode: Mode, inner: str) -> None:
    if inner == "off":
        return
    needed = inner_probes(report, mode, inner)
    if not any(report.passed(check_id) for check_id in needed):
        verified = str(default_inner_sandbox(report, mode))
        raise RefusedError(
            message(
                f"inner sandbox {str(inner)!r} was not verified on this host: ",
                _findings_text(report, needed),
                ". ",
                Ref(Option.INNER_SANDBOX, Act.CHOOSE, value=verified, capital=True),
                " (what the probes verified) or fix the cause.",
            )
        )


def _settings_scope(answers: Answers, layout: Layout) -> SettingsScope:
    scope = answers.settings_scope or default_settings_scope(answers.mode, layout.operator.uid == 0)
    if scope == SettingsScope.MANAGED and layout.operator.uid != 0:
        raise InputError(
            message(
                "settings_scope 'managed' writes /etc/claude-code/managed-settings.json and "
                "needs root; ",
                Ref(Option.SETTINGS_SCOPE, Act.USE, value="user"),
            )
        )
    return scope


def _current_config(layout: Layout) -> Mapping[str, Any]:
    """The current launcher.toml as data, read once (an apply keeps the operator's edits,
    an earlier acceptance and a recorded version from it); {} when missing or unreadable
    (the write action reports a malformed file with its name and line)."""
    try:
        state = fsops.read_file(layout.root, layout.real(layout.launcher_config))
        return load_toml(state.data.decode("utf-8"), "launcher.toml") if state else {}
    except (InputError, UnicodeDecodeError):
        return {}


def _kept_user_landlock(current: Mapping[str, Any]) -> bool:
    """``[user] landlock`` of the current launcher.toml (the operator's; an apply keeps
    it): True when missing or not a boolean (the launcher refuses that file anyway)."""
    user = current.get("user")
    value = user.get("landlock", True) if isinstance(user, dict) else True
    return value if isinstance(value, bool) else True


def _kept_base_url_port(current: Mapping[str, Any]) -> BaseUrlPort:
    """``[sandbox] base_url_port`` of the current launcher.toml (the operator's edit; an
    apply keeps it): the launcher's default ``auto`` when missing or not a known value."""
    sandbox = current.get("sandbox")
    value = sandbox.get("base_url_port") if isinstance(sandbox, dict) else None
    return BaseUrlPort.OFF if value == BaseUrlPort.OFF.value else BaseUrlPort.AUTO


def _acceptance(
    answers: Answers, layout: Layout, facts: HostFacts, old: Mapping[str, Any]
) -> tuple[str, str]:
    """Who accepted unsafe mode and when; an earlier identical acceptance is kept so
    re-running does not rewrite launcher.toml."""
    who = answers.accepted_by or acceptance_label(
        layout.operator.name, layout.operator.uid, facts.environ
    )
    if answers.accepted_at:
        return who, answers.accepted_at
    unsafe = old.get("unsafe")
    if (
        old.get("mode") == "unsafe"
        and isinstance(unsafe, dict)
        and unsafe.get("accepted_by") == who
        and isinstance(unsafe.get("accepted_at"), str)
    ):
        return who, unsafe["accepted_at"]
    return who, facts.now


def _claude_version(old: Mapping[str, Any], found: str | None, path: PurePosixPath) -> str | None:
    """``claude --version`` as the edge read it, or (when it could not run there, e.g.
    the audit inside a container) the version recorded for the same path: unknown is
    not "none"."""
    if found is not None:
        return found
    recorded = old.get("claude_version")
    if old.get("claude") == str(path) and isinstance(recorded, str):
        return recorded
    return None


def _render_launcher(layout: Layout, config: LauncherConfig) -> Callable[[bytes | None], bytes]:
    def render(current: bytes | None) -> bytes:
        text = None
        source = str(layout.launcher_config)
        if current is not None:
            try:
                text = current.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{source}: not UTF-8 ({exc.reason} at byte {exc.start}); fix or remove it "
                    "(left untouched)"
                ) from None
            try:
                load_toml(text, source)  # the one loader: a bad line or deep nesting
            except InputError as exc:
                raise InputError(f"{exc}; fix or remove it (left untouched)") from None
        return render_launcher_config(config, text, source).encode("utf-8")

    return render


def root_run_tools(
    layout: Layout, claude: PurePosixPath, facts: HostFacts
) -> dict[str, PurePosixPath]:
    """The resolved target paths of what root runs for a launch: the Claude binary, the
    launcher's tools (as found on the target's standard PATH) and this installation
    (``facts.installation``, a live apply's)."""
    tools = {"the Claude binary": claude}
    for name in ("bwrap", "setpriv", "sandbox-launch", "sandbox-setup"):
        for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"):
            candidate = PurePosixPath(directory) / name
            if layout.real(candidate).exists():
                tools[name] = layout.resolve(candidate)
                break
    tools.update(facts.installation)
    return tools


def probes_note(as_user: str | None, operator: str, agent: str, agent_exists: bool) -> str:
    """The plan's note when the checks that start a test sandbox ran as someone other
    than the agent (``as_user`` None: the operator), in plain words."""
    why = "it does not exist yet" if not agent_exists else "the checks could not switch to it"
    if as_user is None:
        return (
            f"the host checks that start a test sandbox ran as you ({operator}), not as "
            f"the agent {agent} ({why}); a check that passes for you can fail for the agent"
        )
    if as_user == STAND_IN:
        return (
            f"the host checks that start a test sandbox ran as {as_user}, an account with "
            f"no privileges, standing in for the agent {agent} ({why}); the agent has none "
            "either, so they should find the same for it"
        )
    return (
        f"the host checks that start a test sandbox ran as {as_user}, not as the agent "
        f"{agent} ({why})"
    )


def _check_reachable(layout: Layout, workspace: PurePosixPath) -> None:
    """The agent must be able to walk to a workspace. Granting it --x on a private
    directory (say /root) would let it open every guessable file there, so such a
    workspace is refused instead."""
    for parent in reversed(workspace.parents):
        if str(parent) == "/":
            continue
        if not os.path.lexists(layout.real(parent)):
            return  # the plan creates it and what is below, 0755 (CreateWorkspace)
        st = os.stat(layout.real(parent))
        if not st.st_mode & stat.S_IXOTH:
            raise InputError(
                message(
                    f"workspace {workspace}: the agent user cannot enter {parent} (mode "
                    f"{stat.S_IMODE(st.st_mode):04o}), and opening it would expose the rest "
                    f"of {parent}; move the project outside private homes (e.g. /srv/"
                    f"{workspace.name}) and ",
                    Ref(Option.WORKSPACE, Act.PASS, cli="pass that as"),
                )
            )


def build_plan(
    report: Report, answers: Answers, layout: Layout, source: str = "answers", *, facts: HostFacts
) -> Plan:
    """The plan for ``answers`` on the host described by ``report`` and ``facts``; see
    the module doc. Reads no live host fact itself (``facts`` carries them).

    ``source`` names where the answers came from in error messages (the answers
    file, or the command line)."""
    validate_answers(answers, layout, source)
    choices = _resolve_choices(report, facts, answers, layout)
    agent = _resolve_agent(answers, layout)
    claude = _trusted_claude(answers, layout, facts, agent, source)
    keys = _keys_for_claude(choices.keys, answers, claude)
    notes = _opening_notes(report, answers, choices, agent, layout)

    actions: list[Action] = [
        *_workspace_actions(layout, answers, agent, notes),
        *_claude_copy_actions(layout, agent, claude),
        *_login_copy_actions(layout, answers, agent, notes),
        _settings_action(layout, choices.scope, keys, agent),
        # Before the launcher config: by the time a session can start, root's git
        # already refuses what a workspace could plant for it.
        *protected_git_actions(layout, answers.mode, agent.name, answers.workspaces, notes),
        # And the agent has no way in but the launcher: no login, no scheduled job.
        *login_route_actions(layout, answers.mode, agent.name, notes),
        # On request, the AppArmor profile that lets bwrap create user namespaces (Ubuntu).
        *apparmor_actions(layout, report, facts.bwrap, answers.apparmor_bwrap_profile, notes),
    ]
    current = _current_config(layout)  # launcher.toml now: what an apply keeps of it
    resolved = _resolved_answers(answers, layout, facts, current, choices, claude)
    launcher_claude = _launcher_claude(agent, claude)
    config = _launcher_config(resolved, layout, current, agent, launcher_claude, claude)
    notes += _base_url_notes(config, layout, current, facts)
    actions += _record_actions(layout, config, resolved, agent)
    # Last: root's claude is routed only once the config it runs exists.
    actions += _shim_actions(layout, answers, claude, facts, notes)
    _judge_files(actions)
    lines, warnings = _network_lines(report, facts, resolved, current)
    return Plan(resolved, layout, config, actions, notes, lines, warnings)


@dataclass(frozen=True)
class _Choices:
    """What the answers choose, resolved against the report (every default filled in)."""

    inner: InnerSandbox
    network: Network
    scope: SettingsScope
    keys: SandboxKeys


def _resolve_choices(
    report: Report, facts: HostFacts, answers: Answers, layout: Layout
) -> _Choices:
    """The mode, inner sandbox, network and settings scope, each refused (exit 3) where
    the report rules it out, and the owned sandbox keys they make."""
    _check_mode(report, answers)
    inner = answers.inner_sandbox or default_inner_sandbox(report, answers.mode)
    _check_inner(report, answers.mode, inner)
    check_sandbox_deps(report, inner)
    network = answers.network or default_network(answers.mode)
    check_egress(report, answers.mode, network)
    scope = _settings_scope(answers, layout)
    keys = replace(
        sandbox_keys(facts, inner, scope),
        proxy_port=inner_proxy_port(answers.mode, network, inner),
    )
    return _Choices(InnerSandbox(inner), network, scope, keys)


@dataclass(frozen=True)
class _Agent:
    """Who the agent is: its account (None: the apply creates it), its home, its group."""

    name: str
    # A separate account (sandbox and user mode, unless it is the operator's own).
    separate: bool
    account: Account | None
    facts: AccountFacts | None
    home: PurePosixPath
    # The workspace group (one per setup), where there are workspaces to share.
    group: str | None


def _resolve_agent(answers: Answers, layout: Layout) -> _Agent:
    """The agent account, refused (exit 3) where it breaks an account rule."""
    operator = layout.operator
    separate = answers.mode is not Mode.UNSAFE and answers.agent_user != operator.name
    name = answers.agent_user if answers.mode is not Mode.UNSAFE else operator.name
    account = lookup_user(name, layout.root)
    if account is not None and account.uid == 0 and answers.mode is not Mode.UNSAFE:
        raise RefusedError(f"agent user {name} has uid 0; choose a non-root agent user")
    facts = None
    if separate:
        facts = check_agent_account(layout, name, account, reuse=answers.reuse_account)
    if separate and account is None and operator.uid != 0:
        raise RefusedError(
            message(
                f"agent user {name} does not exist and creating users needs root; run as root or ",
                Ref(Option.AGENT_USER, Act.PASS, value=operator.name),
                " (your own account)",
            )
        )
    home = PurePosixPath(account.home) if account else PurePosixPath("/home") / name
    group = workspace_group(name) if separate and answers.workspaces else None
    return _Agent(name, separate, account, facts, home, group)


def _trusted_claude(
    answers: Answers, layout: Layout, facts: HostFacts, agent: _Agent, source: str
) -> ClaudeBinary:
    """The Claude binary the edge found (its input error where none was), refused
    where root would run what others can change."""
    claude = facts.claude.found(answers.claude)
    if not claude.trusted:
        # Unsafe mode would run it as root; in the other modes the launcher refuses a
        # binary root does not own, so the config could never launch.
        why = "runs Claude Code as root" if answers.mode is Mode.UNSAFE else "launcher execs it"
        raise RefusedError(
            message(
                f"{claude.resolved}: {answers.mode} mode's {why}, but this binary (or a "
                "directory above it) can be changed by a user other than root or you; "
                "install Claude Code where only root can write (e.g. npm -g as root) and ",
                Ref(Option.CLAUDE, Act.PASS),
            )
        )
    if answers.mode is not Mode.UNSAFE:
        tools = root_run_tools(layout, claude.resolved, facts)
        for ws in answers.workspaces:
            problem = tools_problem(ws, tools)
            if problem is not None:
                raise InputError(f"{source}: {problem}")
    return claude


def _keys_for_claude(keys: SandboxKeys, answers: Answers, claude: ClaudeBinary) -> SandboxKeys:
    """Managed keys with Claude's own sandbox on take the operator's allowlist and,
    since Claude refuses a downgrade, the release floor."""
    if not (keys.managed and keys.on):
        return keys
    return replace(
        keys,
        allowed_domains=tuple(answers.allowed_domains),
        # Sandbox mode only: in user mode 2.1.332 would start a proxy of its own
        # that Landlock lets no listener bind (see managed_domains_only).
        managed_domains_only=managed_domains_only(answers.mode),
        minimum_version=required_minimum(claude.version),
    )


def _opening_notes(
    report: Report, answers: Answers, choices: _Choices, agent: _Agent, layout: Layout
) -> list[str]:
    """What the plan says first: Claude's own sandbox off, probes run as someone else."""
    notes: list[str] = []
    if choices.inner == "off":
        notes.append(unsandboxed_note(report, answers.mode))
    if agent.separate and report.as_user != agent.name:
        notes.append(
            probes_note(report.as_user, layout.operator.name, agent.name, agent.account is not None)
        )
    return notes


def _workspace_actions(
    layout: Layout, answers: Answers, agent: _Agent, notes: list[str]
) -> list[Action]:
    """A workspace that does not exist, created first (the operator asked: validated);
    then the agent's account and its access to each workspace."""
    actions: list[Action] = [
        CreateWorkspace(
            layout, ws, new_workspace_owner(answers, layout), new_workspace_mode(answers)
        )
        for ws in answers.workspaces
        if answers.create_workspaces and not layout.real(ws).is_dir()
    ]
    if not agent.separate:
        return actions
    for ws in answers.workspaces:
        _check_reachable(layout, ws)
    actions += account_actions(layout, agent.name, agent.home, agent.facts, agent.group, notes)
    assert agent.group is not None or not answers.workspaces
    actions += [
        WorkspaceAccess(
            layout, ws, agent.group, agent=agent.name, include_private=answers.include_private
        ).survey()
        for ws in answers.workspaces
        if agent.group is not None
    ]
    return actions


def _launcher_claude(agent: _Agent, claude: ClaudeBinary) -> PurePosixPath:
    """The Claude binary the launcher runs: a private one is copied for the agent."""
    return INSTALLED_CLAUDE if agent.separate and claude.private else claude.path


def _claude_copy_actions(layout: Layout, agent: _Agent, claude: ClaudeBinary) -> list[Action]:
    """A root-owned copy of a Claude binary the agent could not run in place."""
    if not (agent.separate and claude.private):
        return []
    original = layout.real(claude.resolved)

    def read_binary(_current: bytes | None, src: Path = original) -> bytes:
        return src.read_bytes()

    return [
        WriteFile(
            layout,
            INSTALLED_CLAUDE,
            read_binary,
            owner="root",
            label=f"copy of Claude Code {claude.version or ''} from {claude.resolved}",
            mode=0o755,
            enforce=True,
            binary=True,
            kind="install-claude",
        )
    ]


def _login_copy_actions(
    layout: Layout, answers: Answers, agent: _Agent, notes: list[str]
) -> list[Action]:
    """The operator's Claude login, copied for the agent on request."""
    if not (agent.separate and answers.copy_login):
        return []
    copies = _login_copies(layout, agent.name, agent.home)
    notes.append(COPY_LOGIN_NOTE)  # docs/design.md invariant 17: said where it is chosen
    return copies


def _settings_action(
    layout: Layout, scope: SettingsScope, keys: SandboxKeys, agent: _Agent
) -> Action:
    """Claude's settings, its owned keys merged in: managed (root's, every user's) or
    the agent's (the operator's own where there is no separate agent)."""
    operator = layout.operator
    managed = scope == SettingsScope.MANAGED
    settings_path = (
        layout.managed_settings
        if managed
        else Layout.user_settings(agent.home if agent.separate else operator.home)
    )
    owner = "root" if managed else (agent.name if agent.separate else operator.name)
    source_name = str(layout.real(settings_path))  # the file the operator can open
    return WriteFile(
        layout,
        settings_path,
        lambda current: merge_settings(current, source_name, keys),
        owner=owner,
        label=f"Claude settings ({scope} scope"
        + (f": they apply to {EVERY_USER})" if managed else ")"),
        mode=0o644,
        readable_by=agent.name,
        dir_mode=0o755 if managed else 0o700,
    )


def _resolved_answers(
    answers: Answers,
    layout: Layout,
    facts: HostFacts,
    current: Mapping[str, Any],
    choices: _Choices,
    claude: ClaudeBinary,
) -> Answers:
    """The answers with every default filled in (what answers.toml records, so a replay
    is byte-identical), and in unsafe mode who accepted it and when."""
    resolved = replace(
        answers,
        claude=claude.path,
        settings_scope=choices.scope,
        inner_sandbox=choices.inner,
        network=choices.network,
        limits=answers.limits or Limits(),
        extra={},
    )
    if answers.mode is not Mode.UNSAFE:
        return resolved
    who, when = _acceptance(answers, layout, facts, current)
    return replace(resolved, accepted_by=who, accepted_at=when)


def _launcher_config(
    resolved: Answers,
    layout: Layout,
    current: Mapping[str, Any],
    agent: _Agent,
    launcher_claude: PurePosixPath,
    claude: ClaudeBinary,
) -> LauncherConfig:
    """launcher.toml's content for the resolved answers."""
    unsafe = None
    if resolved.mode is Mode.UNSAFE:
        assert resolved.accepted_by is not None and resolved.accepted_at is not None
        unsafe = UnsafeAcceptance(
            accepted_by=resolved.accepted_by,
            accepted_at=resolved.accepted_at,
            statement=UNSAFE_STATEMENT,
        )
    assert resolved.network is not None and resolved.inner_sandbox is not None
    return LauncherConfig(
        mode=resolved.mode,
        claude=launcher_claude,
        agent_user=agent.name,
        agent_home=agent.home
        if resolved.mode is not Mode.UNSAFE
        else PurePosixPath(layout.operator.home),
        workspaces=resolved.workspaces,
        network=resolved.network,
        inner_sandbox=resolved.inner_sandbox,
        allowed_domains=resolved.allowed_domains,
        loopback_ports=resolved.loopback_ports,
        env_pass=passed_names(resolved.pass_env),
        limits=resolved.limits or Limits(),
        claude_version=_claude_version(current, claude.version, launcher_claude),
        unsafe=unsafe,
    )


def _base_url_notes(
    config: LauncherConfig, layout: Layout, current: Mapping[str, Any], facts: HostFacts
) -> list[str]:
    """In sandbox mode, the loopback port a local ANTHROPIC_BASE_URL needs, as the
    launcher will judge it: the kept [sandbox] base_url_port (the operator's). From the
    operator's environment now; the launch says it again."""
    if config.mode is not Mode.SANDBOX:
        return []
    hint = base_url_plan_note(
        facts.environ,
        config.env_pass,
        config.network,
        config.loopback_ports,
        _kept_base_url_port(current),
        root=str(layout.root),
    )
    return [] if hint is None else [hint]


def _record_actions(
    layout: Layout, config: LauncherConfig, resolved: Answers, agent: _Agent
) -> list[Action]:
    """launcher.toml, the setup ledger (root's, for a separate agent) and answers.toml."""
    operator = layout.operator
    op_dirs = 0o700
    actions: list[Action] = [
        WriteFile(
            layout,
            layout.launcher_config,
            _render_launcher(layout, config),
            owner=operator.name,
            label="launcher config",
            dir_mode=op_dirs,
        )
    ]
    if agent.separate and operator.uid == 0:
        group = agent.group
        actions.append(
            ledger_action(
                layout,
                SetupRecord(
                    agent=agent.name,
                    mode=str(resolved.mode),
                    group=group,
                    workspaces=tuple(str(w) for w in resolved.workspaces),
                    created_user=agent.account is None,
                    created_group=group is not None and users.group_gid(layout, group) is None,
                ),
            )
        )
    actions.append(
        WriteFile(
            layout,
            layout.answers,
            render_answers(resolved, str(layout.answers)),
            owner=operator.name,
            label="answers",
            dir_mode=op_dirs,
        )
    )
    return actions


def _shim_actions(
    layout: Layout, answers: Answers, claude: ClaudeBinary, facts: HostFacts, notes: list[str]
) -> list[Action]:
    """The claude shim on request (the sandbox-launch it runs and whether the operator's
    PATH reaches it: facts); this setup's shim removed when no longer asked for; a shim
    left by someone else named."""
    if answers.install_claude_shim:
        return shim_actions(
            layout, claude, answers.mode, notes, facts.environ, facts.sandbox_launch
        )
    removal = shim_removal(layout)
    if removal is not None:
        return [removal]
    leftover = leftover_shim_note(layout)
    if leftover is not None:
        notes.append(leftover)
    return []


def _judge_files(actions: list[Action]) -> None:
    """Judge then render every file now: an existing file someone else could write
    (docs/design.md invariant 12) is a refusal, a malformed one or a symlink an input
    error, before anything is written."""
    for action in actions:
        if isinstance(action, WriteFile):
            action.check_trusted()
    for action in actions:
        if isinstance(action, WriteFile) and not action.binary:
            action.desired()


def _network_lines(
    report: Report, facts: HostFacts, resolved: Answers, current: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """What the agent's network is (user mode: wall by wall), and the warnings."""
    assert resolved.network is not None
    lines, warnings = plan_network(
        resolved.mode,
        resolved.network,
        resolved.allowed_domains,
        resolved.loopback_ports,
        facts.environ,
    )
    if resolved.mode is Mode.USER:
        lines = user_mode_lines(
            report,
            resolved.inner_sandbox is not InnerSandbox.OFF,
            resolved.allowed_domains,
            resolved.loopback_ports,
            landlock_on=_kept_user_landlock(current),
        )
    return lines, warnings


def _login_copies(layout: Layout, agent: str, agent_home: PurePosixPath) -> list[Action]:
    copies: list[Action] = []
    home = PurePosixPath(layout.operator.home)
    for rel in (".claude/.credentials.json", ".claude.json"):
        source = home / rel
        if fsops.read_file(layout.root, layout.real(source)) is None:
            continue

        def read(_current: bytes | None, src: PurePosixPath = source) -> bytes:
            state = fsops.read_file(layout.root, layout.real(src))
            if state is None:
                raise InputError(f"{src}: disappeared while copying the Claude login")
            return state.data

        copies.append(
            WriteFile(
                layout,
                agent_home / rel,
                read,
                owner=agent,
                label=f"copy of {source}",
                mode=0o600,
                dir_mode=0o700,
                enforce=True,
                secret=True,
                kind="copy-login",
            )
        )
    if not copies:
        raise InputError(
            message(
                f"copy_login: no Claude login to copy ({home}/.claude/.credentials.json and "
                f"{home}/.claude.json are missing); log in first or ",
                Ref(Option.COPY_LOGIN, Act.DROP),
            )
        )
    return copies


__all__ = ["Plan", "Status", "build_plan", "default_inner_sandbox", "default_settings_scope"]
