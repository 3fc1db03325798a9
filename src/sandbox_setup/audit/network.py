"""The agent's network, as the audit reports it (invariant 7).

Findings (they count against the setup):

- ``audit.network.host`` (medium): sandbox mode with ``network = "host"``: the agent
  shares the host's network (loopback services, 169.254.169.254, abstract unix
  sockets). Remedy: re-apply with network allowlist.
- ``audit.network.egress`` (high): network allowlist, but the live check ``net.egress``
  does not pass here now: every launch would be refused.

Reported, not findings (:func:`network_lines`, the report's ``network``): what the
network is (the allowlist's endpoints, the operator's patterns, the exposed loopback
ports; none; the host's network in unsafe mode, and in user mode where Landlock
does not confine it, with the operator's lists) and what the egress proxy
refused lately, from its decision log (``egress.log`` in the operator's state directory).

The words are the policy's (:func:`sandbox_setup.policy.network_words.describe_network`), the same
the plan and ``--dry-run`` show.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base import remedies
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.message import CliOnly, Option, Ref, message
from sandbox_setup.checks.model import Report, Status
from sandbox_setup.checks.user_net import CHECK_ID as USER_WALL_CHECK
from sandbox_setup.checks.user_net import namespace_from
from sandbox_setup.configure.network_plan import landlock_abi
from sandbox_setup.policy.network_words import (
    HOST_EXPOSURE,
    describe_network,
    describe_user_network,
    refusal_words,
)

EGRESS_LOG = "egress.log"
LOG_TAIL_BYTES = 1024 * 1024  # the audit reads this much of the end of the log


def network_lines(config: LauncherConfig, report: Report | None = None) -> list[str]:
    """What the agent's network is, in the policy's words (user mode's: Landlock's
    network wall as ``landlock.abi`` of ``report`` found it, and the operator's lists)."""
    if str(config.mode) == "user":
        abi = landlock_abi(report) if report is not None else None
        namespace = namespace_from(report.get(USER_WALL_CHECK)) if report is not None else None
        return describe_user_network(
            abi, config.user_landlock, config.allowed_domains, config.loopback_ports, namespace
        )
    if str(config.mode) != "sandbox":
        return [f"{config.mode} mode: {HOST_EXPOSURE}"]
    return describe_network(str(config.network), config.allowed_domains, config.loopback_ports)


def network_findings(
    config: LauncherConfig, report: Report, answers_path: str, reapply: str
) -> list[AuditFinding]:
    """``audit.network.host`` and ``audit.network.egress`` (see the module docstring)."""
    if str(config.mode) != "sandbox":
        return []
    network = str(config.network)
    if network == "host":
        return [
            AuditFinding(
                id="audit.network.host",
                severity=Severity.MEDIUM,
                summary=f"network host: {HOST_EXPOSURE}",
                detail="On a cloud VPS the metadata address hands out the instance's "
                "credentials; loopback-only databases and admin APIs answer the agent.",
                remedy=message(
                    f'set network = "allowlist" in {answers_path}',
                    CliOnly(
                        (" (", Ref(Option.NETWORK, value="allowlist"), " of a headless apply)")
                    ),
                    f", then re-apply: {reapply}",
                ),
            )
        ]
    if network != "allowlist":
        return []
    check = report.get("net.egress")
    if check is not None and check.status is Status.PASS:
        return []
    status = str(check.status) if check else "missing"
    return [
        AuditFinding(
            id="audit.network.egress",
            severity=Severity.HIGH,
            summary=f"net.egress is now {status}: the allowlist's egress proxy needs it, "
            "and every launch is refused without it" + (f" ({check.summary})" if check else ""),
            detail=check.detail if check else "",
            remedy=(check.remedy if check and check.remedy else "")
            or remedies.rerun_checks("net.egress"),
        )
    ]


def read_log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> list[dict[str, object]]:
    """The JSON lines at the end of ``path`` (never through a symlink); [] when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - limit))
        data = handle.read(limit)
    lines = data.splitlines()
    if size > limit and lines:
        lines = lines[1:]  # the first one was cut
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def refusal_lines(entries: Iterable[dict[str, object]], log: str) -> list[str]:
    """What the egress proxy refused, most frequent first (the launcher's own start-up
    probe, ``0.0.0.0:9``, not counted); [] when it refused nothing."""
    refused: Counter[str] = Counter()
    rules: dict[str, str] = {}
    allowed = 0
    for entry in entries:
        if entry.get("event") != "decision" or entry.get("host") == "0.0.0.0":
            continue
        if entry.get("allowed") is True:
            allowed += 1
            continue
        where = f"{entry.get('host')}:{entry.get('port')}"
        refused[where] += 1
        rules[where] = str(entry.get("rule", ""))
    if not refused:
        return []
    lines = [
        f"the egress proxy refused {sum(refused.values())} connection(s) to {len(refused)} "
        f"destination(s) and allowed {allowed}, in the end of {log}:"
    ]
    # The typed rule in words: "did not resolve" is DNS, not a broken allowlist.
    lines += [
        f"  {count}x {where}: {refusal_words(rules[where])}"
        for where, count in refused.most_common(10)
    ]
    lines.append(f"  by session, with the command that allows a refused name: {remedies.status()}")
    return lines
