"""identity.root: who runs this tool, and who the live probes run as."""

from __future__ import annotations

import os

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER
from sandbox_setup.base.message import Recheck, message
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.model import Status


def judge_identity(
    euid: int, uid: int, sudo_user: str | None, as_user: str | None, probe_uid: int
) -> Verdict:
    """Pure: informational; it passes, and says what the other checks apply to."""
    who = "root (uid 0)" if euid == 0 else f"uid {euid}, not root"
    via = f", through sudo from {sudo_user}" if sudo_user and euid == 0 else ""
    summary = f"running as {who}{via}"
    if as_user:
        summary += f"; live probes run as {as_user} (uid {probe_uid})"
    detail = f"uid={uid} euid={euid} SUDO_USER={sudo_user or '-'}"
    if euid == 0 and not as_user:
        detail = message(
            detail,
            "\nLive probes run as root here; the agent user may get other results: ",
            Recheck("the agent once it exists", DEFAULT_AGENT_USER),
        )
    return Verdict(Status.PASS, summary, detail)


def check_identity(ctx: Context) -> Verdict:
    return judge_identity(
        os.geteuid(),
        os.getuid(),
        os.environ.get("SUDO_USER"),
        ctx.account.name if ctx.account else None,
        ctx.uid,
    )
