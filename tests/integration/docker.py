"""Real Docker containers for the tests, from a private daemon and an image the test
builds.

No registry and no system service: :func:`start_daemon` runs Debian's ``dockerd``
(docker.io 20.10) of its own, in a private mount namespace (``unshare -m
--propagation private``: the daemon's bind of its data root, its layers and its
containers' mounts never reach the host's mount table), with its own ``--data-root``,
``--exec-root``, ``--pidfile`` and socket under the test's temp directory, and no
network set-up on the host (``--bridge=none --iptables=false --ip6tables=false
--ip-forward=false``: no docker0, no firewall rules, no sysctl change), and a config
file of its own (not /etc/docker/daemon.json) that puts its trust key under the temp
directory too (20.10 otherwise creates /etc/docker/key.json). Its managed containerd
keeps its state under the exec root. The ``vfs`` storage driver works
wherever a daemon starts (the image is a few MB). :meth:`DockerDaemon.stop` ends the
daemon by its PID (it stops its containerd), then that containerd by its PID if it
is still there.

The image is ``docker import`` of the skeleton root :func:`tests.integration.podman.build_rootfs`
builds (the usual top-level directories and a copy of the host's /etc); each
:meth:`DockerContainer.run` binds the host's /usr read-only (with a tmpfs on
/usr/local, where an apply installs its copy of Claude), the Claude Code prefixes and
the project's install read-only, and runs with ``--network none``, ``--rm``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.integration.containers import Result, base_env
from tests.integration.podman import build_rootfs
from tests.tools import NPM_PREFIX, require_tool

# The bug report's Docker fix: /proc unmasked and no seccomp filter refusing user
# namespaces; default capabilities.
DOCKER_FIX = ("--security-opt", "systempaths=unconfined", "--security-opt", "seccomp=unconfined")
IMAGE = "sandbox-setup-test/rootfs:m"
START_TIMEOUT = 60.0
# The daemon's built-in runc (the ``runc`` on its PATH, /usr/sbin/runc), named in its
# config and on every ``docker run``.
RUNTIME = "runc"


class DockerUnavailable(Exception):
    """The daemon did not start here; the message is its own error."""


def docker_client(dockerd: str) -> str:
    """The client shipped with this dockerd (docker.io puts it in /usr/bin), else PATH's."""
    beside = Path(dockerd).resolve().parent.parent / "bin" / "docker"
    return str(beside) if beside.is_file() else require_tool("docker")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class DockerDaemon:
    """A private dockerd: its socket, its PID, its log."""

    base: Path
    process: subprocess.Popen[bytes]
    client: str

    @property
    def socket(self) -> Path:
        return self.base / "docker.sock"

    @property
    def log(self) -> Path:
        return self.base / "dockerd.log"

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no daemon log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def client_argv(self, *args: str) -> list[str]:
        return [self.client, "-H", f"unix://{self.socket}", *args]

    def client_env(self) -> dict[str, str]:
        # The client's own config in the temp dir: nothing written under /root.
        return base_env(home="/root") | {"DOCKER_CONFIG": str(self.base / "client-config")}

    def docker(
        self, *args: str, stdin: int | None = subprocess.DEVNULL, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.client_argv(*args),
            stdin=stdin,
            capture_output=True,
            text=True,
            env=self.client_env(),
            timeout=timeout,
            check=False,
        )

    def containerd_pid(self) -> int | None:
        try:
            return int((self.base / "exec/containerd/containerd.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        """SIGTERM to the daemon by its PID (it stops its containerd), then SIGKILL
        after 30 s; then the managed containerd by its PID if it outlived it."""
        containerd = self.containerd_pid()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        if containerd is not None and _alive(containerd) and _comm(containerd) == "containerd":
            os.kill(containerd, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(containerd) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(containerd):
                os.kill(containerd, signal.SIGKILL)


def dockerd_argv(dockerd: str, base: Path) -> list[str]:
    return [
        require_tool("unshare"), "-m", "--propagation", "private", "--",
        dockerd,
        "--config-file", str(base / "daemon.json"),
        "--data-root", str(base / "data"),
        "--exec-root", str(base / "exec"),
        "--pidfile", str(base / "dockerd.pid"),
        "-H", f"unix://{base / 'docker.sock'}",
        "--iptables=false", "--ip6tables=false", "--ip-forward=false", "--bridge=none",
        "--storage-driver", "vfs",
    ]  # fmt: skip


def start_daemon(base: Path, dockerd: str) -> DockerDaemon:
    """Start the private daemon and wait until it answers, or raise
    :class:`DockerUnavailable` with its own error (and stop what started)."""
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    (base / "client-config").mkdir(mode=0o700, exist_ok=True)
    # The trust key's path is settable only here (20.10's "deprecated-key-path").
    # The OCI runtime is named, never left to what the host prefers (podman.py: crun).
    (base / "daemon.json").write_text(
        json.dumps({"deprecated-key-path": str(base / "key.json"), "default-runtime": RUNTIME})
    )
    with open(base / "dockerd.log", "wb") as log:
        process = subprocess.Popen(
            dockerd_argv(dockerd, base),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=base_env(home="/root"),
            cwd="/",
            start_new_session=True,
        )
    daemon = DockerDaemon(base, process, docker_client(dockerd))
    deadline = time.monotonic() + START_TIMEOUT
    last = ""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            daemon.stop()
            raise DockerUnavailable(
                f"dockerd exited with status {process.returncode}:\n{daemon.log_tail()}"
            )
        if daemon.socket.exists():
            info = daemon.docker("version", "--format", "{{.Server.Version}}", timeout=30)
            if info.returncode == 0:
                return daemon
            last = info.stderr.strip()
        time.sleep(0.5)
    daemon.stop()
    raise DockerUnavailable(
        f"dockerd did not answer within {START_TIMEOUT:.0f} s ({last or 'no socket'}):\n"
        f"{daemon.log_tail()}"
    )


def import_image(daemon: DockerDaemon, workdir: Path) -> str:
    """``docker import`` of the skeleton root (built once under ``workdir``)."""
    rootfs = build_rootfs(workdir)
    tar = subprocess.Popen(
        ["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert tar.stdout is not None
    done = daemon.docker("import", "-", IMAGE, stdin=tar.stdout.fileno(), timeout=300)
    tar.stdout.close()
    tar.wait(timeout=60)
    if done.returncode != 0 or tar.returncode != 0:
        raise RuntimeError(f"docker import failed (tar {tar.returncode}): {done.stderr.strip()}")
    return IMAGE


@dataclass
class DockerContainer:
    """A Docker container as an operator runs one: Docker's defaults (its seccomp
    profile, masked and read-only /proc paths, its capability set) unless ``options``
    say otherwise."""

    daemon: DockerDaemon
    image: str
    options: tuple[str, ...] = ()
    name: str = "docker"
    readonly: tuple[str, ...] = ()  # host paths bound read-only at the same place

    def with_options(self, *options: str) -> DockerContainer:
        return dataclasses.replace(self, options=(*self.options, *options))

    def argv(self, inner: Sequence[str], env: Mapping[str, str]) -> list[str]:
        # Docker's --tmpfs is noexec unless told: an apply installs Claude there.
        volumes = ["-v", "/usr:/usr:ro", "--tmpfs", "/usr/local:rw,exec,mode=0755"]
        for path in (str(NPM_PREFIX.parent), *self.readonly):
            if Path(path).exists():
                volumes += ["-v", f"{path}:{path}:ro"]
        envs = [f"--env={key}={value}" for key, value in env.items()]
        return self.daemon.client_argv(
            "run", "--rm", "--runtime", RUNTIME, "--network", "none", *self.options, *volumes,
            *envs,
            "--workdir", "/", self.image, *inner,
        )  # fmt: skip

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 300
    ) -> Result:
        proc = subprocess.run(
            self.argv(argv, env if env is not None else base_env(home="/root")),
            env=self.daemon.client_env(),
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)
