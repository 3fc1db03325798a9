"""Where Claude Code is: the binary a probe may run, never sandbox-setup's claude shim.

Once installed, the shim (:mod:`sandbox_setup.base.claude_shim`) comes first on
root's PATH, and for root it starts a whole agent session through sandbox-launch:
a probe that ran it would break invariant 13. The search reads each candidate's
first bytes and passes over the shim to the real binary after it, as the shim
itself does; an explicitly given shim is reported, not run. Small on purpose:
``--check`` imports it to start Claude's ``--version`` early, before the checks load.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base.claude_shim import MARKER_WINDOW, is_claude_shim
from sandbox_setup.checks.prefetch import SAFE_PATH


def claude_candidates(home: Path) -> list[Path]:
    return [
        home / ".local/bin/claude",
        home / ".claude/local/claude",
        Path("/usr/local/bin/claude"),
        Path("/usr/bin/claude"),
    ]


def file_is_claude_shim(path: str) -> bool:
    """Whether ``path`` is sandbox-setup's claude shim (read, never run). An
    unreadable file counts as one: nothing it could be is safe to run."""
    try:
        with open(path, "rb") as handle:
            return is_claude_shim(handle.read(MARKER_WINDOW))
    except OSError:
        return True


def shims_note(skipped: tuple[str, ...]) -> str:
    """A line for a finding's detail naming the shims a search passed over ("" if none)."""
    return "\nnot run: sandbox-setup's claude shim at " + ", ".join(skipped) if skipped else ""


@dataclass(frozen=True)
class ClaudeLookup:
    """Where Claude Code is, and the claude shims the search passed over."""

    path: str | None
    given_shim: bool = False  # ``path`` was given explicitly and is the shim: never run it
    skipped: tuple[str, ...] = ()  # shims found first on the way, never run

    @property
    def runnable(self) -> str | None:
        """The binary a probe may run (``--version`` only), if any."""
        return None if self.given_shim else self.path

    def note(self) -> str:
        return shims_note(self.skipped)


def lookup_claude(explicit: str | None = None, home: Path | None = None) -> ClaudeLookup:
    """Claude Code: the explicit path, else on PATH, else the installers' usual places,
    passing over sandbox-setup's claude shim (first on root's PATH once installed)
    to the real binary after it, as the shim itself does."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            return ClaudeLookup(None)
        return ClaudeLookup(explicit, given_shim=file_is_claude_shim(explicit))
    path = os.environ.get("PATH", "") + os.pathsep + SAFE_PATH
    dirs = [entry for entry in path.split(os.pathsep) if entry.startswith("/")]
    candidates = [os.path.join(d, "claude") for d in dict.fromkeys(dirs)]
    candidates += [str(c) for c in claude_candidates(home or Path.home())]
    skipped: list[str] = []
    for candidate in candidates:
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if file_is_claude_shim(candidate):
            if candidate not in skipped:
                skipped.append(candidate)
            continue
        return ClaudeLookup(candidate, skipped=tuple(skipped))
    return ClaudeLookup(None, skipped=tuple(skipped))


def find_claude(explicit: str | None = None, home: Path | None = None) -> str | None:
    """The Claude Code binary a probe may run, never the claude shim (None: none)."""
    return lookup_claude(explicit, home).runnable
