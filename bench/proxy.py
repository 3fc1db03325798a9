"""Benchmark (by hand, not CI): a download of a second or more through the egress proxy vs direct.

Baseline: ``curl http://127.0.0.1:S/N`` from a local server that streams ``N`` bytes
with sendfile(2) (a 64 MiB random blob in the page cache, sent over and over: the
server is not what is measured, and no file of the download's size is written).
Candidate: the same download the way a sandboxed client makes it: a bwrap sandbox with a
network namespace of its own is started as ``nobody`` (held before its release, as a
launch holds it), the session's listeners are made in its namespace
(:func:`sandbox_setup.launcher.egress.netns.open_in_sandbox`), the proxy is forked on
them as ``nobody`` (:func:`sandbox_setup.launcher.egress.proxy.fork_proxy`, as
:class:`sandbox_setup.launcher.egress.session.EgressSession` does), and curl runs in the
sandbox's namespace (``nsenter --net``) through ``127.0.0.1:3128`` -> the proxy -> the
server. The baseline's curl runs under the same ``nsenter``, into the host's own
namespace, so both start alike. The policy allows the server's exact address, so the
decision path runs as in a session. Runs alternate; the result is the ratio of median
throughputs. Target: >= 0.8.

The size: ``--seconds S`` (the default, 1.5) measures the direct rate first (two
256 MiB downloads) and takes the size that lasts ``S`` seconds direct at that rate,
rounded up to 100 MiB: a transfer long enough that the start of a connection (the
sandbox's ``CONNECT``, the proxy's decision) and the first round trips are not what is
measured (50 MiB took some 25-40 ms here: noise). ``--size-mb N`` fixes it instead.
The output names the size and the median seconds of each side.

    .venv/bin/python bench/proxy.py [--runs 11] [--seconds 1.5 | --size-mb N] [--mode connect|http]

``connect`` (default) tunnels with CONNECT, the path every TLS download takes;
``http`` uses plain forwarding. Needs root, bwrap, setpriv, nsenter and curl.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO)]

from sandbox_setup.launcher.egress.netns import held_sandbox, open_in_sandbox  # noqa: E402
from sandbox_setup.launcher.egress.network import SANDBOX_PROXY_PORT  # noqa: E402
from sandbox_setup.launcher.egress.proxy import fork_proxy  # noqa: E402
from sandbox_setup.policy.network import EgressPolicy  # noqa: E402

TARGET = 0.8
NOBODY = 65534

MIB = 1024 * 1024
BLOB = 64 * MIB  # random bytes, sent over and over
CALIBRATE = 256 * MIB  # the direct download that measures the rate for --seconds

# GET /N: N bytes, the blob sent with sendfile(2) over and over (the baseline must not
# be Python's copy loop, nor a file of N bytes).
SERVER = r"""
import http.server, os, socketserver, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = sys.argv[1]
        blob = os.path.getsize(path)
        size = int(self.path.rsplit("/", 1)[1])
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.flush()
        with open(path, "rb") as f:
            while size:
                size -= self.connection.sendfile(f, 0, min(size, blob))
    def log_message(self, *a):
        pass
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def start_server(code: str, *args: str) -> tuple[subprocess.Popen[str], int]:
    """``python -c CODE ARGS...``, a server that prints its port first; (process, port)."""
    server = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line.strip().isdigit():
        server.kill()
        server.wait()
        raise SystemExit(f"the bench server did not start: {line!r}")
    return server, int(line)


@contextlib.contextmanager
def sandbox_with_proxy(allowed: list[str], base: Path) -> Iterator[int]:
    """A sandbox held as a launch holds it, with the egress proxy serving it: its pid.

    bwrap with a network namespace of its own runs as ``nobody`` and is held before its
    release; the session's listeners are made in its namespace; the proxy is forked on
    them as ``nobody``, allowing ``allowed``, its decisions logged under ``base``. A
    client that enters ``/proc/PID/ns/net`` reaches it at ``127.0.0.1:3128``, as a
    sandboxed client does.
    """
    policy = EgressPolicy.build(allowed)
    log_fd = os.open(base / "decisions.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    proxy = None
    with contextlib.ExitStack() as stack:
        try:
            held = held_sandbox("bwrap", ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                                          "--clear-groups", "--"])  # fmt: skip
            pid = stack.enter_context(held)
            proxy = fork_proxy(None, policy, log_fd, NOBODY, NOBODY, later=True)
            sockets = open_in_sandbox(pid, SANDBOX_PROXY_PORT)
            for probe in sockets.probes:
                probe.close()
            proxy.hand_over(sockets.proxy, sockets.forwards)
            proxy.wait_ready()
            os.close(log_fd)
            log_fd = -1
            yield pid
        finally:
            if log_fd >= 0:
                os.close(log_fd)
            if proxy is not None:
                proxy.stop()


def in_netns(pid: int, argv: list[str]) -> list[str]:
    """``argv`` run in the network namespace of ``pid``."""
    return ["nsenter", f"--net=/proc/{pid}/ns/net", *argv]


def timed_download(argv: list[str], size: int) -> float:
    """Seconds to download ``size`` bytes with curl ``argv`` (its URL without the size)."""
    argv = [*argv[:-1], f"{argv[-1]}/{size}"]
    start = time.perf_counter()
    result = subprocess.run(
        [*argv, "-sS", "-o", "/dev/null", "-w", "%{size_download}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    if result.returncode != 0 or result.stdout.strip() != str(size):
        raise SystemExit(f"download failed: {argv}: {result.stdout} {result.stderr}")
    return elapsed


def require(*tools: str) -> None:
    for tool in tools:
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed")
    if os.geteuid() != 0:
        raise SystemExit("run as root (the sandbox and the proxy run as nobody)")


def size_for(seconds: float, direct: list[str]) -> int:
    """The size (whole 100 MiB) that a direct download takes ``seconds`` for, at the
    rate of the faster of two 256 MiB downloads."""
    rate = CALIBRATE / min(timed_download(direct, CALIBRATE) for _ in range(2))
    return max(1, math.ceil(rate * seconds / (100 * MIB))) * 100 * MIB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--seconds", type=float, default=1.5)
    how.add_argument("--size-mb", type=int, default=0)
    parser.add_argument("--mode", choices=("connect", "http"), default="connect")
    args = parser.parse_args()
    require("curl", "bwrap", "setpriv", "nsenter")

    base = Path(tempfile.mkdtemp(prefix="np-bench-proxy-", dir="/tmp"))
    server = None
    try:
        base.chmod(0o755)
        blob = base / "blob"
        with blob.open("wb") as handle:
            handle.write(os.urandom(BLOB))
        server, server_port = start_server(SERVER, str(blob))
        url = f"http://127.0.0.1:{server_port}"
        with sandbox_with_proxy([f"127.0.0.1:{server_port}"], base) as pid:
            direct = in_netns(os.getpid(), ["curl", url])
            proxied = in_netns(pid, ["curl", "-x", f"http://127.0.0.1:{SANDBOX_PROXY_PORT}", url])
            if args.mode == "connect":
                proxied.insert(3, "--proxytunnel")
            size = args.size_mb * MIB or size_for(args.seconds, direct)
            timed_download(direct, size), timed_download(proxied, size)  # warm up
            direct_s: list[float] = []
            proxied_s: list[float] = []
            for i in range(args.runs):
                first, second = (direct, direct_s), (proxied, proxied_s)
                for argv, times in (first, second) if i % 2 == 0 else (second, first):
                    times.append(timed_download(argv, size))
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(base, ignore_errors=True)

    mb = size / 1e6
    direct_t, proxied_t = statistics.median(direct_s), statistics.median(proxied_s)
    ratio = direct_t / proxied_t
    print(f"download of {size // MIB} MiB, {args.runs} alternating runs")
    print(f"direct              median {mb / direct_t:8.1f} MB/s, {direct_t:.3f} s")
    print(f"through the proxy   median {mb / proxied_t:8.1f} MB/s, {proxied_t:.3f} s ({args.mode}, "
          "from the sandbox's network namespace)")  # fmt: skip
    print(f"ratio {ratio:.3f} (target >= {TARGET}) -> {'ok' if ratio >= TARGET else 'UNDER'}")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
