"""A session keyring of the agent's own (docs/design.md invariant 10).

Keys live in keyrings the kernel attaches to a process; a process *possesses* its
session keyring and every key linked in it, and possession grants what the key's
possessor permissions say (``keyctl add user NAME DATA @s`` makes a key only its
possessors may read). A child inherits the session keyring across fork and exec,
uid changes included, so an agent started from root's shell would possess root's
session keyring and could read every key in it.

The launcher therefore joins a new, empty, anonymous session keyring itself
(``KEYCTL_JOIN_SESSION_KEYRING`` with no name) right before it starts the session,
and hands it to the agent's uid: the agent possesses only that one, and the
operator's keys (possessor-only permissions) are out of its reach. The operator's
shell keeps its own keyring; only the launcher process changes.

Where the ``keyctl`` system call is refused outright (a seccomp filter, as
Docker's default profile does), the agent cannot reach any keyring either, so the
launch goes on and says so. Any other failure refuses the launch.
"""

from __future__ import annotations

import ctypes
import errno
import os
from dataclasses import dataclass

from sandbox_setup.base.errors import RefusedError

# keyctl(2) numbers: linux/arch/*/entry/syscalls (x86_64, i386, the generic table).
SYS_KEYCTL = {"x86_64": 250, "i686": 288, "i386": 288, "aarch64": 219, "riscv64": 219}
KEYCTL_GET_KEYRING_ID = 0
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_CHOWN = 4
KEY_SPEC_SESSION_KEYRING = -3


@dataclass(frozen=True, slots=True)
class SessionKeyring:
    """The keyring the session starts with (None: keyrings are unreachable here)."""

    serial: int | None
    note: str


def _keyctl(number: int, operation: int, *args: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    padded = [ctypes.c_long(a) for a in args] + [ctypes.c_long(0)] * (4 - len(args))
    result = int(libc.syscall(ctypes.c_long(number), ctypes.c_long(operation), *padded))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def join_new_session_keyring(uid: int, gid: int, *, switch_user: bool) -> SessionKeyring:
    """Give this process (and so the session it starts) a new, empty session
    keyring, owned by ``uid``:``gid`` when ``switch_user``; see the module doc."""
    machine = os.uname().machine  # what platform.machine() says, without importing platform
    number = SYS_KEYCTL.get(machine)
    if number is None:
        raise RefusedError(
            f"cannot give the agent a session keyring of its own on {machine} "
            "(unknown keyctl system call number); the operator's keys would be readable"
        )
    try:
        serial = _keyctl(number, KEYCTL_JOIN_SESSION_KEYRING, 0)
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EPERM):
            return SessionKeyring(
                None,
                f"keyrings are not reachable here (keyctl: {exc.strerror}): neither the "
                "operator's nor any other keyring is visible to the session",
            )
        raise RefusedError(
            f"cannot give the agent a session keyring of its own: {exc.strerror}; the "
            "operator's session keyring would be readable from the session"
        ) from None
    if switch_user:
        try:
            _keyctl(number, KEYCTL_CHOWN, KEY_SPEC_SESSION_KEYRING, uid, gid)
        except OSError as exc:
            # Still a fresh, empty keyring the agent possesses; only the owner differs.
            return SessionKeyring(serial, f"new session keyring {serial} (chown: {exc.strerror})")
    return SessionKeyring(serial, f"a new, empty session keyring ({serial}) of the session's own")
