"""Benchmark (by hand, not CI): a 50 MB download through the egress proxy vs direct.

Baseline: ``curl http://127.0.0.1:S/blob`` from a local server (sendfile, so the
server is not what is measured). Candidate: the same download the way a sandboxed
client makes it: curl -> ``127.0.0.1:B`` (the socat bridge of
:func:`wizard.launcher.proxy.bridge_argv`) -> the proxy's unix socket -> the proxy
(started by :func:`start_proxy_process`, as ``nobody`` when run as root) -> the
server. The policy allows the server's exact address, so the decision path runs as
in a session. Runs alternate; the result is the ratio of median throughputs.
Target: >= 0.8.

    .venv/bin/python bench/proxy.py [--runs 11] [--size-mb 50] [--mode connect|http]

``connect`` (default) tunnels with CONNECT, the path every TLS download takes;
``http`` uses plain forwarding. Needs curl and socat.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from wizard.launcher.proxy import bridge_argv, probe_proxy, start_proxy_process  # noqa: E402
from wizard.policy.network import EgressPolicy  # noqa: E402

TARGET = 0.8
NOBODY = 65534

# A file server that sends with sendfile(2): the baseline must not be Python's copy loop.
SERVER = r"""
import http.server, os, socketserver, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = sys.argv[1]
        size = os.path.getsize(path)
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.flush()
        with open(path, "rb") as f:
            self.connection.sendfile(f)
    def log_message(self, *a):
        pass
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


def timed_download(argv: list[str], size: int) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [*argv, "-sS", "-o", "/dev/null", "-w", "%{size_download}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    if result.returncode != 0 or result.stdout.strip() != str(size):
        raise SystemExit(f"download failed: {argv}: {result.stdout} {result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--mode", choices=("connect", "http"), default="connect")
    parser.add_argument(
        "--bridge",
        choices=("socat", "none"),
        default="socat",
        help="none: the proxy accepts TCP itself (a listener the launcher would create "
        "inside the sandbox's network namespace), to show what the socat hop costs",
    )
    args = parser.parse_args()
    for tool in ("curl", "socat"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed")
    as_root = os.geteuid() == 0
    uid, gid = (NOBODY, NOBODY) if as_root else (os.getuid(), os.getgid())

    base = Path(tempfile.mkdtemp(prefix="np-bench-proxy-", dir="/tmp"))
    children: list[subprocess.Popen[str]] = []
    proxy_pid = None
    try:
        base.chmod(0o755)
        blob = base / "blob"
        size = args.size_mb * 1024 * 1024
        with blob.open("wb") as handle:
            handle.write(os.urandom(size))
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(blob)], stdout=subprocess.PIPE, text=True
        )
        children.append(server)
        assert server.stdout is not None
        server_port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{server_port}/blob"

        policy = EgressPolicy.build([f"127.0.0.1:{server_port}"])
        log_fd = os.open(base / "decisions.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        sock_path = str(base / "egress.sock")
        if args.bridge == "socat":
            proxy_pid = start_proxy_process(sock_path, policy, log_fd, uid, gid)
            probe_proxy(sock_path)
            bridge_port = free_port()
            bridge = subprocess.Popen(bridge_argv("socat", bridge_port, sock_path), text=True)
            children.append(bridge)
        else:
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)
            bridge_port = listener.getsockname()[1]
            proxy_pid = start_proxy_process(sock_path, policy, log_fd, uid, gid, listener=listener)
            listener.close()
        os.close(log_fd)
        wait_for_port(bridge_port)

        direct = ["curl", url]
        proxied = ["curl", "-x", f"http://127.0.0.1:{bridge_port}", url]
        if args.mode == "connect":
            proxied.insert(1, "--proxytunnel")
        timed_download(direct, size), timed_download(proxied, size)  # warm up
        direct_s, proxied_s = [], []
        for _ in range(args.runs):
            direct_s.append(timed_download(direct, size))
            proxied_s.append(timed_download(proxied, size))
    finally:
        for child in children:
            child.kill()
            child.wait()
        if proxy_pid is not None:
            os.kill(proxy_pid, signal.SIGKILL)
            os.waitpid(proxy_pid, 0)
        shutil.rmtree(base, ignore_errors=True)

    mb = size / 1e6
    direct_rate = mb / statistics.median(direct_s)
    proxied_rate = mb / statistics.median(proxied_s)
    ratio = proxied_rate / direct_rate
    print(f"direct              median {direct_rate:8.1f} MB/s over {args.runs} runs")
    via = "via the socat bridge" if args.bridge == "socat" else "TCP straight to the proxy"
    print(f"through the proxy   median {proxied_rate:8.1f} MB/s ({args.mode}, {via})")
    print(f"ratio {ratio:.3f} (target >= {TARGET}) -> {'ok' if ratio >= TARGET else 'UNDER'}")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
