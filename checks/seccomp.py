"""seccomp.available: can this process install a seccomp filter (live)?

Claude Code's sandbox applies a seccomp filter (apply-seccomp) inside bwrap. The
probe is a child Python that sets no_new_privs and installs an allow-all BPF
filter, then reports its Seccomp mode; nothing is left behind.
"""

from __future__ import annotations

import os
import sys

from checks.base import Context, Verdict
from checks.model import Status
from checks.probe import ProbeResult

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


def python_for_probes() -> str:
    # The real interpreter, not a venv symlink under a home the agent can't enter.
    return os.path.realpath(sys.executable)


def judge_seccomp(result: ProbeResult, status_seccomp: str | None) -> Verdict:
    """Pure: pass when the child ended with a filter installed (Seccomp: 2)."""
    if status_seccomp is None:
        return Verdict(
            Status.FAIL,
            "the kernel has no seccomp support (no Seccomp: line in /proc/self/status)",
            "cause: seccomp-unsupported",
            "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y",
        )
    if result.ok and "Seccomp:\t2" in result.stdout.replace("Seccomp: ", "Seccomp:\t"):
        return Verdict(Status.PASS, "a seccomp filter can be installed", result.describe())
    if result.timed_out or result.not_found:
        return Verdict(Status.ERROR, "the seccomp probe did not run", result.describe())
    error = result.last_error
    if "Invalid argument" in error:
        summary = "installing a seccomp filter fails with EINVAL: no CONFIG_SECCOMP_FILTER"
        key = "seccomp-filter-unsupported"
    else:
        summary = "installing a seccomp filter failed: " + (error or f"exit {result.returncode}")
        key = "seccomp-refused"
    return Verdict(
        Status.FAIL,
        summary,
        result.describe() + f"\ncause: {key}",
        "use a kernel with CONFIG_SECCOMP_FILTER=y; in a container, check its seccomp "
        "profile and LSM",
    )


def check_seccomp(ctx: Context) -> Verdict:
    result = ctx.run([python_for_probes(), "-I", "-S", "-c", SECCOMP_SCRIPT])
    return judge_seccomp(result, ctx.facts.status.get("Seccomp") if ctx.facts.status else "0")
