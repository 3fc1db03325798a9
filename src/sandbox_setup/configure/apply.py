"""``apply_plan``: carry out a plan under the lock, journaled, all or nothing.

Public API: :func:`apply_plan` ``(plan, *, progress=None, seams=None) -> ApplyResult``.
``progress(action, status, description)`` is called with status ``"running"``, then
one of ``"changed"``, ``"unchanged"`` or ``"failed"`` (the TUI shows per-action
progress); ``description`` is the step's ``describe()`` taken before it ran, so a step
that created something is still reported as creating it. On any failure every step
already done is reverted from the journal and the exception is re-raised (an OSError
as :class:`ApplyError`, exit 2, its message naming the step and listing what was rolled
back). A rollback needs no free
space (see :class:`~sandbox_setup.configure.transaction.Transaction`); one that still could not
revert everything raises :class:`RollbackIncompleteError` (exit 1) naming what could
not be restored and the ``--undo`` that finishes it. SIGINT, SIGTERM and SIGHUP
roll back the same way (:mod:`sandbox_setup.configure.interrupts`) and end as
:class:`ApplyInterrupted` (exit 130, one line). A run where nothing
needs to change writes nothing at all: no journal transaction, no file rewritten (mtimes unchanged).

``seams`` (:class:`ApplySeams`) are the points where a caller steps into an apply: a
fault test stops it there and kills it at a known point. They are passed in (by
``sandbox-setup``'s :func:`~sandbox_setup.cli.main`, from a test's own entry program),
never read from the environment.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_setup.base import remedies
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.configure import fsops, interrupts, ledger, outcome
from sandbox_setup.configure.actions import Action, WriteFile
from sandbox_setup.configure.git_protect import GIT_KINDS
from sandbox_setup.configure.journal import apply_lock
from sandbox_setup.configure.outcome import StepResult
from sandbox_setup.configure.plan import Plan
from sandbox_setup.configure.transaction import Transaction

# (the step, its status, what it does as described before it ran)
ProgressCallback = Callable[[Action, str, str], None]


@dataclass(frozen=True)
class ApplySeams:
    """Where a caller can step into an apply; ``None``: nowhere (every real apply).

    ``after_change(n)``: once the ``n``-th changing action is done (journaled, applied).
    ``before_rename(path)``: in the write of each file the plan writes, once its new
    bytes are whole in a temp file beside ``path``, before the rename puts them there.
    ``apparmor_parser``: a stand-in ``apparmor_parser`` that loads the AppArmor profile
    (:mod:`sandbox_setup.configure.apparmor`) where the apply would otherwise load
    nothing (under ``--root``); undo runs the one the journal recorded.
    """

    after_change: Callable[[int], None] | None = None
    before_rename: Callable[[Path], None] | None = None
    apparmor_parser: str | None = None


class ApplyError(SetupError):
    """A step failed while applying; everything done before it was rolled back,
    so nothing changed (exit 2, like bad input)."""


class ApplyInterrupted(SetupError):
    """SIGINT, SIGTERM or SIGHUP during an apply, after a complete rollback (one that
    could not finish is a :class:`RollbackIncompleteError`). Exit 130, one line."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, exc: KeyboardInterrupt, *, rolled_back: bool) -> None:
        name = exc.name if isinstance(exc, interrupts.Interrupted) else "SIGINT"
        done = (
            "rolled back what this apply had done; nothing changed"
            if rolled_back
            else "before any change; nothing changed"
        )
        super().__init__(f"interrupted by {name}: {done}")


class RollbackIncompleteError(SetupError):
    """A step failed and the rollback could not revert everything: the system is
    neither as before nor as planned. Exit 1 (there is something to act on); the
    journal keeps the apply open (``rollback-incomplete``) for ``--undo``."""

    exit_code = ExitCode.FINDINGS


def _incomplete(plan: Plan, exc: BaseException, undone: list[StepResult]) -> str:
    failed = [result.text for result in undone if result.failed]
    reverted = [result.text for result in undone if not result.failed]
    cause = str(exc) or type(exc).__name__
    full = errno.ENOSPC in {result.errno for result in undone} | {outcome.errno_of(exc)}
    when = "once space is free" if full else "once the cause above is fixed"
    return (
        f"{cause}; the rollback could not finish: these could not be restored:"
        + "".join(f"\n  {line}" for line in failed)
        + ("\n  (rolled back: " + "; ".join(reverted) + ")" if reverted else "")
        + f"\nthe journal records what is left; {when}, run: "
        + remedies.undo_last(str(plan.layout.root))
    )


@dataclass
class ApplyResult:
    """What an apply did: descriptions of changed and unchanged actions (each taken
    before its step ran), and the steps that changed something."""

    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    changed_steps: list[Action] = field(default_factory=list)
    transaction: str | None = None  # journal transaction id, None when nothing changed


def apply_plan(
    plan: Plan, *, progress: ProgressCallback | None = None, seams: ApplySeams | None = None
) -> ApplyResult:
    """Apply ``plan``; see the module docstring."""
    seams = seams or ApplySeams()

    def report(action: Action, status: str, description: str) -> None:
        if progress is not None:
            progress(action, status, description)

    result = ApplyResult()
    with interrupts.handled(), apply_lock(plan.layout):
        txn: Transaction | None = None
        try:
            # Read before any step: the shared host files with their before-images,
            # and the files already as planned. Journaled (and the shared ones recorded
            # host-wide) right after the begin line, ahead of every step, so a full disk
            # later never stands between the last step and the commit.
            ahead = _ahead(plan)
            for action in plan.actions:
                description = action.describe()
                report(action, "running", description)
                if not action.is_change():
                    result.unchanged.append(description)
                    report(action, "unchanged", description)
                    continue
                if txn is None:
                    with interrupts.deferred():  # its begin line and the txn we roll back
                        txn = Transaction(
                            plan.layout,
                            before_rename=seams.before_rename,
                            apparmor_parser=seams.apparmor_parser,
                        )
                    result.transaction = txn.id
                    with interrupts.shielded():
                        _record_ahead(plan, txn, ahead)
                try:
                    action.apply(txn)
                except BaseException as exc:
                    report(action, "failed", description)
                    if isinstance(exc, OSError):
                        raise ApplyError(f"{description} failed: {exc}") from exc
                    raise
                result.changed.append(description)
                result.changed_steps.append(action)
                report(action, "changed", description)
                if seams.after_change is not None:
                    seams.after_change(len(result.changed))
            if txn is not None:
                # Inside the try: an apply whose commit line cannot be written (a full
                # disk) is rolled back like any failed step, never left half-recorded.
                # A signal during the commit is dropped: the apply is done by then.
                with interrupts.shielded():
                    txn.commit()
        except BaseException as exc:
            if txn is not None:
                with interrupts.shielded():  # a second Ctrl-C must not cut the rollback
                    undone, complete = txn.rollback()
                if not complete:
                    raise RollbackIncompleteError(_incomplete(plan, exc, undone)) from exc
                if isinstance(exc, SetupError):
                    exc.args = (
                        f"{exc}; rolled back what this apply had done"
                        + "".join(f"\n  {result.text}" for result in undone),
                    )
            if isinstance(exc, KeyboardInterrupt):
                raise ApplyInterrupted(exc, rolled_back=txn is not None) from None
            raise
    return result


# The host files every setup plans alike (docs/design.md invariant 18): each apply that plans
# one relies on it in the host-wide record of setups, changed or already as planned.
SHARED_KINDS = GIT_KINDS


@dataclass(frozen=True)
class _Ahead:
    shared: list[ledger.Planned]  # the shared host files: before-image, sha256 planned
    seen: list[tuple[str, str | None]]  # files already as planned, with their sha256


def _ahead(plan: Plan) -> _Ahead:
    shared, seen = [], []
    for action in plan.actions:
        if not isinstance(action, WriteFile):
            continue
        state = action.state()
        if action.kind in SHARED_KINDS:
            planned = fsops.sha256(action.render(state.data if state else None))
            shared.append(ledger.Planned(str(action.path), state, planned))
        if not action.is_change():
            seen.append((str(action.path), fsops.sha256(state.data if state else None)))
    return _Ahead(shared, seen)


def _record_ahead(plan: Plan, txn: Transaction, ahead: _Ahead) -> None:
    for target, sha in ahead.seen:  # their before-images: drift later fixed is known
        txn.plan_seen(target, sha)
    if not ahead.shared:
        return
    try:
        ledger.rely(plan.layout, txn.id, ahead.shared)
    except OSError as exc:
        raise ApplyError(
            f"record the shared host files in {ledger.HOST_RECORD} failed: {exc}"
        ) from exc
