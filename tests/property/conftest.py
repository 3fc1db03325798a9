"""Helpers for the property-based tests: the CLI in-process, fresh ``--root`` trees,
and the checks' report gathered once.

``sandbox-setup`` runs in-process (:func:`run_main` calls ``sandbox_setup.cli.main``) so
a hundred examples take seconds, not minutes. The live probes would run for every
example and always find the same host, so the session gathers the real report
once (:func:`real_report`) and hands that to ``build_plan``; everything after it
(plan, apply with real ``useradd --prefix``, journal, files) runs for real.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, event, settings

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import parse_launcher_config
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.answers import Answers, parse_answers
from tests.core_fixtures import CONFIG, make_target_root, snapshot
from tests.tools import require_root, require_tool

# Modest example counts keep the whole suite fast on two shared cores.
# No example database: nothing is written into the checkout.
CLI_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PURE_SETTINGS = settings(max_examples=150, deadline=None, database=None)


@dataclass(frozen=True)
class Run:
    """What one in-process ``sandbox-setup`` call returned and printed."""

    code: int
    out: str
    err: str


def run_main(argv: list[str]) -> Run:
    """``sandbox_setup.cli.main(argv)`` with stdout and stderr captured. An exception
    escaping main (what a user would see as a traceback) fails the test."""
    from sandbox_setup.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    event(f"exit {code}")  # --hypothesis-show-statistics: how many examples were valid
    return Run(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def fresh_root() -> Iterator[Path]:
    """A new fake target tree (see tests/core_fixtures.py), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="prop-root-"))
    try:
        yield make_target_root(base / "root")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def real_report() -> Iterator[Report]:
    """The checks' real report, gathered once; build_plan gets it for every example."""
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "bwrap"):
        require_tool(tool)
    import sandbox_setup.commands.apply

    with fresh_root() as root:
        answers = Answers(Mode.SANDBOX, workspaces=(PurePosixPath("/srv/project"),))
        report = sandbox_setup.commands.apply.gather_report(answers, Layout.for_root(root), 10.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            sandbox_setup.commands.apply, "gather_report", lambda answers, layout, timeout: report
        )
        yield report


def assert_clean_failure(run: Run, before: Mapping[str, object], root: Path) -> None:
    """A refused or invalid run: the documented code, one clear message, nothing written."""
    assert run.code in (2, 3), run
    assert "Traceback" not in run.err
    # Progress lines may come first; the diagnosis is its own "sandbox-setup:" line.
    assert any(line.startswith("sandbox-setup: ") for line in run.err.splitlines()), run.err
    assert snapshot(root) == before, "a failed run changed files under the root"


def assert_valid_setup(root: Path) -> None:
    """After a successful apply every file it wrote is whole and parses."""
    config = root / CONFIG / "launcher.toml"
    parse_launcher_config(config.read_text(), str(config))
    parse_answers((root / CONFIG / "answers.toml").read_text(), "answers.toml")
    for settings_file in (
        root / "etc/claude-code/managed-settings.json",
        root / "root/.claude/settings.json",
    ):
        if settings_file.exists():
            assert isinstance(json.loads(settings_file.read_text()), dict)
    assert [p for p in root.rglob("*.sandbox-setup-*.tmp")] == [], "a temp file was left"
    tomllib.loads(config.read_text())
