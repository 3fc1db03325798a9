"""``--audit`` with no or unreadable configuration: exit 2, the file named, nothing written.

These stop before any probe runs, so they call the real CLI in-process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.cli import main
from sandbox_setup.configure.answers import Answers, dump_answers
from sandbox_setup.configure.launcher_toml import render_launcher_config
from tests.tools import REPO


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def setup_files(root: Path, config: str | None, answers: str | None) -> Layout:
    layout = Layout.for_root(root)
    cfg = layout.real(layout.launcher_config)
    cfg.parent.mkdir(parents=True, exist_ok=True)
    if config is not None:
        cfg.write_text(config)
    if answers is not None:
        layout.real(layout.answers).write_text(answers)
    return layout


GOOD_CONFIG = render_launcher_config(
    LauncherConfig(
        mode=Mode.USER,
        claude=PurePosixPath("/usr/local/bin/claude"),
        agent_user="claude-agent",
        agent_home=PurePosixPath("/home/claude-agent"),
    )
)
GOOD_ANSWERS = dump_answers(Answers(mode=Mode.USER))


@pytest.mark.parametrize(
    ("config", "answers", "named", "why"),
    [
        (None, GOOD_ANSWERS, "launcher.toml", "no launcher config"),
        (GOOD_CONFIG, None, "answers.toml", "no answers file"),
        ("schema = 1\nmode = [\n", GOOD_ANSWERS, "launcher.toml", "invalid TOML"),
        ('schema = 1\nmode = "chaos"\n', GOOD_ANSWERS, "launcher.toml", "'mode'"),
        (GOOD_CONFIG, 'schema = 1\nmode = "sandbox\n', "answers.toml", ""),
        (b"\xff\xfe".decode("latin-1"), GOOD_ANSWERS, "launcher.toml", ""),
    ],
)
def test_bad_setup_exits_2_naming_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    config: str | None,
    answers: str | None,
    named: str,
    why: str,
) -> None:
    root = tmp_path / "root"
    setup_files(root, config, answers)
    before = snapshot(root)
    assert main(["--audit", "--root", str(root)]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert named in err.err and str(root) in err.err
    assert why in err.err
    assert snapshot(root) == before


def test_unreadable_config_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "root"
    layout = setup_files(root, None, GOOD_ANSWERS)
    layout.real(layout.launcher_config).mkdir()  # a directory where the file should be
    assert main(["--audit", "--json", "--root", str(root)]) == 2
    assert "cannot read the launcher config" in capsys.readouterr().err


def test_audit_path_imports_no_textual() -> None:
    code = (
        "import sys, sandbox_setup.audit.runner, sandbox_setup.audit.drift;"
        " print('textual' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.strip() == "False"


def test_live_root_without_setup_names_the_operators_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # conftest points XDG_CONFIG_HOME at a temp dir, so this is the operator's
    # (empty) config location, never the real one.
    expected = Layout.for_root("/").real(Layout.for_root("/").launcher_config)
    assert not expected.exists()
    assert main(["--audit"]) == 2
    err = capsys.readouterr().err
    assert str(expected) in err and "sandbox-setup" in err
