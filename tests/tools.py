"""Helpers shared by the test suite: finding real tools, failing loudly in CI.

A test that needs a tool calls :func:`require_tool`; on a developer machine
without it the test is skipped with the reason, under CI (``CI`` set) the
missing tool is a failure, since ``tests/run.sh`` installs everything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

# tests/run.sh installs Claude Code and sandbox-runtime here (outside /root, so the
# agent user and user-namespaced containers can read them).
NPM_PREFIX = Path(os.environ.get("SANDBOX_SETUP_NPM_PREFIX", "/opt/sandbox-setup-test/npm"))
REPO = Path(__file__).resolve().parent.parent
# The package's source tree (src layout): what a subprocess of another Python imports.
SRC = REPO / "src"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must install it: tests/run.sh)")
    pytest.skip(reason)


def require_tool(name: str) -> str:
    """Absolute path of ``name`` on PATH or in the npm prefix, or skip/fail."""
    found = shutil.which(name) or shutil.which(name, path=str(NPM_PREFIX / "node_modules/.bin"))
    if not found:
        _missing(f"{name} is not installed")
    assert found is not None
    return found


def require_root() -> None:
    if os.geteuid() != 0:
        _missing("needs root (user namespaces from root, useradd --prefix, runc)")


# The Claude Code releases the e2e tests run against; tests/run.sh installs both. The
# newest is npm's `latest` tag (what an operator installs today) in NPM_PREFIX. The
# oldest the project supports is the last release whose package accepts Debian 12's
# Node: a bare `npm install @anthropic-ai/claude-code` resolves to it there, so hosts
# still run it.
CLAUDE_OLDEST = "2.1.197"
OLDEST_PREFIX = Path(
    os.environ.get(
        "SANDBOX_SETUP_NPM_OLDEST_PREFIX", f"/opt/sandbox-setup-test/npm-claude-{CLAUDE_OLDEST}"
    )
)
RELEASE_LABELS = ("latest", "oldest")
# OpenCodex (npm @bitkyc08/opencodex), the proxy launcher of issue 28; tests/run.sh
# installs this release into NPM_PREFIX.
OCX_VERSION = "2.63.0"


def ocx_binary() -> str:
    """OpenCodex's ``ocx`` from NPM_PREFIX (skipped, or a failure under CI, when absent)."""
    path = NPM_PREFIX / "node_modules/.bin/ocx"
    if not path.exists():
        _missing(f"OpenCodex {OCX_VERSION} (ocx) is not installed (tests/run.sh installs it)")
    return str(path)


@dataclass(frozen=True)
class ClaudeRelease:
    """One installed Claude Code release: ``latest`` or ``oldest``, its binary and the
    version it reports (None when it is not installed here)."""

    label: str
    binary: str | None
    version: str | None

    @property
    def id(self) -> str:
        return f"claude-{self.label}-{self.version or 'missing'}"


@cache
def claude_release(label: str) -> ClaudeRelease:
    """The release installed for ``label`` (its version read once per run)."""
    if label == "latest":
        binary = shutil.which("claude") or shutil.which(
            "claude", path=str(NPM_PREFIX / "node_modules/.bin")
        )
    else:
        candidate = OLDEST_PREFIX / "node_modules/.bin/claude"
        binary = str(candidate) if os.access(candidate, os.X_OK) else None
    version = None
    if binary is not None:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=60, check=False
        ).stdout.split()
        version = out[0] if out else None
    return ClaudeRelease(label, binary, version)


def release_tuple(version: str | None) -> tuple[int, ...]:
    """``"2.1.332"`` as ``(2, 1, 332)``, to compare releases."""
    return tuple(int(part) for part in (version or "0").split(".") if part.isdigit())


# The release the running e2e test is parametrized for (tests/e2e/conftest.py sets it).
_current_release: ClaudeRelease | None = None


def use_release(release: ClaudeRelease | None) -> None:
    global _current_release
    _current_release = release


def claude_binary() -> str:
    """The real Claude Code from npm (``@anthropic-ai/claude-code``): the release the
    running e2e test is for, otherwise the newest."""
    release = _current_release or claude_release("latest")
    if release.binary is None:
        _missing(f"Claude Code ({release.label}) is not installed")
    assert release.binary is not None
    return release.binary
