"""Time to the first painted wizard screen, against importing Textual.

Run by hand (not a test; timings are never asserted):

    .venv/bin/python bench/tui.py [--runs 7]

Each run starts ``python -m sandbox_setup --root TMP`` in an 80x24 pseudo-terminal,
reads its output until the welcome screen's button text appears, records the
time, and quits it. The baseline, in the same run and interleaved, is
``python -c "import textual.app"``. Prints both medians and their ratio.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = b"Start host checks"
ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def time_import() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import textual.app"], check=True, cwd=REPO)
    return time.perf_counter() - start


def time_first_paint(root: Path, timeout: float = 30.0) -> float:
    pid, fd = pty.fork()
    if pid == 0:  # child: the wizard on the pty
        os.chdir(REPO)
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="80", LINES="24")
        os.execve(sys.executable, [sys.executable, "-m", "sandbox_setup", "--root", str(root)], env)
    start = time.perf_counter()
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen = b""
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if MARKER in ANSI.sub(b"", seen):
                return time.perf_counter() - start
        raise RuntimeError(f"no first paint within {timeout}s: {ANSI.sub(b'', seen)[-400:]!r}")
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        root = Path(tmp)
        (root / "etc").mkdir()
        time_first_paint(root)  # warm the page cache and bytecode once
        paint, imports = [], []
        for _ in range(args.runs):
            imports.append(time_import())
            paint.append(time_first_paint(root))
    p, i = statistics.median(paint), statistics.median(imports)
    print(f"first painted screen: median {p * 1000:.0f} ms over {args.runs} runs")
    print(f"import textual.app:   median {i * 1000:.0f} ms over {args.runs} runs")
    print(f"ratio: {p / i:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
