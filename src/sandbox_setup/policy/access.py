"""Can a user read (or search, or write) a file? The kernel's rule, as a pure function.

:func:`can_access` follows ``acl(5)``'s access check algorithm over a file's owner,
group, mode and POSIX access ACL: root passes; the owner gets the owner bits; a
named-user entry, else the owning group and named-group entries (any of them
granting, all limited by the mask), else "other". :func:`parse_acl` reads the
``system.posix_acl_access`` xattr (``linux/posix_acl_xattr.h``). Callers gather the
facts (under ``--root`` from the tree's own files); nothing here touches the disk.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

READ, WRITE, EXECUTE = 4, 2, 1
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20

AclEntry = tuple[int, int, int]  # (tag, perm, id)


def parse_acl(raw: bytes | None) -> list[AclEntry]:
    """The entries of an access ACL xattr: a u32 version, then (u16 tag, u16 perm,
    u32 id) little-endian; [] for none."""
    if not raw:
        return []
    return [struct.unpack_from("<HHI", raw, offset) for offset in range(4, len(raw) - 7, 8)]


def can_access(
    uid: int,
    gids: Iterable[int],
    *,
    owner: int,
    group: int,
    mode: int,
    acl: list[AclEntry] | None = None,
    want: int = READ,
) -> bool:
    """Whether ``uid`` (in groups ``gids``) gets the ``want`` bits (READ, WRITE,
    EXECUTE, or'd) on a file with this owner, group, mode and access ACL."""
    if uid == 0:
        return True
    groups = set(gids)
    if uid == owner:
        return (mode >> 6) & want == want
    if not acl:
        if group in groups:
            return (mode >> 3) & want == want
        return mode & want == want
    mask = next((perm for tag, perm, _ in acl if tag == _MASK), 0o7)
    for tag, perm, ident in acl:
        if tag == _USER and ident == uid:
            return perm & mask & want == want
    matched = False
    for tag, perm, ident in acl:
        if (tag == _GROUP_OBJ and group in groups) or (tag == _GROUP and ident in groups):
            matched = True
            if perm & mask & want == want:
                return True
    if matched:
        return False
    return any(tag == _OTHER and perm & want == want for tag, perm, _ in acl)
