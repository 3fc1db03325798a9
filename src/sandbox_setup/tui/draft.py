"""The wizard's working state: what the operator has answered so far.

Screens prefill from a :class:`Draft` and return their part; the flow stores
it. Going back re-shows a screen with what was entered, so answers are kept.
The unsafe acceptance is the exception: it is never prefilled.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sandbox_setup.base.answer_fields import ANSWER_FIELDS, AnswerField
from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.limits import Limits
from sandbox_setup.checks.model import Report

if TYPE_CHECKING:
    # why: configure.answers (its rules, and tomlkit where it writes) not before the first
    # paint (bench/tui.py); the draft only holds its value
    from sandbox_setup.configure.answers import Answers
    from sandbox_setup.configure.apply import ApplyResult
    from sandbox_setup.configure.plan import Plan


class Nav(enum.Enum):
    """What a step returns instead of a value when the operator navigates."""

    BACK = "back"
    QUIT = "quit"


@dataclass(frozen=True)
class Outcome:
    """How the wizard ended: the exit code, and what to say on stderr afterwards."""

    code: int
    message: str | None = None
    quit: bool = False  # the operator quit (rather than finishing the steps)


@dataclass
class Draft:
    report: Report | None = None
    mode: Mode | None = None
    # The details step's answers (their mode: the one they were filled for; a
    # different mode resets the presets).
    details: Answers | None = None
    accepted_by: str | None = None
    accepted_at: str | None = None
    plan: Plan | None = None
    result: ApplyResult | None = None

    def accept_unsafe(self, who: str) -> None:
        self.accepted_by = who
        self.accepted_at = datetime.now(UTC).replace(microsecond=0).isoformat()

    def answers(self) -> Answers:
        """The :class:`Answers` the core plans from: the details step's, each answer kept
        only where its declaration says the mode holds it (``modes``, ``allowlist``,
        ``needs`` in :mod:`sandbox_setup.base.answer_fields`); every value explicit so
        the written answers.toml replays to the same files."""
        assert self.mode is not None and self.details is not None
        return wizard_answers(self.details, self.mode, self.accepted_by, self.accepted_at)


def wizard_answers(
    d: Answers,
    mode: Mode,
    accepted_by: str | None,
    accepted_at: str | None,
    fields: tuple[AnswerField, ...] = ANSWER_FIELDS,
) -> Answers:
    """``d`` for ``mode``: what the mode does not hold back at its default; the
    acceptance only as this run recorded it (never prefilled)."""
    unsafe = mode is Mode.UNSAFE
    # The lists: sandbox mode's allowlist, and user mode's (Landlock's network wall).
    allowlist = (mode is Mode.SANDBOX and d.network is Network.ALLOWLIST) or mode is Mode.USER
    default = {f.name: f.default for f in dataclasses.fields(d)}
    kept: dict[str, Any] = {}
    for f in fields:
        held = mode in f.modes and (allowlist or not f.allowlist)
        if f.needs is not None:
            held = held and bool(kept.get(f.needs, getattr(d, f.needs)))
        kept[f.key] = getattr(d, f.key) if held else default[f.key]
    # The acceptance is this run's; the default limits stay implicit, so an untouched
    # setup replays as it was.
    kept.update(
        accept_unsafe_root=unsafe and accepted_at is not None,
        accepted_by=accepted_by if unsafe else None,
        accepted_at=accepted_at if unsafe else None,
    )
    if kept["limits"] == Limits():
        kept["limits"] = None
    kept["mode"] = mode
    return dataclasses.replace(d, **kept)
