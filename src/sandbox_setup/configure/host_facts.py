"""What the plan knows about the live host beyond the probes' verdicts, gathered once.

:func:`gather_host_facts` is the edge: it reads the host (the sandbox binaries the probes
used and whether root may trust them, the operator's environment, the clock, this
installation and its sandbox-launch, the Claude Code the answers name or the PATH finds
and its version) and returns a frozen :class:`HostFacts`. :func:`sandbox_setup.configure.plan.
build_plan` takes that value and reads none of it itself, so a plan is a function of the
report, the facts, the answers and the target's files (under ``layout.root``): a test
hands it facts saying bwrap is missing, or present, on any host.
"""

from __future__ import annotations

import datetime
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import MappingProxyType

from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.claude import sandbox_binaries
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.claude_binary import ClaudeLookup, look_up_claude
from sandbox_setup.configure.claude_shim import ShimLauncher, look_up_launcher
from sandbox_setup.policy.trust import untrusted_reason


@dataclass(frozen=True)
class SandboxBinary:
    """One binary Claude Code's own sandbox runs, as the probes found it."""

    name: str
    # Resolved absolute path on the probes' PATH; None: not found.
    path: str | None
    # Why root must not trust it (sandbox_setup.policy.trust); None: it may, or not found.
    untrusted: str | None = None


@dataclass(frozen=True)
class HostFacts:
    """The live host as the plan sees it (see module doc)."""

    bwrap: SandboxBinary
    socat: SandboxBinary
    # The operator's environment (PATH, where Claude Code is looked for; SUDO_USER for
    # the acceptance; ANTHROPIC_BASE_URL; ...).
    environ: Mapping[str, str]
    # Now, for a new unsafe-mode acceptance (ISO 8601, seconds, UTC).
    now: str
    # The Claude Code binary for the answers' ``claude``, found on ``environ``'s PATH when
    # none is given, with its ``--version`` (run here, never by the plan), or why none.
    claude: ClaudeLookup
    # This installation's sandbox-launch, which root's claude shim runs, and its trust.
    sandbox_launch: ShimLauncher
    # What root runs of this installation, by what it is (a live apply only).
    installation: tuple[tuple[str, PurePosixPath], ...] = ()


def _binary(name: str, path: str | None, judge: bool) -> SandboxBinary:
    if path is None or not path.startswith("/"):
        return SandboxBinary(name, None)
    return SandboxBinary(name, path, untrusted_reason(path) if judge else None)


def recorded_binaries(report: Report) -> dict[str, str | None]:
    """The bwrap and socat the probes used: recorded in the report by the runner, or (a
    report made by hand, or by an older version) looked up the same way now."""
    recorded = report.host.get("binaries")
    if isinstance(recorded, dict) and all(k in recorded for k in ("bwrap", "socat")):
        return {k: v if isinstance(v, str) else None for k, v in recorded.items()}
    return sandbox_binaries()


def installation() -> tuple[tuple[str, PurePosixPath], ...]:
    """This installation and its Python environment, resolved: what root runs of it."""
    return (
        (
            "sandbox-setup's installation",
            PurePosixPath(os.path.realpath(Path(__file__).resolve().parents[2])),
        ),
        ("sandbox-setup's Python environment", PurePosixPath(os.path.realpath(sys.prefix))),
    )


def gather_host_facts(report: Report, layout: Layout, answers: Answers) -> HostFacts:
    """The facts a plan of ``answers`` for ``layout`` needs, read from the live host now."""
    binaries = recorded_binaries(report)
    environ = MappingProxyType(dict(os.environ))
    return HostFacts(
        bwrap=_binary("bwrap", binaries.get("bwrap"), judge=True),
        socat=_binary("socat", binaries.get("socat"), judge=True),
        environ=environ,
        now=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        claude=look_up_claude(layout, answers.claude, environ),
        sandbox_launch=look_up_launcher(layout.operator.uid),
        installation=installation() if layout.live else (),
    )
