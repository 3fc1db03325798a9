"""The exec helper of a user-mode session: restrict itself with Landlock, be verified, exec.

Run as the agent, between the session's reaper and Claude, as one script: the text of
:mod:`sandbox_setup.base.landlock` then this module's (standard library only; see
:func:`sandbox_setup.launcher.user.landlock_plan.helper_source`); ``python -m
sandbox_setup.launcher.user.landlock_exec`` runs the same::

    python3 -I -S -c HELPER --status-fd N --gate-fd M [--files --read P... --write P...]
        [--network --connect PORT... --bind PORT...] [--scope] -- claude ARGS

Each message is one line of JSON, both ways:

1. applies the ruleset (:func:`sandbox_setup.base.landlock.restrict_self`) and writes
   ``{"applied": {"abi": A, "files": F, "network": N, "scope": S}}`` on the status fd
   (``{"error": ...}`` and exit 126 when it cannot: nothing runs unconfined);
2. reads ``{"probe": {"port": P, "name": N, "path": F}}`` from the gate fd: the
   launcher's canaries, a loopback TCP port, an abstract unix socket and a file that the
   domain must not reach (None: not probed); forks a probe child *in the same domain*
   that tries each and writes what happened (``{"probed": {"connect": "EACCES",
   "abstract": "EPERM", "file": "EACCES"}}``). The launcher also checks from outside
   that nothing reached its canaries (:mod:`sandbox_setup.launcher.user.landlock_gate`);
3. execs the command only after it reads exactly ``{"release": true}`` from the gate
   fd; EOF (a launcher that died or refused) means exit 126.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from collections.abc import Sequence

from sandbox_setup.base.landlock import LandlockError, Rules, restrict_self

RELEASE = {"release": True}
REFUSED = 126


def _parse(argv: Sequence[str]) -> tuple[int, int, Rules, list[str]]:
    args = list(argv)
    split = args.index("--")
    options, command = args[:split], args[split + 1 :]
    status = gate = -1
    read: list[str] = []
    write: list[str] = []
    connect: list[int] = []
    bind: list[int] = []
    flags = {"--files": False, "--network": False, "--scope": False}
    i = 0
    while i < len(options):
        option = options[i]
        if option in flags:
            flags[option] = True
            i += 1
            continue
        value = options[i + 1]
        if option == "--status-fd":
            status = int(value)
        elif option == "--gate-fd":
            gate = int(value)
        elif option == "--read":
            read.append(value)
        elif option == "--write":
            write.append(value)
        elif option == "--connect":
            connect.append(int(value))
        elif option == "--bind":
            bind.append(int(value))
        else:
            raise ValueError(f"unknown option {option}")
        i += 2
    if status < 0 or gate < 0 or not command:
        raise ValueError("--status-fd, --gate-fd and a command are needed")
    rules = Rules(
        files=flags["--files"],
        read=tuple(read),
        write=tuple(write),
        network=flags["--network"],
        connect_tcp=tuple(connect),
        bind_tcp=tuple(bind),
        scope=flags["--scope"],
    )
    return status, gate, rules, command


def _outcome(action: object) -> str:
    try:
        action()  # type: ignore[operator]
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, "EUNKNOWN")
    return "ok"


def _connect_tcp(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _connect_abstract(name: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        sock.connect("\0" + name)


def _read_file(path: str) -> None:
    with open(path, "rb") as stream:
        stream.read(1)


def probe(port: int | None, name: str | None, path: str | None) -> dict[str, str | None]:
    """In a forked child (the same domain): what reaching each canary did (None: not
    tried)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        found = {
            "connect": None if port is None else _outcome(lambda: _connect_tcp(port)),
            "abstract": None if name is None else _outcome(lambda: _connect_abstract(name)),
            "file": None if path is None else _outcome(lambda: _read_file(path)),
        }
        os.write(write, json.dumps(found).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        found = json.loads(stream.read() or b"null")
    os.waitpid(pid, 0)
    return found if isinstance(found, dict) else {}


def _send(fd: int, message: object) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def _receive(fd: int) -> object:
    """The next message on ``fd``; None at EOF or when it is not JSON."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        data += chunk
    try:
        return json.loads(data)
    except ValueError:
        return None


def main(argv: Sequence[str]) -> int:
    try:
        status, gate, rules, command = _parse(argv)
    except (ValueError, IndexError) as exc:
        print(f"sandbox-launch landlock_exec: {exc}", file=sys.stderr)
        return REFUSED
    try:
        applied = restrict_self(rules)
    except LandlockError as exc:
        _send(status, {"error": str(exc.strerror or exc)})
        return REFUSED
    walls = {"abi": applied.abi, "files": int(applied.files),
             "network": int(applied.network), "scope": int(applied.scope)}  # fmt: skip
    _send(status, {"applied": walls})
    asked = _receive(gate)
    canaries = asked.get("probe") if isinstance(asked, dict) else None
    if not isinstance(canaries, dict):
        return REFUSED
    found = probe(canaries.get("port"), canaries.get("name"), canaries.get("path"))
    _send(status, {"probed": found})
    if _receive(gate) != RELEASE:
        return REFUSED
    os.close(status)
    os.close(gate)
    try:
        os.execv(command[0], command)
    except OSError as exc:
        print(f"sandbox-launch: cannot start {command[0]}: {exc.strerror}", file=sys.stderr)
    return REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
