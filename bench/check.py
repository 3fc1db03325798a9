"""Benchmark (by hand, not CI): ``sandbox-setup --check --json`` vs the same probes in sh.

Runs both N times, alternating, in the same run, and prints the median of the
per-pair time ratios (check / shell). The checks run their live probes
concurrently, so the target is a ratio of at most 2.0 despite Python's start-up.

    .venv/bin/python bench/check.py [-n 15] [--as-user NAME]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 2.0


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd="/", stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="pairs of runs (default 15)")
    parser.add_argument("--as-user", metavar="NAME", help="probe as this user (needs root)")
    args = parser.parse_args()
    user = ["--as-user", args.as_user] if args.as_user else []
    check = [sys.executable, "-m", "sandbox_setup", "--check", "--json", *user]
    shell = ["bash", str(REPO / "bench" / "probes.sh"), *user]
    timed(check), timed(shell)  # warm the page cache for both
    ratios, check_times, shell_times = [], [], []
    for i in range(args.n):
        # alternate which goes first so neither always gets the warmer machine
        if i % 2:
            s, c = timed(shell), timed(check)
        else:
            c, s = timed(check), timed(shell)
        check_times.append(c)
        shell_times.append(s)
        ratios.append(c / s)
    median = statistics.median(ratios)
    print(f"runs: {args.n} pairs" + (f", probes as {args.as_user}" if args.as_user else ""))
    print(f"sandbox-setup --check --json  median {statistics.median(check_times) * 1000:.0f} ms")
    print(f"bench/probes.sh (sequential)  median {statistics.median(shell_times) * 1000:.0f} ms")
    print(f"median ratio check/shell: {median:.2f} (target <= {TARGET})")
    return 0 if median <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
