"""What the drift-then-fix-then-undo tests share (headless, test_undo_drift.py, and
through the TUI's Fix, test_undo_drift_tui.py): a target root, the apply, the undo of
all, the journal's lines, and the managed settings already as planned."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.core_fixtures import (
    CONFIG,
    MANAGED,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    run_cli,
)
from tests.tools import require_root, require_tool

LAUNCHER = f"{CONFIG}/launcher.toml"


@contextmanager
def drift_root(tmp_path: Path) -> Iterator[Path]:
    """A target root for a real apply; the host's account files unchanged after."""
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


def apply(root: Path) -> None:
    done = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert done.returncode == 0, done.stdout + done.stderr


def undo_all(root: Path, *extra: str) -> tuple[int, str, str]:
    proc = run_cli("--undo", "--all", "--root", str(root), *extra)
    return proc.returncode, proc.stdout, proc.stderr


def journal(root: Path) -> list[dict[str, object]]:
    lines = (root / STATE / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def writes(root: Path, target: str) -> list[dict[str, object]]:
    return [e for e in journal(root) if e["op"] == "write" and e["target"] == target]


def managed_settings_already_as_planned(root: Path) -> bytes:
    """Put the managed settings the plan writes in place before any apply (an apply
    and its undo show what they are, then they are written back as the operator's
    own file, same owner and mode); their bytes."""
    apply(root)
    planned = (root / MANAGED).read_bytes()
    st = (root / MANAGED).stat()
    assert undo_all(root, "--yes")[0] == 0
    (root / MANAGED).parent.mkdir(parents=True, exist_ok=True)
    (root / MANAGED).write_bytes(planned)
    os.chown(root / MANAGED, st.st_uid, st.st_gid)
    os.chmod(root / MANAGED, st.st_mode & 0o7777)
    return planned
