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
:mod:`sandbox_setup.configure.account_files`) are in
:mod:`sandbox_setup.configure.journal`'s docstring. Fields that older versions did
not write (``keep``, ``backup_sha256``, ``files``, ``step``, ``home``, ``home_existed``) may be
absent; when present they must have their type.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.paths import Layout

MAX_LINE = 1 << 20  # the longest entry written is a few KiB
_SHA = re.compile(r"[0-9a-f]{64}")
# An account name as shadow-utils takes it; never an option ("-..."), never empty.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}\$?")
_ENTRY_START = b'{"'


class JournalCorruptError(InputError):
    """A journal line does not parse or validate (exit 2, nothing changed)."""


Check = Callable[[object, Layout], str | None]


def _text(value: object, _layout: Layout) -> str | None:
    return None if isinstance(value, str) and value else "must be a non-empty string"


def _sha(value: object, _layout: Layout) -> str | None:
    ok = isinstance(value, str) and _SHA.fullmatch(value)
    return None if ok else "must be a sha256 (64 lowercase hex digits)"


def _absolute(value: object, _layout: Layout) -> str | None:
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        return "must be an absolute path"
    return None


def _inside_root(value: object, layout: Layout) -> str | None:
    problem = _absolute(value, layout)
    if problem is not None:
        return problem
    assert isinstance(value, str)
    normal = Path(os.path.normpath(value))
    if normal != layout.root and layout.root not in normal.parents:
        return f"is outside the root {layout.root}"
    return None


def _plain_name(value: object, _layout: Layout) -> str | None:
    if not isinstance(value, str) or not value or "/" in value or value in (".", ".."):
        return "must be a file name without a directory"
    return None


def _account(value: object, _layout: Layout) -> str | None:
    ok = isinstance(value, str) and _NAME.fullmatch(value)
    return None if ok else "must be an account name"


def _shell(value: object, _layout: Layout) -> str | None:
    """A passwd shell field: empty (``/bin/sh``) or an absolute path, one field."""
    if not isinstance(value, str) or any(c in value for c in ":\n\0"):
        return "must be a shell of /etc/passwd"
    return None if value == "" or value.startswith("/") else "must be a shell of /etc/passwd"


def _integer(low: int, high: int) -> Check:
    def check(value: object, _layout: Layout) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"must be a whole number from {low} to {high}"
        return None

    return check


def _boolean(value: object, _layout: Layout) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _or_null(check: Check) -> Check:
    def either(value: object, layout: Layout) -> str | None:
        return None if value is None else check(value, layout)

    return either


def _strings(value: object, _layout: Layout) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be a list of strings"
    return None


_MODE = _integer(0, 0o7777)
_ID = _integer(0, 2**32 - 1)
_STEP = _integer(0, 2**31)


def _digests(value: object, layout: Layout) -> str | None:
    if not isinstance(value, dict):
        return "must be an object of file -> sha256"
    for key, digest in value.items():
        if _absolute(key, layout) or _or_null(_sha)(digest, layout):
            return f"has a bad item {key!r}"
    return None


# The fields of one account file's snapshot (``files`` of an account step).
_FILE_FIELDS: dict[str, tuple[Check, bool]] = {
    "target": (_absolute, True),
    "real": (_inside_root, True),
    "old_sha256": (_or_null(_sha), True),
    "backup": (_or_null(_absolute), True),
    "keep": (_or_null(_plain_name), False),
    "old_mode": (_or_null(_MODE), True),
    "old_uid": (_or_null(_ID), True),
    "old_gid": (_or_null(_ID), True),
}


def _fields_problem(
    item: dict[str, Any], fields: dict[str, tuple[Check, bool]], layout: Layout
) -> str | None:
    for name, (check, required) in fields.items():
        if name not in item:
            if required:
                return f"field {name!r} is missing"
            continue
        problem = check(item[name], layout)
        if problem is not None:
            return f"field {name!r} {problem}"
    return None


def _files(value: object, layout: Layout) -> str | None:
    if not isinstance(value, list):
        return "must be a list of account files"
    for number, item in enumerate(value, 1):
        if not isinstance(item, dict):
            return f"item {number} is not an object"
        problem = _fields_problem(item, _FILE_FIELDS, layout)
        if problem is not None:
            return f"item {number}: {problem}"
    return None


Fields = dict[str, tuple[Check, bool]]
_AT: Fields = {"at": (_text, True)}
_ACCOUNT_STEP: Fields = {"step": (_STEP, False), "files": (_files, False)}
# Per op: field -> (check, required). "txn" and "op" are checked for every line.
FIELDS: dict[str, Fields] = {
    "begin": {**_AT, "root": (_absolute, False)},
    "commit": _AT,
    "undone": {**_AT, "left": (_strings, False)},
    "rolled-back": _AT,
    "undo-incomplete": {**_AT, "left": (_strings, True)},
    "rollback-incomplete": {**_AT, "left": (_strings, True)},
    "step-undone": {"step": (_STEP, True)},
    "accounts-done": {"step": (_STEP, True), "new": (_or_null(_digests), True)},
    "write": {
        "target": (_absolute, True),
        "real": (_inside_root, True),
        "old_sha256": (_or_null(_sha), True),
        "new_sha256": (_sha, True),
        "backup": (_or_null(_absolute), True),
        "keep": (_or_null(_plain_name), False),
        "old_mode": (_or_null(_MODE), True),
        "old_uid": (_or_null(_ID), True),
        "old_gid": (_or_null(_ID), True),
        "tmp": (_plain_name, True),
        "fix": (_boolean, False),
    },
    # A file the apply removed (renamed to ``keep`` beside it, backed up): undo puts
    # it back with its mode and owner (sandbox_setup.configure.actions.RemoveFile).
    "remove-file": {
        "target": (_absolute, True),
        "real": (_inside_root, True),
        "old_sha256": (_sha, True),
        "backup": (_absolute, True),
        "keep": (_plain_name, True),
        "old_mode": (_MODE, True),
        "old_uid": (_ID, True),
        "old_gid": (_ID, True),
    },
    # A file the apply planned and found already as planned (its before-image).
    "planned": {"target": (_absolute, True), "sha256": (_or_null(_sha), True)},
    "mkdir": {"target": (_absolute, True), "real": (_inside_root, True)},
    "create-user": {
        "name": (_account, True),
        "home": (_absolute, False),
        "home_existed": (_boolean, False),
        **_ACCOUNT_STEP,
    },
    "create-group": {"name": (_account, True), **_ACCOUNT_STEP},
    "add-to-group": {"user": (_account, True), "group": (_account, True), **_ACCOUNT_STEP},
    "remove-from-group": {"user": (_account, True), "group": (_account, True)},
    "set-shell": {
        "user": (_account, True),
        "shell": (_shell, True),
        "old_shell": (_shell, True),
        **_ACCOUNT_STEP,
    },
    "acl": {
        "target": (_absolute, True),
        "backup": (_absolute, True),
        "backup_sha256": (_sha, False),
    },
    # The AppArmor profile's load (sandbox_setup.configure.apparmor): undo runs
    # ``parser -R target`` only while ``real`` still has ``sha256``; the parser is
    # trust-checked again before it runs.
    "apparmor-load": {
        "target": (_absolute, True),
        "real": (_inside_root, True),
        "parser": (_absolute, True),
        "sha256": (_sha, True),
    },
}


def entry_problem(entry: object, layout: Layout) -> str | None:
    """What is wrong with one parsed journal line (None: a valid entry)."""
    if not isinstance(entry, dict):
        return "it is not a JSON object"
    if "txn" not in entry:
        return "field 'txn' is missing"
    if not isinstance(entry["txn"], str) or not entry["txn"]:
        return "field 'txn' must be a non-empty string"
    op = entry.get("op")
    if op is None:
        return "field 'op' is missing"
    if not isinstance(op, str) or op not in FIELDS:
        return f"field 'op' is {op!r}, not an operation sandbox-setup writes"
    return _fields_problem(entry, FIELDS[op], layout)


def torn_tail(data: bytes) -> int:
    """Where a torn last line starts (a killed write: no newline at its end, begins
    like an entry and is short), or ``len(data)`` when there is none."""
    start = data.rfind(b"\n") + 1
    tail = data[start:]
    if tail and tail.startswith(_ENTRY_START[: len(tail)]) and len(tail) <= MAX_LINE:
        return start
    return len(data)


def parse_journal(data: bytes, layout: Layout, shown: str) -> list[dict[str, Any]]:
    """Every entry of the journal ``data`` (named ``shown`` in messages), oldest
    first; raises :class:`JournalCorruptError` at the first line that is wrong."""
    entries: list[dict[str, Any]] = []
    body = data[: torn_tail(data)]
    for number, raw in enumerate(body.split(b"\n"), 1):
        if not raw and number > body.count(b"\n"):
            break  # after the last newline
        problem: str | None
        entry: object = None
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
                problem = entry_problem(entry, layout)
        if problem is not None:
            raise JournalCorruptError(
                f"journal {shown}, line {number}: {problem}. Nothing was changed: undo "
                "replays the journal only when every line is whole. If you did not write "
                "that line, restore the journal from a copy or remove the line, then run "
                "again"
            )
        assert isinstance(entry, dict)
        entries.append(entry)
    found = order_problem(entries)
    if found is not None:
        number, problem = found
        raise JournalCorruptError(
            f"journal {shown}, line {number}: {problem}. Nothing was changed: undo replays "
            "the journal only when it is whole and in the order it was written. If you did "
            "not change it, restore the journal from a copy, then run again"
        )
    return entries


# What an apply writes between its begin and its commit (its steps and their
# bookkeeping); an undo or a rollback only appends the other entries.
_UNDO_OPS = frozenset(
    {"step-undone", "undone", "rolled-back", "undo-incomplete", "rollback-incomplete"}
)
_CLOSED = frozenset({"undone", "rolled-back"})


def order_problem(entries: list[dict[str, Any]]) -> tuple[int, str] | None:
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
        txn, op = entry["txn"], entry["op"]
        if op == "begin":
            if txn in begun:
                return number, f"apply {txn} begins again (it began on line {begun[txn]})"
            begun[txn], steps[txn], current = number, 0, txn
            seqs[txn] = 0 if entry.get("seq") == 0 else None
            continue
        if txn not in begun:
            return number, f"apply {txn} has no begin line before this {op!r} line"
        if txn in closed:
            return number, f"apply {txn} was already closed (undone or rolled back) before"
        last = seqs[txn]
        seq = entry.get("seq")
        if last is not None and (seq is not None or op not in _UNDO_OPS):
            if seq != last + 1:
                which = "an unnumbered line" if seq is None else f"its line {seq}"
                return number, (
                    f"apply {txn} has {which} where its line {last + 1} belongs (lines of "
                    "it were moved or lost)"
                )
            seqs[txn] = seq
        if op in _UNDO_OPS:
            step = entry.get("step")
            if op == "step-undone" and isinstance(step, int) and step >= steps[txn]:
                return number, f"it marks step {step} of apply {txn} undone before that step"
            if op in _CLOSED:
                closed.add(txn)
            continue
        if txn != current:
            return number, f"a {op!r} line of apply {txn} comes after apply {current} began"
        if txn in committed:
            return number, f"a {op!r} line of apply {txn} comes after its commit"
        if op == "commit":
            committed.add(txn)
        elif op != "accounts-done":
            steps[txn] += 1
    return None


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
