"""Errors that map to exit codes. Each names what was wrong and where."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox_setup.base.exitcodes import ExitCode


class SetupError(Exception):
    """An error the CLI reports as one message and an exit code."""

    exit_code: ExitCode = ExitCode.USAGE


class InputError(SetupError):
    """Bad input (flags, answers, an existing file we cannot parse). Exit 2."""

    exit_code = ExitCode.USAGE


class RefusedError(SetupError):
    """A fail-closed refusal. Exit 3."""

    exit_code = ExitCode.REFUSED


def access_denied(path: Path | str, exc: OSError, access: str) -> InputError:
    """A file or directory this user may not open (mode 0000, another owner's): an
    input error naming it and the fix (``chmod u+ACCESS PATH``), not an internal error."""
    return InputError(
        f"{path}: {exc.strerror or 'permission denied'}; sandbox-setup cannot read it as uid "
        f"{os.geteuid()}: give it back its access (chmod u+{access} {path}) or run as its owner"
    )


def unreadable(path: Path | str, exc: OSError) -> InputError:
    """:func:`access_denied` for ``path`` that could not be opened: the first directory
    on its way this user may not enter (``chmod u+rwx DIR``), else the file itself."""
    path = Path(path)
    for parent in reversed(path.parents):
        if not os.access(parent, os.X_OK, effective_ids=os.access in os.supports_effective_ids):
            return access_denied(parent, exc, "rwx")
    return access_denied(path, exc, "rw")
