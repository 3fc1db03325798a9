"""A setup as one thing with a history (issue 28), through the real CLI under temp roots:
four applies (a full one, then three headless changes of one thing each), ``--undo``
saying what remains, ``--undo --all`` restoring every file byte for byte (mode and
owner too) and removing the state directory, the agent's files handed to the
workspace's owner; and ``--headless`` without ``--mode`` changing only what is given."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CONFIG,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    snapshot,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before


def cli(root: Path, *args: str) -> str:
    proc = run_cli(*args, "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def setup_files(root: Path) -> dict[str, str]:
    return {name: (root / CONFIG / name).read_text() for name in ("answers.toml", "launcher.toml")}


def diff(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The changed lines (+/-) of each file, without the diff headers."""
    lines = []
    for name in before:
        for line in difflib.unified_diff(
            before[name].splitlines(), after[name].splitlines(), lineterm="", n=0
        ):
            if line[:1] in "+-" and not line.startswith(("+++", "---")):
                lines.append(f"{name}: {line}")
    return lines


FOUR_APPLIES = (
    (*SANDBOX, "--install-claude-shim"),
    ("--allow-loopback-port", "10100"),
    ("--allow-domain", "example.com"),
    ("--pass-env", "MY_TOKEN"),
)


def test_undo_says_what_remains_and_undo_all_restores_the_host_byte_for_byte(root: Path) -> None:
    before = snapshot(root)
    outputs = [cli(root, "--headless", "--yes", *args) for args in FOUR_APPLIES]
    # Every apply says how to take back the whole setup, not only itself.
    assert "Undo this apply only (3 earlier applies stay in effect)" in outputs[-1]
    assert f"sandbox-setup --undo --all --yes --root {root}" in outputs[-1]
    # The agent wrote files in the workspace (its own, and a directory of them).
    agent = passwd_entry(root, "claude-agent")
    assert agent is not None
    uid, gid = int(agent[2]), int(agent[3])
    notes = root / "srv/project/notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("agent's\n")
    (root / "srv/project/src/agent.py").write_text("print(1)\n")
    for path in (notes, notes / "todo.txt", root / "srv/project/src/agent.py"):
        os.chown(path, uid, gid)

    one = cli(root, "--undo", "--yes")
    assert "restored /root/.config/sandbox-setup/launcher.toml" in one
    assert (
        "3 earlier applies of this setup remain in effect; to take them all back: "
        f"sandbox-setup --undo --all --yes --root {root}"
    ) in one

    preview = cli(root, "--undo", "--all", "--dry-run")
    assert preview.count("Undo of apply ") == 3
    assert "remove user claude-agent" in preview
    for rel in ("notes", "notes/todo.txt", "src/agent.py"):
        assert f"give /srv/project/{rel} (agent's) to the owner of /srv/project" in preview
    assert f"remove the state directory /{STATE}" in preview
    assert (root / STATE).is_dir() and passwd_entry(root, "claude-agent") is not None

    out = cli(root, "--undo", "--all", "--yes")
    assert "removed user claude-agent" in out
    assert "gave 3 file(s) the agent owned in /srv/project to its owner" in out
    said = out.index("removing the journal and")
    assert said < out.index(f"removed the state directory /{STATE}")
    assert not (root / "root/.local").exists()
    # Every file under the root as before the first apply (bytes, mode, owner), but
    # for the agent's own files, which are now the workspace owner's.
    after = snapshot(root)
    agent_files = {"srv/project/notes/", "srv/project/notes/todo.txt", "srv/project/src/agent.py"}
    assert {k: v for k, v in after.items() if k not in agent_files} == before
    for rel in agent_files:
        st = (root / rel.rstrip("/")).lstat()
        assert (st.st_uid, st.st_gid) == (0, 0), rel
    assert "Nothing to undo" in cli(root, "--undo", "--all", "--yes")


def test_undo_all_keeps_what_the_sessions_left_in_the_state_directory(root: Path) -> None:
    """The quarantine holds files moved out of a workspace: never deleted by an undo."""
    cli(root, "--headless", "--yes", *SANDBOX)
    moved = root / STATE / "quarantine/session-1/hooks/post-checkout"
    moved.parent.mkdir(parents=True)
    moved.write_text("#!/bin/sh\n")
    preview = cli(root, "--undo", "--all")
    assert "keeping the directory: the sessions left quarantine there" in preview
    out = cli(root, "--undo", "--all", "--yes")
    assert f"removed the journal and the backups from /{STATE}" in out
    assert f"Kept the state directory /{STATE}: the sessions left quarantine there" in out
    # One true account: never "removing the state directory" before "Kept" it.
    assert "removing the state directory" not in out, out
    assert moved.read_text() == "#!/bin/sh\n"
    assert sorted(p.name for p in (root / STATE).iterdir()) == ["quarantine"]


def test_headless_without_mode_changes_only_the_options_given(root: Path) -> None:
    cli(root, "--headless", "--yes", *SANDBOX)
    before = setup_files(root)
    cli(root, "--headless", "--allow-loopback-port", "10100", "--yes")
    after = setup_files(root)
    assert diff(before, after) == [
        "answers.toml: +loopback_ports = [10100]",
        "launcher.toml: -loopback_ports = []",
        "launcher.toml: +loopback_ports = [10100]",
    ]
    # Its pair takes it out again: the files are back byte for byte.
    cli(root, "--headless", "--no-allow-loopback-port", "10100", "--yes")
    assert setup_files(root) == before


@pytest.mark.parametrize(
    ("add", "remove", "key"),
    [
        (("--allow-domain", "example.com"), ("--no-allow-domain", "example.com"), "domains"),
        (("--pass-env", "MY_TOKEN"), ("--no-pass-env", "MY_TOKEN"), "pass_env"),
        (("--workspace", "/srv/other"), ("--no-workspace", "/srv/other"), "workspaces"),
    ],
)
def test_every_list_option_has_a_pair_that_removes_it(
    root: Path, add: tuple[str, str], remove: tuple[str, str], key: str
) -> None:
    (root / "srv/other").mkdir()
    cli(root, "--headless", "--yes", *SANDBOX)
    before = setup_files(root)
    cli(root, "--headless", *add, "--yes")
    assert setup_files(root) != before and add[1] in setup_files(root)["answers.toml"]
    cli(root, "--headless", *remove, "--yes")
    assert setup_files(root) == before


def test_headless_without_a_saved_setup_names_what_is_missing(root: Path) -> None:
    before = snapshot(root)
    proc = run_cli("--headless", "--allow-loopback-port", "10100", "--yes", "--root", str(root))
    assert proc.returncode == 2, proc.stderr
    assert "--headless needs --mode sandbox|user|unsafe or --answers FILE" in proc.stderr
    assert "no saved setup" in proc.stderr and "answers.toml does not exist" in proc.stderr
    assert snapshot(root) == before


def test_a_headless_option_without_headless_names_the_command(root: Path) -> None:
    proc = run_cli("--allow-loopback-port", "10100", "--root", str(root))
    assert proc.returncode == 2
    assert (
        f"sandbox-setup --headless --allow-loopback-port 10100 --root {root} --yes" in proc.stderr
    )


def test_undoing_the_only_apply_says_what_is_left_and_how_to_remove_it(root: Path) -> None:
    cli(root, "--headless", "--yes", *SANDBOX)
    out = cli(root, "--undo", "--yes")
    assert "removed user claude-agent" in out
    assert (
        f"No apply of this setup is in effect any more; its journal and backups are left in "
        f"/{STATE}; remove them with: sandbox-setup --undo --all --yes --root {root}"
    ) in out
    again = cli(root, "--undo", "--yes")
    assert "Nothing to undo." in again and "--undo --all --yes" in again
    cli(root, "--undo", "--all", "--yes")
    assert not (root / "root/.local").exists()
    wrong = run_cli("--check", "--all", "--root", str(root))
    assert wrong.returncode == 2 and "--all only applies to --undo" in wrong.stderr
