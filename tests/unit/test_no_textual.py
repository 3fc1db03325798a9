"""The headless paths and the launcher never import Textual.

Each path runs in a fresh interpreter (so nothing imported by the test process
leaks in) and reports whether ``textual`` ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import REPO

# Runs the CLI entry point in-process, whatever it returns or raises, then
# prints which Textual modules got imported.
PROBE = """
import json, sys
sys.argv = {argv!r}
code = None
try:
    if {launcher!r}:
        from sandbox_setup.launcher.main import main
    else:
        from sandbox_setup.cli import main
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
except BaseException as exc:
    code = repr(exc)
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
code = code if isinstance(code, (int, str)) else str(code)
print("\\n" + json.dumps({{"code": code, "textual": loaded}}))
"""


def _run(argv: list[str], tmp_path: Path, launcher: bool = False) -> dict[str, object]:
    script = PROBE.format(argv=argv, launcher=launcher)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
        },
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no output; stderr: {proc.stderr}"
    result: dict[str, object] = json.loads(lines[-1])
    return result


@pytest.mark.parametrize(
    "argv",
    [
        ["sandbox-setup", "--check", "--json", "identity.root"],
        ["sandbox-setup", "--list-checks"],
        ["sandbox-setup", "--audit", "--root", "{root}"],
        ["sandbox-setup", "--headless", "--mode", "user", "--root", "{root}"],
        ["sandbox-setup", "--headless", "--mode", "user", "--dry-run", "--root", "{root}"],
        ["sandbox-setup", "--undo", "--root", "{root}"],
        ["sandbox-setup", "--help"],
    ],
    ids=["check", "list-checks", "audit", "headless", "dry-run", "undo", "help"],
)
def test_headless_paths_import_no_textual(argv: list[str], tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    argv = [a.replace("{root}", str(root)) for a in argv]
    result = _run(argv, tmp_path)
    # The path really ran to an exit code (not an import error before it).
    assert isinstance(result["code"], int), result
    assert result["textual"] == [], f"{argv[1:]} imported {result['textual']}"


def test_launcher_imports_no_textual(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-launcher.toml"
    result = _run(["sandbox-launch", "--dry-run", "--config", str(missing)], tmp_path, True)
    assert isinstance(result["code"], int), result
    assert result["code"] != 0  # a missing config refuses
    assert result["textual"] == []


def test_the_probe_does_see_textual_when_the_wizard_loads(tmp_path: Path) -> None:
    """The detector works: importing the TUI module is seen."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, sandbox_setup.tui.app; print('textual' in sys.modules)",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip() == "True", proc.stderr
