"""Disk full mid-apply, with the whole ``--root`` tree on one small tmpfs: the
settings, launcher config, answers, journal, backups, and the account files that
``useradd --prefix`` rewrites all compete for the same few free pages.

At every free-space level from 0 to 128 KiB in 4 KiB steps, and on until the apply
fits, and with the disk made full right after each step of the apply (the commit
included; :func:`test_disk_full_right_after_every_step`), the apply must end as
one of: never started (exit 2, nothing changed), failed and rolled back completely
(exit 2, the tree byte for byte as before), failed with a rollback that could not
finish (exit 1, the journal says so, and ``--undo --yes`` finishes it once space is
free), or applied (exit 0, and ``--undo`` restores everything). In every case each
file is old or new, never partial, and after the undo the whole tree is as before.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from tests.core_fixtures import (
    FILES,
    MANAGED,
    SANDBOX,
    STATE,
    make_target_root,
    run_cli,
    snapshot,
)
from tests.faults.conftest import FaultRow
from tests.faults.namespace import run_in_namespace
from tests.faults.tmpfs_root import FILLER, run_on_full_tmpfs
from tests.seams import SETUP_WITH_SEAMS
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

OLD_SETTINGS = '{"model": "opus",   "permissions": {"deny": []}}'
LEVELS = range(0, 128 * 1024 + 1, 4096)
MAX_LEVEL = 320 * 1024  # past it, a sweep that never applies is itself a failure


def prepare(root: Path) -> Path:
    make_target_root(root)
    managed = root / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text(OLD_SETTINGS)
    os.chmod(managed, 0o600)
    return root


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def differences(a: dict[str, object], b: dict[str, object]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def one_level(tmp_path: Path, leave: int, new: dict[str, str], seams: tuple[str, ...] = ()) -> str:
    """Run the apply on a tmpfs with ``leave`` bytes free, then undo; returns what
    happened in a few words, or raises AssertionError naming what broke. ``seams``:
    the apply runs through ``tests/seams/setup_with_seams.py`` with these."""
    base = tmp_path / f"fl-{leave}-{len(seams)}-{abs(hash(seams))}"
    seed = prepare(base / "seed")
    old = {rel: digest((seed / rel).read_bytes()) if (seed / rel).exists() else None
           for rel in FILES}  # fmt: skip
    mount = base / "tmpfs"
    mount.mkdir()
    cli = [sys.executable, "-m", "sandbox_setup"]
    apply = [sys.executable, str(SETUP_WITH_SEAMS), *seams] if seams else cli
    result = run_on_full_tmpfs(
        {
            "dir": str(mount),
            "seed": str(seed),
            "leave": leave,
            "apply": [*apply, "--headless", "--root", "{root}", "--yes", *SANDBOX],
            "undo": [*cli, "--undo", "--yes", "--root", "{root}"],
        }
    )
    applied, undone = result["apply"], result["undo"]
    before, after_apply, after_undo = (
        result["before"], result["after_apply"], result["after_undo"]
    )  # fmt: skip
    where = (
        f"{leave // 1024} KiB free {' '.join(seams)}: apply exit {applied['rc']}: "
        f"{applied['stderr'][-600:]}"
    )
    assert "Traceback" not in applied["stderr"] + undone["stderr"], where
    for rel in FILES:
        now = after_apply.get(rel)
        now_digest = now[0] if now else None
        assert now_digest in (old[rel], new[rel]), f"{rel} is neither old nor new; {where}"
    assert undone["rc"] == 0, f"{where}; undo exit {undone['rc']}: {undone['stderr']}"
    left = differences(before, after_undo)
    assert left == [], f"after the undo the tree differs in {left}; {where}; {undone}"
    rc = applied["rc"]
    if rc == 0:
        return "applied; undo restored all"
    if rc == 2:
        left = differences(before, after_apply)
        assert left == [], f"exit 2 but the tree changed in {left}; {where}"
        assert "Nothing to undo" in undone["stdout"], undone
        if "rolled back" in applied["stderr"]:
            return f"rolled back at '{failed_step(applied['stderr'])}'"
        return "never started"
    assert rc == 1, where
    assert "could not be restored" in applied["stderr"], where
    assert "--undo --yes" in applied["stderr"], where
    assert "Nothing to undo" not in undone["stdout"], undone
    return f"rollback incomplete at '{failed_step(applied['stderr'])}' (exit 1); undo finished it"


def failed_step(stderr: str) -> str:
    """The step that was running when the apply failed (its last progress line)."""
    progress = []
    for line in stderr.splitlines():
        if line.startswith("sandbox-setup:"):
            break
        if line.startswith("  "):
            progress.append(line.strip())
    return progress[-1].split(" (")[0] if progress else "?"


@pytest.mark.timeout(1500)  # some 40 levels, each an apply and an undo on its own tmpfs
def test_disk_full_at_every_level_from_0_to_128_kib(tmp_path: Path, fault: FaultRow) -> None:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap", "unshare"):
        require_tool(tool)
    fault.expect(
        "disk full mid-apply: the whole root (account files, settings, journal, backups) on a "
        "tmpfs with 0 KiB free and up in 4 KiB steps (every level to 128 KiB, then on until "
        "the apply fits)",
        "each level: never started, or rolled back byte for byte (exit 2), or a rollback that "
        "could not finish recorded and reported (exit 1); each file old or new; after freeing "
        "space --undo --yes leaves the whole tree byte for byte as before",
    )
    twin = prepare(tmp_path / "twin")
    assert run_cli("--headless", "--root", str(twin), "--yes", *SANDBOX).returncode == 0
    new = {rel: digest((twin / rel).read_bytes()) for rel in FILES}
    outcomes: dict[int, str] = {}
    broken: list[str] = []

    def level(leave: int) -> tuple[int, str, str | None]:
        try:
            return leave, one_level(tmp_path, leave, new), None
        except AssertionError as exc:
            return leave, "BROKEN", str(exc)[:1500]

    # In parallel: where a lock file of shadow-utils cannot be written, useradd
    # retries for 15 s before it gives up; the levels are independent trees. Past
    # 128 KiB the sweep goes on until an apply has room to finish, so that a failure
    # at every later step (settings, launcher config, answers) is covered too.
    batch = 6
    levels = list(LEVELS)
    with concurrent.futures.ThreadPoolExecutor(max_workers=batch) as pool:
        while levels:
            for leave, outcome, error in pool.map(level, levels[:batch]):
                outcomes[leave] = outcome
                if error:
                    broken.append(error)
            levels = levels[batch:]
            top = max(outcomes)
            applied = any(o.startswith("applied") for o in outcomes.values())
            if not levels and not applied and top < MAX_LEVEL:
                levels = list(range(top + 4096, min(top + 4096 * batch, MAX_LEVEL) + 1, 4096))
    summary: dict[str, list[int]] = {}
    for leave, outcome in outcomes.items():
        summary.setdefault(outcome, []).append(leave // 1024)
    fault.saw("; ".join(f"{what}: {kib} KiB" for what, kib in summary.items()))
    assert broken == [], "\n\n".join(broken)
    assert any(o.startswith("applied") for o in outcomes.values()), outcomes


@pytest.mark.timeout(900)
@pytest.mark.parametrize("reserve", ["kept", "gone"])
def test_disk_full_right_after_every_step(tmp_path: Path, reserve: str, fault: FaultRow) -> None:
    """Where the space runs out is no longer left to chance: a seam fills the disk to
    the last byte right after step N, for every N up to the last (so the commit meets
    a full disk too). ``gone``: the journal's preallocated room past its last block is
    handed back first, as on a file system without ``fallocate``: a commit that asks
    for room then fails at every run, not only when the journal's length happens to
    end near a block boundary (what made the level sweep fail once in CI)."""
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap", "unshare"):
        require_tool(tool)
    fault.expect(
        f"disk full right after each step of the apply, the commit included (journal "
        f"reserve {reserve})",
        "each step: rolled back byte for byte (exit 2) or a rollback that could not finish "
        "reported (exit 1) and finished by --undo; never exit 2 with the tree changed",
    )
    twin = prepare(tmp_path / "twin")
    applied = run_cli("--headless", "--root", str(twin), "--yes", *SANDBOX)
    assert applied.returncode == 0, applied.stderr
    new = {rel: digest((twin / rel).read_bytes()) for rel in FILES}
    steps = sum(line.startswith("changed: ") for line in applied.stdout.splitlines())
    assert steps >= 8, applied.stdout

    def after(step: int) -> tuple[int, str, str | None]:
        seams = (f"--seam-fill-disk-after={step}:{{root}}/../{FILLER}",)
        if reserve == "gone":
            seams += (f"--seam-drop-journal-reserve={{root}}/{STATE}/journal.jsonl",)
        try:
            return step, one_level(tmp_path, 512 * 1024, new, seams), None
        except AssertionError as exc:
            return step, "BROKEN", str(exc)[:1500]

    outcomes: dict[int, str] = {}
    broken: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        for step, outcome, error in pool.map(after, range(1, steps + 1)):
            outcomes[step] = outcome
            if error:
                broken.append(f"after step {step}: {error}")
    fault.saw("; ".join(f"after {step}: {what}" for step, what in outcomes.items()))
    assert broken == [], "\n\n".join(broken)
    # The commit's line fits in the room the last step reserved. Without that room it
    # fits in what is left of the journal's last block, or it does not, and then the
    # apply is rolled back (and the journal line saying so cannot be written: exit 1).
    last = ("applied",) if reserve == "kept" else ("applied", "rollback incomplete")
    assert outcomes[steps].startswith(last), outcomes


# Run in a private mount namespace: right before the launcher config is written, the
# settings directory and ~/.config become read-only, so that step fails and the
# rollback cannot put the settings back (a rename in a read-only directory).
FREEZE_MID_APPLY = f"""
import subprocess, sys
from sandbox_setup.configure import actions
root, frozen = sys.argv[1], sys.argv[2:]
original = actions.WriteFile.apply
def apply(self, txn):
    if self.label == "launcher config":
        for directory in frozen:
            subprocess.run(["mount", "--bind", directory, directory], check=True)
            subprocess.run(["mount", "-o", "remount,bind,ro", directory], check=True)
    return original(self, txn)
actions.WriteFile.apply = apply
from sandbox_setup.cli import main
sys.exit(main(["--headless", "--root", root, "--yes", *{SANDBOX!r}]))
"""


def test_a_rollback_that_cannot_finish_is_recorded_and_undo_finishes_it(
    tmp_path: Path, fault: FaultRow
) -> None:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap", "unshare"):
        require_tool(tool)
    fault.expect(
        "a step fails and the rollback cannot restore the settings (their directory became "
        "read-only mid-apply)",
        "apply exit 1 naming what could not be restored and the --undo that finishes it; "
        "journal: rollback-incomplete; later --undo --yes restores all (not 'Nothing to "
        "undo'), tree as before",
    )
    root = prepare(tmp_path / "root")
    (root / "root/.config").mkdir(mode=0o700)
    before = whole_tree(root)
    frozen = [str(root / "etc/claude-code"), str(root / "root/.config")]
    result = run_in_namespace([], [sys.executable, "-c", FREEZE_MID_APPLY, str(root), *frozen])
    stderr = str(result["stderr"])
    assert result["rc"] == 1, (result["rc"], stderr)
    assert "Traceback" not in stderr, stderr
    assert "could not be restored" in stderr and "managed-settings.json" in stderr, stderr
    assert f"--undo --yes --root {root}" in stderr, stderr
    assert "removed user claude-agent" in stderr, "the other steps were rolled back"
    journal = (root / STATE / "journal.jsonl").read_text().splitlines()
    last = json.loads(journal[-1])
    assert last["op"] == "rollback-incomplete", last
    assert any("managed-settings.json" in line for line in last["left"]), last
    line = next(x for x in stderr.splitlines() if "could not" in x and "managed-settings" in x)
    fault.saw(f"exit 1: {line.strip()[:150]}")
    fault.saw("journal: rollback-incomplete")
    undo = run_cli("--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0, (undo.stdout, undo.stderr)
    assert "Nothing to undo" not in undo.stdout, undo.stdout
    assert "restored /etc/claude-code/managed-settings.json" in undo.stdout, undo.stdout
    assert whole_tree(root) == before
    fault.saw("the mounts gone, --undo --yes restored the settings (exit 0); tree as before")


def whole_tree(root: Path) -> dict[str, object]:
    return {k: v for k, v in snapshot(root).items() if not k.startswith("root/.local/")}
