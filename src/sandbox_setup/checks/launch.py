"""launch.path: would a sandbox-mode launch get past its own start-up here?

The other checks ask whether bubblewrap can start a sandbox; a launch then also
verifies it from the host's side (``/proc/PID/ns/*`` of the sandbox read and compared
with the launcher's) and, with the allowlist network, makes the egress proxy's
listeners in the sandbox's network namespace. In a container with default
capabilities those steps can be refused where bubblewrap itself works (docs/design.md invariant 1:
Podman with ``unmask=/proc/*``, Docker with ``systempaths=unconfined``), and the
operator would be promised a sandbox that every launch refuses.

The experiment is the launcher's own code (:mod:`sandbox_setup.launcher.startup_probe`),
run as the launcher runs (root, dropping to the probe user for the sandbox) and handed
in by the caller (:attr:`sandbox_setup.checks.base.Context.launch_probe`): checks do not
import the launcher. Judging (:func:`judge_launch_path`) is pure: it names the step
refused, the capability or namespace operation missing, and the container flag that
gives it.

Cause keys: ``launch-sandbox`` (the held sandbox did not start), ``launch-verify``
(its namespaces could not be read or compared: the launch always needs this),
``launch-network`` (the allowlist network's set-up failed: ``--network host`` or
``none`` launch without it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sandbox_setup.base import remedies
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.causes import SWITCH_CAUSE, Cause, switch_capability
from sandbox_setup.checks.experiments import egress_ids
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.platform import cap_add_remedy
from sandbox_setup.checks.probe import ProbeResult

SANDBOX, VERIFY, NETWORK = "launch-sandbox", "launch-verify", "launch-network"
# The probe's own steps are bounded by the launcher's timeouts; this bounds the whole
# (a sandbox start, a verification and a network set-up, on a loaded host).
PROBE_TIMEOUT = 30.0


@dataclass(frozen=True)
class Missing:
    """What a refused step lacked, as a capability (and the flag that gives it)."""

    what: str  # the operation that was refused
    capability: str  # e.g. SYS_PTRACE (without CAP_)


def missing_for(error: str) -> Missing | None:
    """The capability a refusal of the launcher's start-up points to, from its text."""
    if "Permission denied" in error and "/ns/" in error:
        return Missing("reading another user's /proc/PID/ns/* (ptrace access)", "SYS_PTRACE")
    if "setns(" in error and "Operation not permitted" in error:
        return Missing("setns() into the sandbox's network namespace", "SYS_ADMIN")
    if "SIOCGSKNS" in error:
        return Missing("ioctl(SIOCGSKNS) on a socket in the sandbox's namespace", "NET_ADMIN")
    capability = switch_capability(error)
    if capability is not None:
        return Missing("becoming the agent (setpriv's id change)", capability)
    return None


# Where a sandbox cannot start, user mode still works.
USER_MODE = Ref(Option.MODE, Act.CHOOSE, value="user")


def flag_remedy(missing: Missing, platform: str, network: bool, user_mode: bool = True) -> str:
    """The container flag that gives ``missing``, or the capability where no runtime
    is known; network steps also name the launch options that skip them; user mode
    where it does without (``user_mode``)."""
    text = cap_add_remedy(platform, missing.capability) or (
        f"run sandbox-launch with CAP_{missing.capability}"
    )
    return message(
        text,
        *(
            (
                "; or ",
                Ref(Option.NETWORK, value="none"),
                " (no network in the sandbox) or ",
                Ref(Option.NETWORK, value="host"),
                " (no network namespace of its own)",
            )
            if network
            else ()
        ),
        *(("; or ", USER_MODE, ", which needs none of this") if user_mode else ()),
    )


def judge_launch_path(
    report: dict[str, object] | None, run: ProbeResult | None, *, user: str, platform: str
) -> Verdict:
    """Pure: did the launcher's start-up (sandbox, verification, network) pass?"""
    if report is None:
        if run is None:
            return Verdict(
                Status.SKIP,
                "the launcher's start-up was not tried (no launch probe was given to the checks)",
            )
        return Verdict(
            Status.FAIL,
            "the launcher's start-up probe did not report (a sandbox-mode launch would be refused)",
            run.describe(),
            remedies.rerun_checks("launch.path"),
        )
    sandbox, verify, network = (report.get(k) for k in ("sandbox", "verify", "network"))
    switch = missing_for(str(sandbox)) if sandbox != "ok" else None
    if switch is not None:
        # user mode runs the agent as another account too: no "or choose --mode user"
        return Verdict.from_cause(
            Cause(
                SWITCH_CAUSE,
                f"the launcher cannot start its sandbox as {user}: {switch.what} needs "
                f"CAP_{switch.capability}, which this launcher lacks ({sandbox})",
                flag_remedy(switch, platform, network=False, user_mode=False),
            ),
            json.dumps(report, sort_keys=True),
        )
    if sandbox != "ok":
        return Verdict.from_cause(
            Cause(
                SANDBOX,
                f"the launcher's sandbox does not start as {user}: {sandbox}",
                "see bwrap.sandbox",
            ),
            json.dumps(report, sort_keys=True),
        )
    for key, value, step in (
        (VERIFY, verify, "verifying the sandbox from outside"),
        (NETWORK, network, "setting up the allowlist network in the sandbox's namespace"),
    ):
        if value == "ok":
            continue
        missing = missing_for(str(value))
        lacks = (
            f": {missing.what} needs CAP_{missing.capability}, which this launcher lacks"
            if missing is not None
            else ""
        )
        remedy = (
            flag_remedy(missing, platform, key == NETWORK)
            if missing is not None
            else message(remedies.rerun_checks("launch.path"), "; or ", USER_MODE)
        )
        return Verdict.from_cause(
            Cause(
                key,
                f"a sandbox-mode launch would be refused at {step}{lacks} ({value})",
                remedy,
            ),
            json.dumps(report, sort_keys=True),
        )
    return Verdict(
        Status.PASS,
        f"a sandbox started as {user} is verified from outside and its allowlist network "
        "is set up, as a launch does it",
        json.dumps(report, sort_keys=True),
    )


def check_launch_path(ctx: Context) -> Verdict:
    account = ctx.account
    ids = egress_ids(None if account is None else (account.uid, account.gid))
    if ctx.launch_probe is None or ids is None:
        return judge_launch_path(None, None, user=ctx.probe_user, platform=ctx.platform.name)
    user = ctx.probe_user if account is not None or ctx.euid != 0 else f"uid {ids[0]}"
    run = ctx.run(
        (*ctx.launch_probe, "--uid", str(ids[0]), "--gid", str(ids[1])),
        as_probe_user=False,
        timeout=max(ctx.timeout, PROBE_TIMEOUT),
    )
    try:
        parsed = json.loads(run.stdout) if run.ok else None
    except ValueError:
        parsed = None
    report = parsed if isinstance(parsed, dict) else None
    return judge_launch_path(report, run, user=user, platform=ctx.platform.name)
