"""Own-line comments inside a TOML array survive when an apply reorders the array
(issue 26: they were dropped; only the comment after an item on its line was kept)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.core_fixtures import CONFIG, make_target_root, run_cli
from tests.faults.conftest import FaultRow
from tests.tools import require_root

COMMENTED = """workspaces = [
    # the main project, shared with the web team
    "/srv/a",
    # scratch space
    "/srv/b", # wiped on Fridays
    # keep this list short
]"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    root = make_target_root(tmp_path / "root", workspace=False)
    for name in ("a", "b"):
        (root / "srv" / name).mkdir(parents=True)
    return root


def apply(root: Path, *workspaces: str) -> None:
    argv = [arg for ws in workspaces for arg in ("--workspace", ws)]
    done = run_cli("--headless", "--mode", "sandbox", *argv, "--yes", "--root", str(root))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["launcher.toml", "answers.toml"])
def test_own_line_comments_move_with_their_items(fault: FaultRow, root: Path, name: str) -> None:
    fault.expect(f"{name}: commented workspaces array, reordered by an apply", "comments kept")
    apply(root, "/srv/a", "/srv/b")
    path = root / CONFIG / name
    text, count = re.subn(r"(?m)^workspaces = \[.*\]$", COMMENTED, path.read_text())
    assert count == 1, path.read_text()
    path.write_text(text)
    apply(root, "/srv/b", "/srv/a")
    after = path.read_text()
    fault.saw(" ".join(after.split("workspaces = [", 1)[1].split("]", 1)[0].split())[:160])
    data = tomllib.loads(after)
    workspaces = data["sandbox"]["workspaces"] if name == "launcher.toml" else data["workspaces"]
    assert workspaces == ["/srv/b", "/srv/a"]
    block = after.split("workspaces = [", 1)[1].split("]", 1)[0]
    lines = [line.strip() for line in block.strip().splitlines()]
    assert lines == [
        "# scratch space",
        '"/srv/b", # wiped on Fridays',
        "# the main project, shared with the web team",
        '"/srv/a",',
        "# keep this list short",
    ], after
