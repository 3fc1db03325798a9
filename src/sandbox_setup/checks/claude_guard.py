"""claude.root_guard: would Claude Code's root guard block ``--dangerously-skip-permissions``?

Judged, never asked (invariant 13: no probe starts Claude with a session). Asking
meant running ``claude --dangerously-skip-permissions --print ok``: as root,
through the claude shim or with a login in reach, that is a whole agent session.
What the check judges from instead:

* the probe user's uid: the guard fires for uid 0 only;
* ``claude --version`` of the real binary (never the shim), which starts no
  session, run as the probe user with the scrubbed probe environment, a throwaway
  HOME and a short timeout, and only when the trust rule lets root run it;
* whether the binary carries the guard's message (read, never run): a Claude Code
  without it has no guard to stop an agent running as root;
* the operator's own environment: ``IS_SANDBOX`` or ``CLAUDE_CODE_BUBBLEWRAP`` set
  to a value Claude reads as true makes every Claude Code root starts from that
  shell skip its guard, with no sandbox verified (only sandbox-launch verifies one,
  and it sets ``IS_SANDBOX=1`` inside it alone).

The finding's detail says which of these it judged from.
"""

from __future__ import annotations

import mmap
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.claude import (
    QUIET_ENV,
    judge_given_shim,
    judge_untrusted_claude,
    untrusted_as_root,
)
from sandbox_setup.checks.claude_path import lookup_claude, shims_note
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import ProbeResult

GUARD_TEXT = "cannot be used with root/sudo privileges"
VERSION_TIMEOUT = 8.0
# The variables that make Claude Code skip its root guard, and the values it reads
# as true (its environment parser: trimmed, any case). 2.1.197 skips the guard for
# IS_SANDBOX=1 only, later versions for any true value: the check takes the wider rule.
GUARD_SKIPPING_VARIABLES = ("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP")
CLAUDE_TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
# A Claude Code binary is a few hundred MB; anything far larger is not one to scan.
GUARD_SCAN_LIMIT = 1 << 30
NEVER_ASKED = (
    "no probe starts Claude Code with --dangerously-skip-permissions: that would be "
    "an agent session"
)
CLAIM_REMEDY = (
    "unset IS_SANDBOX CLAUDE_CODE_BUBBLEWRAP   (and remove them from your shell "
    "profile and launchers); then start Claude with sandbox-launch, which sets "
    "IS_SANDBOX=1 only inside a sandbox it verified"
)
MODE_REMEDY = "sandbox-setup   (choose the sandbox or the user path)"


@dataclass(frozen=True)
class GuardFacts:
    """What the check gathered; :func:`judge_root_guard` decides from this alone."""

    uid: int  # the probe user's: the one Claude Code would run as
    operator_uid: int  # whose environment ``operator_env`` is
    operator_env: Mapping[str, str] = field(default_factory=dict)  # the guard's variables
    path: str | None = None  # the real Claude Code binary; None: not found
    given_shim: bool = False  # ``path`` was named explicitly and is the claude shim
    skipped: tuple[str, ...] = ()  # claude shims passed over on the search path
    untrusted: str | None = None  # why root did not run ``path``
    version: ProbeResult | None = None  # ``claude --version`` as the probe user
    carries_guard: bool | None = None  # the guard's message is in the binary (None: unread)


def guard_skipping_claims(env: Mapping[str, str]) -> tuple[str, ...]:
    """Pure: ``NAME=value`` for each variable of ``env`` that makes Claude Code skip
    its root guard (a value it reads as true)."""
    return tuple(
        f"{name}={env[name]}"
        for name in GUARD_SKIPPING_VARIABLES
        if env.get(name, "").strip().lower() in CLAUDE_TRUE_VALUES
    )


def _judged_from(facts: GuardFacts) -> str:
    sources = [f"the probe uid ({facts.uid})"]
    if facts.version is not None:
        sources.append("`claude --version` (no session)")
    if facts.carries_guard is not None:
        sources.append("the guard's message in the binary (read, not run)")
    sources.append("your environment (IS_SANDBOX, CLAUDE_CODE_BUBBLEWRAP)")
    return "judged from " + ", ".join(sources) + "; " + NEVER_ASKED


def _version_text(facts: GuardFacts) -> str:
    version = facts.version
    if version is None:
        return ""
    text = version.describe()
    if version.ok and version.stdout.strip():
        text += "\n" + version.stdout.strip().splitlines()[0]
    return "\n" + text


def judge_root_guard(facts: GuardFacts) -> Verdict:
    """Pure: would the guard block --dangerously-skip-permissions for the probe user,
    and does the operator's environment switch it off without a sandbox?"""
    claims = guard_skipping_claims(facts.operator_env)
    detail = _judged_from(facts) + _version_text(facts) + shims_note(facts.skipped)
    if claims and facts.operator_uid == 0:
        return Verdict(
            Status.WARN,
            f"your environment sets {' '.join(claims)}: Claude Code started from it as "
            "root skips its root guard, and no sandbox was verified",
            detail + "\nonly sandbox-launch verifies a sandbox; it sets IS_SANDBOX=1 inside "
            "that sandbox alone",
            CLAIM_REMEDY,
            cause="root-guard-skipped-by-environment",
        )
    if claims:
        detail += (
            f"\nyour environment sets {' '.join(claims)}: Claude Code started from it as "
            "root would skip this guard although no sandbox was verified"
        )
    if facts.given_shim:
        shim = judge_given_shim(facts.path or "claude")
        return replace(shim, detail=detail + "\n" + shim.detail)
    if facts.untrusted is not None and facts.path is not None:
        refused = judge_untrusted_claude(facts.path, facts.untrusted)
        return replace(refused, detail=detail + "\n" + refused.detail)
    if facts.path is None:
        if facts.uid == 0:
            return Verdict(
                Status.SKIP,
                "Claude Code not found; as uid 0 its root guard would block "
                "--dangerously-skip-permissions (judged from the uid)",
                detail,
            )
        return Verdict(
            Status.SKIP,
            f"Claude Code not found; uid {facts.uid} is not root, so the guard would not fire",
            detail,
        )
    if facts.uid != 0:
        return Verdict(
            Status.PASS,
            f"the guard does not fire: Claude Code runs as uid {facts.uid}, not root",
            detail,
        )
    if facts.carries_guard is False:
        return Verdict(
            Status.WARN,
            f"{facts.path} does not carry Claude Code's root guard: as root it would run "
            "--dangerously-skip-permissions unconfined",
            detail,
            "choose the sandbox or user path: an agent running as root is unconfined",
            cause="root-guard-absent",
        )
    unread = (
        "\nthe binary could not be read: judged from uid 0" if facts.carries_guard is None else ""
    )
    return Verdict(
        Status.WARN,
        "the root guard blocks --dangerously-skip-permissions here (uid 0): choose "
        "sandbox or user mode",
        detail + unread,
        MODE_REMEDY,
        cause="root-guard-blocks",
    )


def binary_carries_guard(path: str) -> bool | None:
    """Whether the file at ``path`` (symlinks followed) holds the root guard's
    message; None when it cannot be read as a regular file. Read, never run."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= GUARD_SCAN_LIMIT:
            return None
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as data:
            return data.find(GUARD_TEXT.encode()) >= 0
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _version_as_probe_user(ctx: Context, path: str) -> ProbeResult:
    """``path --version`` as the probe user: the probe environment (nothing of the
    operator's), a throwaway HOME it owns, a short timeout."""
    home = tempfile.mkdtemp(prefix="sandbox-setup-guard-")
    try:
        if ctx.account is not None:
            try:
                os.chown(home, ctx.account.uid, ctx.account.gid)
            except PermissionError as exc:
                # e.g. a container without CAP_CHOWN: said, not a crash (exit 70).
                return ProbeResult(
                    (path, "--version"),
                    None,
                    stderr=f"cannot give the probe user {ctx.account.name} a home "
                    f"(chown {home}: {exc.strerror}; CAP_CHOWN missing?)",
                )
        return ctx.run(
            [path, "--version"],
            env={**QUIET_ENV, "HOME": home},
            timeout=min(ctx.timeout, VERSION_TIMEOUT),
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def gather_guard_facts(ctx: Context) -> GuardFacts:
    lookup = lookup_claude(ctx.claude)
    env = {name: ctx.facts.env[name] for name in GUARD_SKIPPING_VARIABLES if name in ctx.facts.env}
    facts = GuardFacts(
        uid=ctx.uid,
        operator_uid=ctx.euid,
        operator_env=env,
        path=lookup.path,
        given_shim=lookup.given_shim,
        skipped=lookup.skipped,
    )
    path = lookup.runnable
    if path is None or (guard_skipping_claims(env) and ctx.euid == 0):
        return facts  # nothing to run, or nothing a run could change
    untrusted = untrusted_as_root(ctx, path, as_probe_user=True)
    if untrusted is not None:
        return replace(facts, untrusted=untrusted)
    return replace(
        facts, version=_version_as_probe_user(ctx, path), carries_guard=binary_carries_guard(path)
    )


def check_root_guard(ctx: Context) -> Verdict:
    return judge_root_guard(gather_guard_facts(ctx))
