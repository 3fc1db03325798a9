"""The host-wide record of the workspaces' trusted state (docs/design.md invariant 8): which
paths are one family, what a workspace inherits from its family, and the record read
back exactly or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.boundary.scan_model import Mark
from sandbox_setup.boundary.trust_record import (
    RECORD,
    HostRecord,
    SessionEntry,
    Trusted,
    overlaps,
)


def mark(ino: int) -> Mark:
    return Mark("file", 1, ino, 0o100644, 3, 10, 10, "d", ("core.fsmonitor=x",))


@pytest.mark.parametrize(
    ("a", "b", "one"),
    [
        ("/srv/app", "/srv/app", True),
        ("/srv/app", "/srv/app/sub", True),
        ("/srv/app/sub/", "/srv/app", True),
        ("/srv/app", "/srv/apple", False),
        ("/srv/a", "/srv/b", False),
        ("/", "/srv", True),
    ],
)
def test_nested_paths_are_one_family(a: str, b: str, one: bool) -> None:
    assert overlaps(a, b) is one and overlaps(b, a) is one


def test_a_workspace_inside_a_running_one_inherits_its_part(tmp_path: Path) -> None:
    record = HostRecord(tmp_path)
    record.trusted["/srv/app"] = Trusted(
        {"sub/.git/config": mark(1), ".git/config": mark(2)}, settled=False
    )
    assert record.marks_for("/srv/app/sub") == {".git/config": mark(1)}
    assert record.marks_for("/srv/other") is None


def test_a_workspace_around_a_running_one_takes_its_part_from_it(tmp_path: Path) -> None:
    record = HostRecord(tmp_path)
    record.trusted["/srv/app/sub"] = Trusted({".git/config": mark(1)}, settled=False)
    now = {".git/config": mark(2), "sub/.git/config": mark(9), "sub/x/.git/HEAD": mark(8)}
    # Outside the running part: as it is now; inside: the running part's trusted state.
    assert record.marks_for("/srv/app", now) == {
        ".git/config": mark(2),
        "sub/.git/config": mark(1),
    }


def test_a_settled_state_is_not_inherited_by_a_new_run(tmp_path: Path) -> None:
    record = HostRecord(tmp_path)
    record.trusted["/srv/app"] = Trusted({".git/config": mark(1)}, settled=True)
    assert record.marks_for("/srv/app") is None
    assert record.marks_for("/srv/app", running=False) == {".git/config": mark(1)}
    assert record.unsettled_family("/srv/app") == []
    record.trusted["/srv/app/sub"] = Trusted({}, settled=False)
    assert record.unsettled_family("/srv/app") == ["/srv/app/sub"]


def test_the_record_reads_back_as_it_was_written(tmp_path: Path) -> None:
    record = HostRecord(tmp_path)
    record.sessions["1-2"] = SessionEntry(
        1, "2", ["/srv/app"], {"/srv/app": {"binds": [[".bashrc", "empty-dir", "x"]]}}
    )
    record.trusted["/srv/app"] = Trusted({".git/config": mark(1)}, settled=False, since="t")
    record.save()
    assert os.stat(tmp_path / RECORD).st_mode & 0o777 == 0o600
    again = HostRecord.load(tmp_path)
    assert again.sessions == record.sessions and again.trusted == record.trusted
    # pid 1's start time is not "2": the session is not taken for a live one.
    assert again.sessions["1-2"].dead and not again.sessions["1-2"].alive


def test_a_record_others_can_write_or_that_is_not_one_is_refused(tmp_path: Path) -> None:
    HostRecord(tmp_path).save()
    os.chmod(tmp_path / RECORD, 0o666)
    with pytest.raises(RefusedError, match="chmod go-w"):
        HostRecord.load(tmp_path)
    os.chmod(tmp_path / RECORD, 0o600)
    (tmp_path / RECORD).write_text('{"format": "something else"}')
    with pytest.raises(RefusedError, match="not one this version reads"):
        HostRecord.load(tmp_path)
    (tmp_path / RECORD).unlink()
    assert HostRecord.load(tmp_path).sessions == {}
