"""``sandbox-launch``: start Claude Code the way launcher.toml says, or refuse.

The console script is ``wizard.launcher:main``; the work is in
:mod:`wizard.launcher.main`, imported only when the launcher runs. Everything in
this package stays stdlib-only (no Textual, no tomlkit) so a launch starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point (see :func:`wizard.launcher.main.main`)."""
    from wizard.launcher.main import main as launcher_main

    return launcher_main(argv)
