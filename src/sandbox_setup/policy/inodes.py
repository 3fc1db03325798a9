"""Which inodes a walk of ours may change the owner, mode or ACL of; and where the
agent's files outside the workspaces are looked for when its account goes.

The rule, for every walk that changes ownership or permissions (the apply's
workspace ACLs, their removal, the undo's give-back of the agent's files): **never
change a non-directory with more than one hard link.** Its inode has another name,
perhaps outside the workspace (the agent can link any file it can see into a
directory it writes, ``fs.protected_hardlinks`` permitting, and anything of its own
from anywhere): a chown there would hand root's or the workspace owner's identity to
the agent's executable in ``/tmp``, an ACL would open the operator's file elsewhere.
A directory cannot have another name. What is left alone is counted and said.

:data:`AGENT_TEMP_DIRS` are the world-writable directories every account can write
outside the workspaces: files the agent left there keep its uid after its account is
removed, so the next account that gets that uid inherits them. The undo lists them
(never chowns them: they are not in a tree the operator gave the agent).
"""

from __future__ import annotations

import os
import stat
from pathlib import PurePosixPath

__all__ = ["AGENT_TEMP_DIRS", "may_change_inode"]

AGENT_TEMP_DIRS = (PurePosixPath("/tmp"), PurePosixPath("/var/tmp"), PurePosixPath("/dev/shm"))


def may_change_inode(st: os.stat_result) -> bool:
    """May a walk chown, chmod or set an ACL on the inode ``st`` (its ``lstat``)?
    Not when it is a non-directory with more than one hard link."""
    return stat.S_ISDIR(st.st_mode) or st.st_nlink <= 1
