"""The AppArmor profile for bwrap (issue 29), end to end through the real CLI under
``--root``: plan, apply, undo, audit.

The parser that loads it is a stand-in (a root-owned script that records its
arguments), handed in through ``tests/seams/setup_with_seams.py
--seam-apparmor-parser``: under ``--root`` the apply otherwise writes the profile and
loads nothing (this kernel has no AppArmor, and the live kernel is not the target's).
Undo runs the parser the journal recorded. The text itself is checked with the real
``apparmor_parser`` in tests/unit/test_apparmor_profile.py (this file: the apply).

This host has no AppArmor restriction, so the live probes do not find it: the profile
is installed because it was asked for, and the plan says the probes did not find it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.base.apparmor import PROFILE_FILE, render_profile
from tests.core_fixtures import REPO, host_passwd_digest, make_target_root, run_cli, system_state
from tests.seams import SETUP_WITH_SEAMS
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

USER_MODE = ("--mode", "user", "--workspace", "/srv/project", "--apparmor-bwrap-profile")
RECORDER = '#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n'


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before


@pytest.fixture
def parser(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in apparmor_parser (root's, 0755) and the log of its invocations."""
    directory = tmp_path / "stand-in"
    directory.mkdir(mode=0o755)
    log = tmp_path / "parser.log"
    script = directory / "apparmor_parser"
    script.write_text(RECORDER.format(log=log))
    script.chmod(0o755)
    return script, log


def with_seam(parser: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SETUP_WITH_SEAMS), f"--seam-apparmor-parser={parser}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def apparmor_ids(root: Path) -> list[str]:
    done = run_cli("--audit", "--json", "--root", str(root))
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)["findings"]
    return [f["id"] + ": " + f["summary"] for f in found if f["id"].startswith("audit.apparmor")]


def test_plan_apply_undo_and_audit_of_the_profile(root: Path, parser: tuple[Path, Path]) -> None:
    script, log = parser
    profile = root / str(PROFILE_FILE).lstrip("/")
    bwrap = os.path.realpath(require_tool("bwrap"))
    before = system_state(root)

    plan = run_cli("--headless", "--root", str(root), *USER_MODE)
    assert plan.returncode == 0, plan.stderr
    assert str(PROFILE_FILE) in plan.stdout
    assert "written, not loaded" in plan.stderr and "did not find" in plan.stderr
    dry = run_cli("--headless", "--root", str(root), *USER_MODE, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"$ apparmor_parser -r -W {profile}" in dry.stdout
    assert "+  userns," in dry.stdout
    assert f"+profile sandbox-setup-bwrap {bwrap} flags=(unconfined) {{" in dry.stdout
    assert system_state(root) == before, "plan and --dry-run write nothing"

    done = with_seam(script, "--headless", "--root", str(root), *USER_MODE, "--yes")
    assert done.returncode == 0, done.stderr
    assert profile.read_bytes() == render_profile(bwrap)
    st = profile.stat()
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o644)
    assert calls(log) == [f"-r -W {profile}"], "loaded once, with the file it wrote"
    # ... then re-probed live: what bwrap can do now (this host: no restriction).
    assert f"re-probed after loading {PROFILE_FILE}: bwrap.sandbox pass" in done.stderr
    assert f"re-probed after loading {PROFILE_FILE}: userns.policy pass" in done.stderr
    assert (
        "apparmor_bwrap_profile = true"
        in (root / "root/.config/sandbox-setup/answers.toml").read_text()
    )

    # The audit: clean, then an edited profile, then a missing one.
    assert apparmor_ids(root) == []
    written = profile.read_bytes()
    profile.write_bytes(written.replace(b"  userns,\n", b"  userns,\n  capability,\n"))
    edited = apparmor_ids(root)
    assert len(edited) == 1 and edited[0].startswith("audit.apparmor.profile: "), edited
    assert "differs from what the apply wrote" in edited[0]
    profile.unlink()
    missing = apparmor_ids(root)
    assert len(missing) == 1 and "is missing" in missing[0], missing

    # Undo: the profile is unloaded (while its file is the one written), then removed.
    profile.write_bytes(written)
    profile.chmod(0o644)
    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert calls(log) == [f"-r -W {profile}", f"-R {profile}"]
    assert not profile.exists()
    assert system_state(root) == before, undone.stdout


def test_under_root_without_a_stand_in_the_profile_is_written_never_loaded(
    root: Path, parser: tuple[Path, Path]
) -> None:
    """Nothing is run to load it: no parser of the host, none in DIR."""
    script, log = parser
    inside = root / "usr/sbin/apparmor_parser"
    inside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(script, inside)
    done = run_cli("--headless", "--root", str(root), *USER_MODE, "--yes")
    assert done.returncode == 0, done.stderr
    assert (root / str(PROFILE_FILE).lstrip("/")).is_file()
    assert calls(log) == [], "under --root nothing loads the profile"
    assert "re-probed" not in done.stderr, "nothing loaded, nothing re-probed"
    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert calls(log) == [] and not (root / str(PROFILE_FILE).lstrip("/")).exists()


def test_a_load_that_fails_rolls_the_apply_back(root: Path, tmp_path: Path) -> None:
    """The parser refuses the profile: nothing of the apply is left, nothing to unload."""
    refusing = tmp_path / "refusing/apparmor_parser"
    refusing.parent.mkdir(mode=0o755)
    log = tmp_path / "refusing.log"
    refusing.write_text(RECORDER.format(log=log) + "echo 'parser says no' >&2\nexit 1\n")
    refusing.chmod(0o755)
    before = system_state(root)
    done = with_seam(refusing, "--headless", "--root", str(root), *USER_MODE, "--yes")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "parser says no" in done.stderr and "rolled back" in done.stderr
    assert calls(log) == [f"-r -W {root}/etc/apparmor.d/sandbox-setup-bwrap"], "no -R"
    assert system_state(root) == before
