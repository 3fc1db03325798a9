"""``tests/unit`` passes on a host where bwrap, socat, setfacl and getfacl are not
installed: the whole unit suite runs in a private mount namespace whose bin directories
hide them (an overlay with a whiteout for each), never on the host itself. A unit test
of pure logic takes facts as values; one that needs the real tool lives here, in
tests/integration."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.tools import REPO, require_root, require_tool

HIDDEN = ("bwrap", "socat", "setfacl", "getfacl")
BIN_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def _hiding_script(whiteouts: Path) -> str:
    """Shell, run by ``unshare --mount``: an overlay over every bin directory holding
    one of the tools, with a whiteout for it, then the unit suite."""
    mounts = []
    for directory in sorted({os.path.realpath(d) for d in BIN_DIRS if os.path.isdir(d)}):
        present = [t for t in HIDDEN if os.path.lexists(os.path.join(directory, t))]
        if not present:
            continue
        layer = whiteouts / directory.strip("/").replace("/", "_")
        layer.mkdir(parents=True)
        layer.chmod(0o755)
        for tool in present:
            os.mknod(layer / tool, 0o600 | 0o020000, os.makedev(0, 0))  # a whiteout
        mounts.append(f"mount -t overlay overlay -o lowerdir={layer}:{directory} {directory}")
    checks = [
        f"if command -v {t} >/dev/null; then echo 'still found: {t}'; exit 97; fi" for t in HIDDEN
    ]
    return " && ".join(
        [
            *mounts,
            *[f"( {c} )" for c in checks],
            'exec "$0" -m pytest tests/unit -q -rfEs -p no:cacheprovider',
        ]
    )


def test_the_unit_suite_passes_with_the_sandbox_tools_hidden(tmp_path: Path) -> None:
    require_root()
    unshare = require_tool("unshare")
    script = _hiding_script(tmp_path / "whiteouts")
    result = subprocess.run(
        [unshare, "--mount", "--propagation", "private", "sh", "-c", script, sys.executable],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, output[-6000:]
    # The host keeps its tools: the hiding was the namespace's alone.
    for tool in HIDDEN:
        assert shutil.which(tool) is not None, f"{tool} is gone from the host"
