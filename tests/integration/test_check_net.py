"""net.egress on this host, for real: bwrap --unshare-net and the launcher's proxy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.tools import REPO, require_root, require_tool

pytestmark = pytest.mark.integration


def test_net_egress_passes_here_as_nobody() -> None:
    require_root()
    for tool in ("bwrap", "socat", "setpriv"):
        require_tool(tool)
    result = subprocess.run(
        [sys.executable, "-m", "sandbox_setup", "--check", "net.egress", "--as-user", "nobody",
         "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    (finding,) = json.loads(result.stdout)["checks"]
    assert finding["status"] == "pass", finding
    assert "runs as nobody" in finding["summary"]
    assert "169.254.169.254:80: sandbox-launch egress proxy: refused" in finding["detail"]


EGRESS_PROBE = (sys.executable, "-P", "-m", "sandbox_setup.launcher.egress.probe")


def test_the_egress_probe_never_starts_the_proxy_as_root() -> None:
    require_root()
    result = subprocess.run(
        [*EGRESS_PROBE, "--uid", "0", "--gid", "0"],
        cwd="/", capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(result.stdout)["proxy"] == "the egress proxy never runs as root"


ADOPTION = r"""
import json, sys
from pathlib import Path
import sandbox_setup.checks.prefetch as prefetch
from sandbox_setup.checks.registry import CHECKS
from sandbox_setup.commands.check import start_experiments
from sandbox_setup.configure.probes import run_live_checks

ids = [c.id for c in CHECKS if not c.id.startswith("claude.")]
as_user = sys.argv[1] or None
start_experiments(ids, as_user)
started = [" ".join(key[0]) for key in prefetch._started]
report = run_live_checks(ids, as_user=as_user)
left = [" ".join(key[0]) for key in prefetch._started]
print(json.dumps({"started": started, "left": left,
                  "egress": next(f.status.value for f in report.findings if f.id == "net.egress")}))
"""


@pytest.mark.parametrize("as_user", ["nobody", ""])
def test_every_experiment_started_early_is_adopted_by_its_check(as_user: str) -> None:
    """``--check`` starts the live checks' first experiments (the egress proxy's probe
    among them) before the checks are imported; each must be the exact command its
    check then runs, or the early start is wasted (and the proxy started twice)."""
    require_root()
    for tool in ("bwrap", "socat", "setpriv"):
        require_tool(tool)
    result = subprocess.run(
        [sys.executable, "-c", ADOPTION, as_user],
        cwd="/", capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    seen = json.loads(result.stdout)
    assert any("sandbox_setup.launcher.egress.probe --uid 65534" in c for c in seen["started"]), (
        seen
    )
    assert any("--unshare-net" in c for c in seen["started"]), seen
    assert seen["left"] == [], seen
    assert seen["egress"] == "pass", seen
