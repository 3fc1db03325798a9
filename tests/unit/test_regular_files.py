"""The bounded reader of configuration and state (base.regular_files): a FIFO, a
device or a symlink to one is refused naming the path (exit 2, never a block), and a
file larger than the limit is refused the same way instead of read to the end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.regular_files import read_regular, read_regular_or_none


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 5000)
    assert read_regular(path, limit=5000) == b"x" * 5000


def test_a_file_over_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 5001)
    with pytest.raises(InputError, match=str(path)):
        read_regular(path, limit=5000)
    assert read_regular_or_none(path) is not None  # the default limit is far above


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero"])
def test_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "config.toml"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(InputError, match="not a regular file"):
        read_regular(path)
    assert read_regular_or_none(path) is None
