"""Whether root's thread could not join a sandbox's network namespace (then the step is
retried as the agent) is decided by the answer's typed step and errno, never by the
words of its error (sandbox_setup.launcher.egress.netns)."""

from __future__ import annotations

import errno
import os

import pytest

from sandbox_setup.launcher.egress.netns import JOIN_STEP, _by_this_thread, _join_refused

EPERM_WORDS = f"setns(the sandbox's network namespace): {os.strerror(errno.EPERM)}"


def test_the_step_and_errno_decide() -> None:
    assert _join_refused({"error": "x", "step": JOIN_STEP, "errno": errno.EPERM})
    assert not _join_refused({"error": "x", "step": JOIN_STEP, "errno": errno.EINVAL})
    assert not _join_refused({"error": "x", "step": "make", "errno": errno.EPERM})
    assert not _join_refused([["proxy", 4, 3128]])  # the sockets' description: it worked


def test_words_that_read_like_a_refused_join_change_nothing() -> None:
    # What the old test matched: setns( and EPERM's message in the text.
    assert not _join_refused({"error": EPERM_WORDS})
    assert not _join_refused({"error": EPERM_WORDS, "step": "make", "errno": errno.EADDRINUSE})


@pytest.mark.skipif(os.geteuid() != 0, reason="the thread's setns is root's path")
def test_a_failed_join_answers_with_its_step_and_errno() -> None:
    # Not a namespace at all: setns fails at the join step, with EINVAL (not EPERM).
    with open("/dev/null", "rb") as null:
        before = os.stat("/proc/thread-self/ns/net")
        answer, fds = _by_this_thread(null.fileno(), 3128, (), 0)
    assert fds == []
    assert isinstance(answer, dict)
    assert answer["step"] == JOIN_STEP and answer["errno"] == errno.EINVAL
    assert not _join_refused(answer)
    after = os.stat("/proc/thread-self/ns/net")  # the launcher's thread is back where it was
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
