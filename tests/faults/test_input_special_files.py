"""A FIFO or a directory where sandbox-setup reads an input file: ``--answers``,
the saved answers and launcher config (read by an apply and by the audit), the
Claude settings (both scopes), and under ``--root`` the tree's own account files.

Nobody ever opens the FIFO's other end, so a plain ``open()`` would block for
ever: each run must end (within the timeout) with exit 2 naming the path, no
traceback, and nothing written.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CONFIG,
    MANAGED,
    SANDBOX,
    host_passwd_digest,
    make_target_root,
    run_cli,
)
from tests.faults.conftest import FaultRow
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

APPLY = ("--headless", "--yes", *SANDBOX)
UNSAFE = ("--headless", "--yes", "--mode", "unsafe", "--accept-unsafe-root")
# (where, the path under the root, the command, whether a setup must exist first)
CASES = {
    "--answers FILE": ("answers-in.toml", ("--headless", "--yes", "--answers", "{path}"), False),
    "saved answers.toml (apply)": (f"{CONFIG}/answers.toml", APPLY, False),
    "launcher.toml (apply)": (f"{CONFIG}/launcher.toml", APPLY, False),
    "managed settings (apply)": (MANAGED, APPLY, False),
    "user settings (apply, unsafe mode)": ("root/.claude/settings.json", UNSAFE, False),
    "launcher.toml (audit)": (f"{CONFIG}/launcher.toml", ("--audit",), True),
    "saved answers.toml (audit)": (f"{CONFIG}/answers.toml", ("--audit",), True),
    "etc/passwd of the --root tree (apply)": ("etc/passwd", APPLY, False),
    "etc/group of the --root tree (apply)": ("etc/group", APPLY, False),
}


def tree(root: Path) -> dict[str, object]:
    """Every entry under ``root``: content of regular files, type, mode and owner
    (never opening anything but a regular file: a FIFO here would block a reader)."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            content = path.read_bytes() if stat.S_ISREG(st.st_mode) else None
            found[str(path.relative_to(root))] = (content, st.st_mode, st.st_uid, st.st_gid)
    return found


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fifo_or_directory_at_an_input_path(
    root: Path, case: str, kind: str, fault: FaultRow
) -> None:
    rel, command, needs_setup = CASES[case]
    fault.expect(
        f"a {kind} at {case}",
        "exit 2 naming the path, within the timeout (never blocks on the FIFO); no "
        "traceback; nothing written",
    )
    if needs_setup:
        assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.mkdir()
    before = tree(root)
    argv = [part.replace("{path}", str(path)) for part in command]
    try:
        proc = run_cli(*argv, "--root", str(root), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sandbox-setup {' '.join(argv)} blocked on the {kind} at {path}")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    named = str(path) in proc.stderr or "/" + rel in proc.stderr
    assert named, f"the message does not name {path}: {proc.stderr}"
    assert tree(root) == before, "a refused run wrote something"
    line = next(x for x in proc.stderr.splitlines() if x.startswith("sandbox-setup:"))
    fault.saw(f"exit 2: {line.replace(str(root), '<root>')[14:150]}")
