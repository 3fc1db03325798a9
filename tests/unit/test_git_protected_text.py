"""Root's protected git settings as text: the owned file, and the include merged into a
global git config (every byte the user had kept; a file git refuses is an input error
naming file and line; the include must be the last word on ``safe.*``)."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.policy.git_protected import (
    PROTECTED_FILE,
    include_in_force,
    render_protected_file,
    with_include,
)
from sandbox_setup.policy.gitconfig import parse_git_config

INCLUDE = f"[include]\n\tpath = {PROTECTED_FILE}\n"


def test_the_owned_file_sets_bare_repository_explicit() -> None:
    parsed = parse_git_config(render_protected_file().decode())
    assert parsed.error is None
    assert [(e.key, e.value) for e in parsed.entries] == [("safe.barerepository", "explicit")]


@pytest.mark.parametrize(
    "text",
    ["", "[user]\n\tname = Root\n", "[user]\n\tname = Root", "[user]\r\n\tname = Root\r\n"],
    ids=["empty", "plain", "no-final-newline", "crlf"],
)
def test_the_include_is_appended_and_everything_else_kept(text: str) -> None:
    merged = with_include(text, "/root/.gitconfig")
    assert merged.startswith(text)
    assert include_in_force(merged)
    assert with_include(merged, "/root/.gitconfig") == merged, "a second merge changes nothing"


def test_an_include_already_in_force_is_left_as_it_is() -> None:
    text = "[user]\n\tname = Root\n" + INCLUDE
    assert with_include(text, "x") == text


@pytest.mark.parametrize(
    "after",
    ["[safe]\n\tbareRepository = all\n", "[include]\n\tpath = /root/other\n"],
    ids=["safe-after-it", "another-include-after-it"],
)
def test_an_include_that_something_later_could_override_is_added_again(after: str) -> None:
    text = INCLUDE + after
    assert not include_in_force(text)
    merged = with_include(text, "x")
    assert merged.startswith(text) and include_in_force(merged)


def test_a_file_git_refuses_is_an_input_error_naming_file_and_line() -> None:
    with pytest.raises(InputError, match=r"/root/\.gitconfig: line 3: .*left untouched"):
        with_include("[user]\n\tname = Root\n[broken\n", "/root/.gitconfig")


def test_git_itself_reads_the_merged_include(tmp_path: Path) -> None:
    """The merged text as real git reads it: safe.bareRepository comes from the include."""
    owned = tmp_path / "protected"
    owned.write_bytes(render_protected_file())
    config = tmp_path / "gitconfig"
    config.write_text(
        with_include("[safe]\n\tbareRepository = all\n", str(config), PurePosixPath(owned))
    )
    value = subprocess.run(
        ["git", "config", "--file", str(config), "--includes", "safe.bareRepository"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert value.strip() == "explicit"
