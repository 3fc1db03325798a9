"""System directories that must never become a workspace or a writable bind.

One list for everyone who refuses them: the wizard (:mod:`sandbox_setup.configure.answers`, the
TUI's validation) and the launcher, so the launcher always refuses at least
what the wizard refuses.

* :data:`SYSTEM_DIRS`: refused themselves (a workspace gets recursive ACLs and
  setgid bits; a writable bind of ``/tmp`` or ``/home`` hands over everyone's files);
* :data:`SYSTEM_TREES`: refused with everything under them.
"""

from __future__ import annotations

from pathlib import PurePosixPath

SYSTEM_DIRS = frozenset(
    PurePosixPath(p)
    for p in (
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
        "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp",
        "/usr", "/var", "/var/lib", "/var/tmp", "/var/log",
    )
)  # fmt: skip
SYSTEM_TREES = tuple(
    PurePosixPath(p)
    for p in ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run",
              "/sbin", "/sys", "/usr", "/var/cache", "/var/lib", "/var/log", "/var/mail",
              "/var/spool")
)  # fmt: skip


def is_system_dir(path: PurePosixPath) -> bool:
    """The wizard's rule: one of :data:`SYSTEM_DIRS`, or inside a :data:`SYSTEM_TREES` entry."""
    return path in SYSTEM_DIRS or any(tree in path.parents for tree in SYSTEM_TREES)


def bind_conflict(path: PurePosixPath | str) -> PurePosixPath | None:
    """The system directory a writable bind at ``path`` would expose or hide, if any.

    That is :func:`is_system_dir`, plus any directory that contains a system
    directory (a bind over it would cover that directory inside the sandbox).
    A relative path or one with ``..`` is judged as ``/``: it is never a place
    of its own.
    """
    given = PurePosixPath(path)
    if not given.is_absolute() or ".." in given.parts:
        return PurePosixPath("/")
    if given in SYSTEM_DIRS:
        return given
    parents = set(given.parents)
    for tree in SYSTEM_TREES:
        if tree in parents:
            return tree
    for system, above in _SYSTEM_DIRS_ABOVE:
        if given in above:
            return system
    return None


# bind_conflict's last rule, ordered as it was always asked: each system directory
# (sorted) with the directories above it.
_SYSTEM_DIRS_ABOVE = tuple((system, frozenset(system.parents)) for system in sorted(SYSTEM_DIRS))
