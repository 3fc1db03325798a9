"""Whom live probes run as: the agent, a stand-in before it exists, the operator."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.probes import choose_probe_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching probe users needs root")


def tree(tmp_path: Path, passwd: str = "") -> Layout:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n" + passwd)
    return Layout.for_root(tmp_path)


def test_unsafe_mode_and_own_account_probe_as_the_operator(tmp_path: Path) -> None:
    layout = tree(tmp_path)
    assert choose_probe_user(Mode.UNSAFE, "claude-agent", layout) == (None, [])
    assert choose_probe_user(Mode.USER, "root", layout) == (None, [])


def test_an_agent_that_does_not_exist_yet_gets_nobody_as_stand_in(tmp_path: Path) -> None:
    as_user, notes = choose_probe_user(Mode.SANDBOX, "no-such-agent-x", tree(tmp_path))
    assert as_user == "nobody"
    assert "does not exist yet" in notes[0] and "stand-in" in notes[0]


def test_a_live_agent_is_probed_as_itself() -> None:
    # nobody exists on every Debian: as an agent of the live system it is used as is
    assert choose_probe_user(Mode.SANDBOX, "nobody", Layout.for_root("/")) == ("nobody", [])
    assert choose_probe_user(None, "nobody", Layout.for_root("/")) == ("nobody", [])


def test_an_agent_only_in_the_tree_is_not_mistaken_for_a_live_one(tmp_path: Path) -> None:
    # same name as a live account but another uid inside the tree: not the same user
    layout = tree(tmp_path, "nobody:x:4711:4711::/home/n:/bin/sh\n")
    as_user, notes = choose_probe_user(Mode.USER, "nobody", layout)
    assert as_user == "nobody" and "exists only in" in notes[0]
    layout_same = Layout.for_root(tmp_path)
    (tmp_path / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/sh\n"
    )
    assert choose_probe_user(Mode.USER, "nobody", layout_same) == ("nobody", [])


@pytest.mark.parametrize(
    ("uid_map", "uid", "mapped"),
    [
        ("         0          0 4294967295\n", 65534, True),  # the initial namespace
        ("         0          0          1\n", 65534, False),  # unshare -Ur: only root
        ("         0     100000      65536\n", 65534, True),  # a container's range
        ("         0     100000      65534\n", 65534, False),
        ("", 0, False),
    ],
)
def test_uid_mapped(uid_map: str, uid: int, mapped: bool) -> None:
    from sandbox_setup.configure.probes import uid_mapped

    assert uid_mapped(uid, uid_map) is mapped
