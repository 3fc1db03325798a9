"""``--check`` reads the launcher config (whom the probes run as) with the bounded
reader: a FIFO there (nobody ever writes to it) must not block it for ever, and a
symlink to ``/dev/zero`` must not be read until memory runs out. Each gives a verdict
(the JSON report with its recommendation) within the timeout; the probes then run
for the default agent, as with no setup.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import CONFIG, REPO, make_target_root
from tests.faults.conftest import FaultRow
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

# The run's heap may not grow past this: a reader of /dev/zero fails fast, not the host.
DATA_LIMIT = 2 << 30
TIMEOUT = 120


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    require_tool("bwrap")
    yield make_target_root(tmp_path / "root")


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (DATA_LIMIT, DATA_LIMIT))


def _make(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero"])
def test_check_gives_a_verdict_over_a_special_launcher_config(
    root: Path, kind: str, fault: FaultRow
) -> None:
    fault.expect(
        f"launcher.toml is a {kind}, then --check --json",
        f"a verdict (the report and its recommendation) within {TIMEOUT} s; no traceback",
    )
    _make(root / CONFIG / "launcher.toml", kind)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "sandbox_setup", "--check", "--json", "--root", str(root)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
            preexec_fn=_bounded,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"--check blocked on the {kind} launcher.toml")
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    report = json.loads(proc.stdout)
    assert report["recommendation"], report
    fault.saw(f"exit {proc.returncode}; recommendation given")
