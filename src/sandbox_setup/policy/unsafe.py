"""Unsafe mode's rules: who accepted it, in what words, and when it counts.

The plan (headless) and the TUI record the acceptance with :func:`acceptance_label`,
so both say who it was, including the person behind sudo (a shared root account
alone does not say who); the launcher refuses a config whose recorded acceptance
is incomplete (:func:`acceptance_problem`).
"""

from __future__ import annotations

from collections.abc import Mapping

UNSAFE_STATEMENT = (
    "Claude Code runs as root with no OS sandbox; the agent can read and change "
    "everything on this machine."
)
ACCEPTANCE_KEYS = ("accepted_by", "accepted_at", "statement")


def acceptance_label(name: str, uid: int, environ: Mapping[str, str]) -> str:
    """``"root (uid 0, via sudo by alice)"``: the account and, when the tool runs
    through sudo, the person who ran it."""
    label = f"{name} (uid {uid}"
    sudo_user = environ.get("SUDO_USER")
    if sudo_user and sudo_user != name:
        label += f", via sudo by {sudo_user}"
    return label + ")"


def acceptance_problem(recorded: Mapping[str, str]) -> str | None:
    """The first of ``accepted_by``, ``accepted_at``, ``statement`` that is blank
    (an acceptance must say who, when and what), or None."""
    for key in ACCEPTANCE_KEYS:
        if not str(recorded.get(key, "")).strip():
            return key
    return None
