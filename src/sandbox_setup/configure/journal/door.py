"""The journal room's front door: undo the last apply, undo them all, or preview either.

:func:`survey` reads what an undo would act on, once: the applies still in effect,
newest first, what this setup last left each file as (``--undo --all``), the agent's
owners and workspaces, the state directory's contents. The preview (:func:`preview`)
and the run (:func:`undo`) both take that survey, so a dry run says what the run then
does; each file is decided by the run's own code (:func:`~sandbox_setup.configure.
revert.write_decision`, the host record's ``release_plan``). The command
(:mod:`sandbox_setup.commands.undo`) only asks, prints and maps the typed report to an
exit code; nothing here prints.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import history
from sandbox_setup.configure.journal import apply_lock, last_left
from sandbox_setup.configure.journal.entries import Entry
from sandbox_setup.configure.outcome import StepResult, any_failed
from sandbox_setup.configure.revert import preview as preview_steps
from sandbox_setup.configure.undo import undo_last

Apply = tuple[str, list[Entry]]


@dataclass(frozen=True)
class Survey:
    """What an undo (``everything``: ``--undo --all``) would act on, read once."""

    everything: bool
    applies: list[Apply]
    last: Mapping[str, str | None] | None
    owners: history.Owners
    workspaces: list[PurePosixPath]
    files: int
    backups: int

    @property
    def chosen(self) -> list[Apply]:
        """The applies this undo takes back: the newest, or all."""
        return self.applies if self.everything else self.applies[:1]


def survey(layout: Layout, *, everything: bool) -> Survey:
    applies = history.open_applies(layout)
    chosen = applies if everything else applies[:1]
    # Per file, what this setup last left it as: with --all each file goes back to its
    # state before the first apply that planned it while it is still so.
    last = last_left(layout) if everything else None
    files, backups = history.state_dir_contents(layout)
    return Survey(
        everything=everything,
        applies=applies,
        last=last,
        owners=history.agent_owners(layout, history.steps(chosen)),
        workspaces=history.journal_workspaces(layout),
        files=files,
        backups=backups,
    )


@dataclass(frozen=True)
class Preview:
    """What the undo would do: per apply, its lines; the agent's files it would give
    back; for ``--all``, what the sessions keep in the state directory."""

    applies: list[tuple[str, list[str]]]
    owned: list[str]
    kept: list[str]


def preview(layout: Layout, found: Survey) -> Preview:
    applies = [
        (txn, preview_steps(layout, txn, entries, found.last)) for txn, entries in found.chosen
    ]
    files = history.agent_files(layout, found.workspaces, found.owners)
    owned = history.describe_owned(files, found.owners) if files else []
    kept = history.kept_in_state_dir(layout) if found.everything else []
    return Preview(applies=applies, owned=owned, kept=kept)


class StateDir(enum.Enum):
    """What became of the state directory after ``--undo --all``."""

    NOT_REACHED = "not-reached"  # a single undo, or --all that has not run
    FAILED = "failed"  # kept: its journal keeps the steps that failed
    LEFT = "left"  # kept: its backups hold files left as they are
    EMPTIED = "emptied"  # every apply undone: the history can go (remove_history)


@dataclass
class Report:
    """What an undo did: each step's typed result, how many applies remain, and (for
    ``--all``) what may become of the state directory."""

    results: list[StepResult] = field(default_factory=list)
    undid: int = 0
    remaining: int = 0
    state: StateDir = StateDir.NOT_REACHED

    @property
    def failed(self) -> bool:
        return any_failed(self.results)

    @property
    def left(self) -> bool:
        return any(result.left for result in self.results)


def undo(layout: Layout, found: Survey) -> Report:
    """Take back the surveyed applies, newest first (each under the apply lock), then
    give the agent's files in the workspaces to their owners. A step that failed stops
    it: the journal keeps it for the next undo."""
    report = Report()
    for _ in range(max(1, len(found.chosen))):
        results = undo_last(layout, last=found.last)
        report.results += results
        if results:
            report.undid += 1
        if not results or any_failed(results):
            break
    if (report.undid or found.everything) and not report.failed:
        report.results += history.give_back(layout, found.workspaces, found.owners)
    report.remaining = len(history.open_applies(layout))
    if found.everything:
        if report.failed:
            report.state = StateDir.FAILED
        elif report.left or report.remaining:
            report.state = StateDir.LEFT
        else:
            report.state = StateDir.EMPTIED
    return report


def remove_history(layout: Layout) -> tuple[list[str], list[str]]:
    """After every apply is undone: remove the journal, the backups and the state
    directory (:func:`~sandbox_setup.configure.history.remove_state_dir`, under the
    apply lock so no apply starts while it goes)."""
    with apply_lock(layout):
        return history.remove_state_dir(layout)
