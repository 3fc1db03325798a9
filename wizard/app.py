"""The interactive wizard: the only module outside ``screens/`` that imports Textual.

:func:`run_app` is what ``sandbox-setup`` runs without an action flag. The
app takes a :class:`screens.core.Core` (the real one is
:class:`wizard.commands.interactive.InteractiveCore`), so tests drive it under a
temp root with fixed findings.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from textual import work
from textual.app import App

from assets import ASSETS_DIR
from screens.core import Core
from screens.flow import run_flow
from wizard.base.errors import InputError
from wizard.base.exitcodes import ExitCode


class SetupApp(App[int]):
    """Runs :func:`screens.flow.run_flow` and exits with its code."""

    CSS_PATH = str(ASSETS_DIR / "wizard.tcss")
    TITLE = "sandbox-setup"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, core: Core, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.core = core

    def on_mount(self) -> None:
        self.flow()

    @work(exclusive=True, group="flow")
    async def flow(self) -> None:
        code = await run_flow(self, self.core)
        self.exit(code)


def run_app(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(
            "the interactive wizard needs a terminal; use --check, --audit or --headless"
        )
    from wizard.commands.interactive import InteractiveCore

    app = SetupApp(InteractiveCore.for_root(args.root))
    code = app.run()
    return int(ExitCode.INTERRUPTED) if code is None else int(code)
