"""How to recognise sandbox-setup's ``claude`` shim: its path and its marker.

Vocabulary every layer needs: the plan that installs the shim, the launcher that
must never exec it, and the checks, which must never run it (invariant 13: a probe
that ran the shim would start a whole agent session through sandbox-launch). The
rest of the shim's facts live in :mod:`sandbox_setup.policy.claude_shim`.
"""

from __future__ import annotations

from pathlib import PurePosixPath

SHIM_PATH = PurePosixPath("/usr/local/sbin/claude")
SHIM_MARKER = b"sandbox-setup claude shim"
# The marker is within the first lines; a real Claude binary is hundreds of MB.
MARKER_WINDOW = 1024


def is_claude_shim(head: bytes) -> bool:
    """Whether a file that starts with ``head`` is a sandbox-setup claude shim."""
    return SHIM_MARKER in head[:MARKER_WINDOW]
