"""A fake target root for the configuration core's tests (``--root DIR``).

:func:`make_target_root` builds a minimal system tree: ``etc/passwd``, ``group``,
``shadow``, ``gshadow`` (root and nobody only), the host's ``login.defs`` (so
real ``useradd --prefix`` picks the host's ``HOME_MODE``) with Debian's id ranges
pinned (the tests' accounts have fixed uids; a host may draw from another range), a 0700
``/root``, ``/home``, a workspace ``/srv/project`` with a few files, and a fake
``claude`` that prints a version, so tests never touch the host's accounts.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLAUDE_VERSION = "2.1.332"  # a fake at or above the release floor
FAKE_CLAUDE = f'#!/bin/sh\necho "{CLAUDE_VERSION} (Claude Code)"\n'

PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nnogroup:x:65534:\n"
SHADOW = "root:*:20000:0:99999:7:::\nnobody:*:20000:0:99999:7:::\n"
GSHADOW = "root:*::\nnogroup:*::\n"
# Where an apply under a fake root (as root) puts things, relative to the root.
MANAGED = "etc/claude-code/managed-settings.json"
CONFIG = "root/.config/sandbox-setup"
STATE = "root/.local/state/sandbox-setup"
FILES = (MANAGED, f"{CONFIG}/launcher.toml", f"{CONFIG}/answers.toml")
SANDBOX = ("--mode", "sandbox", "--workspace", "/srv/project")


# Debian's defaults: what the tests' fixed uids (1500 a regular user, 4242 too) assume.
PINNED_IDS = {"UID_MIN": "1000", "UID_MAX": "60000", "GID_MIN": "1000", "GID_MAX": "60000"}


def pinned_login_defs(host: Path) -> str:
    """The host's ``login.defs`` (empty if it has none) with :data:`PINNED_IDS`."""
    try:
        lines = host.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        lines = []
    kept = [line for line in lines if (line.split() or [""])[0] not in PINNED_IDS]
    return "\n".join([*kept, *(f"{k}\t{v}" for k, v in PINNED_IDS.items())]) + "\n"


def make_target_root(root: Path, *, workspace: bool = True) -> Path:
    """Fill ``root`` with the fake system and return it."""
    etc = root / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    for name, text, mode in (
        ("passwd", PASSWD, 0o644),
        ("group", GROUP, 0o644),
        ("shadow", SHADOW, 0o640),
        ("gshadow", GSHADOW, 0o640),
    ):
        (etc / name).write_text(text)
        os.chmod(etc / name, mode)
    (etc / "login.defs").write_text(pinned_login_defs(Path("/etc/login.defs")))
    (root / "root").mkdir(mode=0o700, exist_ok=True)
    os.chmod(root / "root", 0o700)
    (root / "home").mkdir(mode=0o755, exist_ok=True)
    (root / "usr/local/bin").mkdir(parents=True, exist_ok=True)
    claude = root / "usr/local/bin/claude"
    claude.write_text(FAKE_CLAUDE)
    os.chmod(claude, 0o755)
    if workspace:
        ws = root / "srv/project"
        (ws / "src").mkdir(parents=True, exist_ok=True)
        (ws / "README.md").write_text("# project\n")
        (ws / "src/main.py").write_text("print('hi')\n")
    return root


def private_claude(root: Path) -> Path:
    """Claude as the native installer lays it out under /root (0700): a symlink in
    ~/.local/bin to a versioned file in ~/.local/share/claude. Returns the link."""
    share = root / "root/.local/share/claude/versions"
    share.mkdir(parents=True, exist_ok=True)
    binary = share / CLAUDE_VERSION
    binary.write_text(FAKE_CLAUDE)
    os.chmod(binary, 0o755)
    link = root / "root/.local/bin/claude"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(f"../share/claude/versions/{CLAUDE_VERSION}")
    return link


def snapshot(root: Path) -> dict[str, tuple[str, int, int, int]]:
    """Every regular file and symlink under ``root``: sha256/link, mode, uid, gid."""
    state: dict[str, tuple[str, int, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath) / name
            st = path.lstat()
            if path.is_symlink():
                digest = "-> " + os.readlink(path)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            state[str(path.relative_to(root))] = (digest, st.st_mode, st.st_uid, st.st_gid)
        for name in dirnames:
            path = Path(dirpath) / name
            st = path.lstat()
            state[str(path.relative_to(root)) + "/"] = ("dir", st.st_mode, st.st_uid, st.st_gid)
    return state


def host_passwd_digest() -> str:
    """sha256 of the host's /etc/passwd, group and shadow (must never change)."""
    digest = hashlib.sha256()
    for name in ("passwd", "group", "shadow", "gshadow"):
        with open(f"/etc/{name}", "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """``python -m sandbox_setup ARGS`` in a fresh interpreter, as the operator would run it."""
    return subprocess.run(
        [sys.executable, "-m", "sandbox_setup", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def passwd_entry(root: Path, name: str) -> list[str] | None:
    """The ``DIR/etc/passwd`` fields of ``name`` (None when absent)."""
    for line in (root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return fields
    return None


def group_entry(root: Path, name: str) -> list[str] | None:
    for line in (root / "etc/group").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return fields
    return None


def system_state(root: Path) -> dict[str, tuple[str, int, int, int]]:
    """:func:`snapshot` minus what an undo legitimately leaves: the journal and
    backups in the state dir, and shadow-utils' own ``etc/*-`` backup files."""
    state = {
        path: value
        for path, value in snapshot(root).items()
        if not path.startswith("root/.local/state/sandbox-setup")
        and path not in ("root/.local/", "root/.local/state/")
        and not (path.startswith("etc/") and path.endswith("-"))
    }
    if (root / "srv").exists():  # the workspaces' ACLs (and setgid flags)
        acls = subprocess.run(
            ["getfacl", "-R", "--numeric", "--absolute-names", str(root / "srv")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        state["<acl srv>"] = (acls, 0, 0, 0)
    return state
