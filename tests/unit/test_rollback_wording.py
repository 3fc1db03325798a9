"""An incomplete rollback's advice is chosen by the errno, never by the message's words."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sandbox_setup.configure import outcome
from sandbox_setup.configure.apply import ApplyError, _incomplete

PLAN: Any = SimpleNamespace(layout=SimpleNamespace(root=Path("/")))


def full_disk() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


def test_a_step_that_failed_on_a_full_disk_says_once_space_is_free() -> None:
    try:
        raise full_disk()
    except OSError as exc:
        # Worded without the C library's words: only the errno says the disk is full.
        step = outcome.failed("could not undo the write of /etc/x: disque plein", exc)
    text = _incomplete(PLAN, RuntimeError("boom"), [step])
    assert step.errno == errno.ENOSPC
    assert "once space is free" in text, text


def test_the_words_no_space_left_without_the_errno_do_not_decide() -> None:
    try:
        raise PermissionError(errno.EACCES, "No space left on device (a misleading name)")
    except OSError as exc:
        step = outcome.failed(f"could not undo the write of /etc/x: {exc}", exc)
    text = _incomplete(PLAN, RuntimeError("No space left, says a file name"), [step])
    assert "once the cause above is fixed" in text, text
    assert "once space is free" not in text


def test_the_cause_of_the_apply_is_read_through_its_wrapper() -> None:
    try:
        try:
            raise full_disk()
        except OSError as inner:
            raise ApplyError("writing /etc/x failed") from inner
    except ApplyError as exc:
        text = _incomplete(PLAN, exc, [outcome.failed("could not undo the write of /etc/y")])
    assert "once space is free" in text, text


def test_errno_of_walks_a_bounded_chain() -> None:
    assert outcome.errno_of(None) is None
    assert outcome.errno_of(ValueError("x")) is None
    assert outcome.errno_of(full_disk()) == errno.ENOSPC
