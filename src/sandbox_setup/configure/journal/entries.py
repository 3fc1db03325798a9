"""The journal's entries as typed values: one frozen dataclass per operation.

Each line of the journal is decoded and validated once, when the journal is read
(:func:`decode`): a field that is missing, of the wrong type, a path outside the root,
an account name that is not one, a digest that is not a sha256, is a
:class:`EntryProblem` naming the field, and the reader stops (exit 2) before anything
changes. The encoding on disk is unchanged (JSON objects with ``txn`` and ``op``;
the writers are :mod:`sandbox_setup.configure.transaction`, the actions and
:mod:`sandbox_setup.configure.accounts.account_files`); :func:`decode` is the one place that
knows which fields each operation has and of which type. Fields that older versions
did not write (``seq``, ``keep``, ``backup_sha256``, ``files``, ``step``, ``home``,
``home_existed``, ``fix``, ``root``) may be absent; when present they must have
their type.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sandbox_setup.base.paths import Layout

_SHA = re.compile(r"[0-9a-f]{64}")
# An account name as shadow-utils takes it; never an option ("-..."), never empty.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}\$?")
_MAX_MODE = 0o7777
_MAX_ID = 2**32 - 1
_MAX_STEP = 2**31


class EntryProblem(ValueError):
    """What is wrong with one journal line (its text is shown after the line's number)."""


# --- the entries --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Entry:
    """What every line has: its apply (``txn``) and, from the version that numbers the
    lines an apply writes, its number in that apply (``seq``; None in older journals
    and on the lines an undo or rollback appends)."""

    txn: str
    seq: int | None = None

    @property
    def op(self) -> str:
        return OP_OF[type(self)]


@dataclass(frozen=True, kw_only=True)
class Begin(Entry):
    at: str
    root: str | None = None


@dataclass(frozen=True, kw_only=True)
class Commit(Entry):
    at: str


@dataclass(frozen=True, kw_only=True)
class Undone(Entry):
    at: str
    left: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RolledBack(Entry):
    at: str


@dataclass(frozen=True, kw_only=True)
class UndoIncomplete(Entry):
    at: str
    left: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class RollbackIncomplete(Entry):
    at: str
    left: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class StepUndone(Entry):
    step: int


@dataclass(frozen=True, kw_only=True)
class AccountsDone(Entry):
    step: int
    new: Mapping[str, str | None] | None


@dataclass(frozen=True, kw_only=True)
class FileSnapshot:
    """One account file as an account step found it (``files`` of the step)."""

    target: str
    real: str
    old_sha256: str | None
    backup: str | None
    old_mode: int | None
    old_uid: int | None
    old_gid: int | None
    keep: str | None = None


@dataclass(frozen=True, kw_only=True)
class Write(Entry):
    target: str
    real: str
    old_sha256: str | None
    new_sha256: str
    backup: str | None
    old_mode: int | None
    old_uid: int | None
    old_gid: int | None
    tmp: str
    keep: str | None = None
    fix: bool = False


@dataclass(frozen=True, kw_only=True)
class RemoveFile(Entry):
    """A file the apply removed (renamed to ``keep`` beside it, backed up): undo puts
    it back with its mode and owner (:class:`sandbox_setup.configure.actions.RemoveFile`)."""

    target: str
    real: str
    old_sha256: str
    backup: str
    keep: str
    old_mode: int
    old_uid: int
    old_gid: int


@dataclass(frozen=True, kw_only=True)
class Planned(Entry):
    """A file the apply planned and found already as planned (its before-image)."""

    target: str
    sha256: str | None


@dataclass(frozen=True, kw_only=True)
class Mkdir(Entry):
    target: str
    real: str


@dataclass(frozen=True, kw_only=True)
class AccountStep(Entry):
    """What the account steps share: their index and the account files' snapshot."""

    step: int | None = None
    files: tuple[FileSnapshot, ...] | None = None
    # What the tool left, when the step itself carries it (a rollback in the apply's
    # own process knows it before its ``accounts-done`` line is written): ``known``
    # tells an absent ``new`` (look for ``accounts-done``) from a null one (unknown).
    new: Mapping[str, str | None] | None = None
    new_known: bool = False


@dataclass(frozen=True, kw_only=True)
class CreateUser(AccountStep):
    name: str
    home: str | None = None
    home_existed: bool | None = None


@dataclass(frozen=True, kw_only=True)
class CreateGroup(AccountStep):
    name: str


@dataclass(frozen=True, kw_only=True)
class AddToGroup(AccountStep):
    user: str
    group: str


@dataclass(frozen=True, kw_only=True)
class RemoveFromGroup(Entry):
    user: str
    group: str


@dataclass(frozen=True, kw_only=True)
class SetShell(AccountStep):
    user: str
    shell: str
    old_shell: str


@dataclass(frozen=True, kw_only=True)
class Acl(Entry):
    target: str
    backup: str
    backup_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class ApparmorLoad(Entry):
    """The AppArmor profile's load (:mod:`sandbox_setup.configure.apparmor`): undo runs
    ``parser -R target`` only while ``real`` still has ``sha256``."""

    target: str
    real: str
    parser: str
    sha256: str


# --- decoding -----------------------------------------------------------------------


class _Fields:
    """The fields of one JSON object, each taken with its check (in the order the
    problems are reported: the first wrong field is named)."""

    def __init__(self, raw: Mapping[str, object], layout: Layout) -> None:
        self.raw = raw
        self.layout = layout

    def _get(self, name: str, required: bool) -> tuple[bool, object]:
        if name not in self.raw:
            if required:
                raise EntryProblem(f"field {name!r} is missing")
            return False, None
        return True, self.raw[name]

    def take(self, name: str, check: Callable[[object, Layout], str | None]) -> object:
        _, value = self._get(name, True)
        problem = check(value, self.layout)
        if problem is not None:
            raise EntryProblem(f"field {name!r} {problem}")
        return value

    def maybe(self, name: str, check: Callable[[object, Layout], str | None]) -> object:
        present, value = self._get(name, False)
        if present:
            problem = check(value, self.layout)
            if problem is not None:
                raise EntryProblem(f"field {name!r} {problem}")
        return value

    def text(self, name: str, check: Check | None = None) -> str:
        value = self.take(name, check or _text)
        assert isinstance(value, str)
        return value

    def text_or_none(self, name: str, check: Check, *, required: bool = True) -> str | None:
        value = (self.take if required else self.maybe)(name, _or_null(check))
        assert value is None or isinstance(value, str)
        return value

    def number(self, name: str, check: Check) -> int:
        value = self.take(name, check)
        assert isinstance(value, int)
        return value

    def number_or_none(self, name: str, check: Check, *, required: bool = True) -> int | None:
        value = (self.take if required else self.maybe)(name, _or_null(check))
        assert value is None or isinstance(value, int)
        return value

    def flag(self, name: str) -> bool | None:
        value = self.maybe(name, _boolean)
        assert value is None or isinstance(value, bool)
        return value

    def strings(self, name: str, *, required: bool) -> tuple[str, ...]:
        value = (self.take if required else self.maybe)(name, _strings)
        if value is None:
            return ()
        assert isinstance(value, list)
        return tuple(str(v) for v in value)


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


def _digests(value: object, layout: Layout) -> str | None:
    if not isinstance(value, dict):
        return "must be an object of file -> sha256"
    for key, digest in value.items():
        if _absolute(key, layout) or _or_null(_sha)(digest, layout):
            return f"has a bad item {key!r}"
    return None


_MODE = _integer(0, _MAX_MODE)
_ID = _integer(0, _MAX_ID)
_STEP = _integer(0, _MAX_STEP)


def _snapshot(raw: object, number: int, layout: Layout) -> FileSnapshot:
    if not isinstance(raw, dict):
        raise EntryProblem(f"field 'files' item {number} is not an object")
    f = _Fields(raw, layout)
    try:
        return FileSnapshot(
            target=f.text("target", _absolute),
            real=f.text("real", _inside_root),
            old_sha256=f.text_or_none("old_sha256", _sha),
            backup=f.text_or_none("backup", _absolute),
            keep=f.text_or_none("keep", _plain_name, required=False),
            old_mode=f.number_or_none("old_mode", _MODE),
            old_uid=f.number_or_none("old_uid", _ID),
            old_gid=f.number_or_none("old_gid", _ID),
        )
    except EntryProblem as exc:
        raise EntryProblem(f"field 'files' item {number}: {exc}") from None


@dataclass(frozen=True)
class _Shared:
    step: int | None
    files: tuple[FileSnapshot, ...] | None
    new: Mapping[str, str | None] | None
    new_known: bool


def _account_step(f: _Fields) -> _Shared:
    step = f.number_or_none("step", _STEP, required=False)
    new_known = "new" in f.raw
    new = _new_digests(f) if new_known else None
    present, files = f._get("files", False)
    snapshots: tuple[FileSnapshot, ...] | None = None
    if present:
        if not isinstance(files, list):
            raise EntryProblem("field 'files' must be a list of account files")
        snapshots = tuple(_snapshot(item, n, f.layout) for n, item in enumerate(files, 1))
    return _Shared(step, snapshots, new, new_known)


def _new_digests(f: _Fields) -> Mapping[str, str | None] | None:
    value = f.take("new", _or_null(_digests))
    if value is None:
        return None
    assert isinstance(value, dict)
    return {str(k): (None if v is None else str(v)) for k, v in value.items()}


def _begin(t: str, s: int | None, f: _Fields) -> Entry:
    at = f.text("at")
    return Begin(txn=t, seq=s, at=at, root=f.text_or_none("root", _absolute, required=False))


def _write(t: str, s: int | None, f: _Fields) -> Entry:
    return Write(
        txn=t,
        seq=s,
        target=f.text("target", _absolute),
        real=f.text("real", _inside_root),
        old_sha256=f.text_or_none("old_sha256", _sha),
        new_sha256=f.text("new_sha256", _sha),
        backup=f.text_or_none("backup", _absolute),
        keep=f.text_or_none("keep", _plain_name, required=False),
        old_mode=f.number_or_none("old_mode", _MODE),
        old_uid=f.number_or_none("old_uid", _ID),
        old_gid=f.number_or_none("old_gid", _ID),
        tmp=f.text("tmp", _plain_name),
        fix=bool(f.flag("fix")),
    )


def _remove_file(t: str, s: int | None, f: _Fields) -> Entry:
    return RemoveFile(
        txn=t,
        seq=s,
        target=f.text("target", _absolute),
        real=f.text("real", _inside_root),
        old_sha256=f.text("old_sha256", _sha),
        backup=f.text("backup", _absolute),
        keep=f.text("keep", _plain_name),
        old_mode=f.number("old_mode", _MODE),
        old_uid=f.number("old_uid", _ID),
        old_gid=f.number("old_gid", _ID),
    )


def _create_user(t: str, s: int | None, f: _Fields) -> Entry:
    name = f.text("name", _account)
    home = f.text_or_none("home", _absolute, required=False)
    existed = f.flag("home_existed")
    a = _account_step(f)
    return CreateUser(
        txn=t,
        seq=s,
        name=name,
        home=home,
        home_existed=existed,
        step=a.step,
        files=a.files,
        new=a.new,
        new_known=a.new_known,
    )


def _create_group(t: str, s: int | None, f: _Fields) -> Entry:
    name = f.text("name", _account)
    a = _account_step(f)
    return CreateGroup(
        txn=t, seq=s, name=name, step=a.step, files=a.files, new=a.new, new_known=a.new_known
    )


def _add_to_group(t: str, s: int | None, f: _Fields) -> Entry:
    user, group = f.text("user", _account), f.text("group", _account)
    a = _account_step(f)
    return AddToGroup(
        txn=t,
        seq=s,
        user=user,
        group=group,
        step=a.step,
        files=a.files,
        new=a.new,
        new_known=a.new_known,
    )


def _set_shell(t: str, s: int | None, f: _Fields) -> Entry:
    user, shell = f.text("user", _account), f.text("shell", _shell)
    old_shell = f.text("old_shell", _shell)
    a = _account_step(f)
    return SetShell(
        txn=t,
        seq=s,
        user=user,
        shell=shell,
        old_shell=old_shell,
        step=a.step,
        files=a.files,
        new=a.new,
        new_known=a.new_known,
    )


E = TypeVar("E", bound=Entry)

# Per op: how its line is decoded. "txn" and "op" (and "seq") are checked for every line.
_DECODERS: dict[str, Callable[[str, int | None, _Fields], Entry]] = {
    "begin": _begin,
    "commit": lambda t, s, f: Commit(txn=t, seq=s, at=f.text("at")),
    "undone": lambda t, s, f: Undone(
        txn=t, seq=s, at=f.text("at"), left=f.strings("left", required=False)
    ),
    "rolled-back": lambda t, s, f: RolledBack(txn=t, seq=s, at=f.text("at")),
    "undo-incomplete": lambda t, s, f: UndoIncomplete(
        txn=t, seq=s, at=f.text("at"), left=f.strings("left", required=True)
    ),
    "rollback-incomplete": lambda t, s, f: RollbackIncomplete(
        txn=t, seq=s, at=f.text("at"), left=f.strings("left", required=True)
    ),
    "step-undone": lambda t, s, f: StepUndone(txn=t, seq=s, step=f.number("step", _STEP)),
    "accounts-done": lambda t, s, f: AccountsDone(
        txn=t, seq=s, step=f.number("step", _STEP), new=_new_digests(f)
    ),
    "write": _write,
    "remove-file": _remove_file,
    "planned": lambda t, s, f: Planned(
        txn=t, seq=s, target=f.text("target", _absolute), sha256=f.text_or_none("sha256", _sha)
    ),
    "mkdir": lambda t, s, f: Mkdir(
        txn=t, seq=s, target=f.text("target", _absolute), real=f.text("real", _inside_root)
    ),
    "create-user": _create_user,
    "create-group": _create_group,
    "add-to-group": _add_to_group,
    "remove-from-group": lambda t, s, f: RemoveFromGroup(
        txn=t, seq=s, user=f.text("user", _account), group=f.text("group", _account)
    ),
    "set-shell": _set_shell,
    "acl": lambda t, s, f: Acl(
        txn=t,
        seq=s,
        target=f.text("target", _absolute),
        backup=f.text("backup", _absolute),
        backup_sha256=f.text_or_none("backup_sha256", _sha, required=False),
    ),
    "apparmor-load": lambda t, s, f: ApparmorLoad(
        txn=t,
        seq=s,
        target=f.text("target", _absolute),
        real=f.text("real", _inside_root),
        parser=f.text("parser", _absolute),
        sha256=f.text("sha256", _sha),
    ),
}

OPS = frozenset(_DECODERS)
OP_OF: dict[type[Entry], str] = {
    Begin: "begin",
    Commit: "commit",
    Undone: "undone",
    RolledBack: "rolled-back",
    UndoIncomplete: "undo-incomplete",
    RollbackIncomplete: "rollback-incomplete",
    StepUndone: "step-undone",
    AccountsDone: "accounts-done",
    Write: "write",
    RemoveFile: "remove-file",
    Planned: "planned",
    Mkdir: "mkdir",
    CreateUser: "create-user",
    CreateGroup: "create-group",
    AddToGroup: "add-to-group",
    RemoveFromGroup: "remove-from-group",
    SetShell: "set-shell",
    Acl: "acl",
    ApparmorLoad: "apparmor-load",
}


def decode(raw: object, layout: Layout) -> Entry:
    """The typed entry of one parsed journal line, or :class:`EntryProblem` saying
    what is wrong with it (the first wrong field)."""
    if not isinstance(raw, dict):
        raise EntryProblem("it is not a JSON object")
    if "txn" not in raw:
        raise EntryProblem("field 'txn' is missing")
    txn = raw["txn"]
    if not isinstance(txn, str) or not txn:
        raise EntryProblem("field 'txn' must be a non-empty string")
    op = raw.get("op")
    if op is None:
        raise EntryProblem("field 'op' is missing")
    if not isinstance(op, str) or op not in _DECODERS:
        raise EntryProblem(f"field 'op' is {op!r}, not an operation sandbox-setup writes")
    fields = _Fields(raw, layout)
    seq = fields.number_or_none("seq", _STEP, required=False)
    return _DECODERS[op](txn, seq, fields)


def of(entries: list[Entry], kind: type[E]) -> list[E]:
    """The entries of one kind, in journal order."""
    return [e for e in entries if isinstance(e, kind)]


def backups_named(entry: Entry) -> list[str | None]:
    """The backups ``entry`` names (its own, and its account files' snapshots')."""
    found: list[str | None] = []
    if isinstance(entry, Write | RemoveFile | Acl):
        found.append(entry.backup)
    if isinstance(entry, AccountStep) and entry.files:
        found += [item.backup for item in entry.files]
    return found
