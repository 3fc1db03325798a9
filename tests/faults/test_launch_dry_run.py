"""``sandbox-launch --dry-run`` refuses what the real launch refuses, with the same exit
code and words (issue 26: it printed a plan and exit 0 for ``allowed_domains = ["*"]``
and ``tmpfs = "99999999T"``, which the launch then refused).

The setup is a real headless apply under a ``--root`` tree, launched in a private mount
namespace over the tree's accounts (as :mod:`tests.faults.test_launch_faults` does).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.core_fixtures import CONFIG
from tests.faults.conftest import FaultRow
from tests.faults.namespace import run_in_namespace
from tests.faults.test_launch_faults import launch, root  # noqa: F401 (fixture)
from tests.launch_fixtures import launcher_env

pytestmark = pytest.mark.integration


def _dry_run(tree: Path) -> dict[str, object]:
    mounts: list[dict[str, object]] = [
        {"dir": f"/{rel}", "kind": "bind", "source": str(tree / rel)}
        for rel in ("etc/passwd", "etc/group", "home", "srv", "usr/local/bin")
    ]
    argv = [sys.executable, "-m", "sandbox_setup.launcher", "--dry-run",
            "--config", str(tree / CONFIG / "launcher.toml")]  # fmt: skip
    return run_in_namespace(mounts, argv, launcher_env())


def _refusal(result: dict[str, object]) -> str:
    lines = [line for line in str(result["stderr"]).splitlines() if "refused" in line]
    assert len(lines) == 1, result["stderr"]
    return lines[0]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("allowed_domains", '["*"]', "a wildcard may only be the whole leftmost label"),
        ("tmpfs", '"99999999T"', "is too large (at most 1024T)"),
    ],
)
def test_dry_run_refuses_what_the_launch_refuses(
    fault: FaultRow,
    root: Path,  # noqa: F811 (the fixture)
    key: str,
    value: str,
    words: str,
) -> None:
    fault.expect(f"launcher.toml {key} = {value}", "--dry-run and the launch: exit 3, same line")
    config = root / CONFIG / "launcher.toml"
    text = config.read_text()
    text, count = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    assert count == 1, text
    config.write_text(text)
    dry = _dry_run(root)
    real = launch(root)
    fault.saw(f"dry-run exit {dry['rc']}, launch exit {real['rc']}")
    assert real["rc"] == 3, real["stderr"]
    assert dry["rc"] == 3, dry["stderr"]
    assert words in _refusal(real)
    assert _refusal(dry) == _refusal(real)
    assert "Traceback" not in str(dry["stderr"]) + str(real["stderr"])
