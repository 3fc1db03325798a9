"""Facts read from files, gathered once per run.

Everything here is a plain read: /proc/self/status, /proc/self/mountinfo, the
sysctls under /proc/sys and container markers describe the *running* system and
are read under ``system_root``; AppArmor profiles are configuration and are read
under ``root`` (the tree being configured). Both default to ``/``; unit tests
point them at a fake tree. The judging functions take the resulting values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_setup.base.regular_files import read_regular_or_none
from sandbox_setup.checks.mounts import Mount, parse_mountinfo

CAP_SETFCAP = 31  # linux/capability.h

SYSCTLS = (
    "user.max_user_namespaces",
    "kernel.unprivileged_userns_clone",
    "kernel.apparmor_restrict_unprivileged_userns",
    "kernel.apparmor_restrict_unprivileged_unconfined",
    "dev.tty.legacy_tiocsti",
    "kernel.seccomp.actions_avail",
)

# Files whose presence or content says which container runtime we are in.
MARKER_FILES = (
    "/.dockerenv",
    "/run/.containerenv",
    "/run/systemd/container",
    "/proc/1/cgroup",
    "/proc/1/comm",
    "/proc/1/environ",
    "/proc/version",
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
    "/dev/lxd/sock",
)
# The operator's variables the checks judge: the container hints, and the ones that
# make Claude Code skip its root guard (claude.root_guard).
JUDGED_VARIABLES = (
    "KUBERNETES_SERVICE_HOST",
    "container",
    "IS_SANDBOX",
    "CLAUDE_CODE_BUBBLEWRAP",
)


@dataclass(frozen=True)
class HostFacts:
    """What the files of one host say; input of the pure judging functions."""

    status: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    sysctl: dict[str, str | None] = field(default_factory=dict)
    bwrap_profiles: tuple[str, ...] = ()  # AppArmor profiles that let bwrap use userns
    # ... and of those, the ones that confine bwrap's children to a profile without
    # capabilities (Ubuntu's bwrap-userns-restrict: ``unpriv_bwrap``)
    bwrap_restricting_profiles: tuple[str, ...] = ()
    markers: dict[str, str] = field(default_factory=dict)  # marker path -> content
    env: dict[str, str] = field(default_factory=dict)  # the few variables we judge

    def sysctl_int(self, name: str) -> int | None:
        value = self.sysctl.get(name)
        if value is None:
            return None
        try:
            return int(value.split()[0])
        except (ValueError, IndexError):
            return None

    @property
    def seccomp_mode(self) -> int | None:
        value = self.status.get("Seccomp")
        return int(value) if value and value.isdigit() else None

    @property
    def no_new_privs(self) -> bool:
        return self.status.get("NoNewPrivs", "0").strip() == "1"

    def has_bounding_cap(self, cap: int) -> bool:
        """Is ``cap`` in this process's capability bounding set (``CapBnd``)? True when
        the status does not say (a kernel without it bounds nothing)."""
        value = self.status.get("CapBnd")
        try:
            return value is None or bool(int(value, 16) >> cap & 1)
        except ValueError:
            return True


def read_text(root: Path, path: str) -> str | None:
    """Contents of the target path ``path`` under ``root``, or None if unreadable or
    not a regular file (bounded: a FIFO or a device there never blocks the checks)."""
    try:
        return read_regular_or_none(root / path.lstrip("/"))
    except ValueError:
        return None


def parse_status(text: str) -> dict[str, str]:
    """``/proc/PID/status`` as a dict (``{"Seccomp": "2", "NoNewPrivs": "1", ...}``)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def read_sysctl(root: Path, name: str) -> str | None:
    text = read_text(root, "/proc/sys/" + name.replace(".", "/"))
    return None if text is None else text.strip()


def profile_allows_bwrap_userns(text: str) -> bool:
    """Does an AppArmor profile attach to /usr/bin/bwrap and grant ``userns``?"""
    names_bwrap = "/usr/bin/bwrap" in text or "profile bwrap " in text
    grants = any(
        line.strip().rstrip(",").strip() in ("userns", "allow userns") for line in text.splitlines()
    )
    return names_bwrap and grants


def profile_restricts_bwrap_children(text: str) -> bool:
    """Ubuntu's ``bwrap-userns-restrict``: bwrap may use user namespaces, but what it
    runs is stacked with ``unpriv_bwrap``, which grants no capabilities (so a nested
    sandbox, or Claude's seccomp helper, gets none in its own namespace)."""
    return profile_allows_bwrap_userns(text) and "unpriv_bwrap" in text


def _apparmor_profiles(root: Path) -> list[tuple[str, str]]:
    directory = root / "etc/apparmor.d"
    try:
        entries = sorted(p for p in directory.iterdir() if p.is_file())
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            text = read_regular_or_none(entry)
        except ValueError:
            continue
        if text is not None:
            found.append(("/etc/apparmor.d/" + entry.name, text))
    return found


def find_bwrap_profiles(root: Path) -> tuple[str, ...]:
    return tuple(p for p, text in _apparmor_profiles(root) if profile_allows_bwrap_userns(text))


def find_bwrap_restricting_profiles(root: Path) -> tuple[str, ...]:
    profiles = _apparmor_profiles(root)
    return tuple(p for p, text in profiles if profile_restricts_bwrap_children(text))


def gather_host_facts(
    root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    *,
    system_root: Path | None = None,
) -> HostFacts:
    """Facts of the running system (under ``system_root``, default ``root``) and
    the configuration under ``root``."""
    env = os.environ if env is None else env
    system = root if system_root is None else system_root
    markers = {}
    for path in MARKER_FILES:
        text = read_text(system, path)
        if text is None and (system / path.lstrip("/")).exists():
            text = ""  # present but unreadable (a socket, /proc/1/environ of another uid)
        if text is not None:
            markers[path] = text.replace("\0", "\n")
    return HostFacts(
        status=parse_status(read_text(system, "/proc/self/status") or ""),
        mounts=parse_mountinfo(read_text(system, "/proc/self/mountinfo") or ""),
        sysctl={name: read_sysctl(system, name) for name in SYSCTLS},
        bwrap_profiles=find_bwrap_profiles(root),
        bwrap_restricting_profiles=find_bwrap_restricting_profiles(root),
        markers=markers,
        env={k: env[k] for k in JUDGED_VARIABLES if k in env},
    )
