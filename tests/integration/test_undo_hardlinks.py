"""``--undo --all`` and inodes with other hard links (docs/design.md invariant 11,
policy.inodes), through the real CLI under a temp root (``useradd --prefix``):

- the agent's executable in the root's ``/tmp``, hard-linked into the workspace, is
  never handed to the workspace's owner (a chown of the workspace name would make
  the ``/tmp`` one ``root:root``): it keeps the agent's uid, and the undo says how
  many it left and that the agent still owns files outside the workspaces;
- a workspace file of root's that the agent hard-linked elsewhere after the apply
  keeps its ACL (the undo never changes a multi-link inode) and the undo says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import SANDBOX, host_passwd_digest, make_target_root, passwd_entry, run_cli
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    before = host_passwd_digest()
    made = make_target_root(tmp_path / "root")
    for temp in ("tmp", "var/tmp"):
        (made / temp).mkdir(parents=True, exist_ok=True)
        (made / temp).chmod(0o1777)
    yield made
    assert host_passwd_digest() == before


def cli(root: Path, *args: str) -> str:
    proc = run_cli(*args, "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_undo_all_never_changes_an_inode_with_other_hard_links(root: Path) -> None:
    shared = root / "srv/project/shared.txt"
    shared.write_text("root's\n")
    cli(root, "--headless", "--yes", *SANDBOX)
    agent = passwd_entry(root, "claude-agent")
    assert agent is not None
    uid, gid = int(agent[2]), int(agent[3])
    acl_before = os.getxattr(shared, "system.posix_acl_access")
    # What the agent did: a tool in /tmp, linked into the workspace; a scratch file
    # in /var/tmp; a link in /tmp to root's workspace file; a file of its own.
    tool = root / "tmp/agent-tool"
    tool.write_text("#!/bin/sh\necho agent\n")
    os.chown(tool, uid, gid)
    tool.chmod(0o755)
    os.link(tool, root / "srv/project/tool")
    scratch = root / "var/tmp/scratch"
    scratch.write_text("x\n")
    os.chown(scratch, uid, gid)
    os.link(shared, root / "tmp/shared-link")
    own = root / "srv/project/own.txt"
    own.write_text("agent's\n")
    os.chown(own, uid, gid)

    preview = cli(root, "--undo", "--all", "--dry-run")
    assert "give /srv/project/own.txt (agent's) to the owner of /srv/project" in preview
    assert "/srv/project/tool (agent's)" not in preview
    assert "keep the owner of 1 file(s) with other hard links" in preview

    out = cli(root, "--undo", "--all", "--yes")
    assert "gave 1 file(s) the agent owned in /srv/project to its owner" in out
    assert "kept the owner of 1 file(s) with other hard links" in out
    assert "e.g. /srv/project/tool" in out
    st = tool.lstat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (uid, gid, 0o755), "the /tmp tool changed"
    assert (own.lstat().st_uid, own.lstat().st_gid) == (0, 0)
    # Said, never chowned: what the agent still owns outside the workspaces.
    assert "the agent still owns 2 file(s) outside the workspaces" in out
    assert "/tmp/agent-tool" in out and "/var/tmp/scratch" in out
    assert scratch.lstat().st_uid == uid
    # Root's file with a second name: its ACL is left as the walk found it, and said
    # (with the agent's tool: two inodes the ACL walk left alone).
    assert "not changed (more than one hard link): 2 files, e.g. /srv/project/shared.txt" in out
    assert os.getxattr(shared, "system.posix_acl_access") == acl_before
