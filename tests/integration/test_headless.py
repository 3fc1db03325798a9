"""``sandbox-setup --headless``: plan without --yes, --dry-run diffs and commands,
--json, and bad input (exit 2, or 3 for refusals) with a message naming the
problem and no file changed under the root."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import SANDBOX, host_passwd_digest, make_target_root, run_cli, snapshot
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "setfacl", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before


def test_without_yes_prints_the_plan_and_writes_nothing(root: Path) -> None:
    before = snapshot(root)
    proc = run_cli("--headless", "--root", str(root), *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    assert "[change] create user claude-agent" in proc.stdout
    assert "/etc/claude-code/managed-settings.json" in proc.stdout
    assert "add --yes to apply" in proc.stderr
    assert snapshot(root) == before


def test_dry_run_shows_diffs_and_commands_and_writes_nothing_even_with_yes(root: Path) -> None:
    before = snapshot(root)
    proc = run_cli("--headless", "--root", str(root), "--dry-run", "--yes", *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    assert f"$ useradd --prefix {root} --create-home" in proc.stdout
    assert f"$ setfacl -R -d -m g:sandbox-ws-claude-agent:rwX {root}/srv/project" in proc.stdout
    assert "+++ /etc/claude-code/managed-settings.json (planned)" in proc.stdout
    assert '+mode = "sandbox"' in proc.stdout
    assert snapshot(root) == before


def test_json_reports_actions_and_changed(root: Path) -> None:
    proc = run_cli("--headless", "--root", str(root), "--json", *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["applied"] is False and data["changed"] is True
    kinds = [a["kind"] for a in data["actions"]]
    assert kinds[:3] == ["create-group", "create-user", "workspace-access"]
    assert all(
        {"kind", "target", "description", "change", "commands"} <= set(a) for a in data["actions"]
    )
    applied = json.loads(
        run_cli("--headless", "--root", str(root), "--json", "--yes", *SANDBOX).stdout
    )
    assert applied["applied"] is True and applied["changed"] is True
    assert applied["transaction"]


def broken_settings(root: Path) -> tuple[str, ...]:
    path = root / "etc/claude-code/managed-settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "model": "opus",\n  "sandbox": {,\n}\n')
    return ("--mode", "user")


def broken_launcher_config(root: Path) -> tuple[str, ...]:
    # An earlier launcher.toml the operator edited by hand; the apply would rewrite it.
    config = root / "root/.config/sandbox-setup/launcher.toml"
    config.parent.mkdir(parents=True)
    config.write_text('# my launcher\nschema = 1\nmode = "user"\nclaude = /usr/bin/claude\n')
    return SANDBOX


def broken_answers(root: Path) -> tuple[str, ...]:
    (root / "answers.toml").write_text('mode = "user"\nagent_user = claude\n')
    return ("--answers", str(root / "answers.toml"))


def unknown_mode_in_answers(root: Path) -> tuple[str, ...]:
    (root / "answers.toml").write_text('mode = "yolo"\n')
    return ("--answers", str(root / "answers.toml"))


def symlinked_settings(root: Path) -> tuple[str, ...]:
    # The agent (uid 4242 in this root) points its settings at a file it does not
    # own; writing as root through it would clobber root's file.
    home = root / "home/agent"
    (home / ".claude").mkdir(parents=True)
    os.chown(home, 4242, 4242)
    os.chown(home / ".claude", 4242, 4242)
    with open(root / "etc/passwd", "a") as passwd:
        passwd.write("agent:x:4242:4242::/home/agent:/bin/sh\n")
    link = home / ".claude/settings.json"
    link.symlink_to(root / "etc/shadow")
    os.lchown(link, 4242, 4242)
    return (
        "--mode",
        "user",
        "--agent-user",
        "agent",
        "--reuse-account",
        "--settings-scope",
        "user",
    )


CASES = {
    "invalid-json-settings": (broken_settings, 2, ["managed-settings.json", "line 3, column 15"]),
    "invalid-toml-launcher-config": (
        broken_launcher_config,
        2,
        ["/root/.config/sandbox-setup/launcher.toml", "invalid TOML", "line 4"],
    ),
    "invalid-toml-answers": (broken_answers, 2, ["answers.toml", "invalid TOML", "line 2"]),
    "unknown-mode-flag": (lambda r: ("--mode", "yolo"), 2, ["invalid choice: 'yolo'"]),
    "unknown-mode-answers": (unknown_mode_in_answers, 2, ["key 'mode' is 'yolo'"]),
    "invalid-user-name": (
        lambda r: ("--mode", "user", "--agent-user", "Bad Name"),
        2,
        ["'Bad Name' is not a valid user name"],
    ),
    "missing-workspace": (
        lambda r: ("--mode", "sandbox", "--workspace", "/srv/nope"),
        2,
        ["workspace /srv/nope does not exist"],
    ),
    "relative-workspace-under-root": (
        lambda r: ("--mode", "sandbox", "--workspace", "srv/project"),
        2,
        ["must be an absolute path"],
    ),
    # docs/design.md's exit-code table: "3 refused: unsafe without acceptance".
    "unsafe-without-acceptance": (lambda r: ("--mode", "unsafe"), 3, ["--accept-unsafe-root"]),
    "settings-symlink": (symlinked_settings, 2, ["is a symlink", "never writes through"]),
    "answers-and-flags": (
        lambda r: ("--answers", "/x.toml", "--mode", "user"),
        2,
        ["cannot be combined with --mode"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_with_a_clear_message_and_changes_nothing(root: Path, case: str) -> None:
    prepare, code, words = CASES[case]
    args = prepare(root)
    before = snapshot(root)
    shadow = (root / "etc/shadow").read_bytes()
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    for word in words:
        assert word in proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(root) == before
    assert (root / "etc/shadow").read_bytes() == shadow
    assert not (root / "root/.local/state").exists(), "no journal, no lock: nothing written"
