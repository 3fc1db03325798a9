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


def _run_sh_install_of_latest() -> list[str]:
    """The words of tests/run.sh's npm command that installs Claude Code's newest release
    into the test prefix (its continuation lines joined)."""
    import itertools
    import shlex

    script = (Path(__file__).parents[1] / "run.sh").read_text()
    commands = shlex.split(script.replace("\\\n", " "), comments=True)
    # shlex.split of a whole script: cut it into commands at each "npm install".
    pairs = itertools.pairwise(commands)
    starts = [i for i, pair in enumerate(pairs) if pair == ("npm", "install")]
    found = [
        commands[start : start + 12]
        for start in starts
        if "@anthropic-ai/claude-code@latest" in commands[start : start + 12]
    ]
    assert len(found) == 1, found
    return found[0]


def test_the_remedy_installs_what_the_ci_installs_on_node_20_and_it_passes_the_floor() -> None:
    """The remedy ``claude.installed`` prints when Claude is missing or below the floor
    is ``npm install -g`` of exactly the package spec tests/run.sh installs on Debian's
    Node (the CI's install is the proof that npm takes it there, with an ``engines``
    warning); the release it installed runs, and its ``--version`` passes the floor by
    the policy's own judgement."""
    import json
    import shlex
    import subprocess

    from sandbox_setup.base.claude_version import parse_claude_version
    from sandbox_setup.checks.claude import judge_claude_installed
    from sandbox_setup.policy.claude_release import floor_problem, required_minimum
    from tests.tools import NPM_PREFIX

    remedy = shlex.split(INSTALL_NEWEST)
    assert remedy[:3] == ["npm", "install", "-g"] and len(remedy) == 4, remedy
    spec = remedy[3]
    assert spec == "@anthropic-ai/claude-code@latest", spec  # a bare name gives 2.1.197
    ci = _run_sh_install_of_latest()
    assert spec in ci and "--prefix" in ci, ci
    missing = judge_claude_installed(None, None, None)
    assert missing.remedy.startswith(INSTALL_NEWEST + " "), missing.remedy

    package = NPM_PREFIX / "node_modules/@anthropic-ai/claude-code"
    binary = NPM_PREFIX / "node_modules/.bin/claude"
    if not binary.exists():
        pytest.skip(f"{binary} is not installed (tests/run.sh installs it)")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    engines = json.loads((package / "package.json").read_text()).get("engines", {})
    print(f"node {node.stdout.strip()}; the package's engines: {engines}")
    done = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "DISABLE_AUTOUPDATER": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    version = parse_claude_version(done.stdout.strip().splitlines()[0])
    assert version is not None, done.stdout
    assert floor_problem(version) is None, floor_problem(version)
    assert required_minimum(version) == str(FLOOR)
