"""Inputs of issue 26 that were taken silently or answered in Python's words: each is
now refused with exit 2 naming it, or printed in plain words, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core_fixtures import SANDBOX, make_target_root, run_cli, snapshot
from tests.faults.conftest import FaultRow
from tests.tools import require_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    return make_target_root(tmp_path / "root")


def _no_crash(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


def test_a_claude_script_with_a_crlf_shebang_is_refused(fault: FaultRow, root: Path) -> None:
    fault.expect("--claude script saved with CRLF (#!/bin/sh\\r)", "exit 2 naming it and the fix")
    script = root / "opt/claude-crlf"
    script.parent.mkdir(parents=True)
    script.write_bytes(b'#!/bin/sh\r\necho "2.1.197 (Claude Code)"\r\n')
    script.chmod(0o755)
    before = snapshot(root)
    for extra in ([], ["--yes"]):
        result = run_cli(
            "--headless", *SANDBOX, "--claude", "/opt/claude-crlf", "--root", str(root), *extra
        )
        fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-140:]}")
        assert result.returncode == 2, result.stderr
        assert "/opt/claude-crlf: its #! line ends in a carriage return" in result.stderr
        assert f"sed -i 's/[[:cntrl:]]$//' {script}" in result.stderr
        _no_crash(result.stderr)
    assert snapshot(root) == before


def test_undo_json_is_refused_clearly(fault: FaultRow, root: Path) -> None:
    fault.expect("--undo --json", "exit 2: --undo has no --json output")
    result = run_cli("--undo", "--json", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2
    assert "--undo has no --json output" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("domain", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.0.0.53:53", "loopback"),
        ("[::1]", "loopback"),
        ("localhost:8080", "loopback"),
        ("db.localhost", "loopback"),
        ("169.254.169.254", "cloud metadata"),
        ("metadata.google.internal", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("[fe80::1]", "link-local"),
        ("10.1.2.3", "private"),
        ("192.168.1.10:443", "private"),
        ("172.16.0.1", "private"),
        ("[fd00::1]", "private"),
    ],
)
def test_the_plan_warns_of_an_allowance_into_this_host_or_network(
    fault: FaultRow, root: Path, domain: str, rule: str
) -> None:
    fault.expect(f"--allow-domain {domain}", f"a warning line naming it as {rule}, and in --json")
    argv = ("--headless", *SANDBOX, "--allow-domain", domain, "--allow-domain", "example.com")
    text = run_cli(*argv, "--root", str(root))
    assert text.returncode == 0, text.stderr
    warnings = [line for line in text.stderr.splitlines() if line.startswith("warning: ")]
    fault.saw(warnings[0][:140] if warnings else "no warning")
    assert len(warnings) == 1, text.stderr
    assert f" is {rule}: the agent can reach it" in warnings[0]
    data = json.loads(run_cli(*argv, "--json", "--root", str(root)).stdout)
    assert len(data["warnings"]) == 1 and f" is {rule}: " in data["warnings"][0]


def test_a_public_allowance_has_no_warning(root: Path) -> None:
    argv = ("--headless", *SANDBOX, "--allow-domain", "203.0.113.7", "--allow-domain", "x.org")
    data = json.loads(run_cli(*argv, "--json", "--root", str(root)).stdout)
    assert data["warnings"] == []
