"""Which of the three paths the findings point to, and why (pure).

``sandbox`` when bubblewrap starts a real sandbox for the probe user and the
launcher's own start-up gets past its verification and network set-up there
(``launch.path``, when it ran: a host where a launch would be refused is never
recommended); ``user`` when it does not (a separate non-root user is always
possible: root creates one, a non-root operator already is one). ``unsafe`` is
never recommended; the reason says why not. The inner sandbox strength comes from
the nested probes (sandbox mode) or the direct ones (user mode).
"""

from __future__ import annotations

from collections.abc import Iterable

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.message import Act, Option, Recheck, Ref, message
from sandbox_setup.checks.causes import SWITCH_CAUSE
from sandbox_setup.checks.model import Finding, Recommendation, Status, cause_key

UNSAFE_NOTE = (
    "unsafe (Claude Code as root with no OS sandbox) is never recommended; it stays "
    "available only with an explicit, recorded acceptance."
)


# Probed as root: the agent may get other results (the command line's command to
# paste; the wizard re-runs its checks).
RECHECK = Recheck("the agent once it exists", DEFAULT_AGENT_USER)


def inner_strength(findings: Iterable[Finding]) -> str:
    """``strong`` / ``weak`` / ``off``: Claude Code's own sandbox inside the outer one."""
    status = {f.id: f.status for f in findings}
    if status.get("bwrap.nested") is Status.PASS:
        return "strong"
    if status.get("bwrap.nested_weak") is Status.PASS:
        return "weak"
    return "off"


def direct_strength(findings: Iterable[Finding]) -> str | None:
    """``strong`` / ``weak`` / ``off``: Claude Code's own sandbox with nothing around it
    (user mode); None when the direct probes did not run."""
    status = {f.id: f.status for f in findings}
    if "bwrap.direct" not in status and "bwrap.direct_weak" not in status:
        return None
    if status.get("bwrap.direct") is Status.PASS:
        return "strong"
    if status.get("bwrap.direct_weak") is Status.PASS:
        return "weak"
    return "off"


USER_INNER = {
    "strong": "Claude Code's own sandbox works for it in its normal (strong) form",
    "weak": message(
        "Claude Code's own sandbox works for it in its weaker form (",
        Ref(Option.INNER_SANDBOX, value="weak"),
        ": enableWeakerNestedSandbox)",
    ),
    "off": "no form of Claude Code's own sandbox works here, so its Bash would run "
    "unsandboxed as that user",
}


def recommend(
    findings: Iterable[Finding], *, as_user: str | None = None, euid: int = 0
) -> Recommendation:
    findings = list(findings)
    by_id = {f.id: f for f in findings}
    who = f"as {as_user}" if as_user else ("as root" if euid == 0 else f"as uid {euid}")
    sandbox = by_id.get("bwrap.sandbox")
    launch = by_id.get("launch.path")
    refused = launch is not None and launch.status not in (Status.PASS, Status.SKIP)
    if sandbox is not None and sandbox.status is Status.PASS and not refused:
        strength = inner_strength(findings)
        probed = "bwrap.nested" in by_id or "bwrap.nested_weak" in by_id
        inner: str = (
            {
                "strong": "Claude Code's own sandbox works inside it in its normal (strong) form",
                "weak": "Claude Code's own sandbox works inside it only in the weaker nested form",
                "off": "Claude Code's own sandbox does not work inside it (inner sandbox off)",
            }[strength]
            if probed
            else "the nested probes were not run"
        )
        deps = by_id.get("claude.sandbox_deps")
        if strength != "off" and deps is not None and deps.status is not Status.PASS:
            # the plan refuses the inner sandbox until they are there (or it is off)
            inner = message(
                inner,
                ", but it needs socat and ripgrep first (claude.sandbox_deps: ",
                deps.summary,
                "; ",
                deps.remedy or "install them",
                ", or ",
                Ref(Option.INNER_SANDBOX, Act.CHOOSE, value="off"),
                ")",
            )
        caveat: str = ""
        if euid == 0 and not as_user:
            caveat = message(" Probed as root: ", RECHECK)
        return Recommendation(
            Mode.SANDBOX,
            message(
                f"bubblewrap starts a sandbox with a fresh /proc {who}; ",
                inner,
                ".",
                egress_note(by_id),
                " " + UNSAFE_NOTE,
                caveat,
            ),
        )
    if sandbox is None:
        why: str = "bwrap.sandbox was not run"
    elif sandbox.status is Status.PASS and launch is not None:
        why = message(
            "bubblewrap starts a sandbox, but a sandbox-mode launch would be refused: "
            f"launch.path {launch.status}: ",
            launch.summary,
            *(("; to allow it: ", launch.remedy) if launch.remedy else ()),
        )
    else:
        why = message(f"bwrap.sandbox {sandbox.status}: ", sandbox.summary)
    user = (
        "a dedicated non-root user can be created"
        if euid == 0
        else "you are not root, so your own account can be the agent"
    )
    direct = direct_strength(findings)
    inner = message("; ", USER_INNER[direct]) if direct is not None else ""
    return Recommendation(
        Mode.USER,
        message(
            switch_note(by_id),
            f"no verified sandbox {who} (",
            why,
            f"); {user}, and Claude Code's root guard never fires for it",
            inner,
            ".",
            landlock_note(by_id),
            " " + UNSAFE_NOTE,
        ),
    )


def egress_note(by_id: dict[str, Finding]) -> str:
    """Where net.egress failed, the apply refuses sandbox mode's default network (the
    allowlist, through the egress proxy): say so with the recommendation, and what
    launches meanwhile; empty otherwise."""
    egress = by_id.get("net.egress")
    if egress is None or egress.status is not Status.FAIL:
        return ""
    return message(
        " But its default allowlist network would be refused: net.egress failed (",
        egress.summary,
        "); until it passes, only ",
        Ref(Option.NETWORK, value="none"),
        " launches (closed, and Claude cannot reach its API).",
    )


def switch_note(by_id: dict[str, Finding]) -> str:
    """Root cannot become another account here: no launch works (sandbox and user mode
    both run the agent as one) until the capability is given; the flag, first."""
    for check_id in ("launch.path", "bwrap.sandbox"):
        finding = by_id.get(check_id)
        if finding is not None and cause_key(finding) == SWITCH_CAUSE:
            return message(
                "Nothing can launch here yet: ",
                finding.summary,
                "; the apply refuses sandbox and user mode until then. To allow it: ",
                finding.remedy,
                ". Once it is given, re-check; until then: ",
            )
    return ""


def landlock_note(by_id: dict[str, Finding]) -> str:
    """What Landlock adds to user mode here (landlock.abi), as a sentence; empty without it."""
    finding = by_id.get("landlock.abi")
    if finding is None or finding.status is not Status.PASS:
        return ""
    userns = by_id.get("userns.create")
    refused = userns is not None and userns.status is Status.FAIL
    where = "user namespaces are refused here, so " if refused else ""
    return message(
        f" {where}User mode with Landlock: ",
        finding.summary,
        " (the launcher confines the agent before Claude starts; files too where Claude's "
        "own sandbox cannot run).",
    )
