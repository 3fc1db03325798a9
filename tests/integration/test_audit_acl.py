"""The audit's write-access rule on a workspace with a real POSIX ACL (set by setfacl)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sandbox_setup.audit.safety import agent_can_write
from sandbox_setup.base.pathfacts import path_facts
from tests.tools import require_root, require_tool


def test_workspace_access_through_an_acl_and_its_mask(tmp_path: Path) -> None:
    require_root()
    setfacl = require_tool("setfacl")
    ws = tmp_path / "srv/p"
    ws.mkdir(parents=True)
    os.chown(ws, 0, 4002)
    ws.chmod(0o2750)
    assert not agent_can_write(path_facts(ws), ws, 4001, {4001})
    subprocess.run([setfacl, "-m", "u:4001:rwx", str(ws)], check=True)
    assert agent_can_write(path_facts(ws), ws, 4001, {4001})
    subprocess.run([setfacl, "-m", "m::r-x", str(ws)], check=True)  # the mask limits it
    assert not agent_can_write(path_facts(ws), ws, 4001, {4001})
