"""Server-managed settings: the trace Claude Code leaves in a home when an
organisation's settings apply to it, and what that means for the managed file.

A Team or Enterprise login can carry settings from Anthropic's server. Claude Code
caches what it fetched as ``remote-settings.json`` in its config directory
(``$CLAUDE_CONFIG_DIR``, else ``~/.claude``): read from both releases' binaries
(2.1.197: ``join(CLAUDE_CONFIG_DIR ?? join(homedir(), ".claude"), "remote-settings.json")``,
written with mode 0600 and logged "Remote settings: Saved to ..."; 2.1.332 the same
name in the same directory, with ``remote-settings.json.signature.json`` and
``.signature-iat.json`` beside it). Under ``managedSourcesBehavior`` "first-wins" (the
default) such settings hide ``/etc/claude-code/managed-settings.json`` entirely, so the
restrictive settings an apply writes may not be what Claude runs with
(docs/claude-code-behaviour.md, "Server-managed settings").

The homes that count: the operator's (root runs Claude through the shim, and its
login can be an organisation's) and the agent's (its own login). The launcher sets no
``CLAUDE_CONFIG_DIR``, so ``~/.claude`` is where the agent's Claude keeps it.

Pure, stdlib only: callers hand in the homes and a way to ask whether a path exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

# Relative to a home: the cache of server-managed settings (both releases).
REMOTE_SETTINGS_CACHE = PurePosixPath(".claude/remote-settings.json")
# What a caller says when one exists (the check's and the audit's summary).
MAY_BE_OVERRIDDEN = "these settings may be overridden"
WHY = (
    "Claude Code caches the server-managed settings of a Team or Enterprise login in "
    '~/.claude/remote-settings.json; under managedSourcesBehavior "first-wins" (the '
    "default) they hide /etc/claude-code/managed-settings.json entirely, so the sandbox "
    "settings the apply writes there may not be the ones Claude runs with."
)
REMEDY = (
    "log the agent in with an API key (not a Team/Enterprise account), then remove the "
    "cache: rm -- {paths}"
)


def remote_settings_caches(
    homes: Iterable[tuple[str, PurePosixPath]], exists: Callable[[PurePosixPath], bool]
) -> list[tuple[str, PurePosixPath]]:
    """``(who, path)`` of each server-managed settings cache found in ``homes``
    (``(who, home)`` pairs: each home once, in the order given)."""
    found: list[tuple[str, PurePosixPath]] = []
    seen: set[PurePosixPath] = set()
    for who, home in homes:
        if home in seen:
            continue
        seen.add(home)
        path = home / REMOTE_SETTINGS_CACHE
        if exists(path):
            found.append((who, path))
    return found
