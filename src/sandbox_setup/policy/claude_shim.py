"""The ``claude`` shim's fixed facts, shared by the plan that installs it and the
launcher that must never exec it (docs/design.md invariant 13).

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

from sandbox_setup.base import remedies

# The shim's path and marker are vocabulary (the checks need them too).
from sandbox_setup.base.claude_shim import MARKER_WINDOW, SHIM_MARKER, SHIM_PATH, is_claude_shim

__all__ = [
    "MARKER_WINDOW",
    "OPT_OUT_VALUE",
    "OPT_OUT_VARIABLE",
    "SHIM_MARKER",
    "SHIM_PATH",
    "is_claude_shim",
    "shim_refusal",
]

# Root exporting exactly this keeps Claude Code's own root guard: the shim steps
# aside and runs the real Claude unchanged (the bug report's opt-out).
OPT_OUT_VARIABLE = "IS_SANDBOX"
OPT_OUT_VALUE = "0"


def shim_refusal(path: str) -> str:
    """Why a configured Claude binary that is the shim cannot be used."""
    return (
        f"{path} is sandbox-setup's claude shim, not Claude Code: exec'ing it from "
        "sandbox-launch would start the launcher again. Point the config at the real "
        f"binary, where it is installed: {remedies.change_setup('--claude', 'PATH')}"
    )
