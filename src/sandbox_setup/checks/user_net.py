"""net.user_wall: which network wall a user-mode session gets on this host (invariant 16).

The launcher (as root) gives a user-mode session a network namespace of its own where
it can make one: loopback only, the session's egress proxy listening there, the
exposed loopback ports forwarded in (:mod:`sandbox_setup.launcher.egress.netns`), with
Landlock's TCP ports as the second wall. Root without ``CAP_SYS_ADMIN`` (Docker's
default capabilities) cannot: then Landlock's ports are the wall, which name ports, not
addresses ("ports only: any address on these ports is reachable; UDP is not filtered").

The namespace does not wait on Landlock: where root can make one, a user-mode session
gets it whatever the Landlock ABI and ``[user] landlock``; Landlock's TCP rules (ABI >=
4) are the second wall there. Where root cannot and Landlock has no TCP rules either,
there is no wall: the host's network.

The probe does what the launcher does, as root, in a child interpreter: ``unshare
(CLONE_NEWNET)`` and bring ``lo`` up; the namespace ends with the child. The answer is
the finding's typed fact ``netns`` (:func:`namespace_from`), not its words: PASS, root
can; WARN, root cannot (``cause: netns-refused``: Landlock's ports only; ``cause:
no-wall``: Landlock ABI < 4 too, probed again here); ERROR, not probed (the probes do
not run as root, or the probe did not run).
"""

from __future__ import annotations

from sandbox_setup.base.landlock import NETWORK_ABI
from sandbox_setup.base.netwall import NO_WALL, PORTS_ONLY, describe_user_wall
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.experiments import landlock_command, python_for_probes
from sandbox_setup.checks.landlock import parse_landlock_probe
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.probe import ProbeResult

CHECK_ID = "net.user_wall"
NETNS_SCRIPT = r"""
import ctypes, errno, fcntl, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x40000000) != 0:
    print("error unshare " + errno.errorcode.get(ctypes.get_errno(), "?"))
    raise SystemExit(0)
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock.fileno(), 0x8913, struct.pack("16sH22x", b"lo", 0))
        flags = struct.unpack("16sH22x", got)[1]
        fcntl.ioctl(sock.fileno(), 0x8914, struct.pack("16sH22x", b"lo", flags | 1))
except OSError as exc:
    print("error loopback " + errno.errorcode.get(exc.errno or 0, "?"))
    raise SystemExit(0)
print("netns ok")
"""


def netns_command() -> tuple[str, ...]:
    return (python_for_probes(), "-I", "-S", "-c", NETNS_SCRIPT)


def judge_user_wall(result: ProbeResult | None, landlock_abi: int | None = None) -> Verdict:
    """Pure: ``result`` of :func:`netns_command` run as root (None: the probes are not
    root, so the launcher's side was not tried); ``landlock_abi``: what the agent gets
    (None: not known). The namespace does not depend on Landlock: where root can make
    one, the session gets it whatever the ABI; Landlock's TCP rules (ABI >= 4) are a
    second wall there, and the only one where root cannot. With neither, the check says
    the agent has the host's network (never a wall that is not there)."""
    if result is None:
        return Verdict(
            Status.ERROR,
            "not probed (the probes do not run as root): a user-mode session started by "
            "root gets a network namespace of its own where root can create one",
        )
    if result.timed_out or result.not_found or result.returncode != 0:
        return Verdict(Status.ERROR, "the network namespace probe did not run", result.describe())
    line = result.stdout.strip().splitlines()[-1:] or [""]
    if line[0] == "netns ok":
        wall = describe_user_wall(landlock_abi, True, True)
        return Verdict(
            Status.PASS,
            f"root can create a network namespace: a user-mode session gets {wall}",
            result.describe(),
            facts={NETNS_FACT: True},
        )
    refused = line[0].removeprefix("error ")
    if landlock_abi is not None and landlock_abi < NETWORK_ABI:
        return Verdict(
            Status.WARN,
            f"user mode has no network wall here: root cannot create a network namespace "
            f"({refused}) and Landlock ABI {landlock_abi} < {NETWORK_ABI} has no TCP rules; "
            f"the agent's network is {NO_WALL}",
            result.describe(),
            "give the container CAP_SYS_ADMIN (docker run --cap-add SYS_ADMIN), run "
            "sandbox-setup on the host itself, or use sandbox mode",
            facts={NETNS_FACT: False},
            cause="no-wall",
        )
    return Verdict(
        Status.WARN,
        f"root cannot create a network namespace here ({refused}): "
        f"user mode's network wall is Landlock's TCP ports only: {PORTS_ONLY}",
        result.describe(),
        "give the container CAP_SYS_ADMIN (docker run --cap-add SYS_ADMIN), or run "
        "sandbox-setup on the host itself",
        facts={NETNS_FACT: False},
        cause="netns-refused",
    )


def check_user_wall(ctx: Context) -> Verdict:
    landlock = ctx.run(landlock_command())
    abi = parse_landlock_probe(landlock.stdout)[0] if landlock.ok else None
    if ctx.euid != 0:
        return judge_user_wall(None, abi)
    return judge_user_wall(ctx.run(netns_command(), as_probe_user=False), abi)


# The Finding's typed fact: root may make a network namespace here (True) or not.
NETNS_FACT = "netns"


def namespace_from(finding: Finding | None) -> bool | None:
    """What ``net.user_wall`` found, typed: root may make a network namespace (True),
    may not (False), not known (None)."""
    value = finding.facts.get(NETNS_FACT) if finding is not None else None
    return value if isinstance(value, bool) else None


__all__ = ["CHECK_ID", "check_user_wall", "judge_user_wall", "namespace_from", "netns_command"]
