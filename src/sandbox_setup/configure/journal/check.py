"""The journal read strictly: every line must parse and be a well-formed entry.

Root replays the journal (``--undo``) and plans from it (the accounts a setup
created), so a line that is not JSON, lacks a field, has a field of the wrong type,
names a path outside the root or an account name that is not one, stops the reader
with :class:`JournalCorruptError` (exit 2) naming the line and what is wrong, before
anything is changed. Skipping such a line would undo half an apply and call it done.

The one line tolerated is a torn *last* line: no newline at its end, and it starts
like an entry does. That is what a process killed inside its journal write leaves
(every complete line ends with a newline); :func:`torn_tail` finds it so that the
next append cuts it off first.

The formats (written by :mod:`sandbox_setup.configure.transaction`, the actions and
:mod:`sandbox_setup.configure.accounts.account_files`) are in
:mod:`sandbox_setup.configure.journal`'s docstring. Fields that older versions did
not write (``keep``, ``backup_sha256``, ``files``, ``step``, ``home``, ``home_existed``) may be
absent; when present they must have their type.
"""

from __future__ import annotations

import json

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.journal.entries import (
    AccountsDone,
    Begin,
    Commit,
    Entry,
    EntryProblem,
    StepUndone,
    decode,
)

MAX_LINE = 1 << 20  # the longest entry written is a few KiB
_ENTRY_START = b'{"'


class JournalCorruptError(InputError):
    """A journal line does not parse or validate (exit 2, nothing changed)."""


def entry_problem(entry: object, layout: Layout) -> str | None:
    """What is wrong with one parsed journal line (None: a valid entry); the fields of
    each operation and their types are :mod:`sandbox_setup.configure.journal.entries`."""
    try:
        decode(entry, layout)
    except EntryProblem as exc:
        return str(exc)
    return None


def torn_tail(data: bytes) -> int:
    """Where a torn last line starts (a killed write: no newline at its end, begins
    like an entry and is short), or ``len(data)`` when there is none."""
    start = data.rfind(b"\n") + 1
    tail = data[start:]
    if tail and tail.startswith(_ENTRY_START[: len(tail)]) and len(tail) <= MAX_LINE:
        return start
    return len(data)


def parse_entries(data: bytes, layout: Layout, shown: str) -> list[Entry]:
    """Every entry of the journal ``data`` (named ``shown`` in messages), oldest
    first, decoded into its typed value. Each line is decoded and validated once
    (:func:`~sandbox_setup.configure.journal.entries.decode`), and the whole checked
    for order (:func:`order_problem`); raises :class:`JournalCorruptError` at the
    first line that is wrong."""
    typed: list[Entry] = []
    body = data[: torn_tail(data)]
    for number, raw in enumerate(body.split(b"\n"), 1):
        if not raw and number > body.count(b"\n"):
            break  # after the last newline
        problem: str | None = None
        entry: object = None
        decoded: Entry | None = None
        if len(raw) > MAX_LINE:
            problem = f"the line is {len(raw)} bytes long (an entry is at most {MAX_LINE})"
        else:
            try:
                entry = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                problem = "it is not UTF-8 text"
            except (ValueError, RecursionError) as exc:
                problem = f"it is not JSON ({_first_line(exc)})"
            else:
                try:
                    decoded = decode(entry, layout)
                except EntryProblem as exc:
                    problem = str(exc)
        if problem is not None:
            raise JournalCorruptError(
                f"journal {shown}, line {number}: {problem}. Nothing was changed: undo "
                "replays the journal only when every line is whole. If you did not write "
                "that line, restore the journal from a copy or remove the line, then run "
                "again"
            )
        assert decoded is not None
        typed.append(decoded)
    found = order_problem(typed)
    if found is not None:
        number, problem = found
        raise JournalCorruptError(
            f"journal {shown}, line {number}: {problem}. Nothing was changed: undo replays "
            "the journal only when it is whole and in the order it was written. If you did "
            "not change it, restore the journal from a copy, then run again"
        )
    return typed


# What an apply writes between its begin and its commit (its steps and their
# bookkeeping); an undo or a rollback only appends the other entries.
_UNDO_OPS = frozenset(
    {"step-undone", "undone", "rolled-back", "undo-incomplete", "rollback-incomplete"}
)
_CLOSED = frozenset({"undone", "rolled-back"})


def order_problem(entries: list[Entry]) -> tuple[int, str] | None:
    """``(line, what)`` for the first entry out of the order applies and undos write
    them in, or None. Each apply starts with its one ``begin`` line; its steps follow
    it with no other apply's line between and none after its ``commit``; an undo marks
    only steps written before it, and nothing follows a closed apply. The lines an
    apply writes carry ``seq`` (0 for its begin, then one more per line; journals
    written before it have none): a line moved or lost inside one apply shows too."""
    begun: dict[str, int] = {}
    seqs: dict[str, int | None] = {}  # the last "seq" of each apply that numbers its lines
    steps: dict[str, int] = {}
    committed: set[str] = set()
    closed: set[str] = set()
    current: str | None = None
    for number, entry in enumerate(entries, 1):
        txn, op = entry.txn, entry.op
        if isinstance(entry, Begin):
            if txn in begun:
                return number, f"apply {txn} begins again (it began on line {begun[txn]})"
            begun[txn], steps[txn], current = number, 0, txn
            seqs[txn] = 0 if entry.seq == 0 else None
            continue
        if txn not in begun:
            return number, f"apply {txn} has no begin line before this {op!r} line"
        if txn in closed:
            return number, f"apply {txn} was already closed (undone or rolled back) before"
        last = seqs[txn]
        seq = entry.seq
        if last is not None and (seq is not None or op not in _UNDO_OPS):
            if seq != last + 1:
                which = "an unnumbered line" if seq is None else f"its line {seq}"
                return number, (
                    f"apply {txn} has {which} where its line {last + 1} belongs (lines of "
                    "it were moved or lost)"
                )
            seqs[txn] = seq
        if op in _UNDO_OPS:
            if isinstance(entry, StepUndone) and entry.step >= steps[txn]:
                return number, (
                    f"it marks step {entry.step} of apply {txn} undone before that step"
                )
            if op in _CLOSED:
                closed.add(txn)
            continue
        if txn != current:
            return number, f"a {op!r} line of apply {txn} comes after apply {current} began"
        if txn in committed:
            return number, f"a {op!r} line of apply {txn} comes after its commit"
        if isinstance(entry, Commit):
            committed.add(txn)
        elif not isinstance(entry, AccountsDone):
            steps[txn] += 1
    return None


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
