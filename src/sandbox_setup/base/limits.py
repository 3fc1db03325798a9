"""Session limits (docs/design.md invariant 10): how many tasks, how much memory, and how
large each of the sandbox's tmpfs mounts may grow.

One value, :class:`Limits`, read from answers.toml and launcher.toml ``[limits]``
and shown in the TUI; the launcher applies it, the audit reports it. Sizes are
written as a number of bytes with an optional K/M/G/T suffix (powers of 1024),
or, for memory, a percentage of the host's RAM (``"50%"``), resolved at launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox_setup.base.errors import InputError

DEFAULT_TASKS = 1024  # processes + threads of one session; Claude and its tools use ~100
DEFAULT_MEMORY = "50%"  # of MemTotal: the host keeps the other half
DEFAULT_TMPFS = "512M"  # each of /tmp, /run and /dev/shm inside the sandbox
MAX_TASKS = 4_194_304  # the kernel's PID_MAX_LIMIT
_SIZE = re.compile(r"^([0-9]+)([KMGT]?)$")
_PERCENT = re.compile(r"^([0-9]{1,3})%$")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
# The largest size: 1024T (1 PiB), beyond any host's memory. Past 2**64 bytes bwrap
# refused the tmpfs (`--size takes a non-zero number of bytes`) only at launch, after
# the apply and a --dry-run had accepted it.
MAX_SIZE = "1024T"


def parse_size(text: str, what: str, *, percent: bool = False) -> str:
    """``text`` checked as a size (``"512M"``; ``"50%"`` when ``percent``), returned
    normalized (uppercase suffix); :class:`InputError` naming ``what`` otherwise."""
    value = text.strip().upper()
    if percent and (match := _PERCENT.match(value)):
        if not 1 <= int(match.group(1)) <= 100:
            raise InputError(f"{what} {text!r}: a percentage must be 1% to 100%")
        return value
    match = _SIZE.match(value)
    if match is None:
        forms = "a size like 512M or 4G" + (", or a percentage like 50%" if percent else "")
        raise InputError(f"{what} {text!r} is not {forms}")
    if int(match.group(1)) == 0:
        raise InputError(f"{what} {text!r} must be more than 0")
    if size_bytes(value) > size_bytes(MAX_SIZE):
        raise InputError(f"{what} {text!r} is too large (at most {MAX_SIZE})")
    return value


def size_bytes(text: str, total: int | None = None) -> int:
    """Bytes of a size from :func:`parse_size`; a percentage needs ``total`` bytes."""
    if text.endswith("%"):
        if total is None:
            raise ValueError("a percentage needs the total")
        return total * int(text[:-1]) // 100
    match = _SIZE.match(text)
    assert match is not None, text
    return int(match.group(1)) * _UNITS[match.group(2)]


def parse_tasks(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} {value!r} must be a whole number of tasks")
    if not 16 <= value <= MAX_TASKS:
        raise InputError(f"{what} {value} is out of range (16 to {MAX_TASKS})")
    return value


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one agent session."""

    tasks: int = DEFAULT_TASKS
    memory: str = DEFAULT_MEMORY
    tmpfs: str = DEFAULT_TMPFS

    @classmethod
    def from_table(cls, table: object, where: str, source: str) -> Limits:
        """A ``[limits]`` table (keys missing: the defaults); errors name the key."""
        if not isinstance(table, dict):
            raise InputError(f"{source}: '{where.rstrip('.')}' must be a table")
        unknown = [k for k in table if k not in ("tasks", "memory", "tmpfs")]
        if unknown:
            raise InputError(
                f"{source}: unknown key '{where}{unknown[0]}' (known: tasks, memory, tmpfs)"
            )
        defaults = cls()
        tasks = table.get("tasks", defaults.tasks)
        memory = table.get("memory", defaults.memory)
        tmpfs = table.get("tmpfs", defaults.tmpfs)
        for key, value in (("memory", memory), ("tmpfs", tmpfs)):
            if not isinstance(value, str):
                raise InputError(f"{source}: key '{where}{key}' must be a string like \"4G\"")
        return cls(
            tasks=parse_tasks(tasks, f"{source}: key '{where}tasks'"),
            memory=parse_size(memory, f"{source}: key '{where}memory'", percent=True),
            tmpfs=parse_size(tmpfs, f"{source}: key '{where}tmpfs'"),
        )

    def to_table(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "memory": self.memory, "tmpfs": self.tmpfs}


def mem_total(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The host's RAM in bytes (``MemTotal``), or None when it cannot be read."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_bytes(limits: Limits, total: int | None) -> int | None:
    """The session's memory limit in bytes (a percentage of ``total``, the host's RAM);
    None when it is a percentage and the RAM is not known."""
    if limits.memory.endswith("%"):
        return None if total is None else size_bytes(limits.memory, total)
    return size_bytes(limits.memory)
