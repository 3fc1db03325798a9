"""What ``stat`` says about a path, gathered once for the rules that judge it.

:class:`PathFacts` is the input of the trust rule (:mod:`sandbox_setup.policy.trust`)
and of the audit's rules; the gatherers here are the only places that stat for
them, so plan, audit and launcher judge the same facts the same way.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class PathFacts:
    """What ``lstat``/``stat`` said about one path (``shown`` is how messages name it)."""

    shown: str
    exists: bool
    uid: int = -1
    gid: int = -1
    mode: int = 0  # full st_mode
    is_symlink: bool = False

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_regular(self) -> bool:
        return stat.S_ISREG(self.mode)

    @property
    def perms(self) -> int:
        return stat.S_IMODE(self.mode)


def path_facts(real: Path, shown: str | None = None, *, follow: bool = True) -> PathFacts:
    """``stat`` (or ``lstat`` with ``follow=False``) of ``real``; missing is ``exists=False``."""
    name = str(real) if shown is None else shown
    try:
        is_link = os.path.islink(real)
        st = os.stat(real) if follow else os.lstat(real)
    except OSError:
        return PathFacts(shown=name, exists=False)
    return PathFacts(name, True, st.st_uid, st.st_gid, st.st_mode, is_link)


def resolved_chain(
    resolved: Path, shown: Callable[[Path], str] = str, stop: Path = Path("/")
) -> tuple[PathFacts, list[PathFacts]]:
    """``(leaf, directories)`` of a path whose symlinks are already resolved: ``lstat``
    of the leaf and of every directory above it up to ``stop`` (inclusive), top first."""
    leaf = path_facts(resolved, shown(resolved), follow=False)
    parents = list(resolved.parents)
    if stop != Path("/"):
        parents = [p for p in parents if p == stop or stop in p.parents]
    dirs = [path_facts(p, shown(p), follow=False) for p in reversed(parents)]
    return leaf, dirs
