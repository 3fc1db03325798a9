"""The registry, the runner (selection, errors, crash isolation) and the --check CLI.

These run only the file-reading checks against fake roots, or fake checks; the
live probes are exercised by tests/integration.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.checks import runner
from sandbox_setup.checks.base import Check, Context, Verdict
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.registry import BY_ID, CHECKS
from sandbox_setup.cli import main
from tests.tools import REPO
from tests.unit.fixtures.trees import UBUNTU_2404_SYSCTLS, make_root

REQUIRED = (
    "identity.root",
    "platform.container",
    "proc.masks",
    "userns.policy",
    "userns.create",
    "proc.fresh_mount",
    "bwrap.installed",
    "bwrap.sandbox",
    "bwrap.nested",
    "bwrap.nested_weak",
    "seccomp.available",
    "landlock.abi",
    "tty.tiocsti",
    "claude.installed",
    "claude.root_guard",
    "claude.sandbox_deps",
)
FILE_CHECKS = ["platform.container", "proc.masks", "userns.policy", "tty.tiocsti"]


def test_registry_has_every_required_id_once_in_order() -> None:
    ids = [c.id for c in CHECKS]
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i in REQUIRED] == list(REQUIRED)
    live = {c.id for c in CHECKS if c.live}
    assert {
        "userns.create",
        "proc.fresh_mount",
        "bwrap.sandbox",
        "bwrap.nested",
        "bwrap.nested_weak",
        "landlock.abi",
    } <= live
    assert {"proc.masks", "userns.policy", "tty.tiocsti"}.isdisjoint(live)
    assert all(c.title for c in CHECKS)


def test_unknown_id_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError, match=r"'bwrap\.nope'"):
        runner.run_checks(["bwrap.sandbox", "bwrap.nope"])


def test_selection_keeps_registry_order() -> None:
    picked = runner.select_checks(["tty.tiocsti", "identity.root", "tty.tiocsti"])
    assert [c.id for c in picked] == ["identity.root", "tty.tiocsti"]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--timeout"):
        runner.run_checks(["tty.tiocsti"], timeout=0)
    with pytest.raises(InputError, match="not a directory"):
        runner.run_checks(["tty.tiocsti"], root=tmp_path / "missing")
    with pytest.raises(InputError, match="no such user"):
        runner.run_checks(["tty.tiocsti"], as_user="no-such-user-sandbox-setup")
    with pytest.raises(InputError, match="--claude"):
        runner.run_checks(["tty.tiocsti"], claude=str(tmp_path / "claude"))


def test_as_user_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # the caller is made an ordinary user here; the real thing, run as nobody, is in
    # tests/integration/test_check_containers.py
    monkeypatch.setattr(runner.os, "geteuid", lambda: 65534)
    monkeypatch.setattr(runner.os, "getuid", lambda: 65534)
    with pytest.raises(InputError, match="needs root"):
        runner.run_checks(["tty.tiocsti"], as_user="root")


def test_file_checks_read_the_given_root(tmp_path: Path) -> None:
    root = make_root(
        tmp_path,
        status="docker_default.txt",
        mountinfo="podman_rootless.txt",
        sysctls={**UBUNTU_2404_SYSCTLS},
        files={"/run/.containerenv": 'engine="podman-4.3.1"\n'},
    )
    report = runner.run_checks(FILE_CHECKS, root=root, system_root=root)
    assert [f.id for f in report.findings] == FILE_CHECKS
    assert report.host["container"] == "podman"
    assert report.status("proc.masks") is Status.FAIL
    assert "unmask=/proc/*" in report.get("proc.masks").remedy  # type: ignore[union-attr]
    assert report.status("tty.tiocsti") is Status.PASS  # legacy_tiocsti=0 in that tree
    policy = report.get("userns.policy")
    assert policy is not None and "apparmor_restrict_unprivileged_userns" in policy.summary
    assert report.failed


def test_a_crashing_check_becomes_an_error_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def boom(ctx: Context) -> Verdict:
        raise RuntimeError("kaboom")

    def fine(ctx: Context) -> Verdict:
        return Verdict(Status.PASS, f"probed as uid {ctx.uid}")

    fakes = (Check("fake.boom", "Boom", True, boom), Check("fake.fine", "Fine", True, fine))
    monkeypatch.setattr(runner, "CHECKS", fakes)
    monkeypatch.setattr(runner, "BY_ID", {c.id: c for c in fakes})
    seen: list[str] = []
    fake = make_root(tmp_path)
    report = runner.run_checks(root=fake, system_root=fake, on_finding=lambda f: seen.append(f.id))
    boom_finding = report.get("fake.boom")
    assert boom_finding is not None and boom_finding.status is Status.ERROR
    assert "kaboom" in boom_finding.summary
    assert report.status("fake.fine") is Status.PASS
    assert sorted(seen) == ["fake.boom", "fake.fine"]
    assert [f.id for f in report.findings] == ["fake.boom", "fake.fine"]


def test_live_probes_run_concurrently(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Three live checks are in flight at once: each records its window, and
    each waits at a barrier that only opens when all three have started, so a
    runner that ran them one after another breaks the barrier (an error
    finding) instead of passing by luck of timing."""
    windows: dict[str, tuple[float, float]] = {}
    barrier = threading.Barrier(3, timeout=10)

    def probe(name: str) -> Callable[[Context], Verdict]:
        def run(ctx: Context) -> Verdict:
            start = time.monotonic()
            barrier.wait()
            time.sleep(0.3)
            windows[name] = (start, time.monotonic())
            return Verdict(Status.PASS, f"{name} probed")

        return run

    fakes = tuple(
        Check(f"fake.live{i}", f"Live {i}", True, probe(f"fake.live{i}")) for i in range(3)
    )
    monkeypatch.setattr(runner, "CHECKS", fakes)
    monkeypatch.setattr(runner, "BY_ID", {c.id: c for c in fakes})
    fake = make_root(tmp_path)
    report = runner.run_checks(root=fake, system_root=fake)
    assert [(f.id, f.status) for f in report.findings] == [(c.id, Status.PASS) for c in fakes], [
        f.summary for f in report.findings
    ]
    # every window opened before any closed: all three overlapped
    assert max(start for start, _ in windows.values()) < min(end for _, end in windows.values())


def test_cli_list_checks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-checks"]) == 0
    out = capsys.readouterr().out
    for check in CHECKS:
        assert check.id in out and check.title in out


def test_cli_unknown_id_exits_2_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", "no.such"]) == 2
    captured = capsys.readouterr()
    assert "no.such" in captured.err and captured.out == ""


def test_cli_json_and_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = make_root(tmp_path / "clean")
    assert main(["--check", "--json", "--root", str(clean), "proc.masks", "userns.policy"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == 1
    assert [c["id"] for c in data["checks"]] == ["proc.masks", "userns.policy"]
    assert set(data["checks"][0]) == {"id", "title", "status", "summary", "detail", "remedy"}
    # Two checks of many: no mode is recommended from them (issue 28).
    assert data["recommendation"]["mode"] is None
    assert "needs the full run: sandbox-setup --check" in data["recommendation"]["reason"]
    masked = make_root(tmp_path / "masked", mountinfo="docker_default.txt")
    assert main(["--check", "--root", str(masked), "proc.masks"]) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out and "remedy:" in captured.out
    assert "Recommended: no mode from a partial run" in captured.out
    assert "needs the full run" in captured.out and "proc.masks" in captured.err
    for mode in ("sandbox", "user", "unsafe"):
        assert f"Recommended: {mode}" not in captured.out


def test_a_partial_report_round_trips_without_a_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sandbox_setup.checks.model import Report

    assert main(["--check", "--json", "--root", str(make_root(tmp_path)), "proc.masks"]) == 0
    data = json.loads(capsys.readouterr().out)
    report = Report.from_json(data)
    assert report.partial and report.to_json()["recommendation"]["mode"] is None


def test_check_path_imports_no_textual(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom sandbox_setup.cli import main\n"
        f"rc = main(['--check', '--json', '--root', {str(make_root(tmp_path))!r}, 'proc.masks'])\n"
        "assert rc == 0, rc\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_every_check_id_is_in_by_id() -> None:
    assert set(BY_ID) == {c.id for c in CHECKS}
