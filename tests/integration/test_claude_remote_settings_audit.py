"""``--audit`` names a server-managed Claude settings cache in root's or the agent's
home ("these settings may be overridden"), on an apply under ``--root`` (a made-up
host tree; the agent made there by ``useradd --prefix``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.policy.claude_remote import MAY_BE_OVERRIDDEN, REMOTE_SETTINGS_CACHE
from tests.core_fixtures import host_passwd_digest, make_target_root, run_cli
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

AGENT = "ac-h38b-remote"
ID = "audit.claude.remote_settings"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    before = host_passwd_digest()
    root = tmp_path / "root"
    make_target_root(root)
    yield root
    assert host_passwd_digest() == before


def found(root: Path) -> list[dict[str, str]]:
    audit = run_cli("--audit", "--json", "--root", str(root))
    assert audit.returncode in (0, 1), audit.stdout + audit.stderr
    return [f for f in json.loads(audit.stdout)["findings"] if f["id"] == ID]


def agent_home(root: Path) -> Path:
    for line in (root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == AGENT:
            return root / fields[5].lstrip("/")
    raise AssertionError(f"no {AGENT} in {root}/etc/passwd")


def test_a_remote_settings_cache_for_root_or_the_agent_is_reported(root: Path) -> None:
    done = run_cli(
        "--headless", "--root", str(root), "--mode", "user", "--workspace", "/srv/project",
        "--agent-user", AGENT, "--yes",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert found(root) == []
    for who, home in (("root", root / "root"), (AGENT, agent_home(root))):
        cache = home / REMOTE_SETTINGS_CACHE
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text('{"sandbox": {"enabled": false}}')
        (finding,) = found(root)
        assert MAY_BE_OVERRIDDEN in finding["summary"] and who in finding["summary"], finding
        assert str(cache) in finding["remedy"] and finding["severity"] == "medium", finding
        cache.unlink()
    assert found(root) == []
    while True:  # every apply, newest first
        undone = run_cli("--undo", "--yes", "--root", str(root))
        assert undone.returncode in (0, 1), undone.stdout + undone.stderr
        if "Nothing to undo" in undone.stdout:
            break
