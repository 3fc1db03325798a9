"""Start the live experiments before the rest of the tool is imported.

``sandbox-setup --check`` spends its first tens of milliseconds importing the
checks, the judges and the report; the experiments (namespaces, bwrap) mostly
wait on the kernel. So the command starts each live check's first experiment
right away (:func:`start`), and :func:`sandbox_setup.checks.probe.run_probe` adopts the
running process when its check asks for exactly that command, as exactly that
user, with exactly that environment (:func:`take`); anything not adopted is
killed and reaped by :func:`discard`. The result is the same either way.

This module imports only what starting a process needs (no dataclasses, no
checks), and a failure to start one here just leaves it to the check.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
Key = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]

_started: dict[Key, subprocess.Popen[str]] = {}
_lock = threading.Lock()


def which(name: str, path: str = SAFE_PATH) -> str | None:
    """The first executable ``name`` on ``path``, absolute entries only: a relative one
    would make the answer depend on the directory the tool was started in."""
    absolute = os.pathsep.join(entry for entry in path.split(os.pathsep) if entry.startswith("/"))
    return shutil.which(name, path=absolute)


def switch_prefix(uid: int, gid: int) -> list[str]:
    """``setpriv`` argv that switches to uid/gid (real + effective ids, its groups)."""
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups", "--"]


def environment(
    user: tuple[str, str] | None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The clean probe environment; ``user`` is (name, home) of the probe user."""
    env = {"PATH": SAFE_PATH, "LC_ALL": "C", "LANG": "C"}
    if user is not None:
        name, home = user
        env.update(HOME=home, USER=name, LOGNAME=name)
    else:
        env["HOME"] = os.environ.get("HOME", "/")
    if extra:
        env.update(extra)
    return env


def spawn(full: Sequence[str], env: Mapping[str, str], cwd: str = "/") -> subprocess.Popen[str]:
    """The one way a probe process is started (a session of its own, so a timeout
    kills its whole tree)."""
    return subprocess.Popen(
        list(full),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        text=True,
        errors="replace",
    )


def key(full: Sequence[str], env: Mapping[str, str]) -> Key:
    return tuple(full), tuple(sorted(env.items()))


def probe_ids(as_user: str | None) -> tuple[int, int] | None:
    """``(uid, gid)`` of the account the probes switch to for ``as_user``, or None
    when they run as us (no such user, or it is us: the runner's rule)."""
    if as_user is None:
        return None

    try:
        entry = pwd.getpwnam(as_user)
    except KeyError:
        return None
    if entry.pw_uid == os.geteuid() and entry.pw_uid == os.getuid():
        return None
    return entry.pw_uid, entry.pw_gid


def start(
    commands: Iterable[Sequence[str]],
    as_user: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> int:
    """Start ``commands`` now (as ``as_user`` when root may switch to it, with ``extra``
    added to the probe environment); returns how many started. Nothing here raises:
    what cannot start is left to its check."""
    user: tuple[str, str] | None = None
    prefix: list[str] = []
    if as_user is not None:
        try:
            entry = pwd.getpwnam(as_user)
        except KeyError:
            return 0
        if entry.pw_uid == os.geteuid():
            if entry.pw_uid != os.getuid():
                return 0
            # probing as oneself: no switch, the caller's HOME (as sandbox_setup.checks.runner does)
        elif os.geteuid() != 0 or which("setpriv") is None:
            return 0
        else:
            prefix = switch_prefix(entry.pw_uid, entry.pw_gid)
            user = (entry.pw_name, entry.pw_dir)
    env = environment(user, extra)
    count = 0
    for argv in commands:
        if which(argv[0]) is None:
            continue
        full = [*prefix, *argv]
        try:
            proc = spawn(full, env)
        except OSError:
            continue
        with _lock:
            _started.setdefault(key(full, env), proc)
        count += 1
    return count


def take(full: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[str] | None:
    """The started process for exactly this command and environment, once."""
    with _lock:
        return _started.pop(key(full, env), None)


@atexit.register
def discard() -> None:
    """Kill and reap what no check adopted (a check that took another path)."""
    with _lock:
        leftovers = list(_started.values())
        _started.clear()
    for proc in leftovers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
