"""The journal is read strictly (issue 26): a line that does not parse or validate
stops ``--undo`` (and ``--undo --dry-run``) with exit 2 naming the line and what is
wrong, before anything is changed. Each shape is made by hand in the journal of a
real sandbox-mode apply under a temp ``--root``; the whole tree (journal, state and
account files included) must be byte for byte the same afterwards, and once the line
is put right the undo restores everything.
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


@pytest.fixture
def applied(tmp_path: Path) -> Iterator[tuple[Path, dict[str, object]]]:
    """A target root after a real apply, and its tree before that apply."""
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    root = make_target_root(tmp_path / "root")
    before = {k: v for k, v in snapshot(root).items()}
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    yield root, before
    assert host_passwd_digest() == host, "the host's account files changed"


def _lines(root: Path) -> list[str]:
    return (root / JOURNAL).read_text().splitlines()


def _index(lines: list[str], op: str) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["op"] == op)


def _edit(op: str, change: Callable[[dict[str, object]], None]) -> Callable[[Path], int]:
    """Change the first ``op`` entry in place; returns its line number."""

    def corrupt(root: Path) -> int:
        lines = _lines(root)
        at = _index(lines, op)
        entry = json.loads(lines[at])
        change(entry)
        lines[at] = json.dumps(entry)
        (root / JOURNAL).write_text("\n".join(lines) + "\n")
        return at + 1

    return corrupt


def _bad_json(root: Path) -> int:
    lines = _lines(root)
    lines.insert(2, '{"txn": "x", "op": "write", "target": ')
    (root / JOURNAL).write_text("\n".join(lines) + "\n")
    return 3


def _garbage(root: Path) -> int:
    # 10 MB of noise that starts like nothing a journal holds.
    (root / JOURNAL).write_bytes(b"\xff" + os.urandom(10 << 20))
    return 1


def _blank_line(root: Path) -> int:
    lines = _lines(root)
    lines.insert(1, "")
    (root / JOURNAL).write_text("\n".join(lines) + "\n")
    return 2


SHAPES: dict[str, tuple[Callable[[Path], int], str]] = {
    "bad JSON": (_bad_json, "not JSON"),
    "10 MB of garbage": (_garbage, "not UTF-8"),
    "an empty line": (_blank_line, "not JSON"),
    "a missing field": (_edit("write", lambda e: e.pop("new_sha256")), "'new_sha256' is missing"),
    "a wrong type": (_edit("write", lambda e: e.update(old_mode="0644")), "'old_mode' must be"),
    "a path outside the root": (
        _edit("write", lambda e: e.update(real="/etc/passwd")),
        "'real' is outside the root",
    ),
    "an option as a user name": (
        _edit("create-user", lambda e: e.update(name="--help")),
        "'name' must be an account name",
    ),
    "an unknown operation": (_edit("mkdir", lambda e: e.update(op="chmod")), "'op' is 'chmod'"),
    "a line without txn": (_edit("commit", lambda e: e.pop("txn")), "'txn' is missing"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_corrupt_journal_line_stops_undo_before_anything_changes(
    applied: tuple[Path, dict[str, object]], shape: str, fault: FaultRow
) -> None:
    root, before = applied
    corrupt, why = SHAPES[shape]
    fault.expect(
        f"journal with {shape}, then --undo --dry-run and --undo --yes",
        "exit 2 naming the line and what is wrong; nothing changed (the whole tree)",
    )
    original = (root / JOURNAL).read_bytes()
    number = corrupt(root)
    corrupted = snapshot(root)
    for args in (("--undo", "--dry-run"), ("--undo", "--yes")):
        proc = run_cli(*args, "--root", str(root))
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, (args, proc.returncode, out)
        assert f"journal.jsonl, line {number}:" in proc.stderr, out
        assert why in proc.stderr, out
        assert "Traceback" not in out and "Nothing to undo" not in out, out
        assert snapshot(root) == corrupted, f"{args} changed the tree"
        fault.saw(f"{' '.join(args)}: exit 2, line {number}: {why}")
    assert passwd_entry(root, "claude-agent") is not None
    # Put right, the same journal undoes everything.
    (root / JOURNAL).write_bytes(original)
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = {k: v for k, v in snapshot(root).items() if not k.startswith("root/.local/")}
    assert after == {k: v for k, v in before.items() if not k.startswith("root/.local/")}


def test_a_torn_last_line_is_skipped_and_cut_before_the_next_entry(
    applied: tuple[Path, dict[str, object]], fault: FaultRow
) -> None:
    """What a process killed inside its journal write leaves: no newline at the end."""
    root, before = applied
    fault.expect(
        "journal whose last line is torn (a write killed half way), then --undo --yes",
        "the torn line is skipped and cut off; the undo restores everything (exit 0)",
    )
    with open(root / JOURNAL, "ab") as journal:
        journal.write(b'{"at": "2026-01-01T00:00:00+00:00", "op": "comm')
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = {k: v for k, v in snapshot(root).items() if not k.startswith("root/.local/")}
    assert after == {k: v for k, v in before.items() if not k.startswith("root/.local/")}
    lines = _lines(root)
    assert all(json.loads(line)["txn"] for line in lines), "the torn line was not cut off"
    assert json.loads(lines[-1])["op"] == "undone"
    fault.saw("exit 0; journal ends with a whole 'undone' line")
