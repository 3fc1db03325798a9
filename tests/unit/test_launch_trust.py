"""Trust checks on real files (modes and owners set by the test, under pytest's tmp_path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.trust import find_trusted_tool, read_trusted_text
from sandbox_setup.policy.trust import check_trusted_file
from tests.tools import require_root

NOBODY = 65534
OWNERS = frozenset({0})


@pytest.fixture
def base(tmp_path: Path) -> Path:
    require_root()  # chown to another user and root-owned expectations
    tmp_path.chmod(0o755)
    return tmp_path


def _file(directory: Path, mode: int = 0o644, text: str = "x = 1\n") -> Path:
    path = directory / "f.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_root_owned_file_in_root_owned_dirs_is_trusted(base: Path) -> None:
    path = _file(base)
    assert check_trusted_file(path, OWNERS, "cfg") == path
    assert read_trusted_text(path, OWNERS, "cfg") == (path, "x = 1\n")


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646, 0o620])
def test_group_or_world_writable_file_is_refused(base: Path, mode: int) -> None:
    path = _file(base, mode)
    with pytest.raises(RefusedError, match=f"cfg: {path} is group- or world-writable"):
        check_trusted_file(path, OWNERS, "cfg")


def test_foreign_owner_is_refused_unless_it_is_the_invoking_user(base: Path) -> None:
    path = _file(base)
    os.chown(path, NOBODY, NOBODY)
    with pytest.raises(RefusedError, match="owned by nobody"):
        check_trusted_file(path, OWNERS, "cfg")
    assert check_trusted_file(path, OWNERS | {NOBODY}, "cfg") == path


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_writable_directory_on_the_path_is_refused(base: Path, mode: int) -> None:
    directory = base / "d"
    directory.mkdir()
    directory.chmod(mode)
    path = _file(directory)
    with pytest.raises(RefusedError, match=f"directory {directory} on its path"):
        check_trusted_file(path, OWNERS, "cfg")


def test_foreign_directory_on_the_path_is_refused(base: Path) -> None:
    directory = base / "d"
    directory.mkdir(mode=0o755)
    os.chown(directory, NOBODY, NOBODY)
    with pytest.raises(RefusedError, match="owned by nobody"):
        check_trusted_file(_file(directory), OWNERS, "cfg")


def test_root_owned_sticky_directory_is_accepted(base: Path) -> None:
    sticky = base / "tmp-like"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert check_trusted_file(_file(sticky), OWNERS, "cfg").parent == sticky


def test_sticky_directory_of_another_user_is_refused(base: Path) -> None:
    sticky = base / "tmp-like"
    sticky.mkdir()
    sticky.chmod(0o1777)
    os.chown(sticky, NOBODY, NOBODY)
    with pytest.raises(RefusedError, match=f"directory {sticky} on its path"):
        check_trusted_file(_file(sticky), OWNERS, "cfg")


def test_symlink_is_judged_by_its_target(base: Path) -> None:
    open_dir = base / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    target = _file(open_dir)
    link = base / "link.toml"
    link.symlink_to(target)
    with pytest.raises(RefusedError, match=f"directory {open_dir}"):
        check_trusted_file(link, OWNERS, "cfg")
    good = _file(base)
    (base / "good-link").symlink_to(good)
    assert check_trusted_file(base / "good-link", OWNERS, "cfg") == good


def test_missing_relative_and_non_regular_paths_are_refused(base: Path) -> None:
    with pytest.raises(RefusedError, match="No such file"):
        check_trusted_file(base / "absent", OWNERS, "cfg")
    with pytest.raises(RefusedError, match="not an absolute path"):
        check_trusted_file("relative.toml", OWNERS, "cfg")
    with pytest.raises(RefusedError, match="not a regular file"):
        check_trusted_file(base, OWNERS, "cfg")


def test_non_utf8_config_is_refused(base: Path) -> None:
    path = base / "bad.toml"
    path.write_bytes(b"\xff\xfe")
    path.chmod(0o644)
    with pytest.raises(RefusedError, match="not UTF-8"):
        read_trusted_text(path, OWNERS, "cfg")


def test_find_trusted_tool(base: Path) -> None:
    bin_dir = base / "bin"
    bin_dir.mkdir(mode=0o755)
    tool = bin_dir / "bwrap"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_trusted_tool("bwrap", OWNERS, f"relative:{bin_dir}") == tool
    with pytest.raises(RefusedError, match="bwrap not found on PATH"):
        find_trusted_tool("bwrap", OWNERS, str(base / "empty"))
    # A planted writable copy first on PATH is a refusal, not a fallback to the next one.
    planted_dir = base / "planted"
    planted_dir.mkdir(mode=0o755)
    planted = planted_dir / "bwrap"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o777)
    with pytest.raises(RefusedError, match="bwrap \\(found on PATH\\)"):
        find_trusted_tool("bwrap", OWNERS, f"{planted_dir}:{bin_dir}")
