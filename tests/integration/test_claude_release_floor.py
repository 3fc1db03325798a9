"""``claude.installed`` judges the real releases against the release floor
(policy.claude_release): the oldest supported release (2.1.197, what a bare
``npm install -g @anthropic-ai/claude-code`` gives on Debian 12's Node 20) warns,
naming its version, the floor and what it lacks, with a remedy that installs the
newest; the newest release passes. Found on PATH, as an operator runs ``--check``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_setup.policy.claude_release import FLOOR, INSTALL_NEWEST
from tests.integration.test_check_host import by_id, run_check
from tests.tools import claude_release, release_tuple, require_tool

pytestmark = pytest.mark.integration


def _installed(label: str) -> tuple[str, str]:
    release = claude_release(label)
    if release.binary is None or release.version is None:
        pytest.skip(f"Claude Code {label} is not installed (tests/run.sh installs it)")
    return release.binary, release.version


def _check_with_claude_on_path(binary: str) -> dict[str, object]:
    bin_dir = str(Path(binary).parent)
    path = os.pathsep.join(
        (bin_dir, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    )
    _, report, stderr = run_check("claude.installed", PATH=path)
    found = by_id(report)["claude.installed"]
    assert found, stderr
    return found


def test_the_oldest_release_on_path_warns_naming_it_and_the_floor() -> None:
    require_tool("bwrap")
    binary, version = _installed("oldest")
    assert release_tuple(version) < release_tuple(str(FLOOR)), version
    found = _check_with_claude_on_path(binary)
    assert found["status"] == "warn", found
    assert version in str(found["summary"]) and str(FLOOR) in str(found["summary"]), found
    detail = str(found["detail"])
    assert "cause: claude-below-floor" in detail and "lacks" in detail, found
    assert "--cap-drop ALL" in detail and "strictAllowlist" in detail, found
    assert str(found["remedy"]).startswith(INSTALL_NEWEST), found


def test_the_newest_release_on_path_passes() -> None:
    require_tool("bwrap")
    binary, version = _installed("latest")
    assert release_tuple(version) >= release_tuple(str(FLOOR)), version
    found = _check_with_claude_on_path(binary)
    assert found["status"] == "pass" and version in str(found["summary"]), found
