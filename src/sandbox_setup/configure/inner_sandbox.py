"""Claude Code's own (inner) sandbox: what it needs before the plan turns it on,
and the owned settings keys it is written with.

Claude's sandbox runs bwrap and socat. Without socat it silently runs every Bash
command unsandboxed (docs/claude-code-behaviour.md), so the plan refuses to turn
it on where ``claude.sandbox_deps`` did not pass, unless the operator chooses
``--inner-sandbox off``; the settings then carry ``failIfUnavailable`` so a socat
that disappears later stops Claude instead. In managed scope the settings name the
exact bwrap and socat the probes found (``bwrapPath``/``socatPath``): resolved,
and trusted by the trust rule, since an agent-writable bwrap would let the agent
switch its own inner sandbox off.
"""

from __future__ import annotations

from sandbox_setup.base.choices import SettingsScope
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.host_facts import HostFacts
from sandbox_setup.configure.settings import SandboxKeys

DEPS_CHECK = "claude.sandbox_deps"


def check_sandbox_deps(report: Report, inner: str) -> None:
    """Refuse (exit 3) an inner sandbox whose dependencies did not pass."""
    if inner == "off" or report.passed(DEPS_CHECK):
        return
    finding = report.get(DEPS_CHECK)
    found = (
        f"{DEPS_CHECK} is {finding.status}: {finding.summary}"
        if finding
        else (f"{DEPS_CHECK} was not run")
    )
    remedy = finding.remedy if finding and finding.remedy else "apt-get install -y socat ripgrep"
    raise RefusedError(
        message(
            f"inner sandbox {inner!r} needs socat and ripgrep, but {found}; without them "
            "Claude Code's own sandbox cannot start (Claude refuses to start, or runs every "
            f"command unsandboxed). Remedy: {remedy}  (or ",
            Ref(Option.INNER_SANDBOX, Act.CHOOSE, value="off"),
            ": the launcher's own sandbox or user still applies)",
        )
    )


def sandbox_keys(facts: HostFacts, inner: str, scope: SettingsScope) -> SandboxKeys:
    """The owned sandbox keys for this plan; refuses binaries root must not trust
    (``facts``: the bwrap and socat the probes used, judged when gathered)."""
    managed = scope == SettingsScope.MANAGED
    if inner == "off" or not managed:
        return SandboxKeys(inner_sandbox=inner, managed=managed)
    paths: dict[str, str] = {}
    for binary, key in ((facts.bwrap, "bwrapPath"), (facts.socat, "socatPath")):
        name, path, reason = binary.name, binary.path, binary.untrusted
        if path is None:
            raise RefusedError(
                message(
                    f"sandbox.{key}: no {name} was found on the probes' PATH, so Claude's "
                    "inner sandbox cannot run; install it (apt-get install -y "
                    f"{'bubblewrap' if name == 'bwrap' else name}) or ",
                    Ref(Option.INNER_SANDBOX, Act.CHOOSE, value="off"),
                )
            )
        if reason is not None:
            raise RefusedError(
                message(
                    f"sandbox.{key}: {path} cannot be trusted ({reason}); whoever can change "
                    "it could switch Claude's inner sandbox off. Reinstall it where only root "
                    "can write (apt-get install --reinstall) or ",
                    Ref(Option.INNER_SANDBOX, Act.CHOOSE, value="off"),
                )
            )
        paths[name] = path
    return SandboxKeys(
        inner_sandbox=inner, managed=True, bwrap_path=paths["bwrap"], socat_path=paths["socat"]
    )
