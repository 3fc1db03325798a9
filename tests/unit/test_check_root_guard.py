"""claude.root_guard judged over canned facts, and the search for Claude Code that
never picks the claude shim (no subprocess: nothing here runs a binary)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base.claude_shim import SHIM_MARKER
from sandbox_setup.checks.base import Verdict
from sandbox_setup.checks.claude import judge_claude_installed
from sandbox_setup.checks.claude_guard import (
    GUARD_TEXT,
    GuardFacts,
    binary_carries_guard,
    guard_skipping_claims,
    judge_root_guard,
)
from sandbox_setup.checks.claude_path import file_is_claude_shim, lookup_claude
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import ProbeResult

VERSION = ProbeResult(("/usr/local/bin/claude", "--version"), 0, "2.1.332 (Claude Code)\n")
CLAUDE = "/usr/local/bin/claude"
SHIM = "#!/usr/bin/python3 -IS\n# " + SHIM_MARKER.decode() + ": installed by sandbox-setup\n"


def cause_of(verdict: Verdict) -> str:
    lines = [line for line in verdict.detail.splitlines() if line.startswith("cause: ")]
    return lines[-1].removeprefix("cause: ") if lines else ""


def facts(
    uid: int = 0, env: dict[str, str] | None = None, operator_uid: int | None = None, **kw: Any
) -> GuardFacts:
    """Root's probe of a found, guarded Claude Code in a clean environment, changed by ``kw``."""
    found = GuardFacts(
        uid=uid,
        operator_uid=uid if operator_uid is None else operator_uid,
        operator_env=env or {},
        path=CLAUDE,
        version=VERSION,
        carries_guard=True,
    )
    return replace(found, **kw)


@pytest.mark.parametrize(
    ("given", "status", "cause", "words"),
    [
        # Root, a Claude Code that carries the guard, a clean environment: it blocks.
        (facts(), Status.WARN, "root-guard-blocks", ["blocks", "2.1.332", "sandbox or user"]),
        # The binary lacks the guard's message: nothing stops root.
        (facts(carries_guard=False), Status.WARN, "root-guard-absent", ["does not carry"]),
        # Unreadable binary: judged from uid 0, and it says so.
        (facts(carries_guard=None), Status.WARN, "root-guard-blocks", ["could not be read"]),
        # The agent (or any non-root probe user): the guard never fires.
        (facts(uid=1000), Status.PASS, "", ["not root", "probe uid (1000)"]),
        (facts(uid=1000, operator_uid=0), Status.PASS, "", ["not root"]),
        # Not found.
        (facts(path=None, version=None, carries_guard=None), Status.SKIP, "", ["would block"]),
        (facts(uid=1000, path=None, version=None), Status.SKIP, "", ["not root"]),
        # The operator's environment claims a sandbox: warn with the remedy, whatever else.
        (facts(env={"IS_SANDBOX": "1"}), Status.WARN, "root-guard-skipped-by-environment",
         ["IS_SANDBOX=1", "unset IS_SANDBOX", "sandbox-launch"]),
        (facts(env={"IS_SANDBOX": "yes"}), Status.WARN, "root-guard-skipped-by-environment",
         ["IS_SANDBOX=yes", "no sandbox was verified"]),
        (facts(env={"IS_SANDBOX": " TRUE "}), Status.WARN, "root-guard-skipped-by-environment",
         ["IS_SANDBOX= TRUE "]),
        (facts(env={"CLAUDE_CODE_BUBBLEWRAP": "1"}), Status.WARN,
         "root-guard-skipped-by-environment", ["CLAUDE_CODE_BUBBLEWRAP=1", "unset"]),
        # ... even when root's probes ran as the agent, or Claude is not installed yet.
        (facts(uid=1000, operator_uid=0, env={"IS_SANDBOX": "on"}), Status.WARN,
         "root-guard-skipped-by-environment", ["IS_SANDBOX=on"]),
        (facts(path=None, version=None, env={"IS_SANDBOX": "1"}), Status.WARN,
         "root-guard-skipped-by-environment", ["IS_SANDBOX=1"]),
        # Values Claude reads as false keep the guard (IS_SANDBOX=0 is the shim's opt-out).
        (facts(env={"IS_SANDBOX": "0"}), Status.WARN, "root-guard-blocks", ["blocks"]),
        (facts(env={"IS_SANDBOX": ""}), Status.WARN, "root-guard-blocks", ["blocks"]),
        (facts(env={"CLAUDE_CODE_BUBBLEWRAP": "false"}), Status.WARN, "root-guard-blocks", []),
        # A non-root operator's claim changes nothing for its own Claude: a note only.
        (facts(uid=1000, env={"IS_SANDBOX": "1"}), Status.PASS, "",
         ["IS_SANDBOX=1", "would skip this guard"]),
        # The shim named as --claude, or a binary root may not run: never run, said so.
        (facts(given_shim=True, version=None, carries_guard=None), Status.WARN,
         "claude-shim-given", ["claude shim", "not run"]),
        (facts(untrusted="owned by uid 1000", version=None, carries_guard=None), Status.WARN,
         "claude-untrusted", ["was not run", "owned by uid 1000"]),
    ],
)  # fmt: skip
def test_judge_root_guard(given: GuardFacts, status: Status, cause: str, words: list[str]) -> None:
    v = judge_root_guard(given)
    assert (v.status, cause_of(v)) == (status, cause), v
    text = v.summary + "\n" + v.detail + "\n" + v.remedy
    for word in words:
        assert word in text, (word, v)
    # Every verdict says what it judged from, and that Claude was never asked.
    assert "judged from" in v.detail and "no probe starts Claude Code" in v.detail
    if status is not Status.PASS and status is not Status.SKIP:
        assert v.remedy


def test_the_detail_names_only_what_was_gathered() -> None:
    bare = judge_root_guard(facts(version=None, carries_guard=None)).detail
    assert "--version" not in bare and "in the binary" not in bare
    full = judge_root_guard(facts()).detail
    assert "`claude --version` (no session)" in full and "in the binary (read, not run)" in full


def test_shims_passed_over_are_named() -> None:
    v = judge_root_guard(facts(skipped=("/usr/local/sbin/claude",)))
    assert "not run: sandbox-setup's claude shim at /usr/local/sbin/claude" in v.detail


@pytest.mark.parametrize(
    ("env", "claims"),
    [
        ({}, ()),
        ({"IS_SANDBOX": "1"}, ("IS_SANDBOX=1",)),
        ({"IS_SANDBOX": "Yes"}, ("IS_SANDBOX=Yes",)),
        ({"IS_SANDBOX": "0"}, ()),
        ({"IS_SANDBOX": "no"}, ()),
        ({"IS_SANDBOX": "2"}, ()),
        ({"CLAUDE_CODE_BUBBLEWRAP": "on", "IS_SANDBOX": "true"},
         ("IS_SANDBOX=true", "CLAUDE_CODE_BUBBLEWRAP=on")),
        ({"OTHER": "1"}, ()),
    ],
)  # fmt: skip
def test_guard_skipping_claims(env: dict[str, str], claims: tuple[str, ...]) -> None:
    assert guard_skipping_claims(env) == claims


def test_binary_carries_guard(tmp_path: Path) -> None:
    with_guard = tmp_path / "with"
    with_guard.write_bytes(b"\0" * 5000 + f"--x {GUARD_TEXT} for security".encode() + b"\0")
    without = tmp_path / "without"
    without.write_text('#!/bin/sh\necho "2.1.332 (Claude Code)"\n')
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert binary_carries_guard(str(with_guard)) is True
    assert binary_carries_guard(str(without)) is False
    assert binary_carries_guard(str(empty)) is None
    assert binary_carries_guard(str(tmp_path)) is None  # not a regular file
    assert binary_carries_guard(str(tmp_path / "missing")) is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert binary_carries_guard(str(fifo)) is None  # never blocks on it


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_search_passes_over_the_shim(tmp_path: Path, monkeypatch) -> None:
    shim = executable(tmp_path / "sbin/claude", SHIM)
    real = executable(tmp_path / "bin/claude", "#!/bin/sh\necho 2.1.332\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'sbin'}:{tmp_path / 'bin'}")
    assert file_is_claude_shim(str(shim)) and not file_is_claude_shim(str(real))
    found = lookup_claude(home=tmp_path / "home")
    assert (found.path, found.runnable, found.skipped) == (str(real), str(real), (str(shim),))
    assert "sandbox-setup's claude shim at " + str(shim) in found.note()


def test_a_shim_alone_is_never_found(tmp_path: Path, monkeypatch) -> None:
    shim = executable(tmp_path / "sbin/claude", SHIM)
    monkeypatch.setenv("PATH", str(tmp_path / "sbin"))
    found = lookup_claude(home=tmp_path / "home")
    if found.path is not None:  # this host has a real claude in the fallback places
        assert found.path != str(shim) and not file_is_claude_shim(found.path)
    assert found.skipped[0] == str(shim)


def test_a_given_shim_is_reported_never_runnable(tmp_path: Path) -> None:
    shim = executable(tmp_path / "claude", SHIM)
    found = lookup_claude(str(shim))
    assert found.given_shim and found.path == str(shim) and found.runnable is None


def test_claude_installed_names_the_shims_it_passed_over() -> None:
    v = judge_claude_installed(None, None, None, note="\nnot run: sandbox-setup's claude shim at X")
    assert v.status is Status.WARN and "shim at X" in v.detail
