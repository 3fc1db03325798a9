"""sandbox-setup core: answers -> plan -> apply, audit, the launcher and the CLI.

Nothing here imports Textual except :mod:`sandbox_setup.tui.app`, the TUI entry point.
"""

import os
import sys

INTERRUPTED = 130  # ExitCode.INTERRUPTED, before anything else is imported
_PROGRAM = os.path.basename(getattr(sys, "argv", [""])[0] or "")


def _interrupted_hook(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """Ctrl-C in the start-up, before the program's own handler: one line, exit 130."""
    if issubclass(kind, KeyboardInterrupt):
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
