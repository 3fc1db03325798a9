"""Finding Claude's seccomp helper for the nested probes, and the inner form they run."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.checks.bwrap import helper_note, inner_command, judge_nested, nested_command
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.probe import ProbeResult
from sandbox_setup.checks.seccomp_helper import (
    BUILTIN_MARK,
    SeccompHelper,
    find_seccomp_helper,
    has_builtin_helper,
    runnable_by,
    runtime_helper_paths,
)

NOBODY = 65534


def npm_tree(base: Path, builtin: bool, vendor: bool) -> Path:
    """A node_modules with Claude Code (helper built in or not) and sandbox-runtime."""
    modules = base / "node_modules"
    claude = modules / "@anthropic-ai/claude-code/bin/claude.exe"
    claude.parent.mkdir(parents=True)
    claude.write_bytes(b"\x7fELF" + (BUILTIN_MARK if builtin else b"") + b"\0" * 64)
    claude.chmod(0o755)
    if vendor:
        helper = modules / "@anthropic-ai/sandbox-runtime/vendor/seccomp/x64/apply-seccomp"
        helper.parent.mkdir(parents=True)
        helper.write_bytes(b"\x7fELF")
        helper.chmod(0o755)
    for directory in [base, *base.rglob("*")]:
        if directory.is_dir():
            directory.chmod(0o755)
    return claude


def test_builtin_helper_is_recognised_by_its_own_text(tmp_path: Path) -> None:
    with_it = npm_tree(tmp_path / "a", builtin=True, vendor=False)
    without = npm_tree(tmp_path / "b", builtin=False, vendor=False)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert has_builtin_helper(str(with_it))
    assert not has_builtin_helper(str(without))
    assert not has_builtin_helper(str(empty)) and not has_builtin_helper(str(tmp_path / "none"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not has_builtin_helper(str(fifo))  # and it did not block


def test_the_builtin_helper_wins_and_runs_as_claude_does(tmp_path: Path) -> None:
    claude = npm_tree(tmp_path, builtin=True, vendor=True)
    helper, notes = find_seccomp_helper(str(claude), lambda _p: True, machine="x86_64")
    assert helper is not None and notes == []
    assert helper.argv == ("env", "ARGV0=apply-seccomp", str(claude.resolve()))
    assert "built-in" in helper.source


def test_sandbox_runtimes_helper_next_to_the_claude_install(tmp_path: Path) -> None:
    claude = npm_tree(tmp_path, builtin=False, vendor=True)
    helper, _ = find_seccomp_helper(str(claude), lambda _p: True, machine="x86_64")
    assert helper is not None and helper.argv[0].endswith("vendor/seccomp/x64/apply-seccomp")
    assert runtime_helper_paths(str(claude), machine="aarch64")[0].parts[-2] == "arm64"
    assert runtime_helper_paths(str(claude), machine="riscv64") == []


def test_a_helper_the_probe_user_cannot_run_is_passed_over_and_said(tmp_path: Path) -> None:
    claude = npm_tree(tmp_path, builtin=True, vendor=False)
    helper, notes = find_seccomp_helper(str(claude), lambda _p: False, machine="x86_64")
    assert helper is None
    assert notes and "cannot run it" in notes[0]
    assert "stood in" in helper_note(None, notes) and "cannot run it" in helper_note(None, notes)
    assert helper_note(None, []).startswith("no Claude seccomp helper found")


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A 0755 temp dir under /tmp (pytest's tmp_path is inside a 0700 directory)."""
    base = Path(tempfile.mkdtemp(prefix="cs-helper-", dir="/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_runnable_by_follows_mode_bits(open_tmp: Path) -> None:
    tmp_path = open_tmp
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    inside = private / "claude"
    inside.write_text("x")
    inside.chmod(0o755)
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    runnable = open_dir / "claude"
    runnable.write_text("x")
    runnable.chmod(0o755)
    unreadable = open_dir / "exec-only"
    unreadable.write_text("x")
    unreadable.chmod(0o711)
    os.chmod(tmp_path, 0o755)
    assert runnable_by(str(runnable), NOBODY, [NOBODY])
    assert not runnable_by(str(inside), NOBODY, [NOBODY])  # the 0700 directory
    assert not runnable_by(str(unreadable), NOBODY, [NOBODY])  # a helper must be read too
    assert not runnable_by(str(tmp_path / "missing"), NOBODY, [NOBODY])


HELPER = SeccompHelper(("env", "ARGV0=apply-seccomp", "/usr/bin/claude"), "/usr/bin/claude", "x")


@pytest.mark.parametrize("weak", [False, True])
def test_inner_form_is_claudes(weak: bool) -> None:
    argv = inner_command(weak=weak, helper=HELPER, uid=1000)
    text = " ".join(argv)
    assert "--unshare-net" in argv and "--cap-drop ALL" in text
    assert "CAP_SETFCAP" not in text  # only a uid-0 caller gets it
    assert ("--bind /proc /proc" in text) is weak and ("--proc /proc" in text) is not weak
    assert argv[-4:] == ("env", "ARGV0=apply-seccomp", "/usr/bin/claude", "true")
    root = " ".join(inner_command(weak=weak, helper=HELPER, uid=0, setfcap=True))
    assert "--cap-drop ALL --cap-add CAP_SETFCAP" in root
    assert "CAP_SETFCAP" not in " ".join(inner_command(weak=weak, uid=0, setfcap=False))
    assert inner_command(weak=weak)[-3:] == ("unshare", "-Ur", "true")
    assert "--unshare-net" in nested_command(argv)[: nested_command(argv).index("sh")]


def test_the_detail_says_what_the_command_ran_through() -> None:
    ok = ProbeResult(("bwrap",), 0, "", "sandbox-setup:outer-up\n")
    ran = helper_note(HELPER, [])
    verdict = judge_nested(ok, None, HostFacts(), weak=False, uid=1000, platform="none", helper=ran)
    assert "the command ran through x, as Claude's Bash tool runs" in verdict.detail
    bare = judge_nested(ok, None, HostFacts(), weak=False, uid=1000, platform="none")
    assert "stood in" in bare.detail
