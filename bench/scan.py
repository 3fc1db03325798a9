"""Benchmark (by hand, not CI): what the workspace scan adds to a session's start
and end on a workspace of 10k files.

The workspace: 10,000 regular files in 500 directories up to 5 levels deep, with
5 git repositories (real ``git init`` + a commit each, so ``.git`` holds objects,
sample hooks and a config), a ``.claude/settings.json`` and a ``.vscode/``.
``snapshot()`` (session start) and ``scan(before=snapshot)`` (session end) run
``--runs`` times each on a warm cache; the result is the median. Target: the
end-of-session scan under 0.2 s.

    .venv/bin/python bench/scan.py [--runs 15] [--files 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sandbox_setup.boundary import scan as workspace_scan  # noqa: E402
from sandbox_setup.policy.workspace import plan_ro_binds  # noqa: E402

TARGET = 0.2


def build(ws: Path, files: int) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ws.parent)}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
    dirs = 500
    per_dir = files // dirs
    for d in range(dirs):
        prefix = [f"pkg{d % 5}", f"mod{d % 25}", f"sub{d % 100}"][: 1 + d % 3]
        parts = [*prefix, f"leaf{d}"]
        path = ws.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        for f in range(per_dir):
            (path / f"file{f}.py").write_text("x = 1\n")
    for r in range(5):
        repo = ws / f"pkg{r}"
        subprocess.run(["git", "init", "-q", str(repo)], env=env, check=True)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], env=env, check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", "bench"], env=env, check=True)
    (ws / ".claude").mkdir()
    (ws / ".claude/settings.json").write_text('{"model": "opus"}\n')
    (ws / ".vscode").mkdir()
    (ws / ".vscode/settings.json").write_text("{}\n")


def timed(fn: object, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ws-scan-bench-"))
    try:
        ws = base / "ws"
        ws.mkdir()
        build(ws, args.files)
        total = sum(len(f) + len(d) for _r, d, f in os.walk(ws))
        workspaces = [str(ws)]
        before = workspace_scan.snapshot(workspaces)
        snap = timed(lambda: workspace_scan.snapshot(workspaces), args.runs)
        end = timed(lambda: workspace_scan.scan(workspaces, before), args.runs)
        plan = plan_ro_binds(before.layouts[str(ws)])
        result = workspace_scan.scan(workspaces, before)
        print(f"workspace: {total} entries ({args.files} files), 5 repositories")
        print(f"snapshot (session start): {snap * 1000:.1f} ms median of {args.runs}")
        print(f"scan (session end):       {end * 1000:.1f} ms median of {args.runs}")
        print(f"read-only binds planned:  {len(plan.binds)}")
        print(f"findings to neutralize:   {len(result.to_neutralize)}")
        print(f"truncated:                {result.truncated or 'no'}")
        verdict = "ok" if end < TARGET else "OVER TARGET"
        print(f"target: scan < {TARGET * 1000:.0f} ms: {verdict}")
        return 0 if end < TARGET else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
