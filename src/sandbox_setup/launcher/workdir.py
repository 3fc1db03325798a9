"""Where Claude Code starts: the operator's directory when it is in a workspace.

The rules (docs/design.md, "CLI contract": where Claude Code starts), for sandbox mode
(bwrap ``--chdir``) and user mode (the agent's working directory) alike:

* the operator is in a workspace, or below one: Claude starts right there;
* the operator is elsewhere and there is one workspace: Claude starts in it,
  and the launch notice says where the operator was;
* the operator is elsewhere and there are several: refuse (exit 2), listing
  them, since guessing would put Claude in the wrong project;
* no workspace at all (user mode allows it): the agent's home.

"In a workspace" is decided on real paths (``os.getcwd()`` has every symlink
resolved), and the answer is given under the workspace's *configured* path,
which is where the sandbox mounts it. The launcher only picks the path: bwrap
enters it inside the sandbox as the agent, and in user mode it is entered
before the agent starts, so a directory the agent cannot search stays closed to
it either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from sandbox_setup.base.errors import InputError


@dataclass(frozen=True, slots=True)
class WorkDir:
    """Where Claude starts, and where the operator was when that is elsewhere."""

    path: str
    moved_from: str | None = None


def current_directory() -> str | None:
    """The launcher's working directory (physical), or None when it was deleted."""
    try:
        return os.getcwd()
    except OSError:
        return None


def real_paths(paths: Sequence[PurePosixPath]) -> dict[str, str]:
    """Each configured path and where its symlinks lead on this host."""
    return {str(path): os.path.realpath(path) for path in paths}


def _inside(cwd: PurePosixPath, top: str) -> PurePosixPath | None:
    """``cwd`` relative to ``top``, or None when it is not at or below it."""
    try:
        return cwd.relative_to(top)
    except ValueError:
        return None


def choose_workdir(
    workspaces: Sequence[PurePosixPath],
    real: Mapping[str, str],
    cwd: str | None,
    home: PurePosixPath,
) -> WorkDir:
    """Apply the module's rules; :class:`InputError` when several workspaces leave it open."""
    workspaces = list(dict.fromkeys(workspaces))  # a workspace listed twice is one
    if cwd is not None:
        here = PurePosixPath(cwd)
        best: tuple[int, PurePosixPath] | None = None
        for workspace in workspaces:
            configured = str(workspace)
            for top in dict.fromkeys((real.get(configured, configured), configured)):
                below = _inside(here, top)
                # The deepest workspace wins where they nest (same directory either way).
                if below is not None and (best is None or len(top) > best[0]):
                    best = (len(top), workspace / below)
        if best is not None:
            return WorkDir(str(best[1]))
    shown = cwd if cwd is not None else "a directory that no longer exists"
    if not workspaces:
        return WorkDir(str(home), None if cwd == str(home) else shown)
    if len(workspaces) == 1:
        return WorkDir(str(workspaces[0]), shown)
    listed = ", ".join(str(w) for w in workspaces)
    raise InputError(
        f"you are in {shown}, which is in none of the workspaces ({listed}); Claude Code "
        f"would not know which project to start in. cd into one first, e.g. "
        f"cd {workspaces[0]} && sandbox-launch"
    )
