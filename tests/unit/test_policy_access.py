"""Table tests of :func:`sandbox_setup.policy.access.can_access` (acl(5)'s access check)."""

from __future__ import annotations

import struct

import pytest

from sandbox_setup.policy.access import EXECUTE, READ, WRITE, can_access, parse_acl

AGENT, AGENT_GID, WS_GID = 1000, 1000, 1001
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


def acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


@pytest.mark.parametrize(
    ("owner", "group", "mode", "entries", "want", "expected"),
    [
        (0, 0, 0o644, None, READ, True),  # other may read
        (0, 0, 0o640, None, READ, False),  # root's group only
        (0, 0, 0o600, None, READ, False),
        (0, 0, 0o000, None, READ, False),
        (AGENT, AGENT_GID, 0o600, None, READ, True),  # the owner's bits
        (AGENT, AGENT_GID, 0o000, None, READ, False),  # owner bits deny even if other allows
        (AGENT, AGENT_GID, 0o007, None, READ, False),
        (0, WS_GID, 0o750, None, EXECUTE, True),  # through a supplementary group
        (0, WS_GID, 0o705, None, EXECUTE, False),  # the group class denies, other is not asked
        (0, 0, 0o711, None, EXECUTE, True),
        (0, 0, 0o755, None, WRITE, False),
        # ACLs: a named user entry, limited by the mask
        (0, 0, 0o600, [(USER_OBJ, 6, 0), (USER, 4, AGENT), (GROUP_OBJ, 0, 0), (MASK, 4, 0),
                       (OTHER, 0, 0)], READ, True),
        (0, 0, 0o600, [(USER_OBJ, 6, 0), (USER, 4, AGENT), (GROUP_OBJ, 0, 0), (MASK, 0, 0),
                       (OTHER, 4, 0)], READ, False),
        # a named group grants; the owning group matching but denying does not stop it
        (0, AGENT_GID, 0o600, [(USER_OBJ, 6, 0), (GROUP_OBJ, 0, 0), (GROUP, 4, WS_GID),
                               (MASK, 4, 0), (OTHER, 0, 0)], READ, True),
        # a matching group that denies: other is not asked
        (0, WS_GID, 0o604, [(USER_OBJ, 6, 0), (GROUP_OBJ, 0, 0), (MASK, 7, 0),
                            (OTHER, 4, 0)], READ, False),
    ],
)  # fmt: skip
def test_can_access(
    owner: int,
    group: int,
    mode: int,
    entries: list[tuple[int, int, int]] | None,
    want: int,
    expected: bool,
) -> None:
    parsed = parse_acl(acl(*entries)) if entries else None
    assert (
        can_access(
            AGENT, {AGENT_GID, WS_GID}, owner=owner, group=group, mode=mode, acl=parsed,
            want=want,
        )
        is expected
    )  # fmt: skip


def test_root_reads_everything() -> None:
    assert can_access(0, set(), owner=5, group=5, mode=0, want=READ)
