"""Fixtures for the integration tests: a world-readable project install, temp dirs.

Everything lives under one 0755 directory in /var/tmp (not under /root, which a
user-namespaced container cannot read, and not on a tmpfs that a container or an
outer bwrap mounts over /tmp), removed at the end of the session.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.installed import ProjectInstall, install_project
from tests.integration.containers import make_workdir
from tests.tools import require_root, require_tool


@pytest.fixture(scope="session")
def integration_workdir() -> Iterator[Path]:
    """A 0755 temp dir under /var/tmp for bundles and installs; removed afterwards."""
    require_root()
    path = make_workdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def project_install(integration_workdir: Path) -> ProjectInstall:
    """The project in a venv of /usr/bin/python3 that any (mapped) user can run."""
    require_tool("python3")
    return install_project(integration_workdir / "project")


@pytest.fixture(scope="session")
def container_tools() -> dict[str, str]:
    """The real tools the container scenarios need (skip, or fail under CI, if absent)."""
    require_root()
    return {name: require_tool(name) for name in ("runc", "bwrap", "unshare", "setpriv")}
