"""Drift is never restored (docs/design.md invariant 18): an apply that replaced drift is
journaled as a fix; ``--undo --all`` keeps the fixed value and returns each file to its
state before the first apply that planned it; its ``--dry-run`` prints what it then does.

- Managed settings already as planned at the first apply; someone sets
  ``sandbox.allowUnsandboxedCommands: true`` by hand; the headless apply fixes it;
  ``--undo --all`` ends with the file as before the first apply (not with the drift).
- The same with ``network = "host"`` put into launcher.toml by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import MANAGED, system_state
from tests.faults.conftest import FaultRow
from tests.faults.drift_fixtures import (
    LAUNCHER,
    apply,
    drift_root,
    managed_settings_already_as_planned,
    undo_all,
    writes,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    with drift_root(tmp_path) as made:
        yield made


def test_undo_all_keeps_the_fixed_managed_settings_as_before_the_first_apply(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "managed settings already as planned; allowUnsandboxedCommands: true by hand; the "
        "headless apply fixes it; --undo --all",
        "the file ends as before the first apply (not with the drift); exit 0; the dry run "
        "said so first",
    )
    planned = managed_settings_already_as_planned(root)
    before = system_state(root)

    apply(root)
    assert writes(root, "/" + MANAGED) == [], "already as planned: nothing written"
    drift = json.loads(planned)
    drift["sandbox"]["allowUnsandboxedCommands"] = True
    (root / MANAGED).write_text(json.dumps(drift))
    apply(root)  # the audit's fix
    assert (root / MANAGED).read_bytes() == planned
    fixes = [w.get("fix") for w in writes(root, "/" + MANAGED)]

    code, preview, _ = undo_all(root, "--dry-run")
    assert code == 0, preview
    assert f"keep /{MANAGED} as that apply left it: it replaced drift" in preview, preview
    code, out, err = undo_all(root, "--yes")
    assert code == 0, out + err
    assert f"kept /{MANAGED} as that apply left it" in out, out
    assert (root / MANAGED).read_bytes() == planned, "the drift came back"
    assert system_state(root) == before, out
    assert fixes == [True], "the apply that replaced the drift is journaled as a fix"
    fault.saw(f"exit {code}; managed settings as before the first apply; the dry run said keep")


def test_undo_all_removes_a_launcher_config_whose_network_host_drift_was_fixed(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        'network = "host" put into launcher.toml by hand; the headless apply fixes it; '
        "--undo --all",
        "launcher.toml removed as before the first apply (never put back with the drift); "
        "exit 0; the dry run printed the same",
    )
    before = system_state(root)
    apply(root)
    launcher = root / LAUNCHER
    text = launcher.read_text()
    assert 'network = "allowlist"' in text
    launcher.write_text(text.replace('network = "allowlist"', 'network = "host"'))
    apply(root)
    assert 'network = "allowlist"' in launcher.read_text()
    fixes = [w.get("fix") for w in writes(root, "/" + LAUNCHER)]

    code, preview, _ = undo_all(root, "--dry-run")
    assert code == 0, preview
    assert f"keep /{LAUNCHER} as that apply left it" in preview, preview
    assert f"remove /{LAUNCHER}" in preview, preview
    code, out, err = undo_all(root, "--yes")
    assert code == 0, out + err
    assert f"removed /{LAUNCHER}" in out, out
    assert not launcher.exists()
    assert system_state(root) == before, out
    assert fixes == [None, True], "the second apply is journaled as a fix"
    fault.saw(f"exit {code}; launcher.toml removed; the dry run said keep, then remove")
