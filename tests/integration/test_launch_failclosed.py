"""sandbox mode fails closed when the launcher itself fails during verification.

bwrap treats EOF on ``--block-fd`` as a release, so a launcher that dies (or
raises something unexpected) between starting bwrap and verifying it must not
let the sandbox run Claude. The real launcher runs in a child process with
``verify`` replaced by a function that raises, or that SIGKILLs the launcher;
the fake Claude touches a marker as its first act, so its absence after every
sandbox process is gone proves Claude never started.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import LaunchTree, launch_tree, launcher_env, tree_processes
from tests.tools import REPO

pytestmark = pytest.mark.integration

# argv: how verification fails ("raise" or "kill"), the config path. It fails
# once the sandbox has dropped its capabilities and waits to be released.
DRIVER = """
import os, signal, sys, time
import sandbox_setup.launcher.session.supervise as supervise
from sandbox_setup.launcher.main import main

def failing_verify(child_pid, expected_uid, state, host_namespaces=None):
    # The dangerous moment: the sandbox is set up and waits on --block-fd.
    supervise._wait_caps_dropped(child_pid, state, time.monotonic() + 10)
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise OSError(5, "injected failure during verification")

supervise.verify = failing_verify
sys.exit(main(["--config", sys.argv[2], "--", "--print", "ok"]))
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def _claude(tree: LaunchTree) -> Path:
    return tree.write_script(
        f'#!/bin/sh\ntouch {tree.marker}\necho "uid=$(id -u) IS_SANDBOX=$IS_SANDBOX"\n'
    )


@pytest.mark.parametrize("failure", ["raise", "kill"])
def test_claude_never_starts_when_the_launcher_fails_during_verification(
    tree: LaunchTree, failure: str
) -> None:
    config = tree.write_config(_claude(tree))
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, failure, str(config)],
        env=launcher_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Whatever is left of the sandbox either runs Claude or gives up: wait for it.
    deadline = time.monotonic() + 20
    while tree_processes(tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tree_processes(tree) == [], "the sandbox outlived the launcher"
    assert not tree.marker.exists(), f"Claude ran unverified: {result.stdout!r}"
    assert "IS_SANDBOX=1" not in result.stdout
    if failure == "raise":
        assert result.returncode == 3, (result.returncode, result.stderr)
        assert "sandbox-launch: refused:" in result.stderr
        assert "injected failure during verification" in result.stderr
        assert "Traceback" not in result.stderr
    else:
        assert result.returncode == -9
