"""A file private to its owner stays private (issue 12): the plan says so, the apply
leaves it alone, --include-private opens it, and the audit reports one opened by hand."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.core_fixtures import make_target_root, run_cli
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration
SANDBOX = ("--mode", "sandbox", "--workspace", "/srv/project")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    for tool in ("useradd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    tmp_path.chmod(0o755)
    root = make_target_root(tmp_path / "root")
    env = root / "srv/project/.env"
    env.write_text("DB_PASSWORD=hunter2\n")
    env.chmod(0o600)
    return root


def _acl(path: Path) -> str:
    return subprocess.run(
        ["getfacl", "--absolute-names", "--numeric", "--omit-header", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def _gid(root: Path) -> str:
    """The workspace group's gid in the tree."""
    return next(
        line.split(":")[2]
        for line in (root / "etc/group").read_text().splitlines()
        if line.startswith("sandbox-ws")
    )


def _audit(root: Path) -> dict[str, dict[str, object]]:
    done = run_cli("--audit", "--json", "--root", str(root))
    return {f["id"]: f for f in json.loads(done.stdout)["findings"]}


def test_a_private_file_stays_private_in_plan_apply_and_audit(root: Path) -> None:
    plan = run_cli("--headless", *SANDBOX, "--root", str(root))
    assert plan.returncode == 0, plan.stderr
    assert "stays private: 1 file, e.g. /srv/project/.env" in plan.stdout
    applied = run_cli("--headless", *SANDBOX, "--yes", "--root", str(root))
    assert applied.returncode == 0, applied.stderr
    env = root / "srv/project/.env"
    readme = root / "srv/project/README.md"
    gid = _gid(root)
    assert f"group:{gid}:" in _acl(readme)  # the rest of the workspace is shared
    assert f"group:{gid}:" not in _acl(env)  # .env is not
    assert "audit.workspace.private_opened" not in _audit(root)
    # What the old walk did: an ACL on the private file. The audit must say so.
    subprocess.run(["setfacl", "-m", f"g:{gid}:rw", str(env)], check=True)
    found = _audit(root)["audit.workspace.private_opened"]
    assert found["severity"] == "high" and str(env) in str(found["summary"])
    assert f"setfacl -x g:{gid}" in str(found["remedy"])


def test_include_private_opens_it_and_the_audit_accepts_it(root: Path) -> None:
    applied = run_cli("--headless", *SANDBOX, "--include-private", "--yes", "--root", str(root))
    assert applied.returncode == 0, applied.stderr
    env = root / "srv/project/.env"
    assert f"group:{_gid(root)}:rw" in _acl(env)
    found = _audit(root)["audit.workspace.private_opened"]
    assert found["accepted"] is True and found["severity"] == "info"
