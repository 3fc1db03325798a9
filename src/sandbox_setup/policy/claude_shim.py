"""The ``claude`` shim's fixed facts, shared by the plan that installs it and the
launcher that must never exec it (issue 16).

The shim is an executable named ``claude`` that sandbox-setup installs, on
request (``--install-claude-shim``), where root's PATH finds it before the real
Claude Code: :data:`SHIM_PATH`. Debian's root PATH (login.defs, sudo's
secure_path) is ``/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin``,
and ``npm -g`` as root puts the real ``claude`` in ``/usr/local/bin``, so
``/usr/local/sbin`` comes first without taking the real binary's place.

Every shim carries :data:`SHIM_MARKER` near its top. The launcher refuses a
configured Claude binary that carries it (exec'ing the shim from the launcher
would loop), the plan never picks one as "the real Claude", and the shim skips
any copy of itself when it looks for the real one.
"""

from __future__ import annotations

from pathlib import PurePosixPath

SHIM_PATH = PurePosixPath("/usr/local/sbin/claude")
SHIM_MARKER = b"sandbox-setup claude shim"
# The marker is within the first lines; a real Claude binary is hundreds of MB.
MARKER_WINDOW = 1024
# Root exporting exactly this keeps Claude Code's own root guard: the shim steps
# aside and runs the real Claude unchanged (the bug report's opt-out).
OPT_OUT_VARIABLE = "IS_SANDBOX"
OPT_OUT_VALUE = "0"


def is_claude_shim(head: bytes) -> bool:
    """Whether a file that starts with ``head`` is a sandbox-setup claude shim."""
    return SHIM_MARKER in head[:MARKER_WINDOW]


def shim_refusal(path: str) -> str:
    """Why a configured Claude binary that is the shim cannot be used."""
    return (
        f"{path} is sandbox-setup's claude shim, not Claude Code: exec'ing it from "
        "sandbox-launch would start the launcher again. Point the config at the real "
        "binary (sandbox-setup --headless ... --claude /path/to/real/claude)"
    )
