"""What a check is: an ID, a title, whether it experiments, and a function.

A check's function gathers (through the :class:`Context`: host facts read once,
probes run as the probe user) and hands what it gathered to a pure judging
function that returns a :class:`Verdict`. The runner adds ID and title.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER, Account
from sandbox_setup.base.message import message
from sandbox_setup.checks.causes import Cause
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.platform import Platform
from sandbox_setup.checks.probe import ProbeResult, run_probe

NO_TRUST_RULE = "no trust rule was given to the checks, so root runs no binary"


@dataclass(frozen=True)
class Verdict:
    """A finding without its ID and title: what judging functions return."""

    status: Status
    summary: str
    detail: str = ""
    remedy: str = ""
    facts: Mapping[str, int | bool] = field(default_factory=dict)  # see Finding.facts
    cause: str | None = None  # see Finding.cause

    def __post_init__(self) -> None:
        # For people, the key also ends the detail ("cause: KEY"); code reads the field.
        # Once: a verdict rebuilt from another (dataclasses.replace) keeps its line.
        line = f"cause: {self.cause}"
        if self.cause is not None and self.detail.rsplit("\n", 1)[-1] != line:
            detail = message(self.detail, f"\n{line}") if self.detail else line  # typed parts kept
            object.__setattr__(self, "detail", detail)

    @classmethod
    def from_cause(cls, cause: Cause, detail: str = "", status: Status = Status.FAIL) -> Verdict:
        return cls(status, cause.summary, detail, cause.remedy, cause=cause.key)


@dataclass(frozen=True)
class Context:
    """Everything a check may use: the root for reads, facts, and the probe user."""

    root: Path
    timeout: float
    facts: HostFacts
    platform: Platform
    account: Account | None = None  # --as-user: live probes run as this account
    claude: str | None = None  # an explicit Claude Code binary
    euid: int = 0
    # Why root must not run a file (None: it may): the trust rule, handed in by the
    # caller (sandbox_setup.policy.trust.untrusted_reason). Without one, root runs nothing.
    untrusted: Callable[[str], str | None] = field(default=lambda _path: NO_TRUST_RULE)
    # The command that starts the launcher's egress proxy as ``--uid U --gid G`` and
    # reports as JSON (net.egress), handed in by the caller; None: not tried.
    egress_probe: tuple[str, ...] | None = None
    # The command that runs the launcher's own start-up as ``--uid U --gid G`` and
    # reports as JSON (launch.path), handed in by the caller; None: not tried.
    launch_probe: tuple[str, ...] | None = None
    # The agent Claude Code runs as (the configured one, or the one being planned):
    # whose home claude.remote_settings looks into besides the operator's.
    agent_user: str = DEFAULT_AGENT_USER

    @property
    def uid(self) -> int:
        """The uid live probes run as."""
        return self.account.uid if self.account is not None else self.euid

    @property
    def probe_user(self) -> str:
        if self.account is not None:
            return f"{self.account.name} (uid {self.account.uid})"
        return f"uid {self.euid}"

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        as_probe_user: bool = True,
        timeout: float | None = None,
    ) -> ProbeResult:
        return run_probe(
            argv,
            timeout=self.timeout if timeout is None else timeout,
            account=self.account if as_probe_user else None,
            env=env,
        )


@dataclass(frozen=True)
class Check:
    """One check of the registry."""

    id: str
    title: str
    live: bool
    func: Callable[[Context], Verdict]

    def run(self, ctx: Context) -> Finding:
        verdict = self.func(ctx)
        return Finding(
            self.id,
            self.title,
            verdict.status,
            verdict.summary,
            verdict.detail,
            verdict.remedy,
            dict(verdict.facts),
            verdict.cause,
        )
