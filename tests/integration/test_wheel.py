"""The wheel ships what an installed sandbox-setup needs: the three packages, the
``assets`` package with its .tcss stylesheets (the TUI loads them by path, so a
wheel without them breaks only when the TUI starts), and both console scripts.

Built with the venv's own pip and hatchling (the ``[test]`` extra), offline:
``pip wheel . --no-deps --no-build-isolation``.
"""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.core_fixtures import REPO


def build_wheel(out: Path) -> zipfile.ZipFile:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    wheels = list(out.glob("sandbox_setup-*.whl"))
    assert len(wheels) == 1, wheels
    return zipfile.ZipFile(wheels[0])


def test_the_wheel_ships_packages_assets_and_both_console_scripts(tmp_path: Path) -> None:
    with build_wheel(tmp_path) as wheel:
        names = set(wheel.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = configparser.ConfigParser()
        scripts.read_string(wheel.read(entry_points).decode())
    packages = ("checks", "wizard", "screens", "assets")
    layers = ("base", "policy", "configure", "audit", "launcher", "commands")
    for package in (*packages, *(f"src/sandbox_setup/{layer}" for layer in layers)):
        assert f"{package}/__init__.py" in names, f"{package}/ is missing from the wheel"
    for module in (
        "src/sandbox_setup/cli.py",
        "src/sandbox_setup/launcher/main.py",
        "src/sandbox_setup/checks/model.py",
        "src/sandbox_setup/tui/app.py",
    ):
        assert module in names
    stylesheets = sorted(p.name for p in (REPO / "assets").glob("*.tcss"))
    assert stylesheets, "the source tree has no .tcss to ship"
    for sheet in stylesheets:
        assert f"src/sandbox_setup/tui/{sheet}" in names, (
            f"src/sandbox_setup/tui/{sheet} is missing from the wheel"
        )
    assert dict(scripts["console_scripts"]) == {
        "sandbox-setup": "sandbox_setup.cli:main",
        "sandbox-launch": "sandbox_setup.launcher:main",
    }
    assert not [n for n in names if n.startswith("tests/")], "the wheel ships the test suite"
