"""sandbox_setup.launcher.egress.netns for real: listeners made in a held bwrap sandbox's network
namespace, as root and as the sandbox's own (unprivileged) account.

The sandbox is the launcher's kind: bwrap as ``nobody`` with ``--unshare-net``, held on
``--block-fd`` before its release (its command never runs). Every assertion is made
from the sandbox's side (``/proc/PID/net/tcp``, a connection made from inside the
namespace) and from the host's (nothing listens there).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.egress.netns import held_sandbox, open_in_sandbox
from tests.installed import installed_copy
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

NOBODY = 65534
PORT = 3128
EXPOSED = 18377


@dataclass
class Held:
    pid: int


@pytest.fixture
def held() -> Iterator[Held]:
    require_root()
    require_tool("bwrap")
    require_tool("setpriv")
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    with held_sandbox("bwrap", prefix) as pid:
        yield Held(pid)


def listening(pid: int) -> set[tuple[int, int]]:
    found = set()
    for family, name in ((4, "tcp"), (6, "tcp6")):
        for line in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                found.add((family, int(fields[1].rsplit(":", 1)[1], 16)))
    return found


def test_the_listeners_are_in_the_sandboxs_namespace_and_answer_from_inside(held: Held) -> None:
    sockets = open_in_sandbox(held.pid, PORT, (EXPOSED,))
    try:
        assert listening(held.pid) == {(4, PORT), (6, PORT), (4, EXPOSED), (6, EXPOSED)}
        assert (4, PORT) not in listening(os.getpid()), "a listener is on the host's loopback"
        assert [p for _, p in sockets.forwards] == [EXPOSED, EXPOSED]
        assert len(sockets.proxy) == 2 and len(sockets.probes) == 2
        # A probe socket connects from inside: to the sandbox's listener, not the host's.
        (v4,) = [s for s in sockets.proxy if s.family == socket.AF_INET]
        probe = sockets.probes[0]
        probe.settimeout(5)
        probe.connect(("127.0.0.1", PORT))
        accepted, _ = v4.accept()
        probe.sendall(b"from inside")
        assert accepted.recv(64) == b"from inside"
        accepted.close()
    finally:
        sockets.close()
    assert listening(held.pid) == set()


def test_a_port_taken_inside_refuses_with_the_reason(held: Held) -> None:
    first = open_in_sandbox(held.pid, PORT)
    try:
        with pytest.raises(RefusedError, match=r"cannot listen inside .*Address already in use"):
            open_in_sandbox(held.pid, PORT)
    finally:
        first.close()


def test_the_launchers_own_namespace_is_refused() -> None:
    with pytest.raises(RefusedError, match="shares the launcher's network namespace"):
        open_in_sandbox(os.getpid(), PORT)


def test_a_gone_sandbox_is_refused() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    with pytest.raises(RefusedError, match="cannot open the sandbox's network namespace"):
        open_in_sandbox(dead.pid, PORT)


UNPRIVILEGED = r"""
import json, os, socket
from sandbox_setup.launcher.egress.netns import held_sandbox, open_in_sandbox

with held_sandbox("bwrap") as pid:
    sockets = open_in_sandbox(pid, PORT, (EXPOSED,))
    probe = sockets.probes[0]
    probe.settimeout(5)
    probe.connect(("127.0.0.1", PORT))
    (v4,) = [s for s in sockets.proxy if s.family == socket.AF_INET]
    accepted, _ = v4.accept()
    probe.sendall(b"ok")
    print(json.dumps({"uid": os.geteuid(), "got": accepted.recv(8).decode(),
                      "forwards": [p for _, p in sockets.forwards]}))
    sockets.close()
"""


def test_an_unprivileged_launcher_joins_the_namespace_through_its_user_namespace() -> None:
    """Not root (the operator's own account is the agent): the helper first enters the
    user namespace that owns the sandbox's network namespace, where it may join it."""
    require_root()
    require_tool("bwrap")
    script = UNPRIVILEGED.replace("PORT", str(PORT)).replace("EXPOSED", str(EXPOSED))
    result = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
         str(installed_copy().python), "-c", script],
        cwd="/", capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report == {"uid": NOBODY, "got": "ok", "forwards": [EXPOSED, EXPOSED]}
