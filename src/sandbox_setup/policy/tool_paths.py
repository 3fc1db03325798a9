"""The programs root runs for the agent must stay out of the agent's reach.

A workspace becomes writable by the agent (ACLs, or a writable bind in the
sandbox). If it contained the Claude binary, the bwrap/setpriv the launcher
runs, or sandbox-setup's own installation, the agent could replace what root
executes next (docs/design.md invariant 2). So no workspace may be, or be above, any of
them. Pure: the plan gathers the resolved paths and asks this.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath


def tools_inside(
    workspace: PurePosixPath, tools: Mapping[str, PurePosixPath]
) -> list[tuple[str, PurePosixPath]]:
    """``(what, path)`` of every tool that lies in ``workspace`` (or is it)."""
    return [
        (what, path)
        for what, path in tools.items()
        if path == workspace or workspace in path.parents
    ]


def tools_problem(workspace: PurePosixPath, tools: Mapping[str, PurePosixPath]) -> str | None:
    """Why ``workspace`` cannot be one (it holds a tool root runs), or None."""
    inside = tools_inside(workspace, tools)
    if not inside:
        return None
    listed = ", ".join(f"{what} ({path})" for what, path in inside)
    return (
        f"workspace {workspace} contains {listed}: the agent could replace what root runs. "
        "Choose a project directory that holds no installed programs, or install them "
        "outside it"
    )
