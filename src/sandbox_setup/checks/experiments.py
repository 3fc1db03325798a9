"""The live experiments' commands, as plain data (no dataclasses, no judging).

Each live check starts with one of these; they live here, apart from the checks
that judge them, so :mod:`sandbox_setup.checks.prefetch` can start them all while the rest of
the tool is still being imported.
"""

from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Sequence

USERNS_PROBE = ("unshare", "-Ur", "true")
FRESH_PROC_PROBE = ("unshare", "-Urmpf", "--mount-proc", "true")
BWRAP_BASE = ("bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev")
SANDBOX_PROBE = (*BWRAP_BASE, "--proc", "/proc", "true")
OUTER_UP = "sandbox-setup:outer-up"
ROUTES = "/proc/net/route"
ROUTES_V6 = "/proc/net/ipv6_route"
NETNS_PROBE = (*BWRAP_BASE, "--unshare-net", "--proc", "/proc", "cat", ROUTES, ROUTES_V6)
PROXY_STAND_IN = "nobody"

# Runs in a child interpreter (-I -S: only the standard library, no site-packages,
# so the agent user can run it even when our venv lives in a private home).
SECCOMP_SCRIPT = r"""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
insn = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))
prog = Prog(1, ctypes.cast(insn, ctypes.c_void_p))
if libc.prctl(38, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_NO_NEW_PRIVS): " + os.strerror(ctypes.get_errno()))
if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
    sys.exit("prctl(PR_SET_SECCOMP, FILTER): " + os.strerror(ctypes.get_errno()))
for line in open("/proc/self/status"):
    if line.startswith("Seccomp:"):
        print(line.strip())
"""


# landlock.abi: the ABI level (landlock_create_ruleset(NULL, 0, VERSION)), then a real
# ruleset (handling file reads, allowing /) applied with no_new_privs: a container's
# seccomp profile or LSM that refuses any of the three syscalls shows here. Prints
# "abi N" and "restricted", or "error STEP ERRNO".
LANDLOCK_SCRIPT = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def fail(step):
    code = ctypes.get_errno()
    print("error", step, errno.errorcode.get(code, code))
    sys.exit(0)
abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
if abi < 0:
    fail("create_ruleset(VERSION)")
print("abi", abi)
attr = ctypes.c_uint64 * 3
ruleset = libc.syscall(444, ctypes.byref(attr(4, 0, 0)), ctypes.c_size_t(24), ctypes.c_uint32(0))
if ruleset < 0:
    fail("create_ruleset")
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("access", ctypes.c_uint64), ("fd", ctypes.c_int32)]
if libc.syscall(445, ruleset, 1, ctypes.byref(Beneath(4, os.open("/", os.O_PATH))), 0) < 0:
    fail("add_rule")
if libc.prctl(38, 1, 0, 0, 0) != 0:
    fail("prctl(PR_SET_NO_NEW_PRIVS)")
if libc.syscall(446, ruleset, ctypes.c_uint32(0)) < 0:
    fail("restrict_self")
print("restricted")
"""


def landlock_command() -> tuple[str, ...]:
    return (python_for_probes(), "-I", "-S", "-c", LANDLOCK_SCRIPT)


def python_for_probes() -> str:
    # The real interpreter, not a venv symlink under a home the agent can't enter.
    return os.path.realpath(sys.executable)


def seccomp_command() -> tuple[str, ...]:
    return (python_for_probes(), "-I", "-S", "-c", SECCOMP_SCRIPT)


# Keep the Claude probes off the network and quiet (sandbox_setup.checks.claude uses the same).
CLAUDE_QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "CI": "1",
}


def egress_ids(probe: tuple[int, int] | None) -> tuple[int, int] | None:
    """The ``(uid, gid)`` net.egress starts the egress proxy as: the probe user's
    (``probe``, None when the probes run as us); ours when we are not root; for root,
    ``nobody``'s, since the proxy never runs as root (None: there is no nobody)."""
    if probe is not None:
        return probe
    if os.geteuid() != 0:
        return os.geteuid(), os.getegid()

    try:
        entry = pwd.getpwnam(PROXY_STAND_IN)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def egress_command(probe: Sequence[str], ids: tuple[int, int]) -> tuple[str, ...]:
    """The egress probe's argv (``probe`` from the caller) for ``ids``."""
    return (*probe, "--uid", str(ids[0]), "--gid", str(ids[1]))


def first_experiments() -> dict[str, tuple[str, ...]]:
    """Check ID -> the command its check runs first (as the probe user). The nested
    checks are not here: their commands depend on Claude's seccomp helper, found by
    :mod:`sandbox_setup.checks.bwrap` itself."""
    return {
        "userns.create": USERNS_PROBE,
        "proc.fresh_mount": FRESH_PROC_PROBE,
        "bwrap.sandbox": SANDBOX_PROBE,
        "seccomp.available": seccomp_command(),
        "landlock.abi": landlock_command(),
        "net.egress": NETNS_PROBE,
    }
