"""Benchmark (by hand, not CI): what sandbox-launch adds over starting Claude Code directly.

Baseline: ``IS_SANDBOX=1 HOME=<temp> claude --print ok`` (exits at the login
message). Candidate: ``sandbox-launch --config <temp> -- --print ok`` in
sandbox mode (setpriv -> bwrap -> verification -> the same Claude, which stops
at the same message). Runs alternate, one after the other, in the same process;
the result is the ratio of the medians. Target: <= 1.15.

    .venv/bin/python bench/launch.py [--runs 15] [--network host|allowlist|none]

``--network allowlist`` measures the launch with the egress proxy (its listeners made in
the sandbox's namespace, forked as the agent, probed from inside before release); the
decision log goes to a temp state directory.

Needs root, bwrap, setpriv and Claude Code from npm (tests/run.sh installs it).
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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO)]

from sandbox_setup.base.choices import Mode, Network  # noqa: E402
from sandbox_setup.base.launcher_config import LauncherConfig  # noqa: E402
from sandbox_setup.configure.launcher_toml import render_launcher_config  # noqa: E402

if TYPE_CHECKING:
    from tests.live_accounts import LiveAccount

NPM_CLAUDE = Path("/opt/sandbox-setup-test/npm/node_modules/.bin/claude")
BENCH_AGENT = "ac-bench-agent"
TARGET = 1.15


@contextmanager
def bench_agent() -> Iterator[LiveAccount]:
    """The launched side's agent: a live account as sandbox-setup makes one (nologin,
    locked, a regular uid), removed afterwards (:mod:`tests.live_accounts`)."""
    from tests.live_accounts import AGENT_SHELL, live_account

    with live_account(BENCH_AGENT, shell=AGENT_SHELL) as account:
        yield account


def console(name: str, module: str) -> list[str]:
    """The console script the operator runs (``sandbox-launch``, ``sandbox-setup``) beside
    this interpreter, or ``python -m MODULE`` where there is none."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.is_file() else [sys.executable, "-m", module]


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if "Not logged in" not in result.stdout + result.stderr:
        raise SystemExit(f"unexpected output from {argv[0]}:\n{result.stdout}{result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--claude", default=str(shutil.which("claude") or NPM_CLAUDE))
    parser.add_argument("--network", choices=[n.value for n in Network], default="host")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (the launcher drops to the agent)")

    base = Path(tempfile.mkdtemp(prefix="sandbox-launch-bench-", dir="/tmp"))
    accounts = ExitStack()
    try:
        agent = accounts.enter_context(bench_agent())
        base.chmod(0o755)
        home, workspace, root_home = base / "home", base / "ws", base / "root-home"
        for directory in (home, workspace, root_home):
            directory.mkdir(mode=0o700)
        for directory in (home, workspace):
            os.chown(directory, agent.uid, agent.gid)
        config = base / "launcher.toml"
        config.write_text(
            render_launcher_config(
                LauncherConfig(
                    mode=Mode.SANDBOX,
                    claude=PurePosixPath(args.claude),
                    agent_user=agent.name,
                    agent_home=PurePosixPath(home),
                    workspaces=(PurePosixPath(workspace),),
                    network=Network(args.network),
                )
            )
        )
        config.chmod(0o644)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        direct = ([args.claude, "--print", "ok"],
                  {"PATH": path, "IS_SANDBOX": "1", "HOME": str(root_home)})  # fmt: skip
        launched = (
            [*console("sandbox-launch", "sandbox_setup.launcher"), "--config", str(config), "--",
             "--print", "ok"],
            {"PATH": path, "PYTHONPATH": str(REPO / "src"), "TERM": "dumb",
             "XDG_STATE_HOME": str(base / "state")},
        )  # fmt: skip
        _timed(*direct), _timed(*launched)  # warm the page cache for both
        base_times, launch_times = [], []
        for _ in range(args.runs):
            base_times.append(_timed(*direct))
            launch_times.append(_timed(*launched))
    finally:
        accounts.close()
        shutil.rmtree(base, ignore_errors=True)

    base_median = statistics.median(base_times)
    launch_median = statistics.median(launch_times)
    ratio = launch_median / base_median
    print(f"claude directly      median {base_median * 1000:8.1f} ms over {args.runs} runs")
    print(f"through sandbox-launch median {launch_median * 1000:6.1f} ms over {args.runs} runs")
    print(f"ratio {ratio:.3f} (target <= {TARGET}) -> {'ok' if ratio <= TARGET else 'OVER'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
