"""The Landlock binding (sandbox_setup.base.landlock) on the real kernel.

Each test forks a child, restricts it, and has it report what it could do; a control
in the same child (before it restricts itself) shows the action works unrestricted,
so a denial is Landlock's, not the host's.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox_setup.base import landlock

ABI = landlock.abi_version()
needs = pytest.mark.skipif(ABI < 1, reason="this kernel has no Landlock (abi_version() = 0)")


def in_child(body: Callable[[], object]) -> object:
    """Run ``body`` in a forked child; its JSON-able result (or the exception's text)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            try:
                result: object = body()
            except BaseException as exc:
                result = {"raised": f"{type(exc).__name__}: {exc}"}
            os.write(write, json.dumps(result).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def attempt(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return "ok"


def connect(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


@pytest.fixture
def listeners() -> list[socket.socket]:
    socks = []
    for _ in range(2):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        socks.append(sock)
    yield socks
    for sock in socks:
        sock.close()


def test_abi_levels_and_rights() -> None:
    assert landlock.fs_rights(0) == 0
    assert landlock.fs_rights(1) == (1 << 13) - 1
    assert landlock.fs_rights(2) & landlock.FS_REFER
    assert not landlock.fs_rights(2) & landlock.FS_TRUNCATE
    assert landlock.fs_rights(3) & landlock.FS_TRUNCATE
    assert not landlock.fs_rights(4) & landlock.FS_IOCTL_DEV
    assert landlock.fs_rights(5) & landlock.FS_IOCTL_DEV
    assert landlock.net_rights(3) == 0 and landlock.net_rights(4) == 3
    assert landlock.scope_flags(5) == 0 and landlock.scope_flags(6) == 3
    assert landlock.features(4)[-1].startswith("4: network")
    assert len(landlock.features(7)) == 7


def test_struct_layouts_match_the_kernel_header() -> None:
    import ctypes

    assert ctypes.sizeof(landlock._PathBeneathAttr) == 12  # packed
    assert ctypes.sizeof(landlock._NetPortAttr) == 16
    assert ctypes.sizeof(landlock._RulesetAttr) == 24


@needs
def test_this_kernel_offers_an_abi() -> None:
    # The host these tests run on (6.18) has ABI 7; any Landlock kernel has >= 1.
    assert ABI >= 1, "Landlock ABI probe returned nothing"


@pytest.mark.skipif(ABI < 4, reason=f"TCP rules need Landlock ABI 4 (this kernel: {ABI})")
def test_network_rules_allow_only_the_given_port(listeners: list[socket.socket]) -> None:
    allowed, other = (s.getsockname()[1] for s in listeners)

    def body() -> object:
        before = attempt(lambda: connect(other))
        applied = landlock.restrict_self(landlock.Rules(network=True, connect_tcp=(allowed,)))

        def bind() -> None:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))

        return {
            "before": before,
            "applied": applied.describe(),
            "allowed": attempt(lambda: connect(allowed)),
            "other": attempt(lambda: connect(other)),
            "bind": attempt(bind),
            "nnp": landlock.no_new_privs(),
        }

    result = in_child(body)
    assert result == {
        "before": "ok",
        "applied": f"landlock abi={ABI} network",
        "allowed": "ok",
        "other": "EACCES",
        "bind": "EACCES",
        "nnp": True,
    }


@pytest.mark.skipif(ABI < 4, reason=f"TCP rules need Landlock ABI 4 (this kernel: {ABI})")
def test_a_lower_abi_leaves_the_network_unhandled(listeners: list[socket.socket]) -> None:
    other = listeners[1].getsockname()[1]

    def body() -> object:
        applied = landlock.restrict_self(landlock.Rules(network=True, scope=True), abi=3)
        return [applied.network, applied.scope, attempt(lambda: connect(other))]

    # Best effort said aloud: with ABI 3 nothing of the network is handled.
    assert in_child(body) == [False, False, "ok"]


@pytest.mark.skipif(ABI < 6, reason=f"scopes need Landlock ABI 6 (this kernel: {ABI})")
def test_scope_stops_signals_and_abstract_sockets_leaving_the_domain() -> None:
    name = f"\0sandbox-setup-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(4)
    parent = os.getpid()

    def abstract() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(name)

    def body() -> object:
        before = [attempt(lambda: os.kill(parent, 0)), attempt(abstract)]
        landlock.restrict_self(landlock.Rules(scope=True))
        own = attempt(lambda: os.kill(os.getpid(), 0))
        return [*before, attempt(lambda: os.kill(parent, 0)), attempt(abstract), own]

    try:
        assert in_child(body) == ["ok", "ok", "EPERM", "EPERM", "ok"]
    finally:
        server.close()


@needs
def test_file_rules_hide_what_is_not_listed(tmp_path: Path) -> None:
    readable, writable, hidden = (tmp_path / n for n in ("ro", "rw", "other"))
    for directory in (readable, writable, hidden):
        directory.mkdir()
        (directory / "README").write_text("text\n")
    rules = landlock.Rules(
        files=True,
        read=(*sys.path_importer_cache.keys(), "/usr", str(readable), "/nonexistent-g"),
        write=(str(writable),),
    )

    def body() -> object:
        before = attempt(lambda: (hidden / "README").read_text())
        applied = landlock.restrict_self(rules)
        return {
            "before": before,
            "skipped": list(applied.skipped),
            "read": attempt(lambda: (readable / "README").read_text()),
            "write_ro": attempt(lambda: (readable / "new").write_text("x")),
            "write_rw": attempt(lambda: (writable / "new").write_text("x")),
            "hidden": attempt(lambda: (hidden / "README").read_text()),
            "listdir": attempt(lambda: os.listdir(hidden)),
        }

    result = in_child(body)
    assert result["before"] == "ok"
    assert "/nonexistent-g" in result["skipped"]
    assert {k: v for k, v in result.items() if k not in ("before", "skipped")} == {
        "read": "ok",
        "write_ro": "EACCES",
        "write_rw": "ok",
        "hidden": "EACCES",
        "listdir": "EACCES",
    }


@needs
def test_nothing_handled_is_no_domain() -> None:
    def body() -> object:
        return landlock.restrict_self(landlock.Rules()).describe()

    assert in_child(body) == f"landlock abi={ABI} nothing"
