"""What a plan says about the agent's network: the lines of the plan and its notes.

The words are the policy's (:func:`sandbox_setup.policy.network.describe_network`), so the plan,
``--dry-run``, the review screen (through the plan) and the audit say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.checks.model import Report, Status
from sandbox_setup.policy.network import allowance_warnings, describe_network

EGRESS_CHECK = "net.egress"


def check_egress(report: Report, mode: Mode, network: Network) -> None:
    """The allowlist needs what net.egress tries; refused (exit 3) when it failed here.

    A launch would refuse anyway (the proxy cannot start, nothing falls back to the
    host's network): better to say so before anything is written.
    """
    if mode is not Mode.SANDBOX or network is not Network.ALLOWLIST:
        return
    finding = report.get(EGRESS_CHECK)
    if finding is None or finding.status is not Status.FAIL:
        return
    raise RefusedError(
        f"network allowlist needs the egress proxy, but {EGRESS_CHECK} failed: "
        f"{finding.summary}. Remedy: {finding.remedy or 'sandbox-setup --check net.egress'}; "
        "or choose --network none (closed, and Claude cannot reach its API)."
    )


def plan_network(
    mode: Mode,
    network: Network,
    allowed_domains: Sequence[str],
    loopback_ports: Sequence[int],
    environ: Mapping[str, str],
) -> tuple[list[str], list[str]]:
    """``(lines, warnings)``: what the network is, and what the operator must know (an
    allowance that opens loopback, link-local, metadata or private addresses)."""
    if mode is not Mode.SANDBOX:
        # user and unsafe modes have no network namespace of their own
        return describe_network(Network.HOST, (), ()), []
    lines = describe_network(network, allowed_domains, loopback_ports)
    # The ANTHROPIC_BASE_URL note is the policy's (sandbox_setup.policy.environment.
    # loopback_port_hint), added by the plan: one rule, and never the URL (a token).
    warnings = allowance_warnings(allowed_domains) if network is Network.ALLOWLIST else []
    return lines, warnings
