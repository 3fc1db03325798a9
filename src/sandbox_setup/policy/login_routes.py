"""No way in but the launcher: the agent account starts no process outside a session
(docs/design.md invariant 14; such a process would outlive the end-of-session scan
of invariant 8).

A session's processes live in the launcher's pid namespace and cgroup, and end with
it; the end-of-session scan then judges what they left. A process the agent starts
any other way outlives that scan and can plant ``core.fsmonitor`` after it. The
routes a locked account (no password) still has on a Debian host:

- **sshd** with ``UsePAM yes`` (Debian's default) lets a locked account log in with a
  key it put in its own ``~/.ssh/authorized_keys``. A drop-in the apply owns,
  ``/etc/ssh/sshd_config.d/00-sandbox-setup-AGENT.conf``, says ``DenyUsers AGENT``;
  ``DenyUsers`` lines add up across files and a deny always wins over an allow, so no
  other file can undo it. sshd reads the drop-in directory only where its main config
  includes it (Debian 12's does, first thing); the plan checks and says so otherwise.
  A running sshd reads it at its next start or reload.
- **a login shell**: an agent account with one (made by a version of this setup from
  before agents got ``nologin``) can be entered by ``su`` or a console login. An
  agent this setup created gets ``/usr/sbin/nologin`` on the next apply (journaled:
  undo puts the old shell back); an account it did not create is its owner's, and
  only the audit names it (:func:`has_login_shell` decides for both).
- **cron** and **at**: their client programs refuse a user named in
  ``/etc/cron.deny`` / ``/etc/at.deny`` (when no ``.allow`` file exists; with one,
  only the users it lists may use them). The apply adds the agent's name as a line,
  every other byte kept; undo restores the file byte for byte (or removes it).

- **lingering** (systemd-logind): a user with a file in ``/var/lib/systemd/linger``
  gets a user service manager at boot that runs its ``systemd --user`` units outside
  any session (what ``claude daemon install`` makes, and ``loginctl enable-linger``
  turns on). Only root enables it for another user; the apply never does, and the
  audit reports it (:data:`LINGER_DIR`). Without it, a user service manager the agent
  cannot start: the launcher's session opens no logind session.

What is judged here is pure text; the plan writes (:mod:`sandbox_setup.configure.
login_routes`) and the audit judges (:mod:`sandbox_setup.audit.login_routes`) with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from sandbox_setup.policy.accounts import has_login_shell as has_login_shell

SSHD_CONFIG = PurePosixPath("/etc/ssh/sshd_config")
# systemd-logind's lingering users: a file named after the user (``loginctl enable-linger``).
LINGER_DIR = PurePosixPath("/var/lib/systemd/linger")
SSHD_DROPIN_DIR = PurePosixPath("/etc/ssh/sshd_config.d")


@dataclass(frozen=True, slots=True)
class DenyList:
    """A scheduler's allow/deny pair and the client program that reads it."""

    name: str  # "cron", "at"
    deny: PurePosixPath
    allow: PurePosixPath
    client: PurePosixPath  # installed means the scheduler is usable


CRON = DenyList(
    "cron",
    PurePosixPath("/etc/cron.deny"),
    PurePosixPath("/etc/cron.allow"),
    PurePosixPath("/usr/bin/crontab"),
)
AT = DenyList(
    "at",
    PurePosixPath("/etc/at.deny"),
    PurePosixPath("/etc/at.allow"),
    PurePosixPath("/usr/bin/at"),
)
SCHEDULERS = (CRON, AT)

_DROPIN_TEXT = """\
# sandbox-setup: the agent account {agent} starts no process outside a session
# (a login would outlive the session and its end-of-session scan). Do not edit:
# `sandbox-setup --audit` reports a change and `sandbox-setup --undo` removes it.
DenyUsers {agent}
"""

_INCLUDE = re.compile(r"^\s*include\s+(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def sshd_dropin(agent: str) -> PurePosixPath:
    """The drop-in of ``agent``'s denial. ``00-`` so it comes before any drop-in that
    could open a ``Match`` block (a ``DenyUsers`` inside one would be an error)."""
    return SSHD_DROPIN_DIR / f"00-sandbox-setup-{agent}.conf"


def render_sshd_dropin(agent: str) -> bytes:
    return _DROPIN_TEXT.format(agent=agent).encode("utf-8")


def sshd_reads_dropins(config_text: str) -> bool:
    """Whether the main sshd config includes ``sshd_config.d/*.conf`` (a relative
    ``Include`` is relative to ``/etc/ssh``)."""
    for match in _INCLUDE.finditer(config_text):
        for word in match.group(1).split():
            path = word.strip("\"'")
            if not path.startswith("/"):
                path = f"/etc/ssh/{path}"
            if path in (f"{SSHD_DROPIN_DIR}/*.conf", f"{SSHD_DROPIN_DIR}/*"):
                return True
    return False


def listed(text: str, name: str) -> bool:
    """Whether ``name`` is a line of an allow/deny file (whitespace around it ignored)."""
    return any(line.strip() == name for line in text.splitlines())


def with_name(text: str, name: str) -> str:
    """``text`` with ``name`` as a line of its own, every other byte kept."""
    if listed(text, name):
        return text
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{text}{name}\n"
