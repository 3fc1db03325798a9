"""Each rule once: the plan, the launcher, the audit, the checks and the TUI give the
same answer, on the cases where their copies had drifted apart (issue 10).

Real files under a temp root (owners set with chown, so these run as root).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.audit.mode import claude_findings
from sandbox_setup.audit.safety import claude_facts
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.claude_version import read_claude_version
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.claude_binary import find_claude, is_trusted
from sandbox_setup.policy.trust import check_trusted_file, untrusted_reason
from tests.core_fixtures import REPO, make_target_root
from tests.tools import require_root

OPERATOR = Account("alice", 4242, 4242, Path("/home/alice"), "/bin/sh")
OTHER = 4343


def _layout(root: Path) -> Layout:
    return Layout(root.resolve(), OPERATOR)


def _binary(directory: Path, mode: int = 0o755, uid: int = 0) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    binary = directory / "claude"
    binary.write_text('#!/bin/sh\necho "2.1.197 (Claude Code)"\n')
    binary.chmod(mode)
    os.chown(binary, uid, uid)
    return binary


def _verdicts(layout: Layout, binary: Path) -> dict[str, bool]:
    """Whether each part of the tool trusts ``binary`` (True) or not."""
    target = PurePosixPath("/" + str(binary.relative_to(layout.root)))
    owners = {0, OPERATOR.uid}
    try:
        check_trusted_file(binary, owners, "Claude binary")
        launcher = True
    except RefusedError:
        launcher = False
    config = LauncherConfig(Mode.USER, target, "agent", PurePosixPath("/home/agent"))
    return {
        "plan": is_trusted(layout, target),
        "launcher": launcher,
        "audit": claude_facts(layout, config).trusted,
        "checks": untrusted_reason(binary, owners) is None,
    }


# (how the directory holding the binary is made, whether it may be trusted)
CASES = {
    # the reproduced bug: a sticky world-writable directory owned by a non-root
    # operator; the plan trusted it, every launch then refused it
    "sticky dir of the operator": (0o1777, OPERATOR.uid, False),
    "sticky dir of root (/tmp)": (0o1777, 0, True),
    "world-writable dir": (0o777, 0, False),
    "group-writable dir of the operator": (0o775, OPERATOR.uid, False),
    "dir of another user": (0o755, OTHER, False),
    "dir of the operator": (0o755, OPERATOR.uid, True),
    "plain root dir": (0o755, 0, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_trust_rule_is_the_same_everywhere(tmp_path: Path, case: str) -> None:
    require_root()
    mode, uid, expected = CASES[case]
    root = tmp_path / "root"
    root.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(root, 0o755)
    directory = root / "opt" / "claude-dir"
    directory.parent.mkdir()
    binary = _binary(directory)
    os.chown(directory, uid, uid)
    directory.chmod(mode)
    verdicts = _verdicts(_layout(root), binary)
    assert verdicts == dict.fromkeys(verdicts, expected), verdicts


@pytest.mark.parametrize(
    ("file_mode", "file_uid", "expected"),
    [(0o755, 0, True), (0o775, 0, False), (0o757, 0, False), (0o755, OTHER, False)],
)
def test_the_file_itself_is_judged_the_same_everywhere(
    tmp_path: Path, file_mode: int, file_uid: int, expected: bool
) -> None:
    require_root()
    root = tmp_path / "root"
    (root / "opt").mkdir(parents=True)
    for path in (tmp_path, root, root / "opt"):
        path.chmod(0o755)
    binary = _binary(root / "opt" / "bin", file_mode, file_uid)
    verdicts = _verdicts(_layout(root), binary)
    assert verdicts == dict.fromkeys(verdicts, expected), verdicts


def test_a_prerelease_version_is_recorded_as_the_audit_reads_it(tmp_path: Path) -> None:
    """The plan cut ``2.1.400-beta.3`` to ``2.1.0`` and the audit did not: every audit
    after a clean apply reported audit.claude.changed."""
    root = make_target_root(tmp_path / "root")
    claude = root / "usr/local/bin/claude"
    claude.write_text('#!/bin/sh\necho "2.1.400-beta.3 (Claude Code)"\n')
    layout = Layout.for_root(root)
    found = find_claude(layout, PurePosixPath("/usr/local/bin/claude"))
    assert found.version == "2.1.400-beta.3"
    config = LauncherConfig(
        Mode.USER,
        PurePosixPath("/usr/local/bin/claude"),
        "agent",
        PurePosixPath("/home/agent"),
        claude_version=found.version,
    )
    now = read_claude_version(claude)
    assert claude_findings(config, str(claude), True, True, now, "REAPPLY") == []


def test_claude_version_output_that_is_not_utf8_is_no_version(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.write_bytes(b"#!/bin/sh\nprintf '\\377\\376 2.1.197 (Claude Code)\\n'\n")
    claude.chmod(0o755)
    assert read_claude_version(claude) == "2.1.197"


def test_the_tui_and_the_headless_path_record_the_same_acceptance(tmp_path: Path) -> None:
    """The TUI recorded ``root (uid 0)`` where the headless path recorded who ran
    sudo as well."""
    code = (
        "import os, sys\n"
        "from sandbox_setup.commands.interactive import InteractiveCore\n"
        "from sandbox_setup.configure.host_facts import gather_host_facts\n"
        "from sandbox_setup.configure.plan import build_plan\n"
        "from sandbox_setup.configure.answers import Answers\n"
        "from sandbox_setup.base.choices import Mode\n"
        "from sandbox_setup.checks.model import Report, Recommendation\n"
        "core = InteractiveCore.for_root(sys.argv[1], report_provider=lambda cb: None)\n"
        "print(core.acceptance_label())\n"
        "report = Report({}, [], Recommendation(Mode.USER, ''))\n"
        "answers = Answers(Mode.UNSAFE, accept_unsafe_root=True)\n"
        "facts = gather_host_facts(report, core.layout, answers)\n"
        "print(build_plan(report, answers, core.layout, facts=facts).answers.accepted_by)\n"
    )
    root = make_target_root(tmp_path / "root")
    result = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        cwd=REPO,
        env={**os.environ, "SUDO_USER": "alice"},
        capture_output=True,
        text=True,
        check=True,
    )
    tui, headless = result.stdout.splitlines()
    assert tui == headless
    assert "via sudo by alice" in tui
