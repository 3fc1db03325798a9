"""A journal that lost its begin line, whole applies, or its order stops the undo
(exit 2 naming the journal) before anything changes, while the ledger says a setup
exists; a ledger someone else could write stops it (exit 3) before any change.

Each shape is made by hand in the journal (and ledger) of two real sandbox-mode
applies under a temp ``--root`` (the second adds a workspace, so both applies have
steps). ``--undo --all --yes`` must leave the whole tree byte for byte as it was:
before this, an emptied journal made it say "Every apply is undone", exit 0, and
delete the journal and every backup while the agent, its settings and the ACLs
stayed. The torn last line a kill -9 leaves inside a journal write stays tolerated.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    snapshot,
)
from tests.faults.conftest import FaultRow
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

JOURNAL = f"{STATE}/journal.jsonl"
LEDGER = f"{STATE}/setups.json"
NOBODY = 65534


@pytest.fixture
def applied(tmp_path: Path) -> Iterator[tuple[Path, dict[str, object]]]:
    """A target root after two real applies, and its tree before the first."""
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    root = make_target_root(tmp_path / "root")
    (root / "srv/second").mkdir()
    before = snapshot(root)
    for extra in ((), ("--workspace", "/srv/second")):
        proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX, *extra)
        assert proc.returncode == 0, proc.stderr
    yield root, before
    assert host_passwd_digest() == host, "the host's account files changed"


def _lines(root: Path) -> list[str]:
    return (root / JOURNAL).read_text().splitlines(keepends=True)


def _write(root: Path, lines: list[str]) -> None:
    (root / JOURNAL).write_text("".join(lines))


def _txns(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(json.loads(line)["txn"] for line in lines))


def _emptied(root: Path) -> None:
    _write(root, [])


def _no_begin(root: Path) -> None:
    _write(root, _lines(root)[1:])


def _first_apply_lost(root: Path) -> None:
    lines = _lines(root)
    first = _txns(lines)[0]
    _write(root, [line for line in lines if json.loads(line)["txn"] != first])


def _steps_swapped(root: Path) -> None:
    lines = _lines(root)
    lines[2], lines[3] = lines[3], lines[2]
    _write(root, lines)


def _applies_swapped(root: Path) -> None:
    lines = _lines(root)
    first, _second = _txns(lines)
    ones = [line for line in lines if json.loads(line)["txn"] == first]
    others = [line for line in lines if json.loads(line)["txn"] != first]
    _write(root, others + ones)


def _commit_first(root: Path) -> None:
    lines = _lines(root)
    last = _txns(lines)[-1]
    mine = [i for i, line in enumerate(lines) if json.loads(line)["txn"] == last]
    commit = lines.pop(mine[-1])
    lines.insert(mine[1], commit)
    _write(root, lines)


SHAPES: dict[str, Callable[[Path], None]] = {
    "emptied": _emptied,
    "without its first begin line": _no_begin,
    "without its first apply": _first_apply_lost,
    "two steps swapped": _steps_swapped,
    "its two applies swapped": _applies_swapped,
    "a commit moved before the steps": _commit_first,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_journal_not_whole_or_out_of_order_stops_undo(
    applied: tuple[Path, dict[str, object]], shape: str, fault: FaultRow
) -> None:
    root, _before = applied
    fault.expect(
        f"a journal {shape} (the ledger records the setup), then --undo --all --yes",
        "exit 2 naming the journal; the whole tree byte for byte as it was",
    )
    SHAPES[shape](root)
    changed = snapshot(root)
    for args in (("--undo", "--all", "--yes"), ("--undo", "--yes")):
        proc = run_cli(*args, "--root", str(root))
        out = proc.stdout + proc.stderr
        assert "Traceback" not in out, out
        assert proc.returncode == 2, (args, proc.returncode, out)
        assert str(root / JOURNAL) in proc.stderr, out
        assert "Every apply is undone" not in out and "Nothing to undo" not in out, out
        assert snapshot(root) == changed, f"{args} changed the tree"
    assert passwd_entry(root, "claude-agent") is not None
    line = next(x for x in proc.stderr.splitlines() if x.startswith("sandbox-setup:"))
    fault.saw(f"exit 2: {line.replace(str(root), '<root>')[14:200]}")


def test_a_ledger_owned_by_another_uid_stops_undo_before_any_change(
    applied: tuple[Path, dict[str, object]], fault: FaultRow
) -> None:
    root, _before = applied
    fault.expect(
        "setups.json owned by nobody, then --undo --all --yes",
        "exit 3 naming the ledger before any change; the whole tree byte for byte",
    )
    os.chown(root / LEDGER, NOBODY, NOBODY)
    changed = snapshot(root)
    proc = run_cli("--undo", "--all", "--yes", "--root", str(root))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, (proc.returncode, out)
    assert str(root / LEDGER) in proc.stderr, out
    assert snapshot(root) == changed, "the undo changed the tree before refusing"
    fault.saw("exit 3 naming setups.json; tree unchanged")


def test_a_torn_last_line_is_still_tolerated(
    applied: tuple[Path, dict[str, object]], fault: FaultRow
) -> None:
    root, before = applied
    fault.expect(
        "a torn last journal line (a write killed half way), then --undo --all --yes",
        "exit 0; the host as before the first apply",
    )
    with (root / JOURNAL).open("a") as journal:
        journal.write('{"txn": "20261204T000000-1-abcdef", "op": "wr')
    proc = run_cli("--undo", "--all", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert snapshot(root) == before
    fault.saw("exit 0; tree as before the first apply")


def test_a_reapply_over_an_emptied_journal_is_refused_before_any_change(
    applied: tuple[Path, dict[str, object]], fault: FaultRow
) -> None:
    root, _before = applied
    fault.expect(
        "an emptied journal (the ledger records the setup), then a re-apply",
        "exit 2 naming the journal; the whole tree byte for byte as it was",
    )
    _emptied(root)
    changed = snapshot(root)
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert str(root / JOURNAL) in proc.stderr, proc.stderr
    assert snapshot(root) == changed, "a refused apply changed the tree"
    fault.saw("exit 2 naming the journal; tree unchanged")
