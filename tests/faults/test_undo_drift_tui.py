"""Drift is never restored, through the TUI's Fix (docs/design.md invariant 18): the
sequences of tests/faults/test_undo_drift.py with the audit view's Fix in place of the
headless re-apply.

Under a temp ``--root``: a headless apply; someone puts ``network = "host"`` into
launcher.toml (or ``sandbox.allowUnsandboxedCommands: true`` into the managed settings
that were already as planned); the wizard opens on its audit (the real probes, as the
headless audit runs them), Fix goes through the review and the apply; then
``--undo --all --dry-run`` and ``--undo --all --yes`` run headless. The apply of the Fix
is journaled as a fix, the dry run names what the run then does, and the tree ends as
before the first apply, byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.findings_view import FindingList
from sandbox_setup.tui.review import ReviewScreen
from tests.core_fixtures import MANAGED, run_cli, system_state
from tests.faults.conftest import FaultRow
from tests.faults.drift_fixtures import (
    LAUNCHER,
    apply,
    drift_root,
    journal,
    managed_settings_already_as_planned,
    undo_all,
    writes,
)
from tests.tui.helpers import wait_for, wait_until

pytestmark = pytest.mark.integration

SIZE = (100, 30)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("LANG", "C.UTF-8")  # the wizard's own words (tests/tui/conftest.py)
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_CTYPE", raising=False)
    with drift_root(tmp_path) as made:
        yield made


async def fix_in_the_tui(root: Path, drifted: str) -> None:
    """Open the wizard on its audit, see the drift of ``drifted`` (a path under the
    root), press Fix, apply the plan, and come back to an audit without that drift."""
    app = SetupApp(InteractiveCore.for_root(root))
    async with app.run_test(size=SIZE) as pilot:
        audit = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: audit.audit is not None and not audit.busy, tries=6000)
        drift = [f for f in audit.audit.findings if f.id.startswith("audit.drift")]
        assert any(drifted in f.summary + f.detail for f in drift), [
            (f.id, f.summary) for f in audit.audit.findings
        ]
        assert audit.query_one(FindingList).rows, "the audit lists what it found"
        await pilot.press("f")  # Fix
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy, tries=3000)
        assert review.plan is not None, "the fix has a plan"
        await pilot.press("a")  # apply
        applying = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not applying.busy, tries=6000)
        assert applying.error is None, applying.error
        await pilot.press("enter")
        await wait_for(pilot, DoneScreen)
        await pilot.press("enter")
        again = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: again.audit is not None and not again.busy, tries=6000)
        left = [f for f in again.audit.findings if f.id.startswith("audit.drift")]
        assert not any(drifted in f.summary + f.detail for f in left), left
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_value is not None)


def said(preview: str) -> list[tuple[str, str]]:
    """The dry run's file lines as (verb, path): ``keep X ...``, ``remove X``, ..."""
    found = []
    for line in preview.splitlines():
        match = re.match(r"\s+(keep|leave|remove|restore|put back) (/\S+?):?(\s|$)", line)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def did(out: str) -> list[tuple[str, str]]:
    """The run's file lines as (verb of the preview, path)."""
    verbs = {"kept": "keep", "left": "leave", "removed": "remove", "restored": "restore"}
    found = []
    for line in out.splitlines():
        match = re.match(r"(kept|left|removed|restored|put back) (/\S+?):?(\s|$)", line)
        if match:
            verb = verbs.get(match.group(1), match.group(1))
            found.append((verb, match.group(2)))
    return found


def file_lines(pairs: list[tuple[str, str]], path: str) -> list[str]:
    return [verb for verb, target in pairs if target == path]


async def test_tui_fix_of_network_host_then_undo_all_restores_the_tree(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        'network = "host" put into launcher.toml by hand; the TUI audit\'s Fix re-applies; '
        "--undo --all --dry-run, then --undo --all --yes",
        "the Fix is journaled as a fix; launcher.toml removed, never put back with the "
        "drift; the tree as before the first apply; exit 0; the dry run named the same steps",
    )
    before = system_state(root)
    apply(root)
    launcher = root / LAUNCHER
    text = launcher.read_text()
    assert 'network = "allowlist"' in text
    launcher.write_text(text.replace('network = "allowlist"', 'network = "host"'))

    await fix_in_the_tui(root, "launcher.toml")
    assert launcher.read_text() == text, "the Fix put back the planned launcher.toml"
    fixes = [w.get("fix") for w in writes(root, "/" + LAUNCHER)]
    assert fixes == [None, True], "the Fix's apply is journaled as a fix"

    code, preview, _ = undo_all(root, "--dry-run")
    assert code == 0, preview
    assert file_lines(said(preview), "/" + LAUNCHER) == ["keep", "remove"], preview
    code, out, err = undo_all(root, "--yes")
    assert code == 0, out + err
    assert file_lines(did(out), "/" + LAUNCHER) == ["keep", "remove"], out
    # Every file the dry run named, the run did the same to (in the same order).
    assert did(out) == said(preview), (preview, out)
    assert not launcher.exists(), "the drift came back"
    assert system_state(root) == before, out
    fault.saw(f"exit {code}; fixes {fixes}; launcher.toml removed; the run did as the dry run said")


async def test_tui_fix_of_managed_settings_then_undo_all_keeps_them_as_before(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "managed settings already as planned; allowUnsandboxedCommands: true by hand; the "
        "TUI audit's Fix re-applies; --undo --all --dry-run, then --undo --all --yes",
        "the Fix is journaled as a fix; the managed settings end as before the first apply "
        "(not with the drift); exit 0; the dry run named the same steps",
    )
    planned = managed_settings_already_as_planned(root)
    before = system_state(root)

    apply(root)
    assert writes(root, "/" + MANAGED) == [], "already as planned: nothing written"
    planned_lines = [e for e in journal(root) if e["op"] == "planned"]
    assert "/" + MANAGED in [e["target"] for e in planned_lines], "its before-image is known"
    drift = json.loads(planned)
    drift["sandbox"]["allowUnsandboxedCommands"] = True
    (root / MANAGED).write_text(json.dumps(drift))

    await fix_in_the_tui(root, "managed-settings.json")
    assert (root / MANAGED).read_bytes() == planned, "the Fix put back the planned settings"
    fixes = [w.get("fix") for w in writes(root, "/" + MANAGED)]
    assert fixes == [True], "the Fix's apply is journaled as a fix"

    code, preview, _ = undo_all(root, "--dry-run")
    assert code == 0, preview
    assert file_lines(said(preview), "/" + MANAGED) == ["keep"], preview
    code, out, err = undo_all(root, "--yes")
    assert code == 0, out + err
    assert file_lines(did(out), "/" + MANAGED) == ["keep"], out
    assert did(out) == said(preview), (preview, out)
    assert (root / MANAGED).read_bytes() == planned, "the drift came back"
    assert system_state(root) == before, out
    fault.saw(f"exit {code}; fixes {fixes}; managed settings as before; dry run = run")


def test_undo_all_dry_run_of_two_applies_names_what_the_run_does_to_the_shared_files(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "two applies of one setup (both rely on root's git include and the protected git "
        "file); --undo --all --dry-run, then --undo --all --yes",
        "the dry run says of each shared file what the run then does (kept by the newer "
        "apply's undo, removed by the first's); the tree as before the first apply",
    )
    before = system_state(root)
    apply(root)
    done = run_cli(
        "--headless", "--root", str(root), "--yes", "--allow-domain", "example.com"
    )  # a second apply of the saved setup
    assert done.returncode == 0, done.stdout + done.stderr
    code, preview, _ = undo_all(root, "--dry-run")
    assert code == 0, preview
    for shared in ("/root/.gitconfig", "/etc/sandbox-setup/git-protected.gitconfig"):
        assert file_lines(said(preview), shared) == ["keep", "remove"], preview
    code, out, err = undo_all(root, "--yes")
    assert code == 0, out + err
    assert did(out) == said(preview), (preview, out)
    assert system_state(root) == before, out
    fault.saw(f"exit {code}; the shared files: keep, then remove, in the dry run and the run")
