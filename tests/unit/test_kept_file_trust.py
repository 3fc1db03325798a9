"""Who may own a file an apply merges or keeps (policy.trust.kept_file_owners /
kept_file_problems, docs/design.md invariant 12), and the journal's order
(configure.journal.check.order_problem): pure judges, over facts made here."""

from __future__ import annotations

import stat
from typing import Any

import pytest

from sandbox_setup.base.pathfacts import PathFacts
from sandbox_setup.configure.journal import check
from sandbox_setup.configure.journal import entries as entries_
from sandbox_setup.policy.trust import kept_file_owners, kept_file_problems

OPERATOR = 1000
AGENT = 1001


def _file(perms: int, uid: int) -> PathFacts:
    return PathFacts("/f", True, uid, uid, stat.S_IFREG | perms)


def _dir(perms: int = 0o755, uid: int = 0) -> PathFacts:
    return PathFacts("/", True, uid, uid, stat.S_IFDIR | perms)


def test_roots_files_are_root_or_the_operators() -> None:
    assert kept_file_owners(0, OPERATOR) == {0, OPERATOR}
    assert kept_file_owners(OPERATOR, OPERATOR) == {0, OPERATOR}


def test_an_accounts_own_file_is_that_accounts_never_the_operators() -> None:
    assert kept_file_owners(AGENT, OPERATOR) == {0, AGENT}


@pytest.mark.parametrize(
    ("holder", "perms", "uid", "kinds"),
    [
        (0, 0o644, 0, []),
        (0, 0o600, OPERATOR, []),
        (0, 0o644, 65534, ["owner"]),
        (0, 0o666, 0, ["writable"]),
        (0, 0o644, AGENT, ["owner"]),  # the agent's file is never root's
        (AGENT, 0o600, AGENT, []),
        (AGENT, 0o644, 0, []),
        (AGENT, 0o644, 65534, ["owner"]),
        (AGENT, 0o664, AGENT, ["writable"]),
    ],
)
def test_kept_file_problems(holder: int, perms: int, uid: int, kinds: list[str]) -> None:
    found = kept_file_problems(_file(perms, uid), [_dir()], holder, OPERATOR, "someone")
    assert [p.kind for p in found] == kinds
    assert all(p.fix == "chown someone /f" for p in found if p.kind == "owner")


def test_a_missing_file_has_no_problem() -> None:
    assert kept_file_problems(PathFacts("/f", False), [_dir(0o777)], 0, OPERATOR, "root") == []


def _apply(txn: str, *ops: str) -> list[dict[str, Any]]:
    return [{"txn": txn, "op": op, "seq": n} for n, op in enumerate(("begin", *ops))]


def _typed(raw: dict[str, Any]) -> entries_.Entry:
    """The typed entry of one of the lines above (only what the order check reads)."""
    txn, seq, op = raw["txn"], raw.get("seq"), raw["op"]
    if op == "begin":
        return entries_.Begin(txn=txn, seq=seq, at="t")
    if op == "commit":
        return entries_.Commit(txn=txn, seq=seq, at="t")
    if op == "undone":
        return entries_.Undone(txn=txn, seq=seq, at="t")
    if op == "step-undone":
        return entries_.StepUndone(txn=txn, seq=seq, step=raw["step"])
    if op == "mkdir":
        return entries_.Mkdir(txn=txn, seq=seq, target="/d", real="/d")
    assert op == "write"
    return entries_.Write(
        txn=txn,
        seq=seq,
        target="/f",
        real="/f",
        old_sha256=None,
        new_sha256="0" * 64,
        backup=None,
        old_mode=None,
        old_uid=None,
        old_gid=None,
        tmp="f.tmp",
    )


def order_problem(lines: list[dict[str, Any]]) -> tuple[int, str] | None:
    return check.order_problem([_typed(raw) for raw in lines])


def test_a_journal_in_order_passes() -> None:
    entries = _apply("a", "write", "mkdir", "commit") + _apply("b", "write", "commit")
    entries.append({"txn": "b", "op": "step-undone", "step": 0})
    entries.append({"txn": "b", "op": "undone"})
    assert order_problem(entries) is None


def test_an_old_journal_without_seq_passes() -> None:
    entries = [{k: v for k, v in e.items() if k != "seq"} for e in _apply("a", "write")]
    assert order_problem(entries) is None


def _without(entries: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return entries[:index] + entries[index + 1 :]


@pytest.mark.parametrize(
    ("shape", "line", "words"),
    [
        ("no begin", 1, "has no begin line"),
        ("a lost step", 2, "where its line 1 belongs"),
        ("two steps swapped", 2, "where its line 1 belongs"),
        ("a step after the commit", 4, "after its commit"),
        ("an apply inside another", 5, "after apply b began"),
        ("a step marked undone before it", 2, "undone before that step"),
        ("a line after the undo", 6, "already closed"),
    ],
)
def test_a_journal_out_of_order_is_named(shape: str, line: int, words: str) -> None:
    a = _apply("a", "write", "mkdir", "commit")
    entries = {
        "no begin": a[1:],
        "a lost step": _without(a, 1),
        "two steps swapped": [a[0], a[2], a[1], a[3]],
        "a step after the commit": [a[0], a[1], {**a[3], "seq": 2}, {**a[2], "seq": 3}],
        "an apply inside another": a[:2] + _apply("b", "write") + [{**a[2]}, {**a[3]}],
        "a step marked undone before it": [a[0], {"txn": "a", "op": "step-undone", "step": 0}],
        "a line after the undo": [*a, {"txn": "a", "op": "undone"}, {"txn": "a", "op": "undone"}],
    }[shape]
    found = order_problem(entries)
    assert found is not None and found[0] == line and words in found[1], found
