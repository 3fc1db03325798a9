"""An installed copy of the project in a world-readable place, for whatever a test
runs as another user (``nobody``, an agent, a container's uid).

The checkout may sit in a 0700 directory (a clone under /root, or ``mktemp -d``),
where no other user can read it, and its venv's ``python`` is a link inside it.
So the copy is a venv of the system Python under /var/tmp with the project's
packages and its pure-Python runtime dependencies copied in, made world-readable,
built once per test session and removed at exit. The tests' seam programs
(:mod:`tests.seams`) are copied beside it, for a test that runs the copy with seams.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("sandbox_setup",)
# Pure-Python runtime deps the headless, check and launcher paths import; textual
# is left out on purpose (those paths must not need it).
RUNTIME_DEPS = ("platformdirs", "tomlkit")
SEAMS = REPO / "tests" / "seams"


@dataclass(frozen=True)
class ProjectInstall:
    """Where the copy is and the interpreter that runs it."""

    root: Path
    python: Path

    @property
    def seams(self) -> Path:
        """The copies of the seam programs (``launch_with_seams.py``, ...)."""
        return self.root / "seams"

    def wizard(self, *args: str) -> list[str]:
        """argv for ``python -m sandbox_setup ARGS`` with this install's Python."""
        return [str(self.python), "-m", "sandbox_setup", *args]


def _module_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{name} is not installed as a package in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def install_project(base: Path) -> ProjectInstall:
    """Copy the project into a venv under ``base``, everything world-readable.

    ``base`` must be outside /root and outside any tmpfs a test mounts over
    (e.g. under /var/tmp).
    """
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    venv = base / "venv"
    subprocess.run(
        ["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    site = next((venv / "lib").glob("python3*/site-packages"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PROJECT_PACKAGES:
        shutil.copytree(REPO / "src" / package, site / package, ignore=ignore)
    for dep in RUNTIME_DEPS:
        shutil.copytree(_module_dir(dep), site / dep, ignore=ignore)
    (base / "seams").mkdir()
    for program in SEAMS.glob("*_with_seams.py"):
        shutil.copy2(program, base / "seams" / program.name)
    for path in [base, *base.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode & 0o777
        path.chmod(mode | (0o055 if path.is_dir() or mode & 0o100 else 0o044))
    return ProjectInstall(root=base, python=venv / "bin" / "python")


@cache
def installed_copy() -> ProjectInstall:
    """The session's copy (built on first use, removed when the session ends)."""
    base = Path(tempfile.mkdtemp(prefix="sandbox-setup-installed-", dir="/var/tmp"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    return install_project(base)
