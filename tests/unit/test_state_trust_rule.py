"""The state directory's own judge (policy.trust.state_dir_problems): the directories
above it as on the way to any file, the directory itself with no sticky exception."""

from __future__ import annotations

import stat

import pytest

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.pathfacts import PathFacts
from sandbox_setup.policy.trust import refuse, state_dir_problems

OWNERS = frozenset({0, 1000})


def _dir(shown: str, perms: int, uid: int = 0) -> PathFacts:
    return PathFacts(shown, True, uid, uid, stat.S_IFDIR | perms)


@pytest.mark.parametrize(
    ("perms", "uid", "kinds"),
    [
        (0o700, 0, []),
        (0o755, 1000, []),
        (0o777, 0, ["writable"]),
        (0o1777, 0, ["writable"]),  # sticky: others may still create a journal there
        (0o770, 0, ["writable"]),
        (0o700, 65534, ["owner"]),
    ],
)
def test_the_state_directory_itself(perms: int, uid: int, kinds: list[str]) -> None:
    leaf = _dir("/s/state", perms, uid)
    found = state_dir_problems(leaf, [_dir("/", 0o755)], OWNERS)
    assert [p.kind for p in found] == kinds
    assert all(p.leaf for p in found)


def test_a_sticky_root_directory_above_it_is_accepted_as_on_any_path() -> None:
    found = state_dir_problems(_dir("/tmp/s", 0o700), [_dir("/tmp", 0o1777)], OWNERS)
    assert found == []


def test_a_missing_state_directory_is_judged_by_its_parents_only() -> None:
    missing = PathFacts("/home/x/state", False)
    assert state_dir_problems(missing, [_dir("/home/x", 0o755)], OWNERS) == []
    found = state_dir_problems(missing, [_dir("/home/x", 0o777)], OWNERS)
    assert [(p.kind, p.leaf) for p in found] == [("writable", False)]


def test_the_refusal_names_the_directory_and_the_fix() -> None:
    found = state_dir_problems(_dir("/s/state", 0o1777), [], OWNERS)
    with pytest.raises(RefusedError) as raised:
        refuse(found, "state directory")
    text = str(raised.value)
    assert "state directory: /s/state is group- or world-writable (mode 1777)" in text
    assert "chmod go-w /s/state" in text and "nothing was changed" in text
    refuse([], "state directory")  # no problem: no refusal
