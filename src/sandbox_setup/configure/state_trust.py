"""The trust rule over what an undo, an audit and an apply read from the state
directory (docs/design.md invariant 12): the directory itself, the journal, the ledger
and the backups the journal names; and over an answers file root replays.

Root replays the journal as written: a line appended by anyone else could make it
create or delete any file. So before a single entry is read, the state directory
and the journal must pass :mod:`sandbox_setup.policy.trust` (owned by root or the
operator, not group/world-writable, nor any directory on the way), judged on the
target system's path (under ``--root DIR`` the tree inside DIR). A backup is read
only from the state directory's own ``backups/`` folder and must pass the same
rule; its sha256 is checked where it is read (:mod:`sandbox_setup.configure.revert`).
Every failure is a :class:`~sandbox_setup.base.errors.RefusedError` (exit 3) naming
the file and the fix, raised before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import not_regular
from sandbox_setup.policy.trust import (
    chain_problems,
    check_trusted_file,
    refuse,
    state_dir_problems,
    trusted_owners,
)


def _owners(layout: Layout) -> frozenset[int]:
    return trusted_owners(layout.operator.uid)


def check_state_dir(layout: Layout) -> None:
    """The state directory (when it exists) and every directory above it."""
    leaf, dirs = layout.chain(layout.resolve(layout.state_dir))
    refuse(state_dir_problems(leaf, dirs, _owners(layout)), "state directory")


def check_setup_file(layout: Layout, target: PurePosixPath, what: str) -> None:
    """A file of this setup root reads (when it exists): the file and its directories."""
    leaf, dirs = layout.chain(layout.resolve(target))
    if leaf.exists:
        refuse(chain_problems(leaf, dirs, _owners(layout)), what)


def check_state_file(layout: Layout, target: PurePosixPath, what: str) -> None:
    """A file in the state directory (when it exists), the directory checked first."""
    check_state_dir(layout)
    check_setup_file(layout, target, what)


def trusted_answers_path(layout: Layout, path: Path) -> Path:
    """``--answers FILE`` (a path on this host, even under ``--root``), resolved and
    checked; a missing file is left to the reader (an input error, exit 2)."""
    given = Path(os.path.abspath(path))
    if not os.path.lexists(given):
        return given
    with contextlib.suppress(OSError):  # unreadable: the trust check names it
        mode = os.stat(given).st_mode
        if not stat.S_ISREG(mode):  # a FIFO or a directory is bad input, not a threat
            raise not_regular(given, mode)
    return check_trusted_file(given, _owners(layout), "answers file")


def check_backups(layout: Layout, named_all: Iterable[str | None]) -> None:
    """Every backup named (by the journal's steps) lies in the backups folder and
    passes the rule."""
    folder = layout.backups_dir
    for named in named_all:
        if named is None:
            continue
        given = PurePosixPath(os.path.normpath(str(named)))
        inside = given.is_absolute() and folder in given.parents
        resolved = layout.resolve(given) if inside else given
        if not (inside and folder in resolved.parents):
            raise RefusedError(
                f"journal {layout.real(layout.journal)}: a step names the backup {named}, "
                f"which is not in {layout.real(folder)}; backups are only read from there "
                "(nothing was changed). Remove that line if you did not write it"
            )
        check_state_file(layout, resolved, "backup")
