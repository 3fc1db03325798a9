"""The system directories a writable bind must not expose or hide
(sandbox_setup.policy.system_dirs):
bind_conflict answers as its rule reads, written out plainly here, for every path near one."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from sandbox_setup.policy.system_dirs import SYSTEM_DIRS, SYSTEM_TREES, bind_conflict


def _as_the_rule_reads(path: str) -> PurePosixPath | None:
    given = PurePosixPath(path)
    if not given.is_absolute() or ".." in given.parts:
        return PurePosixPath("/")
    if given in SYSTEM_DIRS:
        return given
    for tree in SYSTEM_TREES:
        if tree in given.parents:
            return tree
    for system in sorted(SYSTEM_DIRS):
        if given in system.parents:
            return system
    return None


NEAR = sorted(
    {str(d) for d in SYSTEM_DIRS}
    | {str(t) for t in SYSTEM_TREES}
    | {f"{d}/x" for d in SYSTEM_DIRS}
    | {f"{d}/x/y" for d in SYSTEM_TREES}
    | {f"{d}x" for d in SYSTEM_DIRS if str(d) != "/"}
    | {"/srv/project", "/opt/x/y", "/home/a", "/var/tmp/x", "/var", "/usr/local", "rel", "/a/../b"}
)


@pytest.mark.parametrize("path", NEAR)
def test_bind_conflict_is_the_rule(path: str) -> None:
    assert bind_conflict(path) == _as_the_rule_reads(path)


def test_bind_conflict_examples() -> None:
    assert bind_conflict("/srv/project") is None
    assert bind_conflict("/var") == PurePosixPath("/var")
    assert bind_conflict("/usr/local/x") == PurePosixPath("/usr")
    assert bind_conflict("/var/lib/x") == PurePosixPath("/var/lib")
    assert bind_conflict("relative") == PurePosixPath("/")
