"""Errors that map to exit codes. Each names what was wrong and where."""

from __future__ import annotations

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
