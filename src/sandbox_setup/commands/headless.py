"""``--headless``'s entry: the apply's signal handlers before its modules load.

SIGINT, SIGTERM and SIGHUP are exit 130 and one line from here on, while
:mod:`sandbox_setup.commands.apply` and the configuration core are imported and
while the probes run, not only once the apply has started
(:mod:`sandbox_setup.configure.interrupts`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sandbox_setup.configure import interrupts

if TYPE_CHECKING:
    from sandbox_setup.configure.apply import ApplySeams


def run_headless(args: argparse.Namespace, seams: ApplySeams | None = None) -> int:
    """:func:`sandbox_setup.commands.apply.run_headless`, loaded under the handlers."""
    with interrupts.handled():  # run_headless holds them again until its apply is done
        from sandbox_setup.commands.apply import run_headless as run

    return run(args, seams)
