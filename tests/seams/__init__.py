"""Tests-only entry programs that pass seams to the real entry points.

Production code reads no test hook from the environment (a grep test keeps it so):
what a test replaces is an argument of ``sandbox_setup.launcher.main`` or
``sandbox_setup.cli.main``. Each program here takes ``--seam-...`` options first, builds
the seams, and hands the rest of its arguments to the real ``main()``. They import
only the package and the standard library, so any Python that has the package (this
checkout's, an installed copy) can run them by path.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCH_WITH_SEAMS = HERE / "launch_with_seams.py"  # sandbox-launch, with LaunchSeams
SETUP_WITH_SEAMS = HERE / "setup_with_seams.py"  # sandbox-setup, with ApplySeams
