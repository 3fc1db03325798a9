"""bwrap.installed, bwrap.sandbox and the two nested probes.

The nested probes model sandbox mode: the launcher's outer bwrap (fresh /proc)
with Claude Code's own inner sandbox inside it. ``bwrap.nested`` is the strong
inner form (its own fresh /proc); ``bwrap.nested_weak`` is what
``enableWeakerNestedSandbox`` does: bind the outer /proc, then apply seccomp from
a second-level user namespace (``unshare -Ur true``). When the outer sandbox
cannot start here at all (we are inside a container whose /proc is covered),
the check fails with that cause; the detail then also says whether the inner
form alone works here. When this process already runs inside a bwrap sandbox
(pid 1 is bwrap), that sandbox is the outer one: the inner form runs directly,
as Claude Code's own sandbox would there.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace

from checks.base import Context, Verdict
from checks.causes import Cause, diagnose
from checks.experiments import (
    OUTER_UP,
    SANDBOX_PROBE,
    STRONG_INNER,
    WEAK_INNER,
    nested_command,
)
from checks.facts import HostFacts
from checks.model import Status
from checks.probe import SAFE_PATH, ProbeResult, run_probe, which
from wizard.base.accounts import lookup_user


def judge_bwrap_installed(
    path: str | None, mode: int | None, version: str, no_new_privs: bool
) -> Verdict:
    """Pure: found? setuid? (a setuid bwrap is powerless under no_new_privs)."""
    if path is None:
        return Verdict.from_cause(
            Cause("bwrap-missing", "bwrap is not installed", "apt-get install -y bubblewrap"),
            f"not found on {SAFE_PATH}",
        )
    setuid = bool(mode is not None and mode & stat.S_ISUID)
    what = f"{version or 'bwrap (version unknown)'} at {path}"
    if setuid and no_new_privs:
        return Verdict(
            Status.WARN,
            f"{what} is setuid, but this process has no_new_privs: the setuid bit is ignored, "
            "so bwrap works only where unprivileged user namespaces do",
            "NoNewPrivs: 1 in /proc/self/status\ncause: setuid-bwrap-no-new-privs",
            "run without no_new_privs (docker/podman: drop --security-opt no-new-privileges), "
            "or rely on unprivileged user namespaces: chmod u-s " + path,
        )
    return Verdict(
        Status.PASS,
        f"{what}" + (" (setuid)" if setuid else " (not setuid)"),
        f"mode {oct(mode & 0o7777) if mode is not None else '?'}",
    )


def judge_bwrap_sandbox(
    result: ProbeResult, facts: HostFacts, *, uid: int, platform: str, bwrap_setuid: bool
) -> Verdict:
    if result.ok:
        return Verdict(
            Status.PASS,
            "bwrap starts a sandbox with new user and pid namespaces and a fresh /proc",
            result.describe(),
        )
    cause = diagnose(result, facts, uid=uid, platform=platform, bwrap_setuid=bwrap_setuid)
    return Verdict.from_cause(cause, result.describe())


def _without_marker(result: ProbeResult) -> ProbeResult:
    lines = [line for line in result.stderr.splitlines() if line.strip() != OUTER_UP]
    return replace(result, stderr="\n".join(lines))


def judge_nested(
    nested: ProbeResult,
    direct: ProbeResult | None,
    facts: HostFacts,
    *,
    weak: bool,
    uid: int,
    platform: str,
    bwrap_setuid: bool = False,
    unprivileged: ProbeResult | None = None,
) -> Verdict:
    """Pure: did the inner form work inside the outer sandbox?

    ``direct`` (the inner form run alone, when the outer sandbox could not start)
    and ``unprivileged`` (the same probe run as nobody, when root's run failed
    inside the outer sandbox) only add to the detail; the verdict is the probe's.
    """
    form = (
        "the weak inner sandbox (bound /proc + a nested user namespace)"
        if weak
        else "the strong inner sandbox (its own fresh /proc)"
    )
    clean = _without_marker(nested)
    if nested.ok:
        return Verdict(Status.PASS, f"{form} works inside an outer bwrap", clean.describe())
    if OUTER_UP in nested.stderr:
        cause = diagnose(
            clean, facts, uid=uid, platform=platform, bwrap_setuid=bwrap_setuid, in_our_outer=True
        )
        detail = "the outer sandbox came up; the inner one failed:\n" + clean.describe()
        # (a setpriv failure, e.g. nobody unmapped in a container, tells nothing)
        if unprivileged is not None and "setpriv:" not in unprivileged.stderr:
            worked = "works" if unprivileged.ok else "fails too"
            detail += (
                f"\n(the same with the outer sandbox started by nobody {worked}: "
                "that is what an unprivileged agent user gets)"
            )
        return Verdict.from_cause(cause, detail)
    # The outer sandbox itself did not start: the verdict is that failure's cause.
    cause = diagnose(clean, facts, uid=uid, platform=platform, bwrap_setuid=bwrap_setuid)
    detail = "the outer sandbox could not start:\n" + clean.describe()
    if direct is not None:
        worked = "works" if direct.ok else "fails too"
        detail += (
            f"\n(for comparison, the inner form alone, with no outer sandbox, {worked} here:"
            f"\n{direct.describe()})"
        )
    return Verdict.from_cause(cause, detail)


def judge_nested_inside_bwrap(
    result: ProbeResult,
    facts: HostFacts,
    *,
    weak: bool,
    uid: int,
    bwrap_setuid: bool = False,
) -> Verdict:
    """Pure: we already run inside a bwrap sandbox, which is the outer one; did the
    inner form, run right here as Claude Code's own sandbox would be, work?"""
    form = (
        "the weak inner sandbox (bound /proc + a nested user namespace)"
        if weak
        else "the strong inner sandbox (its own fresh /proc)"
    )
    detail = "already inside a bwrap sandbox (pid 1 is bwrap): the inner form ran here\n"
    if result.ok:
        return Verdict(
            Status.PASS, f"{form} works inside this bwrap sandbox", detail + result.describe()
        )
    cause = diagnose(result, facts, uid=uid, platform="bwrap", bwrap_setuid=bwrap_setuid)
    return Verdict.from_cause(cause, detail + result.describe())


def find_bwrap() -> tuple[str | None, int | None]:
    path = which("bwrap")
    if path is None:
        return None, None
    try:
        return path, os.stat(path).st_mode
    except OSError:
        return path, None


def bwrap_is_setuid() -> bool:
    _, mode = find_bwrap()
    return bool(mode is not None and mode & stat.S_ISUID)


def check_bwrap_installed(ctx: Context) -> Verdict:
    path, mode = find_bwrap()
    version = ""
    if path is not None:
        result = ctx.run([path, "--version"], as_probe_user=False)
        version = result.stdout.strip() if result.ok else ""
    return judge_bwrap_installed(path, mode, version, ctx.facts.no_new_privs)


def check_bwrap_sandbox(ctx: Context) -> Verdict:
    result = ctx.run(SANDBOX_PROBE)
    return judge_bwrap_sandbox(
        result, ctx.facts, uid=ctx.uid, platform=ctx.platform.name, bwrap_setuid=bwrap_is_setuid()
    )


def _check_nested(ctx: Context, inner: tuple[str, ...], *, weak: bool) -> Verdict:
    if ctx.platform.name == "bwrap":
        # This process is itself in a bwrap sandbox: that is the outer sandbox, so
        # the question is whether Claude Code's inner form works right here.
        return judge_nested_inside_bwrap(
            ctx.run(inner), ctx.facts, weak=weak, uid=ctx.uid, bwrap_setuid=bwrap_is_setuid()
        )
    nested = ctx.run(nested_command(inner))
    direct = unprivileged = None
    if not nested.ok and OUTER_UP not in nested.stderr and not nested.not_found:
        direct = ctx.run(inner)
    nobody = lookup_user("nobody")
    if not nested.ok and OUTER_UP in nested.stderr and ctx.uid == 0 and nobody is not None:
        # root's own outer sandbox has covers an agent's would not: say what an
        # unprivileged user gets, so the operator is not misled either way
        unprivileged = run_probe(nested_command(inner), timeout=ctx.timeout, account=nobody)
    return judge_nested(
        nested,
        direct,
        ctx.facts,
        weak=weak,
        uid=ctx.uid,
        platform=ctx.platform.name,
        bwrap_setuid=bwrap_is_setuid(),
        unprivileged=unprivileged,
    )


def check_bwrap_nested(ctx: Context) -> Verdict:
    return _check_nested(ctx, STRONG_INNER, weak=False)


def check_bwrap_nested_weak(ctx: Context) -> Verdict:
    return _check_nested(ctx, WEAK_INNER, weak=True)
