"""The wheel ships what an installed sandbox-setup needs: one top-level package,
``sandbox_setup``, with every layer, the TUI's .tcss stylesheet (loaded by path, so a
wheel without it breaks only when the TUI starts), and both console scripts.

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


def test_the_wheel_ships_one_package_its_stylesheet_and_both_console_scripts(
    tmp_path: Path,
) -> None:
    with build_wheel(tmp_path) as wheel:
        names = set(wheel.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = configparser.ConfigParser()
        scripts.read_string(wheel.read(entry_points).decode())
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"sandbox_setup"}, f"the wheel installs more than one top-level name: {top}"
    source = REPO / "src" / "sandbox_setup"
    packages = sorted(str(p.parent.relative_to(REPO / "src")) for p in source.rglob("__init__.py"))
    assert len(packages) >= 12, packages  # every layer and the launcher's two rooms
    for package in packages:
        assert f"{package}/__init__.py" in names, f"{package}/ is missing from the wheel"
    for module in (
        "sandbox_setup/cli.py",
        "sandbox_setup/launcher/main.py",
        "sandbox_setup/launcher/egress/proxy.py",
        "sandbox_setup/launcher/session/runner.py",
        "sandbox_setup/boundary/scan.py",
        "sandbox_setup/checks/model.py",
        "sandbox_setup/tui/app.py",
    ):
        assert module in names, f"{module} is missing from the wheel"
    stylesheets = sorted(p.name for p in (source / "tui").glob("*.tcss"))
    assert stylesheets, "the source tree has no .tcss to ship"
    for sheet in stylesheets:
        assert f"sandbox_setup/tui/{sheet}" in names, f"{sheet} is missing from the wheel"
    assert dict(scripts["console_scripts"]) == {
        "sandbox-setup": "sandbox_setup.cli:main",
        "sandbox-launch": "sandbox_setup.launcher:main",
    }
    assert not [n for n in names if n.startswith("tests/")], "the wheel ships the test suite"
