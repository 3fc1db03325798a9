"""The standard streams of ``sandbox-setup`` and ``sandbox-launch``: open, checked, and
in an encoding the operator's locale can show.

Before anything runs, :func:`prepare_streams`:

* puts ``/dev/null`` on a closed descriptor 0, 1 or 2, so no file the program opens
  later lands there (a journal opened as fd 1 would receive the plan);
* reports a closed standard output as an input error (exit 2, nothing run): the plan,
  the report or the JSON asked for would be lost without a word;
* makes a failed write to standard output (``>/dev/full``, a full disk) one
  :class:`OutputError` (exit 2, one line) instead of an internal error, and every
  later write a no-op, so the interpreter's last flush cannot fail again;
* degrades the output to ASCII where the locale cannot show UTF-8: ``LANG=C`` or
  ``LC_ALL=C`` (Python then switches itself to UTF-8, which the terminal cannot
  show), or a locale whose encoding lacks a character. ``→`` becomes ``->``, and a
  character without an ASCII form is printed as its escape (``\\u00e9``).

``PYTHONIOENCODING`` or an explicit UTF-8 mode (``PYTHONUTF8=1``, ``-X utf8``) is the
operator's choice and is kept.
"""

from __future__ import annotations

import codecs
import io
import os
import sys

from sandbox_setup.base.errors import InputError

ERRORS = "sandbox-setup-ascii"
# The characters this project prints, in ASCII.
ASCII_FORMS = {
    "→": "->",
    "←": "<-",
    "↑": "^",
    "↓": "v",
    "…": "...",
    "—": "--",
    "\u2013": "-",
    "·": "-",
    "•": "*",
    "●": "*",
    "○": "o",
    "✓": "ok",
    "✗": "x",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "≤": "<=",
    "≥": ">=",
    "\u00d7": "x",
    "\u00a0": " ",
}


class OutputError(InputError):
    """Standard output is closed or cannot be written. Exit 2."""


def _ascii_forms(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    forms = (ASCII_FORMS.get(c) or c.encode("ascii", "backslashreplace").decode() for c in text)
    return "".join(forms), error.end


codecs.register_error(ERRORS, _ascii_forms)


class _Stream(io.RawIOBase):
    """Descriptor ``fd`` for writing: the first failed write raises :class:`OutputError`
    (standard output) or is dropped (standard error: there is nowhere left to say it),
    and every later write is dropped."""

    def __init__(self, fd: int, name: str, *, report: bool) -> None:
        super().__init__()
        self._fd = fd
        self._name = name
        self._report = report
        self.failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        if self.failed:
            return len(data)
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            self.failed = True
            raise  # the reader went away (`| head`): the caller's own rule, exit 0
        except OSError as exc:
            self.failed = True
            if not self._report:
                return len(data)
            raise OutputError(
                f"cannot write to {self._name}: {exc.strerror or exc}; nothing more is printed"
            ) from None


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def locale_without_utf8(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether the operator's locale cannot show UTF-8 although Python writes it.

    Python switches itself to UTF-8 (``sys.flags.utf8_mode``) when the locale is C or
    POSIX, or none is set; it then writes bytes the terminal shows as garbage.
    """
    if environ.get("PYTHONIOENCODING") or environ.get("PYTHONUTF8") == "1":
        return False
    if "utf8" in sys._xoptions:
        return False
    return bool(sys.flags.utf8_mode)


def _encoding(stream: object, ascii_only: bool) -> str:
    if ascii_only:
        return "ascii"
    return str(getattr(stream, "encoding", None) or "utf-8")


def prepare_streams(program: str) -> None:
    """See the module docstring. Raises :class:`OutputError` for a closed stdout."""
    closed = [fd for fd in (0, 1, 2) if not _is_open(fd)]
    for fd in closed:
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if 0 in closed:
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
    ascii_only = locale_without_utf8()
    # Only where the interpreter made the streams (not a test's capture).
    for fd, name, attr in ((1, "standard output", "stdout"), (2, "standard error", "stderr")):
        current = getattr(sys, attr)
        if current is not None and current is not getattr(sys, f"__{attr}__"):
            continue
        wrapped = io.TextIOWrapper(
            io.BufferedWriter(_Stream(fd, name, report=fd == 1)),  # type: ignore[type-var]
            encoding=_encoding(current, ascii_only),
            errors=ERRORS,
            # why: a failed write shows at the first line, before anything is changed
            line_buffering=True,
        )
        setattr(sys, attr, wrapped)
    if 1 in closed:
        raise OutputError(
            f"standard output is closed (>&-): {program} would print into nothing; "
            "to discard the output send it to /dev/null (>/dev/null)"
        )
