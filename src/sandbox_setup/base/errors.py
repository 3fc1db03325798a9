"""Errors that map to exit codes. Each names what was wrong and where."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.message import Message, Option


class SetupError(Exception):
    """An error the CLI reports as one message and an exit code.

    Raised with a :class:`~sandbox_setup.base.message.Message`, its ``str`` is the
    command line's text and :attr:`words` keeps the typed parts, so the wizard words
    it itself (:func:`sandbox_setup.commands.wording.wizard_text`) and finds the field
    at fault in :attr:`option`, never by reading the text."""

    exit_code: ExitCode = ExitCode.USAGE

    @property
    def words(self) -> Message | None:
        """The typed message it was raised with (None: plain text)."""
        first = self.args[0] if len(self.args) == 1 else None
        return first if isinstance(first, Message) else None

    @property
    def option(self) -> Option | None:
        """The operator's option it concerns, if its message is typed and names one."""
        return None if self.words is None else self.words.option


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
