"""Reading /proc/self/mountinfo: what covers /proc, and whether /proc is read-only.

The kernel refuses a fresh procfs in a child user namespace unless the existing
/proc is "fully visible": nothing may be mounted over its files or non-empty
directories (``mount_too_revealing``), and it must not be locked read-only.
Container runtimes mask paths like /proc/kcore (bind of /dev/null, tmpfs) and bind
/proc/sys etc. read-only; bwrap started by root covers /proc/sys, /proc/irq,
/proc/bus... read-only itself. Each leaves mounts here that we can name.
"""

from __future__ import annotations

from dataclasses import dataclass

# Mount points under /proc that are empty directories made for a mount: a mount
# there does not hide anything, so the kernel still allows a fresh procfs.
HARMLESS_PROC_MOUNTS = frozenset({"/proc/sys/fs/binfmt_misc"})


@dataclass(frozen=True)
class Mount:
    """One line of mountinfo (the fields we judge)."""

    mount_id: int
    parent_id: int
    root: str  # the path inside the source filesystem that is mounted
    mount_point: str
    options: tuple[str, ...]
    fstype: str
    source: str

    @property
    def readonly(self) -> bool:
        return "ro" in self.options


@dataclass(frozen=True)
class ProcCover:
    """A mount over something inside /proc."""

    path: str
    kind: str  # "masked" (hidden behind /dev/null or tmpfs) or "read-only" (ro bind)
    fstype: str


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> tuple[Mount, ...]:
    """Parse /proc/PID/mountinfo; malformed lines are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if sep < 6 or len(fields) < sep + 3:
            continue
        try:
            mount_id, parent_id = int(fields[0]), int(fields[1])
        except ValueError:
            continue
        mounts.append(
            Mount(
                mount_id=mount_id,
                parent_id=parent_id,
                root=_unescape(fields[3]),
                mount_point=_unescape(fields[4]),
                options=tuple(fields[5].split(",")),
                fstype=fields[sep + 1],
                source=_unescape(fields[sep + 2]),
            )
        )
    return tuple(mounts)


def top_proc_mount(mounts: tuple[Mount, ...]) -> Mount | None:
    """The procfs mount processes see at /proc (the last one stacked there)."""
    found = None
    for mount in mounts:
        if mount.mount_point == "/proc" and mount.fstype == "proc":
            found = mount
    return found


def proc_covers(mounts: tuple[Mount, ...]) -> tuple[ProcCover, ...]:
    """Mounts that hide or lock something inside the visible /proc."""
    top = top_proc_mount(mounts)
    if top is None:
        return ()
    # Only mounts stacked on the visible /proc count (not ones under an older
    # /proc that a later mount hides, as bwrap leaves behind).
    inside = {top.mount_id}
    covers = []
    for mount in mounts:
        if mount.parent_id not in inside or not mount.mount_point.startswith("/proc/"):
            continue
        inside.add(mount.mount_id)
        if mount.mount_point in HARMLESS_PROC_MOUNTS:
            continue
        # a proc bind over a /proc path locks it read-only; anything else hides it
        kind = ("read-only" if mount.readonly else "bind") if mount.fstype == "proc" else "masked"
        covers.append(ProcCover(mount.mount_point, kind, mount.fstype))
    return tuple(covers)


def proc_locked_readonly(mounts: tuple[Mount, ...]) -> bool:
    """Is the visible /proc itself read-only (a fresh rw procfs would be refused)?"""
    top = top_proc_mount(mounts)
    return top is not None and top.readonly


def summarize_covers(covers: tuple[ProcCover, ...], limit: int = 8) -> str:
    """``/proc/kcore, /proc/keys (masked); /proc/sys (read-only)``, shortened."""
    parts = []
    for kind in ("masked", "read-only", "bind"):
        paths = [c.path for c in covers if c.kind == kind]
        if paths:
            shown = ", ".join(paths[:limit]) + (
                f" +{len(paths) - limit} more" if len(paths) > limit else ""
            )
            parts.append(f"{shown} ({kind})")
    return "; ".join(parts)
