"""The audit when a live probe fails: a runc container restarted without the unmask fix.

The setup is made on the host (where bubblewrap works), then audited from inside
a runc container built by the shared harness (``tests/integration/containers.py``)
that sees the same tree: with Docker's default masks over /proc a fresh /proc
cannot be mounted, so ``bwrap.sandbox`` fails there and the audit names what the
sandbox mode needs (``audit.mode.bwrap_sandbox``), exit 1. The same container
with the masks removed (podman's ``--security-opt unmask=/proc/*``) audits clean with
Docker's default capabilities, ``launch.path`` (the launcher's own start-up) included.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.installed import ProjectInstall
from tests.integration.containers import ContainerConfig, RuncContainer
from tests.integration.test_audit_drift import Setup, assert_clean, make_setup, parse_audit
from tests.tools import claude_binary, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def setup(integration_workdir: Path, container_tools: dict[str, str]) -> Iterator[Setup]:
    for tool in ("useradd", "groupadd", "setfacl"):
        require_tool(tool)
    made = make_setup(
        integration_workdir, claude_binary(), "--mode", "sandbox", "--workspace", "/srv/project"
    )
    yield made
    shutil.rmtree(made.root.parent, ignore_errors=True)


def audit_in(config: ContainerConfig, workdir: Path, install: ProjectInstall, setup: Setup):
    container = RuncContainer(config, workdir / "containers")
    done = container.run(install.wizard("--audit", "--json", "--root", str(setup.root)))
    return parse_audit(done)


def test_masked_proc_fails_the_sandbox_mode(
    setup: Setup, integration_workdir: Path, project_install: ProjectInstall
) -> None:
    assert_clean(setup)  # on the host, the setup holds
    # Docker's defaults without a user namespace: root with 14 capabilities, /proc masked.
    masked = ContainerConfig(userns=False)
    run = audit_in(masked, integration_workdir, project_install, setup)
    assert run.returncode == 1, run.stderr
    statuses = {c["id"]: c["status"] for c in run.data["checks"]}
    assert statuses["bwrap.sandbox"] == "fail"
    finding = run.finding("audit.mode.bwrap_sandbox")
    assert finding["severity"] == "high"
    assert "bwrap.sandbox" in finding["summary"] and finding["remedy"]
    assert run.data["grade"]["label"] != "OK"
    # The plan is refused on such a host, and the audit says so instead of guessing.
    assert "audit.drift.unavailable" in run.ids
    # Nothing else about the setup changed: no safety or claude findings.
    assert not [i for i in run.ids if i.startswith(("audit.safety", "audit.claude"))]


def test_unmasked_container_with_default_caps_audits_clean(
    setup: Setup, integration_workdir: Path, project_install: ProjectInstall
) -> None:
    """Issue 27: with Docker's default capabilities root may not read the agent's
    /proc/PID/ns, join the sandbox's network namespace or ask SIOCGSKNS; the launcher
    does those steps as the agent, so a launch gets through (launch.path passes) and
    the audit is clean. (Before, launch.path did not exist and every launch exited 3.)"""
    unmasked = ContainerConfig(userns=False).unmasked()
    run = audit_in(unmasked, integration_workdir, project_install, setup)
    statuses = {c["id"]: c["status"] for c in run.data["checks"]}
    assert statuses["bwrap.sandbox"] == "pass"
    assert statuses["launch.path"] == "pass", run.data["checks"]
    assert run.returncode == 0, run.data["findings"]
    assert run.ids == []
