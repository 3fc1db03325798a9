"""landlock.abi: the Landlock ABI this kernel offers to the agent (live), and what it gives.

The probe (:data:`sandbox_setup.checks.experiments.LANDLOCK_SCRIPT`, a child
interpreter as the probe user) asks the kernel for its ABI level, then applies a real
ruleset with ``no_new_privs``: a seccomp profile or LSM that refuses one of the three
syscalls shows as the step that failed. What the level means comes from
:data:`sandbox_setup.base.landlock.ABI_FEATURES`: files (1+), TCP ports (4+), abstract
sockets and signals scoped (6+). User mode confines the agent with what is there
(:mod:`sandbox_setup.launcher.user.landlock_exec`).
"""

from __future__ import annotations

from sandbox_setup.base.landlock import ABI_FEATURES, NETWORK_ABI, SCOPE_ABI, features
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.experiments import landlock_command
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.probe import ProbeResult

REMEDY_MISSING = (
    "use a kernel built with CONFIG_SECURITY_LANDLOCK=y and boot it with landlock in the "
    "lsm= list (e.g. lsm=landlock,lockdown,yama,integrity,apparmor); in a container, allow "
    "the syscalls landlock_create_ruleset, landlock_add_rule, landlock_restrict_self in its "
    "seccomp profile (Docker's and Podman's defaults allow them)"
)


def parse_landlock_probe(stdout: str) -> tuple[int, str | None, bool]:
    """``(abi, failed step with errno or None, restricted)`` from the probe's lines."""
    abi, failed, restricted = 0, None, False
    for line in stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "abi" and rest.strip().isdigit():
            abi = int(rest)
        elif word == "error":
            failed = rest.strip()
        elif word == "restricted":
            restricted = True
    return abi, failed, restricted


def what_it_gives(abi: int) -> str:
    """One sentence over the walls this level has, and the ones it lacks."""
    has = ["files"]
    lacks: list[str] = []
    (has if abi >= NETWORK_ABI else lacks).append("TCP connect and bind by port")
    (has if abi >= SCOPE_ABI else lacks).append("abstract unix sockets and signals scoped")
    text = "has " + ", ".join(has)
    if lacks:
        text += "; lacks " + ", ".join(lacks)
    if abi < NETWORK_ABI:
        text += " (so in user mode the network stays the host's)"
    return text


# The Finding's typed fact: the ABI the agent gets (0: none), what the plan and the
# audit decide by (:func:`abi_from`).
ABI_FACT = "abi"


def abi_from(finding: Finding | None) -> int | None:
    """The Landlock ABI ``landlock.abi`` found for the agent (0: none); None: not probed."""
    if finding is None:
        return None
    value = finding.facts.get(ABI_FACT)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def judge_landlock(result: ProbeResult) -> Verdict:
    """Pure: pass when a ruleset was applied; warn when Landlock is missing or refused
    (user mode then has no Landlock wall; nothing else depends on it)."""
    if result.timed_out or result.not_found or result.returncode != 0:
        return Verdict(Status.ERROR, "the Landlock probe did not run", result.describe())
    abi, failed, restricted = parse_landlock_probe(result.stdout)
    levels = "\n".join(features(abi))
    if abi >= 1 and restricted:
        return Verdict(
            Status.PASS,
            f"Landlock ABI {abi}: {what_it_gives(abi)}",
            f"{result.describe()}\nwhat each level up to {abi} gives:\n{levels}",
            facts={ABI_FACT: abi},
        )
    if abi < 1:
        errno_name = (failed or "").rpartition(" ")[2]
        cause = "landlock-refused" if errno_name in ("EPERM", "EACCES") else "landlock-missing"
        summary = (
            f"no Landlock here ({failed}): user mode runs without its Landlock wall"
            if failed
            else "no Landlock here"
        )
        return Verdict(
            Status.WARN,
            summary,
            result.describe(),
            REMEDY_MISSING,
            facts={ABI_FACT: 0},
            cause=cause,
        )
    return Verdict(
        Status.WARN,
        f"Landlock ABI {abi} is offered, but applying a ruleset failed ({failed}): user mode "
        "runs without its Landlock wall",
        result.describe(),
        REMEDY_MISSING,
        facts={ABI_FACT: 0},  # offered, but the agent gets none,
        cause="landlock-refused",
    )


def check_landlock(ctx: Context) -> Verdict:
    return judge_landlock(ctx.run(landlock_command()))


__all__ = ["ABI_FEATURES", "check_landlock", "judge_landlock", "parse_landlock_probe"]
