"""net.egress: what sandbox mode's allowlist network really does on this host.

Two experiments, judged together (:func:`judge_egress`, pure):

1. a bwrap sandbox with ``--unshare-net``, as the probe user, lists its routes: it
   must start, and have nothing but loopback (no route to any address);
2. the launcher's own egress proxy is started as the probe user (as ``nobody`` when
   the probes run as root: the proxy never runs as root), probed, and asked for the
   cloud metadata address: both must be refused by the proxy. That command comes from
   the caller (:attr:`sandbox_setup.checks.base.Context.egress_probe`, handed in by
   :mod:`sandbox_setup.configure.probes`): checks do not import the launcher.

The proxy is reached here through a unix socket of its own, not through the listeners a
launch makes in the sandbox's namespace (:mod:`sandbox_setup.launcher.egress.netns`):
``launch.path`` (:mod:`sandbox_setup.checks.launch`) runs that part of the launcher's
start-up, and every launch makes and probes them before it releases Claude.

No experiment connects anywhere: the sandbox only reads its route table and every
destination asked of the proxy is refused before it would dial.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sandbox_setup.base import remedies
from sandbox_setup.base.message import Option, Ref, message
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.causes import diagnose
from sandbox_setup.checks.experiments import NETNS_PROBE, PROXY_STAND_IN, egress_command, egress_ids
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import ProbeResult


@dataclass(frozen=True)
class EgressFacts:
    """What the three experiments gave (see the module docstring)."""

    netns: ProbeResult
    proxy: dict[str, object] | None  # the egress probe's JSON; None: not tried
    proxy_run: ProbeResult | None = None
    proxy_user: str = ""


def routes_out(text: str) -> list[str]:
    """The routes of ``cat /proc/net/route /proc/net/ipv6_route`` that leave loopback.

    IPv4 lines (after the header) start with the device; IPv6 lines end with it.
    """
    found = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] == "Iface":
            continue
        device = fields[0] if len(fields) == 11 else fields[-1]
        if device != "lo":
            found.append(line.strip())
    return found


def judge_egress(facts: EgressFacts, host: HostFacts, *, uid: int, platform: str) -> Verdict:
    """Pure: can the allowlist network work here, and does it hold?"""
    if not facts.netns.ok:
        cause = diagnose(facts.netns, host, uid=uid, platform=platform)
        return Verdict(
            Status.FAIL,
            "a sandbox with a network namespace of its own does not start here: " + cause.summary,
            facts.netns.describe(),
            cause.remedy or remedies.rerun_checks("bwrap.sandbox"),
            cause=cause.key,
        )
    leaks = routes_out(facts.netns.stdout)
    if leaks:
        return Verdict(
            Status.FAIL,
            "the sandbox's own network namespace has routes that leave loopback",
            "\n".join(leaks),
            "report this: bwrap --unshare-net should give loopback only",
        )
    if facts.proxy is None:
        if facts.proxy_run is None:
            return Verdict(
                Status.WARN,
                "the sandbox's network namespace has only loopback; the egress proxy was "
                "not tried (no egress probe was given to the checks)",
                remedy=remedies.rerun_checks("net.egress"),
            )
        return Verdict(
            Status.FAIL,
            "the egress proxy probe did not report (a launch with network allowlist would "
            "be refused)",
            facts.proxy_run.describe(),
            remedies.rerun_checks("net.egress"),
        )
    state = facts.proxy.get("proxy")
    refused = facts.proxy.get("refused")
    refusals = refused if isinstance(refused, dict) else {}
    if state != "ok":
        return Verdict(
            Status.FAIL,
            f"the egress proxy cannot run as {facts.proxy_user}: {state}",
            json.dumps(facts.proxy, sort_keys=True),
            message(
                "a launch with network allowlist would be refused; until this is fixed, ",
                Ref(Option.NETWORK, value="none"),
                " keeps the sandbox closed (Claude then cannot reach its API)",
            ),
        )
    detail = "\n".join(f"{where}: {why}" for where, why in sorted(refusals.items()))
    return Verdict(
        Status.PASS,
        f"a sandbox with --unshare-net has only loopback; the egress proxy runs as "
        f"{facts.proxy_user} and refuses what it must (0.0.0.0, the metadata address)",
        detail,
    )


def check_egress(ctx: Context) -> Verdict:
    netns = ctx.run(NETNS_PROBE)
    account = ctx.account
    ids = egress_ids(None if account is None else (account.uid, account.gid))
    user = ctx.probe_user
    if account is None and ctx.uid == 0 and ids is not None:
        user = f"{PROXY_STAND_IN} (uid {ids[0]}, a stand-in: the proxy never runs as root)"
    proxy: dict[str, object] | None = None
    run = None
    if ctx.egress_probe is not None and netns.ok:
        # Started already, while the tool was imported (sandbox_setup.commands.check), when
        # it is exactly this command: the proxy's start-up is the slowest probe.
        command = egress_command(ctx.egress_probe, ids if ids is not None else (0, 0))
        run = ctx.run(command, as_probe_user=False)
        try:
            parsed = json.loads(run.stdout) if run.ok else None
        except ValueError:
            parsed = None
        proxy = parsed if isinstance(parsed, dict) else None
    facts = EgressFacts(netns, proxy, run, user)
    return judge_egress(facts, ctx.facts, uid=ctx.uid, platform=ctx.platform.name)
