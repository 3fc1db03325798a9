"""Helpers shared by the test suite: finding real tools, failing loudly in CI.

A test that needs a tool calls :func:`require_tool`; on a developer machine
without it the test is skipped with the reason, under CI (``CI`` set) the
missing tool is a failure, since ``tests/run.sh`` installs everything.
"""

from __future__ import annotations

import os
import shutil
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


def claude_binary() -> str:
    """The real Claude Code from npm (``@anthropic-ai/claude-code``)."""
    return require_tool("claude")
