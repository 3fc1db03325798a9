"""What an undo left is recorded, and the audit and ``--status`` explain it.

An undo leaves a file someone changed since the apply it takes back (it never puts
back over someone's change): it names it, exits 1, and records it in the host-wide
record of setups (``left``: which file, why, its copy from before; typed). ``--audit``
and ``--status`` read that record and name each such file with why and what to do,
while the file still holds what the undo left there; once someone dealt with it, it is
no longer named.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CONFIG,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    run_cli,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

LAUNCHER = f"{CONFIG}/launcher.toml"
RECORD = "etc/sandbox-setup/setups.json"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


def cli(root: Path, *args: str) -> tuple[int, str, str]:
    proc = run_cli(*args, "--root", str(root))
    return proc.returncode, proc.stdout, proc.stderr


def apply(root: Path, *extra: str) -> None:
    code, out, err = cli(root, "--headless", "--yes", *(extra or SANDBOX))
    assert code == 0, out + err


def left_record(root: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((root / RECORD).read_text())
    left: dict[str, dict[str, object]] = doc.get("left", {})
    return left


def status(root: Path) -> dict[str, object]:
    code, out, err = cli(root, "--status", "--json")
    assert code == 0, out + err
    doc: dict[str, object] = json.loads(out)
    return doc


def test_undo_all_records_the_launcher_config_it_left_and_audit_and_status_name_it(
    root: Path,
) -> None:
    apply(root)
    launcher = root / LAUNCHER
    with launcher.open("a") as config:
        config.write("# the operator's own line\n")  # changed after the apply
    code, out, err = cli(root, "--undo", "--all", "--yes")
    assert code == 1, out + err
    assert f"left /{LAUNCHER} as it is" in out, out
    assert launcher.exists()

    # Recorded, typed: which file, why, by which setup's undo.
    entry = left_record(root)["/" + LAUNCHER]
    assert entry["why"] == "changed", entry
    assert entry["setup"] == "/" + STATE, entry
    assert entry["backup"] is None, "the first apply created it: no copy from before"

    # --audit: no setup to audit any more (exit 2, as before), but what was left is named.
    code, out, err = cli(root, "--audit")
    assert code == 2, out + err
    assert "An undo left these files as they are:" in out, out
    assert str(launcher) in out, out
    assert "it changed after apply" in out, out
    assert "rm -- " + str(launcher) in out, out

    # --status: the same, typed in --json, and in words.
    doc = status(root)
    left = doc["left"]
    assert isinstance(left, list) and len(left) == 1, left
    assert left[0]["path"] == str(launcher), left
    assert left[0]["why"] == "changed" and left[0]["setup_state_dir"] == "/" + STATE, left
    assert "rm -- " + str(launcher) in left[0]["todo"], left
    code, text, err = cli(root, "--status")
    assert code == 0, text + err
    assert f"left by an undo: {launcher}" in text, text

    # Someone dealt with it: it is no longer named.
    launcher.unlink()
    assert status(root)["left"] == [], "a file no longer as the undo left it is not named"
    code, out, err = cli(root, "--audit")
    assert "An undo left" not in out, out


def test_undo_of_the_last_apply_leaves_a_changed_file_and_the_audit_names_its_copy(
    root: Path,
) -> None:
    apply(root)
    apply(root, "--allow-domain", "example.com")  # a second apply rewrites launcher.toml
    launcher = root / LAUNCHER
    with launcher.open("a") as config:
        config.write("# the operator's own line\n")
    code, out, err = cli(root, "--undo", "--yes")
    assert code == 1, out + err
    assert f"left /{LAUNCHER} as it is" in out, out

    entry = left_record(root)["/" + LAUNCHER]
    assert entry["why"] == "changed" and isinstance(entry["backup"], str), entry
    copy = root / str(entry["backup"]).lstrip("/")
    assert copy.is_file(), "the launcher config from before the second apply is kept"

    # The setup is still there: the audit names the left file among its findings.
    code, out, err = cli(root, "--audit", "--json")
    assert code == 1, out + err
    found = [f for f in json.loads(out)["findings"] if f["id"] == "audit.left"]
    assert len(found) == 1, found
    assert str(launcher) in found[0]["summary"], found
    assert f"cp -- {copy} {launcher}" in found[0]["remedy"], found
    assert f"diff -- {copy} {launcher}" in found[0]["remedy"], found
    left = status(root)["left"]
    assert isinstance(left, list) and [x["copy"] for x in left] == [str(copy)], left


def test_a_shared_file_changed_since_is_left_with_its_copy_from_before_the_first_setup(
    root: Path,
) -> None:
    gitconfig = root / "root/.gitconfig"
    gitconfig.write_text("[user]\n\tname = operator\n")
    gitconfig.chmod(0o644)
    apply(root)
    with gitconfig.open("a") as config:
        config.write("[core]\n\teditor = vi\n")  # changed after the apply
    code, out, err = cli(root, "--undo", "--all", "--yes")
    assert code == 1, out + err
    assert "left /root/.gitconfig as it is" in out, out

    entry = left_record(root)["/root/.gitconfig"]
    assert entry["why"] == "shared-changed", entry
    before = entry["before"]
    assert isinstance(before, dict), entry
    copy = root / str(before["copy"]).lstrip("/")
    assert copy.read_text() == "[user]\n\tname = operator\n", "the state before is kept"

    code, out, err = cli(root, "--audit")
    assert code == 2, out + err
    assert f"{gitconfig}: it changed after the last apply that planned it" in out, out
    assert f"cp -- {copy} {gitconfig}" in out, out
    left = status(root)["left"]
    assert isinstance(left, list) and left[0]["why"] == "shared-changed", left

    # Put back by hand as the audit says: no longer named.
    gitconfig.write_bytes(copy.read_bytes())
    assert status(root)["left"] == []
    # A new setup takes the file back (the record drops the entry); its undo finishes
    # with the file as the operator had it, and the record and its copies gone.
    apply(root)
    assert "left" not in json.loads((root / RECORD).read_text())
    code, out, err = cli(root, "--undo", "--all", "--yes")
    assert code == 0, out + err
    assert gitconfig.read_text() == "[user]\n\tname = operator\n"
    assert not (root / "etc/sandbox-setup").exists(), out


def test_audit_json_with_no_setup_left_prints_no_text_on_stdout(root: Path) -> None:
    apply(root)
    with (root / LAUNCHER).open("a") as config:
        config.write("# the operator's own line\n")
    assert cli(root, "--undo", "--all", "--yes")[0] == 1
    code, out, err = cli(root, "--audit", "--json")
    assert code == 2 and out == "", out + err
    assert "nothing to audit" in err, err
