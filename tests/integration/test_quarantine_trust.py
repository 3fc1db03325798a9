"""The quarantine manifest passes the trust rule before root obeys it (issue 26,
invariant 12). Root reads a manifest back (the end-of-session scan merges into it)
and the operator pastes its restore commands as root; a manifest or quarantine
folder someone else owns or can write is a forgery waiting to be obeyed. Through
the real ``sandbox-launch``: the launch refuses with exit 3 naming the file and the
fix, and not one file in the state directory changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from tests.core_fixtures import snapshot
from tests.launch_fixtures import LaunchTree, launch_tree, launcher_env, run_launcher

pytestmark = pytest.mark.integration

NOBODY = 65534
FORGED = {
    "format": 1,
    "entries": [
        {
            "original": "/etc/sudoers.d/evil",
            "quarantined": "/tmp/evil",
            "action": "moved",
            "found": [],
            "restore": "mv -- /tmp/evil /etc/sudoers.d/evil",
            "time": "2026-01-01T00:00:00+0000",
        }
    ],
}


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("git", "setfacl")


@pytest.mark.parametrize("tamper", ["manifest mode", "manifest owner", "session folder mode"])
def test_an_untrusted_quarantine_manifest_refuses_the_launch(tree: LaunchTree, tamper: str) -> None:
    state = tree.base / "state"
    session = state / "sandbox-setup" / "quarantine" / "20260101T000000-4242"
    session.mkdir(parents=True)
    for path in (state, state / "sandbox-setup", session.parent, session):
        path.chmod(0o700)
    manifest = session / "manifest.json"
    manifest.write_text(json.dumps(FORGED))
    manifest.chmod(0o600)
    if tamper == "manifest mode":
        manifest.chmod(0o666)
        named, fix = manifest, f"chmod go-w {manifest}"
    elif tamper == "manifest owner":
        os.chown(manifest, NOBODY, NOBODY)
        named, fix = manifest, f"chown root {manifest}"
    else:
        session.chmod(0o777)
        named, fix = session, f"chmod go-w {session}"
    before = snapshot(state)
    quiet = tree.write_script("#!/bin/sh\nexit 0\n", name="claude-quiet")
    config = tree.write_config(quiet, mode="user")
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert str(named) in result.stderr and fix in result.stderr, result.stderr
    assert "Nothing was written" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(state) == before, "the refused launch wrote into the state directory"


def test_a_trusted_quarantine_manifest_still_launches(tree: LaunchTree) -> None:
    state = tree.base / "state"
    session = state / "sandbox-setup" / "quarantine" / "20260101T000000-4242"
    session.mkdir(parents=True)
    for path in (state, state / "sandbox-setup", session.parent, session):
        path.chmod(0o700)
    (session / "manifest.json").write_text(json.dumps(FORGED))
    (session / "manifest.json").chmod(0o600)
    quiet = tree.write_script("#!/bin/sh\nexit 0\n", name="claude-quiet")
    config = tree.write_config(quiet, mode="user")
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 0, result.stderr
