"""What a Bash tool command reports about where it ran, and how to read it back.

:func:`evidence_command` is the command a scripted ``tool_use`` runs: it
prints a marker (so a run where the command never ran cannot pass), the uid,
the seccomp and no_new_privs state, the user and pid namespaces, and
``SANDBOX_RUNTIME`` (set by Claude's sandbox runtime inside its bwrap).
:func:`parse_evidence` turns the ``tool_result`` text back into
:class:`BashEvidence`; :func:`host_namespaces` is what an unsandboxed command
would report, to compare with.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass

MARKER_PREFIX = "fake-api-marker-"


def new_marker() -> str:
    return MARKER_PREFIX + secrets.token_hex(6)


def evidence_command(marker: str) -> str:
    """A shell command whose output :func:`parse_evidence` reads."""
    return (
        f"echo {marker}; echo uid=$(id -u); "
        "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; "
        "echo user_ns=$(readlink /proc/self/ns/user); echo pid_ns=$(readlink /proc/self/ns/pid); "
        "echo SANDBOX_RUNTIME=$SANDBOX_RUNTIME"
    )


@dataclass(frozen=True)
class BashEvidence:
    marker_seen: bool
    uid: int | None
    seccomp: int | None  # 0 none, 1 strict, 2 filter
    no_new_privs: int | None
    user_ns: str | None
    pid_ns: str | None
    sandbox_runtime: str  # "" when unset

    @property
    def sandboxed(self) -> bool:
        """Inside Claude's bwrap: a seccomp filter, namespaces of its own, SANDBOX_RUNTIME=1."""
        host = host_namespaces()
        return (
            self.seccomp == 2
            and self.sandbox_runtime == "1"
            and self.user_ns not in (None, host["user"])
            and self.pid_ns not in (None, host["pid"])
        )

    @property
    def unsandboxed(self) -> bool:
        """On the host: no seccomp filter, the host's namespaces, no SANDBOX_RUNTIME."""
        host = host_namespaces()
        return (
            self.seccomp == 0
            and self.sandbox_runtime == ""
            and self.user_ns == host["user"]
            and self.pid_ns == host["pid"]
        )


def _field(text: str, pattern: str) -> str | None:
    found = re.search(pattern, text, re.MULTILINE)
    return found.group(1).strip() if found else None


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def parse_evidence(text: str, marker: str) -> BashEvidence:
    return BashEvidence(
        marker_seen=re.search(rf"^{re.escape(marker)}$", text, re.MULTILINE) is not None,
        uid=_int(_field(text, r"^uid=(\d+)$")),
        seccomp=_int(_field(text, r"^Seccomp:\s*(\d+)$")),
        no_new_privs=_int(_field(text, r"^NoNewPrivs:\s*(\d+)$")),
        user_ns=_field(text, r"^user_ns=(\S+)$"),
        pid_ns=_field(text, r"^pid_ns=(\S+)$"),
        sandbox_runtime=_field(text, r"^SANDBOX_RUNTIME=(.*)$") or "",
    )


def host_namespaces() -> dict[str, str]:
    """The user and pid namespaces of this (test) process: the host's, for a test run as root."""
    return {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in ("user", "pid")}
