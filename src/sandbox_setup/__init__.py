"""sandbox-setup core: answers -> plan -> apply, audit, the launcher and the CLI.

Nothing here imports Textual except :mod:`sandbox_setup.tui.app`, the TUI entry point.
"""

import os
import sys

INTERRUPTED = 130  # ExitCode.INTERRUPTED, before anything else is imported
_PROGRAM = os.path.basename(getattr(sys, "argv", [""])[0] or "")


def _caused_by_ctrl_c(value: BaseException | None) -> bool:
    """``value`` is a Ctrl-C, or an error Python raised because one arrived (a
    KeyboardInterrupt inside a class body being built while a module loads comes back
    as a RuntimeError whose cause it is). Bounded: a cycle in the chain stops it."""
    seen = 0
    while value is not None and seen < 16:
        if isinstance(value, KeyboardInterrupt):
            return True
        value = value.__cause__ or value.__context__
        seen += 1
    return False


def _interrupted_hook(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """Ctrl-C in the start-up, before the program's own handler: one line, exit 130."""
    if issubclass(kind, KeyboardInterrupt) or _caused_by_ctrl_c(value):
        try:
            sys.stderr.write(f"{_PROGRAM}: interrupted\n")
            sys.stderr.flush()
        finally:
            os._exit(INTERRUPTED)
    sys.__excepthook__(kind, value, tb)  # type: ignore[arg-type]


# Run as a console script: from here on a Ctrl-C while the program loads (the launch
# pipeline's imports take some 50 ms) is one line, not a traceback. A test or a tool
# importing the package keeps its own hook.
if _PROGRAM in ("sandbox-launch", "sandbox-setup"):
    sys.excepthook = _interrupted_hook
