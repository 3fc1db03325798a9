"""Journals as earlier releases wrote them still undo: a real apply's journal rewritten
the way the release before line numbers (``seq``) wrote it, and the way the releases
before the account files' snapshots wrote it (no ``files``/``step``, no
``accounts-done``, no ``keep``, ``backup_sha256``, ``home_existed``, ``fix``,
``root``), then ``--undo --yes``: the tree is as before the apply. And the small
fixture journals of tests/data/journals/ for the file steps undo under a real root."""

from __future__ import annotations

import json
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
    system_state,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "journals"
Entry = dict[str, object]

OLD_FIELDS = ("seq", "files", "step", "keep", "backup_sha256", "home_existed", "fix", "root")


def without_seq(entries: list[Entry]) -> list[Entry]:
    return [{k: v for k, v in e.items() if k != "seq"} for e in entries]


def before_snapshots(entries: list[Entry]) -> list[Entry]:
    return [
        {k: v for k, v in e.items() if k not in OLD_FIELDS}
        for e in entries
        if e["op"] != "accounts-done"
    ]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


@pytest.mark.parametrize(
    "rewrite", [without_seq, before_snapshots], ids=["without-seq", "before-snapshots"]
)
def test_an_apply_journaled_as_an_earlier_release_did_still_undoes(
    root: Path, rewrite: Callable[[list[Entry]], list[Entry]]
) -> None:
    before = system_state(root)
    done = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert done.returncode == 0, done.stderr
    path = root / STATE / "journal.jsonl"
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(e) + "\n" for e in rewrite(entries)))
    preview = run_cli("--undo", "--root", str(root))
    assert preview.returncode == 0, preview.stderr
    assert "would" in preview.stdout, preview.stdout
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert passwd_entry(root, "claude-agent") is None
    assert system_state(root) == before, proc.stdout


def _fixture(root: Path, op: str, *, seq: bool) -> None:
    text = (FIXTURES / f"{op}.jsonl").read_text().replace("@ROOT@", str(root))
    entries = [json.loads(line) for line in text.splitlines()]
    state = root / STATE
    state.mkdir(parents=True, mode=0o700)
    (state / "journal.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in (entries if seq else without_seq(entries)))
    )
    (state / "journal.jsonl").chmod(0o600)


@pytest.mark.parametrize("seq", [True, False], ids=["with-seq", "without-seq"])
def test_the_mkdir_fixture_undoes(root: Path, seq: bool) -> None:
    before = system_state(root)
    made = root / "etc/claude-code"
    made.mkdir()
    _fixture(root, "mkdir", seq=seq)
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "/etc/claude-code" in proc.stdout
    assert not made.exists()
    assert system_state(root) == before
    assert "Nothing to undo." in run_cli("--undo", "--yes", "--root", str(root)).stdout


@pytest.mark.parametrize("op", ["undone", "rolled-back", "planned", "begin"])
def test_the_closed_and_bookkeeping_fixtures_leave_nothing_to_undo(root: Path, op: str) -> None:
    _fixture(root, op, seq=True)
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if op in ("undone", "rolled-back"):
        assert proc.stdout.startswith("Nothing to undo."), proc.stdout
