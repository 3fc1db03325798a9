"""The journal room's typed decode (configure/journal/entries.py) over journals as the
landed release wrote them: tests/data/journals/ holds one small journal per operation
(each a whole apply: its begin, the operation's lines, commit, and the undo's lines for
the undo operations), taken from real applies and undos (paths under ``@ROOT@``).
Each decodes, with ``seq`` and without it (as releases before ``seq`` wrote them),
into its dataclass; every operation the code writes has a fixture."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sandbox_setup.base.accounts import Account
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.journal import entries
from sandbox_setup.configure.journal.check import JournalCorruptError, parse_entries

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "journals"
SRC = Path(__file__).resolve().parents[2] / "src" / "sandbox_setup"
ROOT = Path("/tmp/root")
LAYOUT = Layout(ROOT, Account("root", 0, 0, Path("/root"), "/bin/sh"))


def journal(op: str, *, seq: bool = True) -> bytes:
    text = (FIXTURES / f"{op}.jsonl").read_text().replace("@ROOT@", str(ROOT))
    if seq:
        return text.encode()
    lines = [json.loads(line) for line in text.splitlines()]
    return "".join(
        json.dumps({k: v for k, v in e.items() if k != "seq"}) + "\n" for e in lines
    ).encode()


@pytest.mark.parametrize("seq", [True, False], ids=["with-seq", "without-seq"])
@pytest.mark.parametrize("op", sorted(entries.OPS))
def test_each_operation_decodes_into_its_dataclass(op: str, seq: bool) -> None:
    decoded = parse_entries(journal(op, seq=seq), LAYOUT, op)
    assert isinstance(decoded[0], entries.Begin)
    kinds = {type(e) for e in decoded}
    wanted = next(k for k, name in entries.OP_OF.items() if name == op)
    assert wanted in kinds, kinds
    for entry in decoded:
        assert entries.OP_OF[type(entry)] == entry.op
        if not seq:
            assert entry.seq is None
    # What is decoded is what was written: the raw lines and the typed ones agree.
    raw = [json.loads(line) for line in journal(op, seq=seq).splitlines()]
    assert [e["op"] for e in raw] == [e.op for e in decoded]
    assert [e["txn"] for e in raw] == [e.txn for e in decoded]


def test_every_operation_written_has_a_dataclass_and_a_fixture() -> None:
    written = set()
    for path in SRC.rglob("*.py"):
        written |= set(re.findall(r'"op": "([a-z-]+)"', path.read_text()))
    written.add("apparmor-load")  # written through a constant (LOAD_OP)
    assert written <= entries.OPS, written - entries.OPS
    assert set(entries.OP_OF.values()) == entries.OPS
    assert {p.stem for p in FIXTURES.glob("*.jsonl")} == entries.OPS


def test_typed_fields_of_an_account_step() -> None:
    decoded = parse_entries(journal("create-user"), LAYOUT, "create-user")
    (user,) = entries.of(decoded, entries.CreateUser)
    assert user.name == "claude-agent" and user.step is not None and user.files
    assert all(f.real.startswith(str(ROOT)) for f in user.files)
    (done,) = entries.of(decoded, entries.AccountsDone)
    assert done.step == user.step and done.new is not None


def test_a_wrong_field_is_named_once_decoded() -> None:
    data = journal("write").replace(b'"tmp": ', b'"tmp": 7, "x": ', 1)
    with pytest.raises(JournalCorruptError, match="line 2: field 'tmp' must be a file name"):
        parse_entries(data, LAYOUT, "j")
    data = journal("mkdir").replace(b'"seq": 1', b'"seq": "one"')
    with pytest.raises(JournalCorruptError, match="field 'seq' must be a whole number"):
        parse_entries(data, LAYOUT, "j")
