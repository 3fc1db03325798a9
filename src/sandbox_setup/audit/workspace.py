"""The workspace boundary as the audit sees it (docs/design.md invariant 8).

- ``audit.workspace.private_opened``: a file closed to its own group and to others
  (as a 0600 ``.env`` is) that the agent's workspace group can read through an ACL.
  The ACL walk leaves such files alone unless the operator included them
  (``--include-private``): then it is reported as accepted, otherwise it is a
  finding.

Walks by file descriptor (:func:`sandbox_setup.configure.accounts.users.walk_workspace`): no
symlink followed, nothing but directories and regular files looked at.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from pathlib import PurePosixPath

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import pasted_word
from sandbox_setup.configure.accounts import users

_ACCESS = "system.posix_acl_access"
_GROUP_OBJ, _GROUP, _OTHER = 0x04, 0x08, 0x20
_READ = 0o4
EXAMPLES = 3


def _entries(fd: int) -> list[tuple[int, int, int]]:
    try:
        raw = os.getxattr(f"/proc/self/fd/{fd}", _ACCESS)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.EOPNOTSUPP):
            return []
        raise
    return [struct.unpack_from("<HHI", raw, off) for off in range(4, len(raw) - 7, 8)]


def opened_private(entries: list[tuple[int, int, int]], gid: int) -> bool:
    """Pure: the owning group and others may not read, the workspace group may."""
    perms = {(tag, ident if tag == _GROUP else 0): perm for tag, perm, ident in entries}
    group_reads = perms.get((_GROUP, gid), 0) & _READ
    closed = not perms.get((_GROUP_OBJ, 0), 0) & _READ and not perms.get((_OTHER, 0), 0) & _READ
    return bool(group_reads) and closed


def private_findings(
    layout: Layout, workspaces: tuple[PurePosixPath, ...], gid: int, included: bool
) -> list[AuditFinding]:
    """``audit.workspace.private_opened`` per workspace (see the module docstring)."""
    found = []
    for workspace in workspaces:
        real = layout.real(workspace)
        try:
            top = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # a missing workspace is audit.safety.workspace_missing
        opened: list[str] = []
        try:
            for _rel_dir, items in users.walk_workspace(top):
                for rel, fd, st in items:
                    if stat.S_ISREG(st.st_mode) and opened_private(_entries(fd), gid):
                        opened.append(rel)
        finally:
            os.close(top)
        if not opened:
            continue
        examples = ", ".join(str(real / rel) for rel in sorted(opened)[:EXAMPLES])
        noun = "file" if len(opened) == 1 else "files"
        found.append(
            AuditFinding(
                id="audit.workspace.private_opened",
                severity=Severity.INFO if included else Severity.HIGH,
                summary=f"{len(opened)} {noun} private to their owner in {real} can be read "
                f"by the agent's workspace group, e.g. {examples}",
                detail="They were included explicitly (include_private)."
                if included
                else "A file closed to its own group and to others (like a 0600 .env) was "
                "opened to the agent by an ACL; the setup leaves such files alone.",
                remedy=""
                if included
                else f"setfacl -x g:{gid} "
                + " ".join(pasted_word(str(real / rel)) for rel in sorted(opened)),
                accepted=included,
            )
        )
    return found
