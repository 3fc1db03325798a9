"""Benchmark (by hand, not CI): many small GETs on 200 connections, through the egress proxy.

What ``npm install`` asks of the proxy: hundreds of short requests (metadata, small
tarballs) on many connections at once, each one a CONNECT tunnel reused for several
requests, as npm's keep-alive agent does. Baseline: curl fetches ``--requests`` URLs
(1-8 KB each) from a local server with at most ``--connections`` transfers at once
(``--parallel --parallel-immediate``: a connection of its own for each, up to that
many). Candidate: the same curl from a held sandbox's network namespace through
``127.0.0.1:3128`` -> the proxy -> the server, tunnelled (``--proxytunnel``), the
sandbox and the proxy set up as ``bench/proxy.py`` sets them up. The server is asyncio
in one process (keep-alive, a fixed body per size), so that neither side waits on a
slow server. Runs alternate; the result is the ratio of median rates (requests per
second). Target: >= 0.9.

    .venv/bin/python bench/connections.py [--runs 11] [--connections 200] [--requests 4000]

Needs root, bwrap, setpriv, nsenter and curl.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "bench"), str(REPO / "src"), str(REPO)]

import proxy as proxy_bench  # noqa: E402  (bench/proxy.py: its sandbox, its proxy)

from sandbox_setup.launcher.egress.network import SANDBOX_PROXY_PORT  # noqa: E402

TARGET = 0.9

# /pkg/N is answered with SIZES[N % 4] bytes.

SMALL_SERVER = r"""
import asyncio, sys
SIZES = (1024, 2048, 4096, 8192)
ANSWERS = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n"
    % size + b"x" * size
    for size in SIZES
]
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            writer.write(ANSWERS[int(path.rsplit(b"/", 1)[1]) % len(ANSWERS)])
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError, IndexError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def url_list(path: Path, port: int, count: int) -> Path:
    """A curl config with ``count`` URLs, each written to /dev/null."""
    path.write_text(
        "".join(f'url = "http://127.0.0.1:{port}/pkg/{n}"\noutput = "/dev/null"\n'
                for n in range(count))
    )  # fmt: skip
    return path


def children_cpu() -> float:
    """CPU seconds (user and system) of the waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_fetch(argv: list[str], count: int, cpu: list[float] | None = None) -> float:
    """Seconds to fetch every URL (the client's CPU seconds appended to ``cpu``);
    refuses a run where one failed."""
    start, start_cpu = time.perf_counter(), children_cpu()
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if cpu is not None:
        cpu.append(children_cpu() - start_cpu)
    codes = result.stdout.split()
    if result.returncode != 0 or len(codes) != count or set(codes) != {"200"}:
        bad = [c for c in codes if c != "200"][:5]
        raise SystemExit(f"fetch failed: exit {result.returncode}, {len(codes)} of {count} "
                         f"answers, not 200: {bad}\n{result.stderr[-2000:]}")  # fmt: skip
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--requests", type=int, default=4000)
    args = parser.parse_args()
    proxy_bench.require("curl", "bwrap", "setpriv", "nsenter")

    base = Path(tempfile.mkdtemp(prefix="np-bench-connections-", dir="/tmp"))
    server = None
    try:
        base.chmod(0o755)
        server, port = proxy_bench.start_server(SMALL_SERVER)
        urls = url_list(base / "urls.curlrc", port, args.requests)
        curl = ["curl", "-sS", "--parallel", "--parallel-immediate", "--parallel-max",
                str(args.connections), "-w", "%{http_code}\n", "-K", str(urls)]  # fmt: skip
        proxy = ["-x", f"http://127.0.0.1:{SANDBOX_PROXY_PORT}", "--proxytunnel"]
        with proxy_bench.sandbox_with_proxy([f"127.0.0.1:{port}"], base) as pid:
            direct = proxy_bench.in_netns(os.getpid(), curl)
            proxied = proxy_bench.in_netns(pid, [*curl, *proxy])
            timed_fetch(direct, args.requests), timed_fetch(proxied, args.requests)  # warm up
            direct_s, proxied_s = [], []
            direct_cpu, proxied_cpu = [], []  # curl's (and nsenter's) CPU seconds a run
            for i in range(args.runs):
                first, second = (direct, direct_s, direct_cpu), (proxied, proxied_s, proxied_cpu)
                for argv, times, cpu in (first, second) if i % 2 == 0 else (second, first):
                    times.append(timed_fetch(argv, args.requests, cpu))
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(base, ignore_errors=True)

    direct_rate = args.requests / statistics.median(direct_s)
    proxied_rate = args.requests / statistics.median(proxied_s)
    ratio = proxied_rate / direct_rate
    print(f"direct              median {direct_rate:8.0f} req/s over {args.runs} runs")
    print(f"through the proxy   median {proxied_rate:8.0f} req/s ({args.connections} connections, "
          "CONNECT, from the sandbox's network namespace)")  # fmt: skip
    # The client is the limit here (one core, busy nearly all of the direct run), and a
    # CONNECT proxy costs curl CPU of its own (docs/performance.md, "curl's CPU through
    # the proxy"): its CPU a run, beside the wall time, tells the two apart.
    print(f"curl's CPU a run    median {statistics.median(direct_cpu) * 1000:.0f} ms direct, "
          f"{statistics.median(proxied_cpu) * 1000:.0f} ms through the proxy "
          f"(wall {statistics.median(direct_s) * 1000:.0f} / "
          f"{statistics.median(proxied_s) * 1000:.0f} ms)")  # fmt: skip
    print(f"ratio {ratio:.3f} (target >= {TARGET}) -> {'ok' if ratio >= TARGET else 'UNDER'}")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
