"""An outside world for the egress proxy tests, built from network namespaces this test owns.

Two namespaces joined by a veth pair, so nothing of the real host's network changes:

* ``np-h-TAG``, the proxy's "host": the proxy runs here (started by a stand-in
  launcher through :func:`sandbox_setup.launcher.egress.proxy.start_proxy_process`, as ``nobody``),
  beside a loopback-only service whose answer (:data:`HOST_SECRET`) must never come
  back through the proxy. Its veth end holds 203.0.113.1, 10.77.0.1, 2001:db8::1.
* ``np-w-TAG``, "the internet": HTTP on :80 and HTTPS on :443 (a self-signed
  certificate made with openssl for ``allowed.test``, ``*.allowed.test`` and
  ``denied.test``) at 203.0.113.10, 2001:db8::10 and the "private" 10.77.0.10, serving
  :data:`WORLD_GREETING` and a git repository over dumb HTTP. With ``metadata=True`` it
  is also the cloud metadata service at 169.254.169.254 (the host end gets 169.254.0.1),
  serving :data:`METADATA_SECRET` at :data:`METADATA_PATH`.

``prefix`` names the namespaces, veths and the temp dir (``np`` for the proxy's tests;
each suite its own, so suites running at once never share a name).

Names reach the proxy only through the test resolver map (:data:`RESOLVE`); it has
no other DNS. The host's own network namespace never routes to these addresses:
a proxy bug could only ever reach these namespaces.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.tools import REPO, require_root, require_tool

NOBODY = 65534
T = TypeVar("T")
WORLD_GREETING = "hello from the world\n"
BIG_SIZE = 4 * 1024 * 1024
# More than every buffer between the proxy and a client reading slowly can hold (the
# unix socket, socat's buffer, TCP's send buffer up to tcp_wmem's 4 MiB, curl's receive
# buffer up to tcp_rmem's maximum, 32 MiB on some hosts): its relay is still running
# while the client reads. (4 MiB could be absorbed at once, and the relay was done.)
SLOW_SIZE = 64 * 1024 * 1024
HOST_SECRET = "host-loopback-secret"
HOST_LOOPBACK_PORT = 18320  # in np-h only; the real host's loopback is never used for it
WORLD_V4, WORLD_V6, WORLD_PRIVATE = "203.0.113.10", "2001:db8::10", "10.77.0.10"
HOST_SIDE_V4 = "203.0.113.1"
METADATA = "169.254.169.254"
METADATA_PATH = "/latest/meta-data/iam/security-credentials/role"
METADATA_SECRET = "instance-credentials-from-the-metadata-service"
ALLOWED_PATTERNS = ("allowed.test", "*.allowed.test")
RESOLVE = {
    "allowed.test": [WORLD_V4],
    "www.allowed.test": [WORLD_V4],
    "git.allowed.test": [WORLD_V4],
    "v6.allowed.test": [WORLD_V6],
    "denied.test": [WORLD_V4],  # resolves, but is not on the allowlist
    "loopback.allowed.test": ["127.0.0.1"],
    "metadata.allowed.test": ["169.254.169.254"],
    "v6loopback.allowed.test": ["::1"],
    "private.allowed.test": [WORLD_PRIVATE],
    "mapped.allowed.test": ["::ffff:127.0.0.1"],
    "rebind.allowed.test": [WORLD_V4, "127.0.0.1"],
    "hostaddr.allowed.test": [HOST_SIDE_V4],
}

WORLD_SERVER = r"""
import http.server, os, socket, ssl, sys, threading
root, cert, key = sys.argv[1:4]
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # v4 and v6
        super().server_bind()
plain = Server(("::", 80), Handler)
tls = Server(("::", 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
tls.socket = context.wrap_socket(tls.socket, server_side=True)
for server in (plain, tls):
    threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""

# The launcher's part, as a separate process: start the proxy, probe it, report, wait.
# A file it opened without close-on-exec must not reach the proxy.
STAND_IN = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from sandbox_setup.launcher.egress.proxy import probe_proxy, start_proxy_process
from sandbox_setup.policy.network import EgressPolicy
from tests.seams.launch_with_seams import load_resolve_map, map_resolver
socket_path, log_path, patterns, leak_path, resolve_map = sys.argv[2:7]
leak = os.open(leak_path, os.O_RDONLY)
os.set_inheritable(leak, True)
policy = EgressPolicy.build(json.loads(patterns))
log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
pid = start_proxy_process(socket_path, policy, log_fd, 65534, 65534,
                          resolver=map_resolver(load_resolve_map(resolve_map)))
probe_proxy(socket_path)
print(json.dumps({"pid": pid, "leak_fd": leak}), flush=True)
sys.stdin.read()
"""


def bridge_argv(socat: str, port: int, socket_path: str) -> list[str]:
    """Inside a test's sandbox: ``127.0.0.1:PORT`` -> the proxy's unix socket (the
    launcher itself makes its listeners inside instead: sandbox_setup.launcher.egress.netns).

    ``bind=127.0.0.1``: the listener is for this namespace's loopback only.
    ``fork``: one child per connection, so a slow download does not block the API.
    ``reuseaddr``: a restarted bridge binds again at once. ``-b``: socat's default
    8 KiB copy buffer costs a third of the throughput on a fast link.
    """
    return [
        socat,
        "-b",
        "262144",
        f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr",
        f"UNIX-CONNECT:{socket_path}",
    ]


def run(argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def free_port(start: int = 18300, stop: int = 18400, avoid: Sequence[int] = ()) -> int:
    """A free TCP port on the host's loopback in this helper's range."""
    for port in range(start, stop):
        if port in avoid:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18300-18399")


def wait_for_tcp(host: str, port: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {host}:{port}")


def process_gone(pid: int, timeout: float = 5.0) -> bool:
    """Has ``pid`` exited (reaped or zombie) within ``timeout``?"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


@dataclass
class StandIn:
    """A stand-in launcher process and the proxy it started."""

    process: subprocess.Popen[str]
    proxy_pid: int
    leak_fd: int
    socket_path: Path
    log_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        process_gone(self.proxy_pid, 5.0)
        with _ignored():
            os.kill(self.proxy_pid, signal.SIGKILL)

    def decisions(self) -> list[dict[str, object]]:
        lines = self.log_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]


def start_stand_in(
    base: Path,
    name: str,
    netns: str | None,
    patterns: Sequence[str],
    environ: dict[str, str],
    resolve_map: Path,
) -> StandIn:
    """Start the proxy the way the launcher will: as root, dropping to nobody, probed;
    it resolves names from ``resolve_map`` (the world's DNS)."""
    socket_path, log_path, leak = base / f"{name}.sock", base / f"{name}.log", base / "leak"
    leak.write_text("a file of the launcher's\n")
    prefix = ["ip", "netns", "exec", netns] if netns else []
    process = subprocess.Popen(
        [*prefix, sys.executable, "-c", STAND_IN, str(REPO), str(socket_path), str(log_path),
         json.dumps(list(patterns)), str(leak), str(resolve_map)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=environ,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        assert process.stderr is not None
        raise RuntimeError(f"the stand-in launcher failed: {process.stderr.read()}")
    report = json.loads(line)
    return StandIn(process, report["pid"], report["leak_fd"], socket_path, log_path)


class _ignored:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, value: object, tb: object) -> bool:
        return isinstance(value, OSError)


@dataclass
class World:
    tag: str
    base: Path  # 0755, under /var/tmp
    host_ns: str
    world_ns: str
    ca: Path
    resolve_map: Path
    repo_head: str  # the commit the served repository's main branch points at

    def netns_run(self, netns: str, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return run(["ip", "netns", "exec", netns, *argv])


def _make_certificate(base: Path) -> tuple[Path, Path]:
    cert, key = base / "ca.pem", base / "key.pem"
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj",
         "/CN=allowed.test", "-addext",
         "subjectAltName=DNS:allowed.test,DNS:*.allowed.test,DNS:denied.test"])  # fmt: skip
    cert.chmod(0o644)
    return cert, key


def _make_repository(base: Path, docroot: Path) -> str:
    """A bare repository served over git's dumb HTTP protocol; its main commit."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    work = base / "work"
    run(["git", "init", "-q", "-b", "main", str(work)], env=env)
    (work / "README").write_text("served through the egress proxy\n")
    run(["git", "-C", str(work), "add", "README"], env=env)
    run(["git", "-C", str(work), "commit", "-q", "-m", "one"], env=env)
    head = run(["git", "-C", str(work), "rev-parse", "HEAD"], env=env).stdout.strip()
    bare = docroot / "repo.git"
    run(["git", "clone", "-q", "--bare", str(work), str(bare)], env=env)
    run(["git", "-C", str(bare), "update-server-info"], env=env)
    return head


def _mac(netns: str, dev: str) -> str:
    info = json.loads(run(["ip", "-n", netns, "-j", "link", "show", "dev", dev]).stdout)
    return str(info[0]["address"])


def _static_neighbours(host_ns: str, host_dev: str, world_ns: str, world_dev: str) -> None:
    """Each end knows the other's IPv6 addresses' MAC: no neighbour discovery delay (~1 s)."""
    for netns, dev, peers, mac in (
        (host_ns, host_dev, (WORLD_V6,), _mac(world_ns, world_dev)),
        (world_ns, world_dev, ("2001:db8::1",), _mac(host_ns, host_dev)),
    ):
        for address in peers:
            run(["ip", "-n", netns, "neigh", "replace", address, "lladdr", mac, "dev", dev,
                 "nud", "permanent"])  # fmt: skip


def _wait_for_host_service(world: World) -> None:
    url = f"http://127.0.0.1:{HOST_LOOPBACK_PORT}/secret.txt"
    for _ in range(100):
        answer = subprocess.run(
            ["ip", "netns", "exec", world.host_ns, "curl", "-sS", "--noproxy", "*", url],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if answer.stdout == HOST_SECRET:
            return
        time.sleep(0.05)
    raise RuntimeError("the host-side loopback service did not start")


@contextmanager
def make_world(prefix: str = "np", metadata: bool = False) -> Iterator[World]:
    """Build the two namespaces, the servers and the certificate; remove all of it after."""
    tag = secrets.token_hex(3)
    host_ns, world_ns = f"{prefix}-h-{tag}", f"{prefix}-w-{tag}"
    host_dev, world_dev = f"{prefix}-a-{tag}", f"{prefix}-b-{tag}"
    base = Path(tempfile.mkdtemp(prefix=f"{prefix}-egress-{tag}-", dir="/var/tmp"))
    processes: list[subprocess.Popen[Any]] = []
    try:
        base.chmod(0o755)
        docroot = base / "www"
        docroot.mkdir()
        (docroot / "hello.txt").write_text(WORLD_GREETING)
        (docroot / "big.bin").write_bytes(os.urandom(BIG_SIZE))
        with (docroot / "slow.bin").open("wb") as handle:
            handle.truncate(SLOW_SIZE)  # sparse zeros: TLS does not compress them
        if metadata:
            served = docroot / METADATA_PATH.lstrip("/")
            served.parent.mkdir(parents=True)
            served.write_text(METADATA_SECRET)
        repo_head = _make_repository(base, docroot)
        cert, key = _make_certificate(base)
        resolve_map = base / "resolve.json"
        resolve_map.write_text(json.dumps(RESOLVE))

        run(["ip", "netns", "add", host_ns])
        run(["ip", "netns", "add", world_ns])
        run(["ip", "link", "add", host_dev, "netns", host_ns, "type", "veth",
             "peer", "name", world_dev, "netns", world_ns])  # fmt: skip
        link_local = (("169.254.0.1/16",), (f"{METADATA}/16",)) if metadata else ((), ())
        for netns, dev, addresses in (
            (host_ns, host_dev, (f"{HOST_SIDE_V4}/24", "10.77.0.1/24", "2001:db8::1/64",
                                 *link_local[0])),
            (world_ns, world_dev, (f"{WORLD_V4}/24", f"{WORLD_PRIVATE}/24", f"{WORLD_V6}/64",
                                   *link_local[1])),
        ):  # fmt: skip
            run(["ip", "-n", netns, "link", "set", "lo", "up"])
            for address in addresses:
                extra = ["nodad"] if ":" in address else []
                run(["ip", "-n", netns, "addr", "add", address, "dev", dev, *extra])
            run(["ip", "-n", netns, "link", "set", dev, "up"])

        _static_neighbours(host_ns, host_dev, world_ns, world_dev)
        world = subprocess.Popen(
            ["ip", "netns", "exec", world_ns, sys.executable, "-c", WORLD_SERVER,
             str(docroot), str(cert), str(key)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        processes.append(world)
        assert world.stdout is not None
        if world.stdout.readline().strip() != "ready":
            raise RuntimeError("the world's servers did not start")
        host_service = base / "host-service"
        host_service.mkdir()
        (host_service / "secret.txt").write_text(HOST_SECRET)
        loopback_service = subprocess.Popen(
            ["ip", "netns", "exec", host_ns, sys.executable, "-m", "http.server",
             "--bind", "127.0.0.1", "--directory", str(host_service), str(HOST_LOOPBACK_PORT)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        processes.append(loopback_service)
        world_view = World(tag, base, host_ns, world_ns, cert, resolve_map, repo_head)
        _wait_for_host_service(world_view)
        yield world_view
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        for netns in (host_ns, world_ns):
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


@dataclass
class Proxy:
    world: World
    stand_in: StandIn
    url: str  # http://127.0.0.1:PORT, the bridge to the proxy's socket
    port: int


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    require_root()
    for tool in ("ip", "openssl", "curl", "git", "socat"):
        require_tool(tool)
    with make_world() as built:
        yield built


@pytest.fixture(scope="module")
def egress(world: World) -> Iterator[Proxy]:
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    stand_in = start_stand_in(
        world.base, "egress", world.host_ns, ALLOWED_PATTERNS, environ, world.resolve_map
    )
    port = free_port()
    bridge = subprocess.Popen(bridge_argv("socat", port, str(stand_in.socket_path)))
    try:
        wait_for_tcp("127.0.0.1", port)
        yield Proxy(world, stand_in, f"http://127.0.0.1:{port}", port)
    finally:
        bridge.kill()
        bridge.wait()
        stand_in.stop()


def in_netns(netns: str, work: Callable[[], T]) -> T:
    """``work()`` run in a thread that joined the network namespace ``netns`` (``ip netns``).

    A namespace is per thread: sockets ``work`` creates belong to ``netns`` for good
    (a server bound there serves there), and no other thread of this process moves.
    """
    import ctypes

    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), f"setns into {netns}")
            finally:
                os.close(fd)
            if os.readlink("/proc/thread-self/ns/net") == os.readlink("/proc/self/ns/net"):
                raise RuntimeError(f"setns into {netns} left the thread in the host's namespace")
            result.append(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"in-{netns}")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]
