"""bwrap.installed, bwrap.sandbox and the two nested probes.

The nested probes model sandbox mode: the launcher's outer bwrap (fresh /proc,
its own network namespace as with the default allowlist network) with Claude
Code's own inner sandbox inside it, in the form Claude's sandbox-runtime starts
it: its own network namespace, ``--cap-drop ALL`` (plus ``CAP_SETFCAP`` for a
uid-0 caller, as the runtime adds it), and the command run through Claude's
seccomp helper, which needs a capability-bearing user namespace of its own.
``bwrap.nested`` is the strong inner form (its own fresh /proc);
``bwrap.nested_weak`` is what ``enableWeakerNestedSandbox`` does (bind the outer
/proc). Where Claude's helper is installed (:mod:`sandbox_setup.checks.seccomp_helper`) the
probe runs that exact helper, so it fails exactly where Claude's Bash tool would;
elsewhere ``unshare -Ur`` stands in for the helper's nested user namespace, and
the detail says which ran. When the outer sandbox cannot start here at all (we
are inside a container whose /proc is covered), the check fails with that cause;
the detail then also says whether the inner form alone works here. When this
process already runs inside a bwrap sandbox (pid 1 is bwrap), that sandbox is the
outer one: the inner form runs directly, as Claude Code's own sandbox would there.

``bwrap.direct`` and ``bwrap.direct_weak`` are the same two inner forms run with no
outer sandbox, as the probe user: Claude Code's own sandbox as it starts in user
mode (and unsafe mode), where nothing wraps it. They decide the inner-sandbox
strength of those modes (:func:`sandbox_setup.configure.plan.default_inner_sandbox`):
under Podman's default masks the strong form cannot mount its fresh /proc, while the
weak one (the container's /proc bound in) works for an unprivileged agent.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace

from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.causes import Cause, diagnose
from sandbox_setup.checks.claude_path import find_claude
from sandbox_setup.checks.experiments import BWRAP_BASE, OUTER_UP, SANDBOX_PROBE
from sandbox_setup.checks.facts import CAP_SETFCAP, HostFacts
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import SAFE_PATH, ProbeResult, run_probe, which
from sandbox_setup.checks.seccomp_helper import SeccompHelper, find_seccomp_helper, runnable_by

# Stands in for the seccomp helper's nested user namespace where no helper is installed.
HELPER_STAND_IN = ("unshare", "-Ur")


def inner_command(
    *, weak: bool, helper: SeccompHelper | None = None, uid: int = 1000, setfcap: bool = True
) -> tuple[str, ...]:
    """Claude's inner sandbox as its sandbox-runtime builds the bwrap argv, reduced
    to what decides whether it starts: the order and flags of the runtime's
    ``wrapCommandWithSandboxLinux`` (``--cap-add CAP_SETFCAP`` only for a uid-0
    caller that has it: the helper's nested namespace maps uid 0, and so does the
    ``unshare -Ur`` that stands in for it)."""
    argv = ["bwrap", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev"]
    argv += ["--unshare-pid", "--unshare-user", "--cap-drop", "ALL"]
    if uid == 0 and setfcap:
        argv += ["--cap-add", "CAP_SETFCAP"]
    # weak: the outer /proc bound in (a fresh one is what a covered /proc refuses)
    argv += ["--bind", "/proc", "/proc"] if weak else ["--proc", "/proc"]
    return (*argv, "--", *(helper.argv if helper else HELPER_STAND_IN), "true")


STRONG_INNER = inner_command(weak=False)
WEAK_INNER = inner_command(weak=True)


def nested_command(inner: tuple[str, ...]) -> tuple[str, ...]:
    """The outer sandbox (as the launcher starts it by default: its own network
    namespace) running ``inner``; it says on stderr that it came up."""
    script = 'echo "$0" >&2; exec "$@"'
    outer = (*BWRAP_BASE, "--unshare-net", "--proc", "/proc")
    return (*outer, "sh", "-c", script, OUTER_UP, *inner)


STAND_IN_NOTE = "no Claude seccomp helper found: unshare -Ur stood in for its nested user namespace"


def helper_note(helper: SeccompHelper | None, passed_over: list[str]) -> str:
    """What the inner form ran its command through, for the detail."""
    if helper is not None:
        return f"the command ran through {helper.source}, as Claude's Bash tool runs"
    if passed_over:
        return STAND_IN_NOTE + " (" + "; ".join(passed_over) + ")"
    return STAND_IN_NOTE


def _helper_note(helper: str | None) -> str:
    return f"\n({helper or STAND_IN_NOTE})"


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
            "NoNewPrivs: 1 in /proc/self/status",
            "run without no_new_privs (docker/podman: drop --security-opt no-new-privileges), "
            "or rely on unprivileged user namespaces: chmod u-s " + path,
            cause="setuid-bwrap-no-new-privs",
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
    helper: str | None = None,
) -> Verdict:
    """Pure: did the inner form work inside the outer sandbox?

    ``direct`` (the inner form run alone, when the outer sandbox could not start)
    and ``unprivileged`` (the same probe run as nobody, when root's run failed
    inside the outer sandbox) only add to the detail; the verdict is the probe's.
    ``helper`` says what the inner form ran its command through (:func:`helper_note`;
    None: the stand-in).
    """
    form = (
        "the weak inner sandbox (bound /proc + a nested user namespace)"
        if weak
        else "the strong inner sandbox (its own fresh /proc)"
    )
    clean = _without_marker(nested)
    note = _helper_note(helper)
    if nested.ok:
        return Verdict(Status.PASS, f"{form} works inside an outer bwrap", clean.describe() + note)
    if OUTER_UP in nested.stderr:
        cause = diagnose(
            clean, facts, uid=uid, platform=platform, bwrap_setuid=bwrap_setuid, in_our_outer=True
        )
        detail = "the outer sandbox came up; the inner one failed:\n" + clean.describe() + note
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
    detail = "the outer sandbox could not start:\n" + clean.describe() + note
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
    helper: str | None = None,
) -> Verdict:
    """Pure: we already run inside a bwrap sandbox, which is the outer one; did the
    inner form, run right here as Claude Code's own sandbox would be, work?"""
    form = (
        "the weak inner sandbox (bound /proc + a nested user namespace)"
        if weak
        else "the strong inner sandbox (its own fresh /proc)"
    )
    detail = "already inside a bwrap sandbox (pid 1 is bwrap): the inner form ran here\n"
    note = _helper_note(helper)
    if result.ok:
        return Verdict(
            Status.PASS,
            f"{form} works inside this bwrap sandbox",
            detail + result.describe() + note,
        )
    cause = diagnose(result, facts, uid=uid, platform="bwrap", bwrap_setuid=bwrap_setuid)
    return Verdict.from_cause(cause, detail + result.describe() + note)


def judge_direct(
    result: ProbeResult,
    facts: HostFacts,
    *,
    weak: bool,
    uid: int,
    platform: str,
    bwrap_setuid: bool = False,
    helper: str | None = None,
) -> Verdict:
    """Pure: did Claude Code's own sandbox, in the given form and with nothing around
    it (user and unsafe modes), start and run its command through the helper?"""
    form = (
        "the weak form of Claude Code's own sandbox (bound /proc + a nested user namespace)"
        if weak
        else "Claude Code's own sandbox in its strong form (its own fresh /proc)"
    )
    detail = "run directly, with no outer sandbox, as Claude Code starts it in user mode\n"
    note = _helper_note(helper)
    if result.ok:
        return Verdict(
            Status.PASS,
            f"{form} works here without an outer sandbox",
            detail + result.describe() + note,
        )
    cause = diagnose(result, facts, uid=uid, platform=platform, bwrap_setuid=bwrap_setuid)
    return Verdict.from_cause(cause, detail + result.describe() + note)


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


def _group_list(account: Account) -> list[int]:
    try:
        return os.getgrouplist(account.name, account.gid)
    except OSError:  # not in this system's group database
        return []


def probe_helper(ctx: Context) -> tuple[SeccompHelper | None, list[str]]:
    """Claude's seccomp helper as the probe user can run it (gathering: files only)."""
    account = ctx.account
    uid = ctx.uid
    if account is not None:  # setpriv --init-groups: its groups from the group file
        gids: tuple[int, ...] = (account.gid, *_group_list(account))
    else:
        gids = (*os.getgroups(), os.getegid())

    def usable(path: str) -> bool:
        if uid == 0 and ctx.untrusted(path) is not None:
            return False  # root runs no binary another user can change
        return runnable_by(path, uid, gids)

    return find_seccomp_helper(find_claude(ctx.claude), usable)


def _for_nobody(ctx: Context) -> Account | None:
    return lookup_user("nobody") if ctx.uid == 0 else None


def _check_nested(ctx: Context, *, weak: bool) -> Verdict:
    helper, passed_over = probe_helper(ctx)
    setfcap = ctx.facts.has_bounding_cap(CAP_SETFCAP)
    inner = inner_command(weak=weak, helper=helper, uid=ctx.uid, setfcap=setfcap)
    described = helper_note(helper, passed_over)
    if ctx.platform.name == "bwrap":
        # This process is itself in a bwrap sandbox: that is the outer sandbox, so
        # the question is whether Claude Code's inner form works right here.
        return judge_nested_inside_bwrap(
            ctx.run(inner),
            ctx.facts,
            weak=weak,
            uid=ctx.uid,
            bwrap_setuid=bwrap_is_setuid(),
            helper=described,
        )
    nested = ctx.run(nested_command(inner))
    direct = unprivileged = None
    if not nested.ok and OUTER_UP not in nested.stderr and not nested.not_found:
        direct = ctx.run(inner)
    nobody = _for_nobody(ctx)
    if not nested.ok and OUTER_UP in nested.stderr and nobody is not None:
        # root's own outer sandbox has covers an agent's would not: say what an
        # unprivileged user gets, so the operator is not misled either way
        theirs = helper if helper and runnable_by(helper.path, nobody.uid, (nobody.gid,)) else None
        as_nobody = inner_command(weak=weak, helper=theirs, uid=nobody.uid)
        unprivileged = run_probe(nested_command(as_nobody), timeout=ctx.timeout, account=nobody)
    return judge_nested(
        nested,
        direct,
        ctx.facts,
        weak=weak,
        uid=ctx.uid,
        platform=ctx.platform.name,
        bwrap_setuid=bwrap_is_setuid(),
        unprivileged=unprivileged,
        helper=described,
    )


def check_bwrap_nested(ctx: Context) -> Verdict:
    return _check_nested(ctx, weak=False)


def check_bwrap_nested_weak(ctx: Context) -> Verdict:
    return _check_nested(ctx, weak=True)


def _check_direct(ctx: Context, *, weak: bool) -> Verdict:
    helper, passed_over = probe_helper(ctx)
    setfcap = ctx.facts.has_bounding_cap(CAP_SETFCAP)
    inner = inner_command(weak=weak, helper=helper, uid=ctx.uid, setfcap=setfcap)
    return judge_direct(
        ctx.run(inner),
        ctx.facts,
        weak=weak,
        uid=ctx.uid,
        platform=ctx.platform.name,
        bwrap_setuid=bwrap_is_setuid(),
        helper=helper_note(helper, passed_over),
    )


def check_bwrap_direct(ctx: Context) -> Verdict:
    return _check_direct(ctx, weak=False)


def check_bwrap_direct_weak(ctx: Context) -> Verdict:
    return _check_direct(ctx, weak=True)
