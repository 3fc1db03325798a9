"""No behaviour depends on message text (docs/design.md invariant 6: a failed undo step is
never marked done, whatever its line says).

Each fault scenario of the undo and rollback runs twice on fresh roots: with the real
``sandbox-setup`` and with every undo and rollback line reworded
(tests/seams/reworded_setup.py: each line starts with "cannot", and its own "could
not", "cannot", "failed" and "left" are other words, so done reads as failed and failed
as done). The exit codes, the journal's operations (with their steps, what they left
and fixes) and the tree after each scenario are the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CONFIG,
    MANAGED,
    REPO,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    run_cli,
    system_state,
)
from tests.faults.conftest import FaultRow
from tests.seams import HERE
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

REWORDED = HERE / "reworded_setup.py"
MARK = "cannot (reworded)"

Run = Callable[..., "subprocess.CompletedProcess[str]"]


def run_reworded(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REWORDED), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def roots(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    yield make_target_root(tmp_path / "a" / "root"), make_target_root(tmp_path / "b" / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


def _apply(run: Run, root: Path, *args: str) -> int:
    return run("--headless", "--root", str(root), "--yes", *(args or SANDBOX)).returncode


def clean_undo(run: Run, root: Path) -> list[int]:
    return [_apply(run, root), run("--undo", "--yes", "--root", str(root)).returncode]


def edited_file(run: Run, root: Path) -> list[int]:
    """A file edited after the apply: the undo leaves it (exit 1), undoes the rest."""
    codes = [_apply(run, root, "--mode", "user")]
    (root / MANAGED).write_text('{"edited": "by hand after the apply"}\n')
    return [*codes, run("--undo", "--yes", "--root", str(root)).returncode]


def tampered_backup(run: Run, root: Path) -> list[int]:
    """A bad backup: the step fails and stays open; put right, the next undo ends it."""
    (root / MANAGED).parent.mkdir(parents=True, exist_ok=True)
    (root / MANAGED).write_text('{"model": "opus"}\n')
    codes = [_apply(run, root)]
    (backup,) = (root / STATE / "backups").rglob("*managed-settings.json")
    original = backup.read_bytes()
    backup.write_text('{"permissions": {"allow": ["Bash(*)"]}}')
    codes.append(run("--undo", "--yes", "--root", str(root)).returncode)
    backup.write_bytes(original)
    codes.append(run("--undo", "--yes", "--root", str(root)).returncode)
    return codes


def failed_step_rollback(run: Run, root: Path) -> list[int]:
    """An immutable config directory: the apply fails late and rolls back."""
    require_tool("chattr")
    config = root / CONFIG
    config.mkdir(parents=True)
    subprocess.run(["chattr", "+i", str(config)], check=True)
    try:
        codes = [_apply(run, root)]
    finally:
        subprocess.run(["chattr", "-i", str(config)], check=True)
    return [*codes, run("--undo", "--yes", "--root", str(root)).returncode]


def fixed_drift_undo_all(run: Run, root: Path) -> list[int]:
    """Managed settings drift fixed by a re-apply; ``--undo --all`` keeps the fix."""
    codes = [_apply(run, root)]
    settings = json.loads((root / MANAGED).read_text())
    settings["sandbox"]["allowUnsandboxedCommands"] = True
    (root / MANAGED).write_text(json.dumps(settings))
    codes.append(_apply(run, root))
    codes.append(run("--undo", "--all", "--dry-run", "--root", str(root)).returncode)
    codes.append(run("--undo", "--all", "--yes", "--root", str(root)).returncode)
    return codes


def changed_then_undo_all(run: Run, root: Path) -> list[int]:
    """A file changed after two applies: ``--undo --all`` leaves it, finishes the rest."""
    codes = [_apply(run, root), _apply(run, root, "--allow-loopback-port", "10100")]
    launcher = root / CONFIG / "launcher.toml"
    launcher.write_text(launcher.read_text() + "\n# edited by hand\n")
    codes.append(run("--undo", "--all", "--yes", "--root", str(root)).returncode)
    return codes


SCENARIOS = {
    f.__name__: f
    for f in (
        clean_undo,
        edited_file,
        tampered_backup,
        failed_step_rollback,
        fixed_drift_undo_all,
        changed_then_undo_all,
    )
}


def journal_ops(root: Path) -> list[tuple[object, ...]]:
    """The journal as behaviour: each line's operation, step, how much it left, fix."""
    path = root / STATE / "journal.jsonl"
    if not path.exists():
        return []
    return [
        (e["op"], e.get("step"), len(e.get("left", [])), e.get("fix"), e.get("seq"))
        for e in map(json.loads, path.read_text().splitlines())
    ]


HOST_RECORD = "etc/sandbox-setup/setups.json"


def host_record(root: Path) -> object:
    """The host record as behaviour: which setups, and which files an undo left and
    why (its transaction ids and hashes differ from one root to the other)."""
    path = root / HOST_RECORD
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    left = sorted((p, e["why"], e["backup"] is not None) for p, e in doc.get("left", {}).items())
    return sorted(doc.get("setups", {})), left


def observe(root: Path) -> tuple[object, ...]:
    state = {
        path: value
        for path, value in system_state(root).items()
        # the ACL names its root and the host record its transactions: both compared
        # below without them
        if path not in ("<acl srv>", HOST_RECORD)
    }
    acl = system_state(root).get("<acl srv>")
    acl_text = str(acl[0]).replace(str(root), "ROOT") if acl else None
    return (
        state,
        acl_text,
        journal_ops(root),
        sorted(os.listdir(root / "root")),
        HOST_RECORD in system_state(root),
        host_record(root),
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_reworded_messages_change_no_undo_or_rollback_result(
    roots: tuple[Path, Path], name: str, fault: FaultRow
) -> None:
    fault.expect(
        f"{name}, with every undo and rollback line reworded (done reads as failed, "
        "failed as done)",
        "the same exit codes, journal operations and tree as with the real wording",
    )
    plain, reworded = roots
    outputs: list[str] = []

    def spy(*args: str) -> subprocess.CompletedProcess[str]:
        proc = run_reworded(*args)
        outputs.append(proc.stdout + proc.stderr)
        return proc

    codes = SCENARIOS[name](run_cli, plain)
    again = SCENARIOS[name](spy, reworded)
    assert again == codes, "\n".join(outputs)
    assert observe(reworded) == observe(plain), "\n".join(outputs)
    assert any(MARK in said for said in outputs), "nothing was reworded"
    fault.saw(f"exit codes {codes} both ways; the same journal operations and tree")
