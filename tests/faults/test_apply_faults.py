"""Faults during an apply: SIGKILL at every step and inside a single write, disk
full, a read-only target, two applies at once, and a settings file swapped for a
symlink mid-apply.

Each ends with nothing lost (every file old or new, never partial; the system
state after undo or rollback equal to the one before), a clear message and the
documented exit code. Faults that need mounts (a full tmpfs, a read-only bind)
run the CLI in a private mount namespace (:mod:`tests.faults.namespace`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.paths import Layout
from sandbox_setup.commands.apply import gather_report
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apply import apply_plan
from sandbox_setup.configure.host_facts import gather_host_facts
from sandbox_setup.configure.plan import build_plan
from tests.core_fixtures import (
    CONFIG,
    FILES,
    MANAGED,
    REPO,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    system_state,
)
from tests.faults.conftest import FaultRow
from tests.faults.namespace import FILLER, run_in_namespace
from tests.seams import SETUP_WITH_SEAMS
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

OLD_SETTINGS = '{"model": "opus",   "permissions": {"deny": []}}'
# The sandbox apply's changing steps, in order (the pause seam counts these).
STEPS = (
    "group",
    "user",
    "workspace ACLs",
    "settings",
    "git protected settings",
    "root's git include",
    "launcher config",
    "ledger",
    "answers",
)


def prepare(root: Path) -> Path:
    make_target_root(root)
    managed = root / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text(OLD_SETTINGS)
    os.chmod(managed, 0o600)
    return root


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap", "unshare"):
        require_tool(tool)
    host = host_passwd_digest()
    yield prepare(tmp_path / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr


def error_line(stderr: str, root: Path | None = None) -> str:
    """The CLI's one-line diagnosis, shortened for the table."""
    line = next((x for x in stderr.splitlines() if x.startswith("sandbox-setup:")), "")
    line = line.replace("sandbox-setup: ", "")
    return (line.replace(str(root), "<root>") if root else line)[:200]


def undo(root: Path) -> str:
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def audit(root: Path) -> subprocess.CompletedProcess[str]:
    proc = run_cli("--audit", "--json", "--root", str(root))
    no_traceback(proc.stderr)
    return proc


def start_paused_apply(
    root: Path, pause_after: int | None = None, *, in_write: str | None = None
) -> subprocess.Popen[str]:
    """A real apply stopped by a seam: after ``pause_after`` changes, or inside the
    write of the file named ``in_write`` (temp written, not renamed)."""
    seam = (
        f"--seam-pause-in-write={in_write}"
        if in_write is not None
        else f"--seam-pause-after={pause_after}"
    )
    child = subprocess.Popen(
        [
            sys.executable,
            str(SETUP_WITH_SEAMS),
            seam,
            "--headless",
            "--root",
            str(root),
            "--yes",
            *SANDBOX,
        ],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    seen = []
    for line in child.stderr:
        seen.append(line)
        if "test pause" in line:
            return child
    child.kill()
    child.wait()
    pytest.fail(f"apply ended without pausing: {''.join(seen)}")


@pytest.mark.parametrize("step", range(1, len(STEPS) + 1), ids=lambda n: f"after-{STEPS[n - 1]}")
def test_sigkill_at_each_step_then_undo_and_audit(
    tmp_path: Path, root: Path, step: int, fault: FaultRow
) -> None:
    fault.expect(
        f"SIGKILL after step {step} of {len(STEPS)} ({STEPS[step - 1]})",
        "each file old or new; audit answers without a traceback; undo restores all; "
        "re-apply and audit clean (exit 0)",
    )
    twin = prepare(tmp_path / "twin")
    assert run_cli("--headless", "--root", str(twin), "--yes", *SANDBOX).returncode == 0
    new = {rel: (twin / rel).read_bytes() for rel in FILES}
    old = {rel: (root / rel).read_bytes() if (root / rel).exists() else None for rel in FILES}
    before = system_state(root)
    child = start_paused_apply(root, step)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    states = []
    for rel in FILES:
        current = (root / rel).read_bytes() if (root / rel).exists() else None
        assert current in (old[rel], new[rel]), f"{rel} is neither old nor new"
        states.append(f"{Path(rel).name} {'new' if current == new[rel] else 'old'}")
    fault.saw(", ".join(states))
    assert [p for p in root.rglob("*.sandbox-setup-*.tmp")] == [], "a temp file was left"
    # Audit of the half-done setup: a clear answer, never a crash.
    half = audit(root)
    missing = [n for n in ("launcher.toml", "answers.toml") if not (root / CONFIG / n).exists()]
    if missing:  # not set up yet: exit 2 naming the first missing file
        assert half.returncode == 2 and missing[0] in half.stderr, half.stderr
    else:
        assert half.returncode in (0, 1), half.stderr
        assert json.loads(half.stdout)["mode"] == "sandbox"
    fault.saw(f"audit before undo: exit {half.returncode}")
    out = undo(root)
    assert system_state(root) == before, out
    fault.saw(f"undo reverted {len(out.splitlines())} step(s): state as before")
    after = audit(root)
    assert after.returncode == 2 and "launcher.toml" in after.stderr, after.stderr
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    clean = audit(root)
    assert clean.returncode == 0, clean.stdout
    fault.saw("audit after undo: exit 2 (no setup); re-apply then audit: exit 0")


@pytest.mark.parametrize(
    ("target", "reapply_first"),
    [(MANAGED, False), (f"{CONFIG}/launcher.toml", False), (MANAGED, True)],
    ids=["replace-then-undo", "create-then-undo", "replace-then-reapply"],
)
def test_sigkill_inside_a_single_write(
    tmp_path: Path, root: Path, target: str, reapply_first: bool, fault: FaultRow
) -> None:
    name = Path(target).name
    fault.expect(
        f"SIGKILL inside the write of {name} (temp written and fsynced, not yet renamed)"
        + (", then apply again before any undo" if reapply_first else ""),
        "target holds its old bytes (or is still absent); the stray temp file is "
        + ("ignored by the re-apply (audit exit 0) and removed by the undos" if reapply_first
           else "removed by undo; re-apply and audit clean (exit 0)")
        + "; undo restores all",
    )  # fmt: skip
    twin = prepare(tmp_path / "twin")
    assert run_cli("--headless", "--root", str(twin), "--yes", *SANDBOX).returncode == 0
    new = (twin / target).read_bytes()
    old = (root / target).read_bytes() if (root / target).exists() else None
    before = system_state(root)
    child = start_paused_apply(root, in_write=name)
    # The temp file is whole before the kill: the kill lands between fsync and rename.
    temps = list((root / target).parent.glob(f".{name}.sandbox-setup-*.tmp"))
    assert [t.read_bytes() for t in temps] == [new], temps
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    now = (root / target).read_bytes() if (root / target).exists() else None
    assert now == old, f"{target} changed although its rename never ran"
    assert temps[0].exists(), "the kill left no temp file: the pause was not inside the write"
    fault.saw(f"{name} {'old bytes' if old else 'still absent'}; stray {temps[0].name} left")
    if reapply_first:
        assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
        assert (root / target).read_bytes() == new
        assert audit(root).returncode == 0
        fault.saw("re-apply over the stray temp: exit 0, target new, audit exit 0")
        undo(root)  # the re-apply's transaction; the killed one is next
    out = undo(root)
    assert not temps[0].exists(), "undo left the stray temp file"
    assert system_state(root) == before, out
    fault.saw("undo removed the temp file and restored the state as before")
    if reapply_first:
        return
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    assert (root / target).read_bytes() == new
    assert list(root.rglob("*.sandbox-setup-*.tmp")) == []
    clean = audit(root)
    assert clean.returncode == 0, clean.stdout
    fault.saw("re-apply then audit: exit 0, no temp file")


def test_two_applies_at_once(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "two applies at once (one paused mid-way holding the lock)",
        "second apply and an undo refused, exit 3, lock named, nothing changed by them; "
        "the first, killed, is undone",
    )
    before = system_state(root)
    first = start_paused_apply(root, 3)
    try:
        during = system_state(root)
        second = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
        undo_now = run_cli("--undo", "--yes", "--root", str(root))
        assert system_state(root) == during, "the refused runs changed something"
    finally:
        first.kill()
        first.wait()
    for proc in (second, undo_now):
        assert proc.returncode == 3, proc.stderr
        assert "another sandbox-setup apply or undo is running" in proc.stderr
        no_traceback(proc.stderr)
    fault.saw("second apply: exit 3; undo during it: exit 3; state untouched")
    undo(root)
    assert system_state(root) == before
    fault.saw("after killing the first: undo restored everything")


def test_three_applies_started_together(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "three applies started at the same moment (no pause: a real race for the lock)",
        "each exits 0 or 3 (lock named); one transaction applied; files whole; one undo "
        "restores all",
    )
    before = system_state(root)
    argv = [
        sys.executable,
        "-m",
        "sandbox_setup",
        "--headless",
        "--root",
        str(root),
        "--yes",
        *SANDBOX,
    ]
    procs = [
        subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        for _ in range(3)
    ]  # fmt: skip
    results = [(p.wait(timeout=240), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    for code, out, err in results:
        no_traceback(err)
        assert code in (0, 3), (code, out, err)
        if code == 3:
            assert "another sandbox-setup apply or undo is running" in err
    assert 0 in codes
    applied = [out for code, out, _ in results if code == 0 and "Applied:" in out]
    assert len(applied) == 1, "more than one apply changed the system"
    journal = (root / STATE / "journal.jsonl").read_text().splitlines()
    ops = [json.loads(line)["op"] for line in journal]
    assert ops.count("begin") == 1 and ops.count("commit") == 1, ops
    fault.saw(f"exit codes {codes}; one transaction committed")
    undo(root)
    assert system_state(root) == before
    fault.saw("one undo restored everything")


def in_namespace(root: Path, mounts: list[dict[str, object]]) -> dict[str, object]:
    argv = [
        sys.executable,
        "-m",
        "sandbox_setup",
        "--headless",
        "--root",
        str(root),
        "--yes",
        *SANDBOX,
    ]
    return run_in_namespace(mounts, argv)


def assert_rolled_back(result: dict[str, object], root: Path, before: object) -> str:
    stderr = str(result["stderr"])
    assert result["rc"] == 2, (result["rc"], result["stdout"], stderr)
    no_traceback(stderr)
    assert "failed" in stderr and "rolled back" in stderr, stderr
    assert "removed user claude-agent" in stderr, stderr
    assert system_state(root) == before
    assert passwd_entry(root, "claude-agent") is None
    return stderr


def test_disk_full_while_writing_the_settings(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "disk full (a full tmpfs over /etc/claude-code) while writing the settings",
        "exit 2 naming the step and ENOSPC; rolled back; old settings intact, no temp file",
    )
    before = system_state(root)
    directory = root / "etc/claude-code"
    result = in_namespace(root, [{"dir": str(directory), "kind": "tmpfs-full"}])
    stderr = assert_rolled_back(result, root, before)
    assert "managed-settings.json" in stderr and "No space left on device" in stderr, stderr
    inside_before = result["before"][str(directory)]  # type: ignore[index]
    inside_after = result["after"][str(directory)]  # type: ignore[index]
    assert inside_after == inside_before, "the full filesystem kept a partial or temp file"
    assert set(inside_after) == {"managed-settings.json", FILLER}
    fault.saw(f"exit {result['rc']}: {error_line(stderr)}")
    fault.saw("tmpfs files identical before/after; host-side state as before")


@pytest.mark.parametrize("leave", [0, 8 * 4096], ids=["full", "eight-pages-free"])
def test_disk_full_in_the_journal_directory(root: Path, leave: int, fault: FaultRow) -> None:
    if leave:
        fault.expect(
            "disk full in the state dir after the journal began (no room for a backup)",
            "exit 2 naming the step and ENOSPC; the steps before it rolled back",
        )
    else:
        fault.expect(
            "disk full in the state dir (the journal cannot be written)",
            "exit 2 naming the journal and ENOSPC; nothing changed (no step runs unjournaled)",
        )
    state = root / STATE
    state.mkdir(parents=True, mode=0o700)
    before = system_state(root)
    result = in_namespace(root, [{"dir": str(state), "kind": "tmpfs-full", "leave": leave}])
    stderr = str(result["stderr"])
    assert result["rc"] == 2, (result["rc"], result["stdout"], stderr)
    no_traceback(stderr)
    assert "No space left on device" in stderr, stderr
    if leave:
        assert "rolled back" in stderr and "removed group sandbox-ws-claude-agent" in stderr, stderr
    else:
        assert "cannot write the journal" in stderr, stderr
    assert system_state(root) == before
    assert passwd_entry(root, "claude-agent") is None
    fault.saw(f"exit 2: {error_line(stderr)}")


def test_read_only_target_directory(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "read-only target directory (/etc/claude-code bind-mounted ro)",
        "exit 2 naming the file and EROFS; the earlier steps rolled back",
    )
    before = system_state(root)
    result = in_namespace(root, [{"dir": str(root / "etc/claude-code"), "kind": "read-only"}])
    stderr = assert_rolled_back(result, root, before)
    assert "managed-settings.json" in stderr and "Read-only file system" in stderr, stderr
    assert (root / MANAGED).read_text() == OLD_SETTINGS
    fault.saw(f"exit {result['rc']}: {error_line(stderr)}")
    fault.saw("user, group and ACLs rolled back; state as before")


def test_settings_swapped_for_a_symlink_between_plan_and_apply(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "settings file replaced by a symlink to /etc/shadow between plan and write (TOCTOU)",
        "refused (InputError, exit 2) naming the symlink; /etc/shadow untouched; rolled back",
    )
    layout = Layout.for_root(root)
    answers = Answers(Mode.SANDBOX, workspaces=(PurePosixPath("/srv/project"),))
    report = gather_report(answers, layout, 10.0)
    plan = build_plan(report, answers, layout, facts=gather_host_facts(report, layout, answers))
    shadow = (root / "etc/shadow").read_bytes()
    managed = root / MANAGED

    def swap(action: object, status: str, description: str) -> None:
        # Right before the settings step runs: the plan already read the old file.
        if status == "running" and "managed-settings.json" in str(getattr(action, "target", "")):
            managed.unlink()
            managed.symlink_to("../shadow")

    with pytest.raises(InputError) as caught:
        apply_plan(plan, progress=swap)
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert "symlink" in message and "managed-settings.json" in message, message
    assert "rolled back" in message and "removed user claude-agent" in message, message
    assert (root / "etc/shadow").read_bytes() == shadow
    assert managed.is_symlink(), "the swapped-in link is left for the operator to see"
    assert passwd_entry(root, "claude-agent") is None
    fault.saw(f"InputError (exit 2): {error_line('sandbox-setup: ' + message, root)}")
    fault.saw("shadow unchanged; user and group rolled back")
