"""User mode's own network namespace does not wait on Landlock (docs/design.md invariant 16).

Real ``sandbox-launch`` sessions in user mode as a real live account (``ac-h36b-...``),
with root's services on the host at ``127.0.0.1:P`` (the exposed port), ``127.0.0.2:P``
and ``[::1]:P`` and a UDP service (:class:`tests.integration.test_user_netns._Services`).
Where root may make a network namespace the session runs in one of its own whatever
Landlock gives: with ``[user] landlock = false`` (for real), and on a kernel without
Landlock's TCP rules (Debian 12's 6.1 has ABI 3: the launcher's ABI through the
``--seam-landlock-abi`` seam; with Claude's inner sandbox on, ABI 3 gives no Landlock
wall at all, so no helper runs and the seam is the whole difference). Where root cannot
(``--seam-no-netns``, a container's defaults) and Landlock has no TCP rules either, the
wall is none, and the launch line and ``--dry-run`` say so plainly.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT
from tests.integration.test_user_netns import ATTEMPTS, _Services
from tests.launch_fixtures import LaunchTree, last_json, launch_tree, run_launcher
from tests.live_accounts import AGENT_SHELL, LiveAccount, live_account

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the launcher makes the namespace as root"),
]

NAMESPACE = "a network namespace of its own"
NO_SECOND = "no second wall: Landlock has no TCP rules here or is off"
NO_WALL = "none: the host's network"


@pytest.fixture(scope="module")
def services() -> Iterator[_Services]:
    made = _Services()
    yield made
    made.close()


@pytest.fixture(scope="module")
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


@pytest.fixture(scope="module")
def account(tree: LaunchTree) -> Iterator[LiveAccount]:
    with live_account("ac-h36b-anyabi", shell=AGENT_SHELL) as made:
        for path in (tree.home, tree.workspace):
            os.chown(path, made.uid, made.gid)
        yield made


@pytest.fixture(scope="module")
def netns_here() -> None:
    verdict = namespace_possible()
    if not verdict.possible:
        pytest.skip(f"no network namespace here: {verdict.why}")


def _session(
    tree: LaunchTree,
    account: LiveAccount,
    services: _Services,
    name: str,
    landlock: bool | None = None,
    seams: tuple[str, ...] = (),
) -> tuple[dict[str, Any], str]:
    script = ATTEMPTS.format(port=services.port, udp=services.udp_port)
    claude = tree.write_script(script, name=f"claude-{name}")
    path = tree.write_config(claude, mode="user", agent_user=account.name, name=f"{name}.toml",
                             loopback_ports=[services.port], landlock=landlock)  # fmt: skip
    result = run_launcher(path, ["--print", "hi"], seams=seams)
    assert result.returncode == 0, result.stderr
    return last_json(result.stdout), result.stderr


def _walled(report: dict[str, Any], services: _Services) -> None:
    assert report["uid"] != 0
    assert report["netns"] != os.stat("/proc/self/ns/net").st_ino
    assert report["v4"] == "meant-secret"  # 127.0.0.1:P, forwarded in
    assert report["second"] == "ECONNREFUSED"  # root's 127.0.0.2:P stays out
    assert report["v6"] in ("meant-secret", "ECONNREFUSED", "EADDRNOTAVAIL")
    assert report["proxy_env"] == f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"
    threading.Event().wait(0.5)
    assert services.udp_got == []


@pytest.mark.usefixtures("netns_here")
def test_landlock_false_keeps_the_namespace(
    tree: LaunchTree, account: LiveAccount, services: _Services
) -> None:
    # [user] landlock = false turns Landlock off, not the namespace.
    report, stderr = _session(tree, account, services, "landlock-off", landlock=False)
    _walled(report, services)
    assert NAMESPACE in stderr and NO_SECOND in stderr
    assert NO_WALL not in stderr


@pytest.mark.usefixtures("netns_here")
def test_below_landlock_abi_4_the_namespace_is_the_wall(
    tree: LaunchTree, account: LiveAccount, services: _Services
) -> None:
    # Debian 12's kernel (6.1, Landlock ABI 3, no TCP rules): still an address wall.
    report, stderr = _session(tree, account, services, "abi3", seams=("--seam-landlock-abi=3",))
    _walled(report, services)
    assert NAMESPACE in stderr and NO_SECOND in stderr


@pytest.mark.usefixtures("netns_here")
def test_dry_run_with_landlock_false_names_the_namespace(
    tree: LaunchTree, account: LiveAccount, services: _Services
) -> None:
    claude = tree.write_script("#!/bin/sh\n", name="claude-dry-off")
    path = tree.write_config(claude, mode="user", agent_user=account.name, name="dry-off.toml",
                             loopback_ports=[services.port], landlock=False)  # fmt: skip
    result = run_launcher(path, dry_run=True)
    assert result.returncode == 0, result.stderr
    assert NAMESPACE in result.stdout and NO_SECOND in result.stdout
    assert "HTTPS_PROXY=http://127.0.0.1:" in result.stdout
    assert "change nothing here" not in result.stdout  # the lists apply in the namespace


def test_neither_wall_is_said_plainly(
    tree: LaunchTree, account: LiveAccount, services: _Services
) -> None:
    # No namespace for root (a container's defaults) and Landlock off: the host's
    # network, said on the launch line and by --dry-run; and it is so.
    seams = ("--seam-no-netns",)
    report, stderr = _session(tree, account, services, "no-wall", landlock=False, seams=seams)
    assert NO_WALL in stderr and NAMESPACE not in stderr
    assert report["netns"] == os.stat("/proc/self/ns/net").st_ino
    assert report["second"] == "second-secret"  # what "none" means
    claude = tree.write_script("#!/bin/sh\n", name="claude-dry-none")
    path = tree.write_config(claude, mode="user", agent_user=account.name, name="dry-none.toml",
                             loopback_ports=[services.port], landlock=False)  # fmt: skip
    result = run_launcher(path, dry_run=True, seams=seams)
    assert result.returncode == 0, result.stderr
    assert NO_WALL in result.stdout and NAMESPACE not in result.stdout
    assert "change nothing here" in result.stdout
