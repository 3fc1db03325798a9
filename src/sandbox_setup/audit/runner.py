"""``sandbox-setup --audit [--json] [--root DIR]``: does the setup still hold?

Loads ``launcher.toml`` and ``answers.toml`` (missing or unreadable: exit 2,
naming the file), re-runs the checks with live probes as the agent user, and
compares three things:

- drift (:mod:`sandbox_setup.audit.drift`): what the saved answers would write now
  against what is on disk, a diff per file;
- the mode against the host (:mod:`sandbox_setup.audit.mode`): sandbox mode needs
  ``bwrap.sandbox`` and the nested probe of its inner strength; the Claude
  binary is there and is the version recorded at apply;
- the launcher's safety rules (:mod:`sandbox_setup.audit.safety`): owners and modes of
  the config, the agent home and workspaces; no sudoers entry; locked password.

Finding IDs (stable; ``--json`` carries id, severity, summary, detail, remedy,
diff, accepted):

- drift: ``audit.drift.settings``, ``.launcher_config``, ``.answers``,
  ``.claude_binary``, ``.copy_login``, ``.file``, ``.workspace_access``,
  ``.add_to_group``, ``.create_user``/``.create_group``, ``.unavailable`` (the
  plan is refused now or failed, or the Claude binary is untrusted);
- mode: ``audit.mode.bwrap_sandbox``, ``.bwrap_nested``, ``.bwrap_nested_weak``;
  ``audit.claude.missing``, ``audit.claude.changed``;
- safety: ``audit.safety.config_{owner,mode}``, ``.answers_{owner,mode}``,
  ``.config_dir``, ``.settings_{owner,mode}``, ``.settings_dir``,
  ``.claude_binary_{owner,mode}``, ``.claude_dir``, ``.agent_missing``,
  ``.agent_home``, ``.workspace_missing``, ``.workspace_mode``,
  ``.workspace_access``, ``.sudoers``, ``.password``, ``.settings_unreadable`` (the
  agent cannot read the Claude settings: :mod:`sandbox_setup.audit.readable`);
- ``audit.unsafe.accepted`` (accepted: reported, does not fail the audit),
  ``audit.unsafe.unaccepted``;
- accounts and sessions (:mod:`sandbox_setup.audit.accounts`): ``audit.accounts.system``,
  ``.service``, ``.admin_group``, ``.root``, ``.outlived``, ``.legacy_group``; the
  session limits (and whether this host enforces memory) are a note.
- root's protected git settings (:mod:`sandbox_setup.audit.git`): ``audit.git.protected``
  (the owned file missing or changed), ``.protected_dir``, ``.include`` (a global git
  config no longer includes it last); not drift, so reported even when drift is not compared.
- the AppArmor profile for bwrap, where the answers ask for it (:mod:`sandbox_setup.audit.
  apparmor`): ``audit.apparmor.profile`` (missing, edited, or not root's 0644); not drift.
- network (:mod:`sandbox_setup.audit.network`): ``audit.network.host`` (medium: sandbox mode
  sharing the host's network), ``audit.network.egress`` (high: allowlist, but net.egress
  fails now). What the network allows, and what the egress proxy's decision log refused
  lately, are the report's ``network`` lines (JSON ``"network"``), not findings.

Python API (the TUI's audit view): :func:`audit` ``(layout, timeout, as_user)
-> AuditReport``. The report ends with a posture grade
(:mod:`sandbox_setup.audit.grade`). Exit 0 when
nothing counts against the setup, 1 on findings, 2 when there is no readable
configuration. An accepted unsafe mode is always reported, with who accepted
it and when, but is not by itself a finding that fails the audit.
No Textual import on this path.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_setup.audit.accounts import account_findings, limits_note
from sandbox_setup.audit.apparmor import apparmor_findings
from sandbox_setup.audit.drift import drift_findings
from sandbox_setup.audit.git import git_findings
from sandbox_setup.audit.grade import grade
from sandbox_setup.audit.left import left_findings
from sandbox_setup.audit.login_routes import login_findings
from sandbox_setup.audit.mode import claude_findings, mode_findings
from sandbox_setup.audit.model import AuditFinding, AuditReport, Severity
from sandbox_setup.audit.network import (
    EGRESS_LOG,
    network_findings,
    network_lines,
    read_log_tail,
    refusal_lines,
)
from sandbox_setup.audit.readable import settings_readable_findings
from sandbox_setup.audit.remote_settings import remote_settings_findings
from sandbox_setup.audit.safety import (
    agent_findings,
    claude_facts,
    config_findings,
    managed_settings_findings,
)
from sandbox_setup.audit.workspace import private_findings
from sandbox_setup.audit.workspace_scan import scan_findings
from sandbox_setup.base import remedies
from sandbox_setup.base.accounts import Account, lookup_group_gid, lookup_user
from sandbox_setup.base.claude_version import read_claude_version
from sandbox_setup.base.errors import InputError, unreadable
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.base.message import Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular_text
from sandbox_setup.boundary.trust_record import trust_dir
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.answers import Answers, load_answers
from sandbox_setup.configure.host_facts import gather_host_facts
from sandbox_setup.configure.probes import choose_probe_user
from sandbox_setup.configure.probes import run_live_checks as run_probe_suite
from sandbox_setup.policy.accounts import workspace_group


def _read_setup_file(real: Path, what: str) -> str:
    try:
        return read_regular_text(real)  # never blocks on a FIFO
    except FileNotFoundError:
        raise InputError(
            f"no {what} at {real}: nothing to audit (set up first: sandbox-setup)"
        ) from None
    except InputError as exc:  # a FIFO, a directory, ...
        raise InputError(f"cannot read the {what}: {exc}") from None
    except PermissionError as exc:  # its directory or itself at 0000, another owner's
        raise InputError(f"cannot read the {what}: {unreadable(real, exc)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read the {what} {real}: {reason}") from None


def load_setup(layout: Layout) -> tuple[LauncherConfig, Answers]:
    """The launcher config and the saved answers; InputError (exit 2) naming the file."""
    config_real = layout.real(layout.launcher_config)
    config = parse_launcher_config(
        _read_setup_file(config_real, "launcher config"), source=str(config_real)
    )
    answers_real = layout.real(layout.answers)
    _read_setup_file(answers_real, "answers file")
    return config, load_answers(answers_real)


def reapply_command(layout: Layout) -> str:
    """The command that brings a drifted setup back (the fix path)."""
    command = remedies.replay_answers(str(layout.real(layout.answers)), str(layout.root))
    return command


def probe_user(
    layout: Layout, config: LauncherConfig, agent: Account | None
) -> tuple[str | None, list[str]]:
    """Whom the live probes run as, and a note when it is not the agent."""
    if agent is None:
        return None, []  # audit.safety.agent_missing covers it
    return choose_probe_user(config.mode, config.agent_user, layout)


def run_live_checks(
    layout: Layout, as_user: str | None, timeout: float, claude: Path | None
) -> Report:
    """The checks as the headless apply runs them (so drift compares like with like)."""
    return run_probe_suite(
        as_user=as_user,
        root=layout.root,
        timeout=timeout,
        claude=str(claude) if claude is not None else None,
    )


def _workspace_findings(
    layout: Layout, config: LauncherConfig, answers: Answers
) -> list[AuditFinding]:
    found = []
    for group in (workspace_group(config.agent_user), users.LEGACY_WORKSPACE_GROUP):
        gid = lookup_group_gid(group, layout.root)
        if gid is not None and config.workspaces:
            found += private_findings(layout, config.workspaces, gid, answers.include_private)
    return found


def unsafe_findings(config: LauncherConfig) -> list[AuditFinding]:
    """Unsafe mode is always reported as such, with who accepted it and when."""
    if str(config.mode) != "unsafe":
        return []
    remedy = "sandbox-setup  # choose the sandbox or user mode"
    if config.unsafe is None:
        return [
            AuditFinding(
                id="audit.unsafe.unaccepted",
                severity=Severity.CRITICAL,
                summary="unsafe mode with no recorded acceptance: the launcher refuses it",
                remedy=remedy,
            )
        ]
    return [
        AuditFinding(
            id="audit.unsafe.accepted",
            severity=Severity.CRITICAL,
            summary="UNSAFE mode: Claude Code runs as root with no OS sandbox; accepted by "
            f"{config.unsafe.accepted_by} at {config.unsafe.accepted_at}",
            detail=config.unsafe.statement,
            remedy=remedy,
            accepted=True,
        )
    ]


def audit(layout: Layout, timeout: float = 10.0, as_user: str | None = None) -> AuditReport:
    """Audit the setup under ``layout``; raises InputError when there is none.

    ``as_user`` (``--as-user``) overrides whom the live probes run as.
    """
    config, answers = load_setup(layout)
    agent = lookup_user(config.agent_user, layout.root)
    if as_user is None:
        as_user, notes = probe_user(layout, config, agent)
    else:
        notes = [message(f"live probes ran as {as_user} (", Ref(Option.AS_USER), ")")]
    claude = claude_facts(layout, config)
    # The claude.* checks execute the binary: only one that passed the safety rules.
    report = run_live_checks(layout, as_user, timeout, claude.real if claude.trusted else None)
    reapply = reapply_command(layout)

    findings = unsafe_findings(config)
    findings += mode_findings(report, config)
    findings += network_findings(config, report, str(layout.real(layout.answers)), reapply)
    egress_log = layout.real(layout.state_dir / EGRESS_LOG)
    network = network_lines(config, report) + refusal_lines(
        read_log_tail(egress_log), str(egress_log)
    )
    version = read_claude_version(claude.real, timeout) if claude.trusted else None
    findings += claude_findings(
        config, str(claude.real), claude.exists, claude.trusted, version, reapply
    )
    findings += list(claude.findings)
    findings += config_findings(layout)
    findings += managed_settings_findings(layout)
    if str(config.mode) in ("sandbox", "user"):
        findings += settings_readable_findings(layout, answers, agent)
    agent_missing = False
    if str(config.mode) in ("sandbox", "user"):
        agent_missing = agent is None
        findings += agent_findings(layout, config, agent)
        findings += _workspace_findings(layout, config, answers)
    if str(config.mode) in ("sandbox", "user") and config.workspaces:
        # Symlinks followed inside the root (--root), never onto the host.
        real = [str(layout.real(layout.resolve(w))) for w in config.workspaces]
        scanned, scan_notes = scan_findings(
            real, trust_dir(layout.real(layout.state_dir), layout.root)
        )
        findings += scanned
        notes = [*notes, *scan_notes]
    findings += git_findings(layout, config, reapply)
    facts = gather_host_facts(report, layout, answers)  # the plan's view of the live host, once
    findings += apparmor_findings(layout, answers, facts.bwrap, reapply)
    findings += login_findings(layout, config, reapply)
    findings += remote_settings_findings(layout, config, agent)
    findings += account_findings(layout, config, agent)
    findings += left_findings(layout)  # what earlier undos left as it is
    limits = limits_note(config)
    if limits is not None:
        notes = [*notes, limits]
    if claude.exists and not claude.trusted:
        # The drift is the plan's, which needs Claude's version: the edge runs
        # `claude --version` (as root) never on a binary others could have written.
        # Fix the binary first; then the drift can be compared.
        findings.append(
            AuditFinding(
                id="audit.drift.unavailable",
                severity=Severity.MEDIUM,
                summary="drift not compared: it would run the untrusted Claude binary "
                f"{claude.real} to read its version",
                remedy="fix the audit.safety.claude_* findings, then audit again",
            )
        )
    else:
        findings += drift_findings(report, facts, answers, layout, reapply, agent_missing)
    unsafe = None
    if config.unsafe is not None:
        unsafe = {
            "accepted_by": config.unsafe.accepted_by,
            "accepted_at": config.unsafe.accepted_at,
            "statement": config.unsafe.statement,
        }
    return AuditReport(
        root=str(layout.root),
        config_path=str(layout.real(layout.launcher_config)),
        answers_path=str(layout.real(layout.answers)),
        mode=str(config.mode),
        agent_user=config.agent_user,
        probes_as=as_user,
        findings=findings,
        grade=grade(str(config.mode), findings, config.inner_sandbox),
        notes=notes,
        checks=[f.to_json() for f in report.findings],
        unsafe=unsafe,
        report=report,
        network=network,
    )
