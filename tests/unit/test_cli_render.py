"""The CLI's readable output (issue 17): ``--check`` and ``--audit`` fit 80 columns on
a pipe, name each cause once with the checks it breaks, come in colour (Rich) on a
terminal and plain with NO_COLOR, never load Rich for JSON or a pipe, and ``--undo``
asks y/N on a terminal."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.audit.model import AuditFinding, AuditReport, Grade, Severity
from sandbox_setup.audit.render import render_lines, render_text
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.styled import emit
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.commands.check_report import cause_groups, render_report, report_lines
from sandbox_setup.configure.journal.entries import Write
from tests.tools import REPO

MASKED = "cause: proc-masked"
REMEDY = "docker run --security-opt systempaths=unconfined --security-opt apparmor=unconfined ..."


def _finding(
    check_id: str, status: Status, summary: str, cause: str = "", remedy: str = ""
) -> Finding:
    detail = f"what the probe printed for {check_id}\n{cause}".strip()
    key = cause.removeprefix("cause: ") or None
    return Finding(check_id, check_id.replace(".", " "), status, summary, detail, remedy, cause=key)


def masked_report() -> Report:
    """A container with a masked /proc: one cause breaks four checks."""
    masked = "/proc is masked by the container runtime (/proc/sys, /proc/kcore read-only or hidden)"
    findings = [
        _finding("identity.root", Status.PASS, "running as root (uid 0)"),
        _finding("proc.fresh_mount", Status.FAIL, masked, MASKED, REMEDY),
        _finding("bwrap.sandbox", Status.FAIL, masked, MASKED, REMEDY),
        _finding("bwrap.nested", Status.FAIL, masked, MASKED, REMEDY),
        _finding("bwrap.nested_weak", Status.FAIL, masked, MASKED, REMEDY),
        _finding(
            "tty.tiocsti",
            Status.WARN,
            "TIOCSTI is allowed (dev.tty.legacy_tiocsti=1): a process sharing the terminal can "
            "type into it",
            "cause: tiocsti-enabled",
            "sysctl -w dev.tty.legacy_tiocsti=0",
        ),
    ]
    return Report(
        host={"kernel": "6.8", "container": "docker", "probe_notes": ["a note " * 15]},
        findings=findings,
        recommendation=Recommendation(Mode.USER, "bubblewrap cannot mount /proc here " * 4),
        as_user="nobody",
    )


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_check_text_fits_80_columns_on_a_pipe_and_names_each_cause_once() -> None:
    out = io.StringIO()
    render_report(masked_report(), out)
    text = out.getvalue()
    # Everything fits 80 columns but a remedy: a command to paste is one whole line.
    assert all(len(line) <= 80 for line in text.splitlines() if "remedy: " not in line), text
    assert f"    remedy: {REMEDY}\n" in text
    assert "\x1b[" not in text  # a pipe: no colour
    # The masked /proc: its remedy once, with every check it breaks.
    assert text.count("systempaths=unconfined") == 1, text
    assert "-> proc.fresh_mount, bwrap.sandbox, bwrap.nested, bwrap.nested_weak" in text
    # Worst first: the failures, the warning, then the pass.
    assert text.index("bwrap.sandbox") < text.index("tty.tiocsti") < text.index("identity.root")


def test_cause_groups_fall_back_to_the_remedy_without_a_named_cause() -> None:
    same = [
        _finding("a.one", Status.FAIL, "x", remedy="apt-get install -y socat"),
        _finding("a.two", Status.WARN, "y", remedy="apt-get install -y socat"),
        _finding("a.three", Status.PASS, "z", remedy="nothing to do"),
    ]
    groups = cause_groups(same)
    assert [(g.remedy, g.ids) for g in groups] == [("apt-get install -y socat", ["a.one", "a.two"])]


def test_check_text_is_coloured_on_a_terminal_and_plain_with_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    terminal = Terminal()
    render_report(masked_report(), terminal)
    assert "\x1b[" in terminal.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = Terminal()
    render_report(masked_report(), plain)
    assert "\x1b[" not in plain.getvalue()
    # The same layout either way: only the colour differs.
    pipe = io.StringIO()
    emit(report_lines(masked_report(), 80), pipe)
    assert plain.getvalue().splitlines()[2:] == pipe.getvalue().splitlines()[2:]


def _audit() -> AuditReport:
    findings = [
        AuditFinding("audit.claude.changed", Severity.LOW, "Claude Code changed " * 6),
        AuditFinding(
            "audit.drift.settings",
            Severity.HIGH,
            "managed-settings.json differs",
            remedy="sandbox-setup --headless --answers /r/answers.toml --yes",
            diff="--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n",
        ),
        AuditFinding(
            "audit.drift.launcher",
            Severity.MEDIUM,
            "launcher.toml differs",
            remedy="sandbox-setup --headless --answers /r/answers.toml --yes",
        ),
    ]
    legend = "exposure 0.0-10.0: 0.0-1.9 OK, 2.0-4.9 MEDIUM, 5.0-7.9 EXPOSED, 8.0-10.0 UNSAFE"
    return AuditReport(
        root="/r",
        config_path="/r/root/.config/sandbox-setup/launcher.toml",
        answers_path="/r/root/.config/sandbox-setup/answers.toml",
        mode="user",
        agent_user="claude-agent",
        probes_as="nobody",
        findings=findings,
        grade=Grade(6.8, "EXPOSED", legend),
        notes=["a long note " * 10],
    )


def test_audit_text_fits_80_columns_groups_remedies_and_explains_the_scale() -> None:
    text = render_text(_audit())
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert text.count("sandbox-setup --headless --answers") == 1
    assert "-> audit.drift.settings, audit.drift.launcher" in text
    assert text.index("audit.drift.settings") < text.index("audit.drift.launcher")
    assert text.index("audit.drift.launcher") < text.index("audit.claude.changed")
    assert "how much of this machine the agent could reach" in text
    terminal = Terminal()
    emit(render_lines(_audit(), 80), terminal)
    assert "\x1b[" in terminal.getvalue()


def test_json_output_is_unchanged() -> None:
    report = masked_report()
    assert set(report.to_json()) == {"schema", "host", "as_user", "checks", "recommendation"}
    assert set(_audit().to_json()) == {
        "schema", "root", "config", "answers", "mode", "agent_user", "probes_as", "unsafe",
        "notes", "network", "findings", "checks", "grade", "clean",
    }  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [["--check", "--json", "identity.root"], ["--check", "identity.root"]],
    ids=["json", "text-on-a-pipe"],
)
def test_rich_is_not_imported_for_json_or_a_pipe(argv: list[str]) -> None:
    code = (
        "import sys\nfrom sandbox_setup.cli import main\n"
        f"main({argv!r})\n"
        "print('RICH', sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    ).stdout
    assert out.strip().splitlines()[-1] == "RICH []", out


def _write(target: str) -> Write:
    """A journal ``write`` entry of apply t1 (what the undo's survey reads)."""
    return Write(
        txn="t1",
        target=target,
        real=target,
        old_sha256=None,
        new_sha256="0" * 64,
        backup=None,
        old_mode=None,
        old_uid=None,
        old_gid=None,
        tmp="x.tmp",
    )


def _undo_args(root: Path) -> Any:
    import argparse

    return argparse.Namespace(root=str(root), yes=False, json=False, dry_run=False)


@pytest.mark.parametrize(("answer", "undone"), [("y\n", True), ("n\n", False), ("", False)])
def test_undo_on_a_terminal_asks_y_n(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    answer: str,
    undone: bool,
) -> None:
    import sandbox_setup.commands.undo as undo
    from sandbox_setup.commands.undo import run_undo
    from sandbox_setup.configure import outcome

    calls: list[str] = []
    entry = _write("/etc/x")
    monkeypatch.setattr(undo.history, "open_applies", lambda layout: [("t1", [entry])])
    monkeypatch.setattr(
        undo.door, "preview_steps", lambda layout, t, es, *_: [f"restore {es[0].target}"]
    )
    monkeypatch.setattr(
        undo.door,
        "undo_last",
        lambda layout, **_: calls.append("undo") or [outcome.done("restored")],
    )
    (tmp_path / "etc").mkdir()
    monkeypatch.setattr(sys, "stdin", _Tty(answer))
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert run_undo(_undo_args(tmp_path)) == 0
    printed = sys.stdout.getvalue()  # type: ignore[attr-defined]
    assert "Undo of apply t1 would:" in printed and "[y/N]" in printed
    assert calls == (["undo"] if undone else [])
    if not undone:
        assert "nothing changed" in capsys.readouterr().err


def test_undo_without_a_terminal_only_previews(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sandbox_setup.commands.undo as undo
    from sandbox_setup.commands.undo import run_undo

    monkeypatch.setattr(undo.history, "open_applies", lambda layout: [("t1", [_write("/x")])])
    monkeypatch.setattr(undo.door, "preview_steps", lambda layout, t, es, *last: ["restore it"])
    monkeypatch.setattr(
        undo.door, "undo_last", lambda layout, **_: pytest.fail("undid without --yes")
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: never read
    (tmp_path / "etc").mkdir()
    assert run_undo(_undo_args(tmp_path)) == 0
    assert sys.stdin.read() == "y\n"


def test_undo_prints_journal_and_workspace_names_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Invariant 15: a path in the journal or a file the ACL step names is printed
    escaped, in the preview and in what the undo did."""
    import sandbox_setup.commands.undo as undo
    from sandbox_setup.commands.undo import run_undo
    from sandbox_setup.configure import outcome

    evil = "/srv/project/\x1b]0;pwned\x07\x1b[2J\u202e\r"
    shown = "/srv/project/\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\r"
    monkeypatch.setattr(undo.history, "open_applies", lambda layout: [("t1", [_write(evil)])])
    monkeypatch.setattr(
        undo.door, "preview_steps", lambda layout, t, es, *_: [f"restore {es[0].target}"]
    )
    monkeypatch.setattr(
        undo.door, "undo_last", lambda layout, **_: [outcome.done(f"removed the ACL of {evil}")]
    )
    (tmp_path / "etc").mkdir()
    assert run_undo(_undo_args(tmp_path)) == 0
    args = _undo_args(tmp_path)
    args.yes = True
    assert run_undo(args) == 0
    out = capsys.readouterr()
    printed = out.out + out.err
    assert f"restore {shown}" in printed and f"removed the ACL of {shown}" in printed
    assert not [c for c in printed if (ord(c) < 0x20 and c != "\n") or c == "\u202e"]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_masked_report_is_what_a_real_masked_proc_gives() -> None:
    """The grouping keys on ``cause: KEY``, the line every cause-based verdict ends with."""
    from sandbox_setup.checks.base import Verdict
    from sandbox_setup.checks.causes import Cause

    verdict = Verdict.from_cause(Cause("proc-masked", "masked", REMEDY), "probe output")
    finding = Finding("bwrap.sandbox", "t", verdict.status, verdict.summary, verdict.detail)
    assert dataclasses.replace(finding).detail.endswith(MASKED)
    assert json.dumps(finding.to_json())


def test_the_version_is_looked_up_only_when_asked_for() -> None:
    # importlib.metadata costs ~25 ms of every start (bench/report's check row).
    code = (
        "import sys\nfrom sandbox_setup.cli import main\n"
        "main(['--check', '--json', 'identity.root'])\n"
        "print('METADATA', 'importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    ).stdout
    assert out.strip().splitlines()[-1] == "METADATA False", out
    version = subprocess.run(
        [sys.executable, "-m", "sandbox_setup", "--version"], cwd=REPO, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert version.returncode == 0 and version.stdout.startswith("sandbox-setup "), version
