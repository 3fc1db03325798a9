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
        [sys.executable, "-m", "wizard", "--check", "net.egress", "--as-user", "nobody",
         "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    (finding,) = json.loads(result.stdout)["checks"]
    assert finding["status"] == "pass", finding
    assert "runs as nobody" in finding["summary"]
    assert "169.254.169.254:80: sandbox-launch egress proxy: refused" in finding["detail"]


def test_the_egress_probe_never_starts_the_proxy_as_root() -> None:
    require_root()
    result = subprocess.run(
        [sys.executable, "-P", "-m", "wizard.launcher.egress_probe", "--uid", "0", "--gid", "0"],
        cwd="/", capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(result.stdout)["proxy"] == "the egress proxy never runs as root"
