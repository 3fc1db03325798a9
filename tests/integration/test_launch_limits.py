"""A launch at the stated maxima (issue 26): the launcher handles as many loopback ports
as the apply accepts (:data:`~sandbox_setup.policy.limits.MAX_LOOPBACK_PORTS`), and a
hand-edited ``launcher.toml`` over a maximum is refused (exit 3) naming the key.

Each launch is real (bwrap, a network namespace of the sandbox's own, the egress proxy
handed every listener) with a stand-in ``claude`` that only proves it ran: it touches the
marker and prints the ports it finds listening inside."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox_setup.policy.limits import MAX_ALLOWED_DOMAINS, MAX_LOOPBACK_PORTS, MAX_WORKSPACES
from tests.launch_fixtures import LaunchTree, launch_tree, run_launcher

pytestmark = pytest.mark.integration

FIRST_PORT = 20000  # inside the sandbox's own namespace: no host port is taken

# Touches the marker, then lists the TCP ports listening on 127.0.0.1 inside (hex, from
# /proc/net/tcp), so the test sees that every exposed port really has its listener.
LISTENING_CLAUDE = r"""#!/usr/bin/python3
open({marker!r}, "w").write("ran")
ports = set()
for line in open("/proc/net/tcp").read().splitlines()[1:]:
    fields = line.split()
    address, port = fields[1].split(":")
    if address == "0100007F" and fields[3] == "0A":  # 127.0.0.1, LISTEN
        ports.add(int(port, 16))
print("listening", " ".join(str(p) for p in sorted(ports)))
"""


@pytest.fixture(scope="module")
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def ports(count: int) -> tuple[int, ...]:
    return tuple(range(FIRST_PORT, FIRST_PORT + count))


def test_a_launch_with_the_maximum_of_loopback_ports_starts_the_proxy(tree: LaunchTree) -> None:
    claude = tree.write_script(LISTENING_CLAUDE.format(marker=str(tree.marker)), "claude-ports")
    tree.marker.unlink(missing_ok=True)
    config = tree.write_config(
        claude, network="allowlist", loopback_ports=ports(MAX_LOOPBACK_PORTS), name="max.toml"
    )
    result = run_launcher(config)
    assert "egress proxy did not start" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert tree.marker.exists(), "the stand-in claude did not run"
    line = next(x for x in result.stdout.splitlines() if x.startswith("listening"))
    assert set(ports(MAX_LOOPBACK_PORTS)) <= {int(p) for p in line.split()[1:]}, line


@pytest.mark.parametrize("key", ["loopback_ports", "allowed_domains", "workspaces"])
def test_a_config_over_a_maximum_is_refused_naming_the_key(tree: LaunchTree, key: str) -> None:
    claude = tree.write_script(LISTENING_CLAUDE.format(marker=str(tree.marker)), "claude-over")
    name = f"over-{key}.toml"
    if key == "loopback_ports":
        config = tree.write_config(claude, network="allowlist", name=name,
                                   loopback_ports=ports(MAX_LOOPBACK_PORTS + 1))  # fmt: skip
    elif key == "allowed_domains":
        domains = [f"h{i}.example.com" for i in range(MAX_ALLOWED_DOMAINS + 1)]
        config = tree.write_config(claude, network="allowlist", name=name, allowed_domains=domains)
    else:
        workspaces = [tree.workspace / f"w{i}" for i in range(MAX_WORKSPACES + 1)]
        config = tree.write_config(claude, network="allowlist", name=name, workspaces=workspaces)
    tree.marker.unlink(missing_ok=True)
    for dry_run in (True, False):
        result = run_launcher(config, dry_run=dry_run)
        assert result.returncode == 3, result.stderr
        assert f"sandbox.{key}" in result.stderr and "at most" in result.stderr, result.stderr
    assert not tree.marker.exists()
