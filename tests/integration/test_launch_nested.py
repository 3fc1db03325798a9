"""Claude Code's own sandbox still works inside the launched sandbox.

``srt`` (npm ``@anthropic-ai/sandbox-runtime``, the runtime Claude Code uses for
its Bash sandbox) runs a command from inside the sandbox that sandbox-launch
started, at the inner strength the config records: ``strong`` is srt's normal
mode (a fresh /proc), ``weak`` is ``enableWeakerNestedSandbox`` (the outer
/proc bound in). The package is copied beside the fake ``claude`` because only
the Claude binary's directory is mounted into the sandbox.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from tests.launch_fixtures import LaunchTree, launch_tree, run_launcher
from tests.tools import NPM_PREFIX

pytestmark = pytest.mark.integration


def _skip_claude_code(directory: str, names: list[str]) -> set[str]:
    """Copy sandbox-runtime and its dependencies, not the 240 MB Claude Code binary."""
    return {"claude-code"} & set(names) if directory.endswith("@anthropic-ai") else set()


CLAUDE = """#!/bin/sh
touch {marker}
echo "outer-user=$(readlink /proc/self/ns/user)"
awk '$5 == "/proc" {{print "outer-proc=" $3}}' /proc/self/mountinfo
/usr/bin/node {app}/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js -s "$1" \\
  -c "/bin/sh {app}/inner.sh"
echo "srt-rc=$?"
"""

INNER = """echo inner-ok
echo "inner-user=$(readlink /proc/self/ns/user)"
grep '^Seccomp:' /proc/self/status
awk '$5 == "/proc" {{print "inner-proc=" $3 " " $6}}' /proc/self/mountinfo
if touch {workspace}/inner-write 2>/dev/null; then echo inner-wrote
else echo inner-write-denied; fi
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("socat", "rg", "node", "srt")


def _values(stdout: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in stdout.splitlines() if line.startswith(key + "=")]


@pytest.mark.parametrize("inner", ["strong", "weak"])
def test_srt_runs_confined_inside_the_launched_sandbox(tree: LaunchTree, inner: str) -> None:
    app = tree.base / "app"
    shutil.copytree(
        NPM_PREFIX / "node_modules", app / "node_modules", ignore=_skip_claude_code, symlinks=True
    )
    settings = app / "srt-settings.json"
    settings.write_text(
        json.dumps(
            {
                "network": {"allowedDomains": [], "deniedDomains": []},
                "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []},
                "enableWeakerNestedSandbox": inner == "weak",
            }
        )
    )
    (app / "inner.sh").write_text(INNER.format(workspace=tree.workspace))
    claude = tree.write_script(CLAUDE.format(marker=tree.marker, app=app), directory=app)
    config = tree.write_config(claude, inner_sandbox=inner)

    result = run_launcher(config, [str(settings)])

    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert _values(out, "srt-rc") == ["0"], result.stderr
    assert "inner-ok" in out
    assert "Seccomp:\t2" in out  # srt applied its seccomp filter
    # srt's own namespace nests inside the launcher's sandbox.
    (outer_user,) = _values(out, "outer-user")
    (inner_user,) = _values(out, "inner-user")
    assert inner_user != outer_user
    # srt's default policy denies writes the outer sandbox would allow.
    assert "inner-write-denied" in out
    assert not (tree.workspace / "inner-write").exists()
    # Strong: srt mounts a fresh /proc; weak: it binds the outer sandbox's /proc.
    (outer_proc,) = _values(out, "outer-proc")
    inner_rw = [v.split()[0] for v in _values(out, "inner-proc") if v.split()[1].startswith("rw")]
    if inner == "strong":
        assert outer_proc not in inner_rw, out
    else:
        assert outer_proc in inner_rw, out
