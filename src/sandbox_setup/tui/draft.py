"""The wizard's working state: what the operator has answered so far.

Screens prefill from a :class:`Draft` and return their part; the flow stores
it. Going back re-shows a screen with what was entered, so answers are kept.
The unsafe acceptance is the exception: it is never prefilled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER
from sandbox_setup.base.choices import InnerSandbox, Mode, Network, SettingsScope
from sandbox_setup.base.limits import Limits
from sandbox_setup.checks.model import Report

if TYPE_CHECKING:
    from sandbox_setup.configure.answers import Answers
    from sandbox_setup.configure.apply import ApplyResult
    from sandbox_setup.configure.plan import Plan


class Nav(enum.Enum):
    """What a step returns instead of a value when the operator navigates."""

    BACK = "back"
    QUIT = "quit"


@dataclass(frozen=True)
class Outcome:
    """How the wizard ended: the exit code, and what to say on stderr afterwards."""

    code: int
    message: str | None = None
    quit: bool = False  # the operator quit (rather than finishing the steps)


@dataclass
class Details:
    """The mode details screen's fields."""

    workspaces: tuple[PurePosixPath, ...] = ()
    agent_user: str = DEFAULT_AGENT_USER
    reuse_account: bool = False
    network: Network = Network.ALLOWLIST  # sandbox mode only
    allowed_domains: tuple[str, ...] = ()  # with the allowlist network, or user mode
    loopback_ports: tuple[int, ...] = ()
    inner_sandbox: InnerSandbox = InnerSandbox.STRONG
    settings_scope: SettingsScope = SettingsScope.MANAGED
    copy_login: bool = False
    include_private: bool = False
    pass_env: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    install_claude_shim: bool = False
    claude: PurePosixPath | None = None  # None: find `claude` on PATH
    # The AppArmor profile for the probed bwrap: a field where the probes found Ubuntu's
    # restriction (or it is on already); elsewhere kept from saved answers, so a wizard
    # run does not drop the profile an earlier apply installed.
    apparmor_bwrap_profile: bool = False
    # A workspace that does not exist: created by the plan when ticked, with this owner
    # (None: the operator) and mode (None: 0750) (sandbox_setup.policy.new_workspace).
    create_workspaces: bool = False
    workspace_owner: str | None = None
    workspace_mode: int | None = None


@dataclass
class Draft:
    report: Report | None = None
    mode: Mode | None = None
    details: Details | None = None
    # Which mode the details were filled for: a different mode resets the presets.
    details_mode: Mode | None = None
    accepted_by: str | None = None
    accepted_at: str | None = None
    plan: Plan | None = None
    result: ApplyResult | None = None

    def accept_unsafe(self, who: str) -> None:
        self.accepted_by = who
        self.accepted_at = datetime.now(UTC).replace(microsecond=0).isoformat()

    def answers(self) -> Answers:
        """The :class:`Answers` the core plans from; every value explicit so
        the written answers.toml replays to the same files."""
        # why: configure.answers (and tomlkit) not before the first paint (bench/tui.py)
        from sandbox_setup.configure.answers import Answers

        assert self.mode is not None and self.details is not None
        unsafe = self.mode is Mode.UNSAFE
        d = self.details
        sandbox = self.mode is Mode.SANDBOX
        # The lists: sandbox mode's allowlist, and user mode's (Landlock's network wall).
        allowlist = (sandbox and d.network is Network.ALLOWLIST) or self.mode is Mode.USER
        return Answers(
            mode=self.mode,
            workspaces=d.workspaces,
            agent_user=d.agent_user,
            claude=d.claude,
            settings_scope=d.settings_scope,
            inner_sandbox=d.inner_sandbox,
            network=d.network if sandbox else None,
            allowed_domains=d.allowed_domains if allowlist else (),
            loopback_ports=d.loopback_ports if allowlist else (),
            pass_env=d.pass_env,
            reuse_account=d.reuse_account and not unsafe,
            include_private=d.include_private and not unsafe,
            install_claude_shim=d.install_claude_shim and not unsafe,
            apparmor_bwrap_profile=d.apparmor_bwrap_profile,
            # The defaults stay implicit, so an untouched setup replays as it was.
            limits=None if unsafe or d.limits == Limits() else d.limits,
            copy_login=d.copy_login and not unsafe,
            accept_unsafe_root=unsafe and self.accepted_at is not None,
            accepted_by=self.accepted_by if unsafe else None,
            accepted_at=self.accepted_at if unsafe else None,
            create_workspaces=d.create_workspaces and not unsafe,
            workspace_owner=d.workspace_owner if d.create_workspaces and not unsafe else None,
            workspace_mode=d.workspace_mode if d.create_workspaces and not unsafe else None,
        )
