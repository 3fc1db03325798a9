"""Loading and unloading the AppArmor profile (:mod:`sandbox_setup.configure.apparmor`):
the parser run, and the revert of a journaled ``apparmor-load`` step (undo, rollback).
Apart from the action so that :mod:`sandbox_setup.configure.revert` can import it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sandbox_setup.base.apparmor import PARSER, PROFILE_NAME, unload_args
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops, outcome
from sandbox_setup.configure.journal.entries import ApparmorLoad
from sandbox_setup.configure.outcome import StepResult
from sandbox_setup.policy.trust import untrusted_reason

LOAD_OP = "apparmor-load"
_TIMEOUT = 60.0


def run_parser(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{' '.join(argv)}: {exc}") from None


def revert_load(layout: Layout, entry: ApparmorLoad) -> StepResult:
    """Unload the profile an apply loaded (``apparmor_parser -R FILE``), while its file
    is still the one that apply wrote; otherwise say why it stays loaded."""
    real = Path(entry.real)
    state = fsops.read_file(layout.root, real)
    if state is None:
        return outcome.left(
            f"left AppArmor profile {PROFILE_NAME} loaded: {entry.target} is gone (the "
            "kernel drops it at the next boot)"
        )
    if fsops.sha256(state.data) != entry.sha256:
        return outcome.left(
            f"left AppArmor profile {PROFILE_NAME} loaded: {entry.target} changed after "
            f"that apply (unload it with {PARSER} -R {entry.target})"
        )
    parser = entry.parser
    reason = untrusted_reason(parser)
    if reason is not None:
        return outcome.failed(
            f"could not unload AppArmor profile {PROFILE_NAME}: {parser}: {reason}"
        )
    argv = [parser, *unload_args(str(real))]
    done = run_parser(argv)
    if done.returncode != 0:
        return outcome.failed(
            f"could not unload AppArmor profile {PROFILE_NAME}: {' '.join(argv)} failed "
            f"(exit {done.returncode}): {done.stderr.strip()}"
        )
    return outcome.done(f"unloaded AppArmor profile {PROFILE_NAME} ({entry.target})")
