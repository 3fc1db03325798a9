"""The one Claude Code version reader: ``claude --version`` -> ``"2.1.197"``.

The plan records the version in launcher.toml and the audit compares it with
what runs now, so both must read it the same way: a prerelease such as
``2.1.0-beta.3`` is part of the version, never cut to ``2.1.0``.

Only call it on a binary the trust rule accepted (:mod:`sandbox_setup.policy.trust`):
it executes the file. It runs with an empty environment and a throwaway HOME,
so nothing of the operator's (login, settings, proxies) is read or changed.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

# semver: core, then an optional -prerelease and +build (dot-separated identifiers)
_VERSION = re.compile(
    r"(?<![\d.])(\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)(?![\w])"
)
QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
}


def parse_claude_version(text: str) -> str | None:
    """The first version in ``claude --version``'s output (``2.1.0-beta.3 (Claude Code)``)."""
    match = _VERSION.search(text)
    return match.group(1) if match else None


def read_claude_version(real: Path | str, timeout: float = 10.0) -> str | None:
    """Run ``real --version`` and parse it; None when it fails or prints no version."""
    with tempfile.TemporaryDirectory(prefix="sandbox-setup-version-") as home:
        env = {"HOME": home, "PATH": os.defpath, **QUIET_ENV}
        try:
            done = subprocess.run(
                [str(real), "--version"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=env,
                cwd=home,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    if done.returncode != 0:
        return None
    # Bytes, decoded leniently: a binary printing non-UTF-8 is "no version", not a crash.
    return parse_claude_version(done.stdout.decode("utf-8", errors="replace"))
