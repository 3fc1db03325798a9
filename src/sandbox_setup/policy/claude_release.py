"""The oldest Claude Code release sandbox-setup accepts without a warning (the floor),
and why: each fix a release below it lacks, as data (docs/design.md: each security rule
lives once, in ``policy/``; ``claude.installed``, the audit and the wizard ask here).

The reasons are the sandbox fixes of the releases up to the floor, read from the
releases' notes and checked against the binaries where the binary shows them
(docs/claude-code-behaviour.md, "The release floor"). A release below the floor
still runs (2.1.197 is what a bare ``npm install -g @anthropic-ai/claude-code``
gives on Debian 12's Node 20); it is named, with what it lacks, and the remedy
installs the newest (:data:`INSTALL_NEWEST`), which npm installs on Node 20 too
(with an ``engines`` warning: the package is a native binary, Node only unpacks it).

Pure, stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True, order=True, slots=True)
class Release:
    """A Claude Code version, comparable: ``2.1.0-beta.3`` < ``2.1.0`` < ``2.1.1``."""

    major: int
    minor: int
    patch: int
    final: bool = True  # False for a prerelease, which sorts before its release
    text: str = ""

    def __str__(self) -> str:
        return self.text or f"{self.major}.{self.minor}.{self.patch}"


_CORE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def parse_release(text: str) -> Release | None:
    """``"2.1.332"`` as a :class:`Release`; None for anything that is not a version."""
    match = _CORE.match(text.strip())
    if match is None:
        return None
    major, minor, patch = (int(match.group(n)) for n in (1, 2, 3))
    return Release(major, minor, patch, final=match.group(4) is None, text=text.strip())


class Fix(Enum):
    """A sandbox fix a release below the floor lacks (value: what it is, for people)."""

    STRICT_ALLOWLIST = (
        "sandbox.network.strictAllowlist (a host outside the allowlist is denied, never "
        "offered to the user to allow)"
    )
    CAP_DROP_ALL = "--cap-drop ALL for sandboxed commands"
    PROJECT_CANNOT_WIDEN = "project settings cannot widen the administrator's sandbox"
    NO_NESTED_USERNS = (
        "user namespaces refused inside sandboxed commands (without it a sandboxed "
        "command can lift its own write protections)"
    )
    ESCAPE_FIXES = "the sandbox-escape fixes of 2.1.309 to 2.1.323"


@dataclass(frozen=True, slots=True)
class ReleaseFix:
    fix: Fix
    since: Release  # the first release that has it


def _release(text: str) -> Release:
    parsed = parse_release(text)
    assert parsed is not None, text
    return parsed


# Each fix with the first release that has it (from the releases' notes; the newest
# release embeds only its last few notes, so these are the project's measurements:
# docs/claude-code-behaviour.md).
RELEASE_FIXES: tuple[ReleaseFix, ...] = (
    ReleaseFix(Fix.STRICT_ALLOWLIST, _release("2.1.219")),
    ReleaseFix(Fix.CAP_DROP_ALL, _release("2.1.220")),
    ReleaseFix(Fix.PROJECT_CANNOT_WIDEN, _release("2.1.285")),
    ReleaseFix(Fix.NO_NESTED_USERNS, _release("2.1.304")),
    ReleaseFix(Fix.ESCAPE_FIXES, _release("2.1.323")),
)
# The floor: the first release with every fix above.
FLOOR: Release = max(entry.since for entry in RELEASE_FIXES)
# The remedy: the newest release, whatever Node this host has (see module doc).
INSTALL_NEWEST = "npm install -g @anthropic-ai/claude-code@latest"


def lacking(version: str) -> tuple[Fix, ...] | None:
    """The fixes ``version`` lacks (empty at or above the floor); None when
    ``version`` is not a version (nothing can be said about it)."""
    release = parse_release(version)
    if release is None:
        return None
    return tuple(entry.fix for entry in RELEASE_FIXES if release < entry.since)


def below_floor(version: str | None) -> bool:
    """True only for a version known to be below the floor."""
    missing = lacking(version) if version is not None else None
    return bool(missing)


def floor_problem(version: str | None) -> str | None:
    """One sentence naming ``version``, the floor and what it lacks; None when it
    is at or above the floor, or unknown."""
    missing = lacking(version) if version is not None else None
    if not missing:
        return None
    return f"Claude Code {version} is below the release floor {FLOOR}; it lacks: " + "; ".join(
        fix.value for fix in missing
    )


def required_minimum(version: str | None) -> str | None:
    """The ``requiredMinimumVersion`` managed settings carry, so that Claude Code itself
    refuses to start below the floor (a downgrade): the floor, where the installed
    ``version`` is at or above it; None otherwise (a release below the floor, or one
    that cannot be read, would then refuse to start at all)."""
    missing = lacking(version) if version is not None else None
    return str(FLOOR) if missing == () else None
