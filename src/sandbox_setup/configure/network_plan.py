"""What a plan says about the agent's network: the lines of the plan and its notes.

The words are the policy's (:func:`sandbox_setup.policy.network_words.describe_network`),
so the plan, ``--dry-run``, the review screen (through the plan) and the audit say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sandbox_setup.base import remedies
from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.netwall import describe_user_wall, user_lists_apply
from sandbox_setup.checks.landlock import abi_from
from sandbox_setup.checks.model import Report, Status
from sandbox_setup.checks.user_net import CHECK_ID as USER_WALL_CHECK
from sandbox_setup.checks.user_net import namespace_from
from sandbox_setup.policy.landlock import user_walls
from sandbox_setup.policy.network_words import (
    allowance_warnings,
    describe_network,
    describe_user_allowances,
)

LANDLOCK_CHECK = "landlock.abi"

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
        message(
            f"network allowlist needs the egress proxy, but {EGRESS_CHECK} failed: ",
            finding.summary,
            ". Remedy: ",
            finding.remedy or remedies.rerun_checks("net.egress"),
            "; or ",
            Ref(Option.NETWORK, Act.CHOOSE, value="none"),
            " (closed, and Claude cannot reach its API).",
        )
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
    if mode is Mode.USER:
        # No namespace of its own; Landlock's network wall takes the lists where the
        # kernel has it (the plan adds the walls: user_mode_lines).
        return describe_network(Network.HOST, (), ()), allowance_warnings(allowed_domains)
    if mode is not Mode.SANDBOX:
        # unsafe mode has no network namespace of its own
        return describe_network(Network.HOST, (), ()), []
    lines = describe_network(network, allowed_domains, loopback_ports)
    # The ANTHROPIC_BASE_URL note is the policy's (sandbox_setup.policy.environment.
    # loopback_port_hint), added by the plan: one rule, and never the URL (a token).
    warnings = allowance_warnings(allowed_domains) if network is Network.ALLOWLIST else []
    return lines, warnings


def landlock_abi(report: Report) -> int | None:
    """The Landlock ABI landlock.abi found for the agent (0: none), None: not probed
    (its typed fact, never its words)."""
    return abi_from(report.get(LANDLOCK_CHECK))


def user_mode_lines(
    report: Report,
    inner_sandbox_on: bool,
    allowed_domains: Sequence[str] = (),
    loopback_ports: Sequence[int] = (),
    landlock_on: bool = True,
) -> list[str]:
    """What confines a user-mode agent on this host, wall by wall (``landlock_on``: the
    default; the operator turns it off with ``[user] landlock = false``), and the
    operator's allowed domains and loopback ports, which Landlock's network wall takes."""
    abi = landlock_abi(report)
    namespace = namespace_from(report.get(USER_WALL_CHECK))
    applies = user_lists_apply(abi, landlock_on, namespace)
    if abi is None and landlock_on:
        return [
            "network: " + describe_user_wall(None, True, namespace),
            f"Landlock: not probed ({LANDLOCK_CHECK}); the launcher applies what the kernel "
            "offers at each launch",
            *describe_user_allowances(allowed_domains, loopback_ports, applies),
        ]
    walls = user_walls(abi or 0, landlock_on, inner_sandbox_on)
    return [
        *walls.describe(inner_sandbox_on, namespace, landlock_on),
        *describe_user_allowances(allowed_domains, loopback_ports, applies),
    ]
