"""The suite's view of a host where sandbox-setup is set up and in use.

Such a host has ``/etc/claude-code/managed-settings.json`` (and maybe
``managed-settings.d/``), which every Claude Code on it reads, the tests' own
included: a host's ``sandbox.enabled = false`` would turn the sandbox off for an
e2e test that means it on. And root's state directory changes whenever a session
runs on the host, which may be while the suite runs.

So, as root, the suite runs in a mount namespace of its own, made once at start
(:func:`enter_private_view`, before any thread), where

- ``/etc/claude-code`` is an empty tmpfs: a Claude the tests run reads only the
  settings the test gives it (:func:`tests.claude_run.with_managed_settings` mounts a
  test's own over it);
- the host's state directory is a read-only bind of itself: nothing the suite runs
  can change it (a write fails, loudly, in the test that tried), while a session on
  the host keeps writing to it outside this namespace;
- the host's config directory (``launcher.toml``, ``answers.toml``) is an empty,
  read-only tmpfs: a live ``--check`` in a test probes as the stand-in agent, not as
  the host's configured one, and no test can write the host's setup;
- ``/var/lib/sandbox-setup`` (the host-wide trusted state of the workspaces, which
  every launch as root reads and writes whatever its ``XDG_STATE_HOME``) is an empty
  tmpfs of the suite's own: the suite's sessions neither see the host's sessions nor
  write the host's record. Where the host has no such directory (nothing may be made
  on the host), ``/var/lib`` itself is a tmpfs with each of its entries bound back.

The mounts are private: the host sees none of them, and they end with the suite.
``SANDBOX_SETUP_TEST_HOST_VIEW=shared`` skips this (the tests of this module use it
to show what the suite meets without it).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLAUDE_MANAGED_DIR = Path("/etc/claude-code")
VAR_LIB = Path("/var/lib")
HOST_RECORD_DIR = VAR_LIB / "sandbox-setup"


@dataclass(frozen=True)
class HostView:
    """What :func:`enter_private_view` did: whether the suite has a namespace of its
    own, and whether the state directory is read-only in it."""

    private: bool
    state_read_only: bool
    config_hidden: bool = False
    # /var/lib/sandbox-setup is the suite's own (a tmpfs): conftest empties it before
    # each test module, as each had state directories of its own before trust was the
    # host's.
    record_private: bool = False


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=30)


def enter_private_view(state_dir: Path, config_dir: Path | None = None) -> HostView:
    """Move this process into a mount namespace of its own (root only) with the host's
    Claude settings and ``config_dir`` hidden and ``state_dir`` read-only; see the
    module docstring."""
    if os.geteuid() != 0 or os.environ.get("SANDBOX_SETUP_TEST_HOST_VIEW") == "shared":
        return HostView(private=False, state_read_only=False)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) for the suite's host view")
    # Nothing mounted from here on reaches the host.
    _mount("--make-rprivate", "/")
    if CLAUDE_MANAGED_DIR.is_dir():
        _mount("-t", "tmpfs", "-o", "mode=0755,size=1m", "tmpfs", str(CLAUDE_MANAGED_DIR))
    read_only = False
    if state_dir.is_dir():
        _mount("--bind", str(state_dir), str(state_dir))
        _mount("-o", "remount,bind,ro", str(state_dir))
        read_only = True
    hidden = False
    if config_dir is not None and config_dir.is_dir():
        _mount("-t", "tmpfs", "-o", "ro,mode=0700,size=1m", "tmpfs", str(config_dir))
        hidden = True
    record = _hide_host_record()
    return HostView(
        private=True, state_read_only=read_only, config_hidden=hidden, record_private=record
    )


def _hide_host_record() -> bool:
    """An empty ``/var/lib/sandbox-setup`` of the suite's own (see the module docstring);
    whether it is."""
    if HOST_RECORD_DIR.is_dir():
        _mount("-t", "tmpfs", "-o", "mode=0755,size=64m", "tmpfs", str(HOST_RECORD_DIR))
        return True
    if not VAR_LIB.is_dir():
        return False
    keep = tempfile.mkdtemp(prefix="sandbox-setup-test-var-lib-")
    _mount("--rbind", str(VAR_LIB), keep)
    _mount("-t", "tmpfs", "-o", "mode=0755,size=1g", "tmpfs", str(VAR_LIB))
    for entry in os.scandir(keep):
        dest = VAR_LIB / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), dest)
            continue
        if entry.is_dir(follow_symlinks=False):
            dest.mkdir()
        else:
            dest.touch()
        _mount("--rbind", entry.path, str(dest))
    _mount("--make-rprivate", str(VAR_LIB))
    subprocess.run(["umount", "-l", keep], check=False, capture_output=True, timeout=30)
    os.rmdir(keep)
    return True
