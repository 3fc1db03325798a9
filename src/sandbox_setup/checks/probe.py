"""Run one tiny experiment (a subprocess) with a timeout, optionally as another user.

This is the only place checks start processes. A probe never needs the network,
runs from ``/`` with a small clean environment (``LC_ALL=C`` so the error text we
match is English), and is killed with its whole process group on timeout.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sandbox_setup.base.accounts import Account
from sandbox_setup.checks.prefetch import SAFE_PATH, environment, spawn, switch_prefix, take, which

__all__ = ["SAFE_PATH", "ProbeResult", "as_user_prefix", "probe_env", "run_probe", "which"]


@dataclass(frozen=True)
class ProbeResult:
    """What one experiment left behind."""

    argv: tuple[str, ...]
    returncode: int | None  # None when it timed out or could not start
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    not_found: bool = False  # the program itself does not exist

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def last_error(self) -> str:
        """The last non-empty stderr line: usually the one that names the failure."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def describe(self) -> str:
        """One line for a finding's detail: the command and how it ended."""
        command = shlex.join(self.argv)
        if self.not_found:
            return f"$ {command}\n(not found: {self.argv[0]})"
        if self.timed_out:
            return f"$ {command}\n(timed out)"
        text = f"$ {command}\n(exit {self.returncode})"
        if self.stderr.strip():
            text += "\n" + self.stderr.strip()
        return text


def as_user_prefix(account: Account) -> list[str]:
    """``setpriv`` argv that switches to ``account`` (real + effective ids, its groups)."""
    return switch_prefix(account.uid, account.gid)


def probe_env(account: Account | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    user = (account.name, str(account.home)) if account is not None else None
    return environment(user, extra)


def run_probe(
    argv: Sequence[str],
    *,
    timeout: float,
    account: Account | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str = "/",
) -> ProbeResult:
    """Run ``argv`` (as ``account`` when given, which needs root) and capture it.

    ``env`` adds to the clean probe environment; the caller's environment is not
    passed on, so e.g. an ``IS_SANDBOX`` of the operator cannot leak into a probe.
    """
    if which(argv[0]) is None:
        return ProbeResult(tuple(argv), None, not_found=True)
    full = ([*as_user_prefix(account)] if account is not None else []) + list(argv)
    run_env = probe_env(account, env)
    # Started already (sandbox_setup.checks.prefetch) when it is exactly this command, user and env.
    proc = take(full, run_env) if cwd == "/" else None
    if proc is None:
        try:
            proc = spawn(full, run_env, cwd)
        except FileNotFoundError:
            return ProbeResult(tuple(argv), None, not_found=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return ProbeResult(tuple(argv), None, out, err, timed_out=True)
    # What the probe left behind in its session dies with it: Claude Code, for one,
    # starts `rg --files --hidden /` and exits without waiting for it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return ProbeResult(tuple(argv), proc.returncode, out, err)
