"""The host record's ``left`` part (configure/ledger.py): read strictly, written back as
read, and the undo preview's view of the record (:func:`as_found_by_undo_of`)."""

from __future__ import annotations

import json

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.configure.ledger import (
    HOST_FORMAT,
    HostRecord,
    HostSetup,
    _render_host_record,
    as_found_by_undo_of,
    parse_host_record,
)
from sandbox_setup.configure.outcome import LeftWhy

STATE = "/root/.local/state/sandbox-setup"
SHA = "a" * 64
COPY = f"/etc/sandbox-setup/before/{SHA}"
BEFORE = {"sha256": SHA, "copy": COPY, "mode": 384, "uid": 0, "gid": 0}


def _doc(left: object) -> bytes:
    return json.dumps({"format": HOST_FORMAT, "setups": {}, "shared": {}, "left": left}).encode()


def test_a_left_file_is_read_typed_and_written_back_the_same() -> None:
    left = {
        "/root/.gitconfig": {
            "setup": STATE, "txn": "T1", "why": "shared-changed", "sha256": SHA,
            "before": BEFORE, "backup": None,
        },
        "/root/.config/sandbox-setup/launcher.toml": {
            "setup": STATE, "txn": "T2", "why": "changed", "sha256": None, "before": None,
            "backup": f"{STATE}/backups/T2/002-launcher.toml",
        },
    }  # fmt: skip
    record = parse_host_record(_doc(left), "setups.json")
    shared = record.left["/root/.gitconfig"]
    assert shared.why is LeftWhy.SHARED_CHANGED and shared.before is not None
    assert shared.before.copy == BEFORE["copy"] and shared.setup == STATE
    changed = record.left["/root/.config/sandbox-setup/launcher.toml"]
    assert changed.why is LeftWhy.CHANGED and changed.before is None
    assert changed.backup == left["/root/.config/sandbox-setup/launcher.toml"]["backup"]
    assert json.loads(_render_host_record(record))["left"] == left
    assert parse_host_record(_render_host_record(record), "again") == record


def test_a_record_of_the_landed_version_has_nothing_left() -> None:
    doc = json.dumps({"format": HOST_FORMAT, "setups": {}, "shared": {}}).encode()
    record = parse_host_record(doc, "setups.json")
    assert record.left == {}
    assert "left" not in json.loads(_render_host_record(record))


@pytest.mark.parametrize(
    "entry",
    [
        "changed",
        {"setup": STATE, "txn": "T1", "why": "forgotten", "sha256": None},
        {"setup": STATE, "why": "changed", "sha256": None},
        {"setup": STATE, "txn": "T1", "why": "changed", "sha256": 7},
        {"setup": STATE, "txn": "T1", "why": "changed", "sha256": None, "backup": ["x"]},
        {
            "setup": STATE, "txn": "T1", "why": "shared-changed", "sha256": None,
            "before": {**BEFORE, "copy": "/etc/shadow"},
        },
    ],
)  # fmt: skip
def test_a_malformed_left_entry_is_refused_naming_the_record(entry: object) -> None:
    with pytest.raises(InputError, match=r"setups\.json: not a valid host record"):
        parse_host_record(_doc({"/root/.gitconfig": entry}), "setups.json")


def test_the_undo_of_an_older_apply_finds_the_later_ones_released() -> None:
    setup = HostSetup(
        "root", "/root/.config/sandbox-setup/launcher.toml", ("T1", "T2", "T3"),
        {"/root/.gitconfig": ("T1", "T3"), "/etc/x": ("T3",)},
    )  # fmt: skip
    record = HostRecord({STATE: setup, "/other": setup}, {})
    assert as_found_by_undo_of(record, STATE, "T3") == record  # the newest: as it is
    first = as_found_by_undo_of(record, STATE, "T1").setups[STATE]
    assert first.applies == ("T1",)
    assert first.relies == {"/root/.gitconfig": ("T1",)}
    assert as_found_by_undo_of(record, STATE, "T1").setups["/other"] == setup
    assert as_found_by_undo_of(record, STATE, "T9") == record  # not this setup's
