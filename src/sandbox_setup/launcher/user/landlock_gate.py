"""User mode's Landlock, launcher side: the gate that verifies the session's helper.

The plan and the helper's argv are :mod:`sandbox_setup.launcher.user.landlock_plan`; the
walls and trees are the policy's (:mod:`sandbox_setup.policy.landlock`); the helper
that applies them to itself before exec'ing the session is
:mod:`sandbox_setup.launcher.user.landlock_exec`. The launcher, before Claude is released:

1. reads the helper's ``applied`` message: the ABI and the walls it enforced must be
   the ones planned (a kernel that gave less is a refusal, not a silent downgrade);
2. hands it three canaries only the domain's walls can keep it from: a TCP listener on
   the host's loopback (network), an abstract unix socket (scope), a world-readable
   file outside every allowed tree (files); a probe child in the same domain must get
   EACCES / EPERM / EACCES, and, checked from outside, nothing may have reached the
   listeners;
3. writes ``release``; any failure, EOF or timeout kills the session and refuses
   (exit 3), as the sandbox's gate does.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.user.landlock_exec import RELEASE
from sandbox_setup.launcher.user.landlock_plan import GATE_FD, STATUS_FD, LandlockPlan

VERIFY_TIMEOUT = 15.0


def abstract_listener(name: str, netns: int | None) -> socket.socket:
    """A listening abstract unix socket ``name``, in ``netns`` (an fd) when given."""

    def make() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind("\0" + name)
            sock.listen(4)
        except BaseException:
            sock.close()
            raise
        return sock

    if netns is None:
        return make()
    # Only a session with a namespace of its own needs it (not every launch that plans).
    from sandbox_setup.launcher.egress.netns import join_namespace

    made: list[socket.socket | BaseException] = []

    def inside() -> None:
        try:
            join_namespace(netns)
            made.append(make())
        except BaseException as exc:
            made.append(exc)

    thread = threading.Thread(target=inside, name="canary-netns", daemon=True)
    thread.start()
    thread.join(VERIFY_TIMEOUT)
    if not made or isinstance(made[0], BaseException):
        raise RefusedError(f"Landlock: cannot make the scope canary in the session's network "
                           f"namespace: {made[0] if made else 'timed out'}")  # fmt: skip
    return made[0]


class LandlockGate:
    """One session's verification (see the module docstring)."""

    def __init__(self, plan: LandlockPlan, canary_dir: Path, netns: int | None = None) -> None:
        if plan.bind and netns is None:
            # A bind rule is safe only inside the session's own namespace
            # (policy.landlock.bridge_ports): never on the host's network.
            raise RefusedError("Landlock: TCP bind planned for a session without a network "
                               "namespace of its own")  # fmt: skip
        self.plan = plan
        self.status_r, self.status_w = os.pipe()
        self.gate_r, self.gate_w = os.pipe()
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(4)
        self.tcp.setblocking(False)
        self.abstract_name = f"sandbox-launch-canary-{os.getpid()}-{secrets.token_hex(6)}"
        # Abstract unix sockets belong to a network namespace: the canary is made in
        # the session's (when it has one of its own), where the probe looks for it.
        self.abstract = abstract_listener(self.abstract_name, netns)
        self.abstract.setblocking(False)
        self.canary_dir: str | None = None
        self.canary_file: str | None = None  # made only where the files wall is on
        if plan.walls.files:
            # World-readable, outside every allowed tree: only the files wall hides it.
            self.canary_dir = tempfile.mkdtemp(prefix="sandbox-launch-canary-", dir=canary_dir)
            os.chmod(self.canary_dir, 0o755)
            self.canary_file = os.path.join(self.canary_dir, "canary")
            with open(self.canary_file, "w") as stream:
                stream.write("canary\n")
            os.chmod(self.canary_file, 0o644)

    @classmethod
    def open(cls, plan: LandlockPlan, state: Path, netns: int | None = None) -> LandlockGate:
        # /run for root (no agent tree is there); the operator's state dir otherwise
        # (the agent is the operator's own uid then, so only Landlock hides it).
        where = Path("/run") if os.geteuid() == 0 and os.access("/run", os.W_OK) else state
        where.mkdir(parents=True, exist_ok=True)
        return cls(plan, where, netns)

    @property
    def child_fds(self) -> tuple[int, int]:
        return self.status_w, self.gate_r

    def fd_table(self) -> dict[str, str]:
        return {STATUS_FD: str(self.status_w), GATE_FD: str(self.gate_r)}

    def after_start(self) -> None:
        """In the launcher, once the child holds its ends."""
        for fd in self.child_fds:
            os.close(fd)
        self.status_w = self.gate_r = -1

    def _receive(self, deadline: float) -> object:
        """The helper's next message (one line of JSON); None when it sent no JSON."""
        try:
            return json.loads(self._read_line(deadline))
        except ValueError:
            return None

    def _read_line(self, deadline: float) -> str:
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self.status_r], [], [], max(left, 0))
            if not readable:
                raise RefusedError("Landlock: the session's helper did not report in time")
            chunk = os.read(self.status_r, 256)
            if not chunk:
                break
            data += chunk
        return data.decode(errors="replace").strip()

    def verify(self, timeout: float = VERIFY_TIMEOUT) -> None:
        """Everything in the module docstring before the release."""
        deadline = time.monotonic() + timeout
        applied = self._receive(deadline)
        walls = self.plan.walls
        want = {"applied": {"abi": walls.abi, "files": int(walls.files),
                            "network": int(walls.network), "scope": int(walls.scope)}}  # fmt: skip
        if applied != want:
            said = json.dumps(applied) if applied is not None else (
                "nothing (it ended: the launcher's interpreter or package may not be "
                "readable by the agent)")  # fmt: skip
            raise RefusedError(
                f"Landlock: the session's helper said {said}, not {json.dumps(want)}"
            )
        canaries = {
            "port": self.tcp.getsockname()[1] if walls.network else None,
            "name": self.abstract_name if walls.scope else None,
            "path": self.canary_file,
        }
        os.write(self.gate_w, (json.dumps({"probe": canaries}) + "\n").encode())
        probed = self._receive(deadline)
        expected = {
            "connect": "EACCES" if walls.network else None,
            "abstract": "EPERM" if walls.scope else None,
            "file": "EACCES" if walls.files else None,
        }
        got = probed.get("probed") if isinstance(probed, dict) else None
        if got != expected:
            raise RefusedError(
                f"Landlock: a probe in the session's domain got {json.dumps(got)}, "
                f"expected {json.dumps(expected)}"
            )
        for listener in (self.tcp, self.abstract):
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue
            conn.close()
            raise RefusedError("Landlock: a probe in the session's domain reached a canary")

    def release(self) -> None:
        os.write(self.gate_w, (json.dumps(RELEASE) + "\n").encode())

    def close(self) -> None:
        for fd in (self.status_r, self.status_w, self.gate_r, self.gate_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.status_r = self.status_w = self.gate_r = self.gate_w = -1
        self.tcp.close()
        self.abstract.close()
        if self.canary_dir is not None:
            shutil.rmtree(self.canary_dir, ignore_errors=True)
            self.canary_dir = None
