"""The trust rule: may root read or execute this file? (docs/design.md invariant 2)

A file is trusted when it is a regular file owned by a trusted uid (root, or the
operator who runs the tool) and not writable by group or others, and so is
every directory on its resolved path. One exception: a directory owned by root,
world-writable and *sticky* (``/tmp``) is accepted on the path, because the
sticky bit stops other users from renaming or deleting entries they do not own.
A sticky directory owned by anyone else is refused: its owner can swap entries.

The launcher (refuses), the plan (refuses before writing a config the launcher
would refuse), the audit (reports) and the checks (never run such a binary as
root) all judge with these functions, so an apply never writes what a launch
then refuses. The judges are pure functions over
:class:`~sandbox_setup.base.pathfacts.PathFacts`.

The same rule covers everything else root reads and then acts on (invariant 12):
an answers file, the journal, the state directory, the backups the journal names,
the setups ledger, and every existing file an apply merges or keeps (the launcher
config, managed settings, root's git config, ...), whose allowed owners
:func:`kept_file_owners` states once: an account's own file (the agent's
user-scope settings) may be that account's, but is never trusted for root's.
:func:`refusal_text` words a problem once for all of them, :func:`refuse` turns
problems into the refusal (exit 3), and :func:`check_trusted_file` applies the
rule to a live path. The state directory itself is judged by
:func:`state_dir_problems`: there, unlike on the way to a file, a sticky
world-writable directory is not enough, since anyone may create entries in it.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.pathfacts import PathFacts, resolved_chain


@dataclass(frozen=True, slots=True)
class TrustProblem:
    """Why one path on the way to a file makes it untrusted, and the fix."""

    facts: PathFacts
    leaf: bool  # the file itself (else a directory above it)
    kind: str  # "missing" | "type" | "owner" | "writable"
    text: str  # e.g. "is owned by uid 65534" (the caller names the path and the file)
    fix: str

    @property
    def shown(self) -> str:
        return self.facts.shown


def trusted_owners(operator_uid: int) -> frozenset[int]:
    """Root and the operator: nobody else may own what root reads or runs."""
    return frozenset({0, operator_uid})


def kept_file_owners(holder_uid: int, operator_uid: int) -> frozenset[int]:
    """Who may own an existing file an apply reads and then merges or keeps (the
    launcher config, the answers, the setups ledger, managed settings, root's git
    config, the scheduler deny lists; the agent's user-scope settings, a workspace
    owner's git config): invariant 12, stated once.

    ``holder_uid`` is the account the file is written for. Root's files (held by
    root or the operator): root or the operator. An account's own file: that
    account or root; it stays that account's (never re-owned to root), and it is
    never one of root's files, so its owner is never trusted for root's decisions.
    """
    if holder_uid in (0, operator_uid):
        return trusted_owners(operator_uid)
    return frozenset({0, holder_uid})


def kept_file_problems(
    leaf: PathFacts,
    directories: list[PathFacts],
    holder_uid: int,
    operator_uid: int,
    holder: str,
) -> list[TrustProblem]:
    """The trust rule for an existing file an apply merges or keeps (see
    :func:`kept_file_owners`); the fix of an owner problem names ``holder``."""
    owners = kept_file_owners(holder_uid, operator_uid)
    found = chain_problems(leaf, directories, owners) if leaf.exists else []
    return [
        replace(p, fix=f"chown {holder} {p.shown}") if p.kind == "owner" and p.leaf else p
        for p in found
    ]


def writable_by_others(facts: PathFacts) -> bool:
    """Group- or world-writable, except a root-owned sticky directory (like /tmp)."""
    if not facts.perms & 0o022:
        return False
    return not (facts.is_dir and facts.perms & stat.S_ISVTX and facts.uid == 0)


def _mode(facts: PathFacts) -> str:
    return f"{facts.perms:04o}"


def file_problems(facts: PathFacts, owners: Collection[int]) -> list[TrustProblem]:
    """The file itself: regular, trusted owner, not group/world-writable."""
    if not facts.exists:
        return [TrustProblem(facts, True, "missing", "does not exist", "")]
    if not facts.is_regular:
        return [TrustProblem(facts, True, "type", "is not a regular file", "")]
    found = []
    if facts.uid not in owners:
        found.append(
            TrustProblem(
                facts,
                True,
                "owner",
                f"is owned by uid {facts.uid}",
                f"chown root {facts.shown}",
            )
        )
    if facts.perms & 0o022:
        found.append(
            TrustProblem(
                facts,
                True,
                "writable",
                f"is group- or world-writable (mode {_mode(facts)})",
                f"chmod go-w {facts.shown}",
            )
        )
    return found


def directory_problems(facts: PathFacts, owners: Collection[int]) -> list[TrustProblem]:
    """A directory on the path: a directory, trusted owner, nobody else can write it
    (a root-owned sticky directory excepted)."""
    if not facts.exists:
        return []  # the file's own check reports what is missing
    if not facts.is_dir:
        return [TrustProblem(facts, False, "type", "is not a directory", "")]
    found = []
    if writable_by_others(facts):
        found.append(
            TrustProblem(
                facts,
                False,
                "writable",
                f"is group- or world-writable (mode {_mode(facts)})",
                f"chmod go-w {facts.shown}",
            )
        )
    if facts.uid not in owners:
        found.append(
            TrustProblem(
                facts,
                False,
                "owner",
                f"is owned by uid {facts.uid}",
                f"chown root {facts.shown}",
            )
        )
    return found


def chain_problems(
    leaf: PathFacts, directories: list[PathFacts], owners: Collection[int]
) -> list[TrustProblem]:
    """Every problem of a resolved path: its directories top first, then the file."""
    found: list[TrustProblem] = []
    for directory in directories:
        found += directory_problems(directory, owners)
    return found + file_problems(leaf, owners)


def state_dir_problems(
    leaf: PathFacts, directories: list[PathFacts], owners: Collection[int]
) -> list[TrustProblem]:
    """A directory whose entries root obeys (the state directory): the directories
    above it as for a file, and the directory itself trusted with no sticky exception
    (anyone who may create entries there could plant a journal or a backup)."""
    found: list[TrustProblem] = []
    for directory in directories:
        found += directory_problems(directory, owners)
    if not leaf.exists:
        return found
    own = directory_problems(leaf, owners)
    if leaf.is_dir and leaf.perms & 0o022 and not writable_by_others(leaf):
        own.append(
            TrustProblem(
                leaf,
                False,
                "writable",
                f"is group- or world-writable (mode {_mode(leaf)})",
                f"chmod go-w {leaf.shown}",
            )
        )
    return found + [replace(p, leaf=True) for p in own]


def _owner_text(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def refusal_text(problem: TrustProblem, what: str, allowed: str = "you or root") -> str:
    """The words for one trust problem of ``what``: the file, why, and the fix
    (``allowed``: who may own it, in words)."""
    facts = problem.facts
    path = facts.shown
    mode = f"{facts.perms:04o}"
    if not problem.leaf:
        where = f"{what}: directory {path} on its path"
        if problem.kind == "type":
            return f"{what}: {path} on its path is not a directory"
        if problem.kind == "writable":
            return (
                f"{where} is group- or world-writable (mode {mode}); anyone who can write "
                f"there could replace it. Fix: {problem.fix}"
            )
        return f"{where} is owned by {_owner_text(facts.uid)}, not by {allowed}. Fix: {problem.fix}"
    if problem.kind in ("type", "missing"):
        return f"{what}: {path} {problem.text}"
    if problem.kind == "owner":
        owner = _owner_text(facts.uid)
        return f"{what}: {path} is owned by {owner}, not by {allowed}. Fix: {problem.fix}"
    return f"{what}: {path} is group- or world-writable (mode {mode}). Fix: {problem.fix}"


def refuse(problems: Iterable[TrustProblem], what: str, allowed: str = "you or root") -> None:
    """Raise the refusal (exit 3) for the first of ``problems``, if any."""
    for problem in problems:
        raise RefusedError(refusal_text(problem, what, allowed) + "; nothing was changed")


def check_trusted_file(path: Path | PurePosixPath | str, owners: Iterable[int], what: str) -> Path:
    """Check the live path ``path`` and its directories; return the resolved path to use.

    Symlinks are resolved first and the *resolved* path is checked (and is what the
    caller must use), so a link planted somewhere cannot redirect it afterwards.
    Raises :class:`RefusedError` (exit 3) naming the file, the reason and the fix.
    """
    owners = frozenset(owners)
    given = Path(path)
    if not given.is_absolute():
        raise RefusedError(f"{what}: {given} is not an absolute path")
    try:
        real = Path(os.path.realpath(given, strict=True))
    except OSError as exc:
        raise RefusedError(f"{what}: {given}: {exc.strerror or exc}") from None
    problems = chain_problems(*resolved_chain(real), owners)
    if problems:
        raise RefusedError(refusal_text(problems[0], what))
    return real


def untrusted_reason(path: str | Path, owners: Collection[int] | None = None) -> str | None:
    """Why root must not run ``path`` on the live system (None: it may).

    ``owners`` defaults to root and the effective uid. This is the rule applied to
    a live path, for the checks, which only get it handed in.
    """
    owners = trusted_owners(os.geteuid()) if owners is None else owners
    try:
        real = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    found = chain_problems(*resolved_chain(real), owners)
    if not found:
        return None
    first = found[0]
    where = "" if first.leaf else " (a directory on its path)"
    return f"{first.shown}{where} {first.text}"
