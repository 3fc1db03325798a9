"""The settings sandbox-setup writes are accepted by the real Claude Code.

``claude doctor`` (Claude Code from npm) prints nothing without a terminal, so it
runs under a pseudo-terminal with ``HOME`` at a temp home holding the settings
the real apply wrote; its report must have no "Invalid settings" section and no
"did not load" line. The same check run on a deliberately broken file must find
the problem, which proves it can fail. Managed settings (the default scope of
sandbox and user modes) get the same check from a copy in the temp home.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import termios
import time
from pathlib import Path

import pytest

from tests.core_fixtures import make_target_root, run_cli
from tests.tools import claude_binary, require_root, require_tool

pytestmark = pytest.mark.e2e

_MOVES = re.compile(r"\x1b\[\d*[GC]")  # cursor moves the TUI uses between words
_ESCAPES = re.compile(r"\x1b\[[0-9;?>=]*[A-Za-z]|\x1b[78=>]|\x1b\][^\x07]*\x07")


def screen_text(raw: bytes) -> str:
    text = _MOVES.sub(" ", raw.decode("utf-8", errors="replace"))
    text = _ESCAPES.sub("", text).replace("\r", "")
    return re.sub(r"[ \t]+", " ", text)


def claude_doctor(home: Path, timeout: float = 120.0) -> str:
    """``claude doctor``'s screen text, run on a pty with HOME=home."""
    claude = claude_binary()
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "xterm-256color"}
    pid, fd = pty.fork()
    if pid == 0:  # child: exec only, never return into pytest
        try:
            os.execve(claude, [claude, "doctor"], env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 220, 0, 0))
    raw, started, closing = b"", time.monotonic(), None
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                raw += chunk
            # The report ends with "Enter to close"; give the checks a moment to finish.
            if closing is None and "to close" in screen_text(raw):
                closing = time.monotonic()
            if closing is not None and time.monotonic() - closing > 3:
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    text = screen_text(raw)
    # "Diagnostics" heads the report up to 2.1.2xx; 2.1.332 heads it "Claude Code doctor".
    assert "Diagnostics" in text or "Claude Code doctor" in text, (
        f"claude doctor printed no report: {text[-2000:]}"
    )
    return text


def settings_problems(text: str) -> list[str]:
    """Lines of doctor's report that say the settings were rejected."""
    lines = text.splitlines()
    problems = [ln for ln in lines if "did not load" in ln]
    for i, line in enumerate(lines):
        if "Invalid settings" in line:
            problems += lines[i : i + 6]
    return problems


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    require_tool("bwrap")
    return make_target_root(tmp_path / "root")


@pytest.mark.parametrize("inner", ["strong", "weak", "off"])
def test_written_settings_pass_claude_doctor(root: Path, inner: str) -> None:
    existing = root / "root/.claude/settings.json"
    existing.parent.mkdir()
    existing.write_text('{"model": "sonnet", "permissions": {"allow": ["Bash(ls:*)"]}}\n')
    proc = run_cli(
        "--headless", "--root", str(root), "--yes",
        "--mode", "unsafe", "--accept-unsafe-root", "--inner-sandbox", inner,
    )  # fmt: skip
    if proc.returncode == 3 and "was not verified" in proc.stderr:
        pytest.skip(f"inner sandbox {inner} not verified on this host: {proc.stderr}")
    assert proc.returncode == 0, proc.stderr
    assert '"deny"' in existing.read_text() and '"sandbox"' in existing.read_text()
    text = claude_doctor(root / "root")
    assert settings_problems(text) == []


@pytest.mark.parametrize(
    "broken",
    [
        '{"sandbox": {"enabled": "yes"}}\n',  # valid JSON, wrong type
        '{"permissions": {"deny": "Read(~/.ssh/**)"}}\n',
        '{"sandbox": {"enabled": true},\n',  # not JSON at all
    ],
)
def test_the_same_check_fails_on_a_broken_settings_file(tmp_path: Path, broken: str) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude/settings.json").write_text(broken)
    problems = settings_problems(claude_doctor(home))
    assert problems, "claude doctor accepted a broken settings file: the check proves nothing"
    assert any("settings.json" in line for line in problems)


def managed_settings_home(root: Path, home: Path, *args: str) -> Path:
    """Apply ``args`` (managed scope, the default of sandbox/user modes) and put the
    managed-settings.json it wrote where Claude reads settings: ``home/.claude``.
    Claude cannot be pointed at another /etc/claude-code, so this is the nearest
    real check of the managed file's content."""
    managed = root / "etc/claude-code/managed-settings.json"
    managed.parent.mkdir(parents=True)
    managed.write_text('{"model": "opus", "env": {"FOO": "1"}}\n')
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(managed.read_text())
    assert data["model"] == "opus" and "sandbox" in data and "deny" in data["permissions"]
    (home / ".claude").mkdir(parents=True)
    shutil.copy(managed, home / ".claude/settings.json")
    return home / ".claude/settings.json"


@pytest.mark.parametrize(
    "args",
    [("--mode", "sandbox", "--workspace", "/srv/project"), ("--mode", "user")],
    ids=["sandbox", "user"],
)
def test_written_managed_settings_pass_claude_doctor(
    tmp_path: Path, root: Path, args: tuple[str, ...]
) -> None:
    require_tool("useradd")
    managed_settings_home(root, tmp_path / "home", *args)
    assert settings_problems(claude_doctor(tmp_path / "home")) == []


def test_the_managed_check_fails_when_the_managed_file_is_broken(
    tmp_path: Path, root: Path
) -> None:
    require_tool("useradd")
    copy = managed_settings_home(root, tmp_path / "home", "--mode", "user")
    data = json.loads(copy.read_text())
    data["sandbox"]["enabled"] = "yes"  # one key the tool owns, with the wrong type
    copy.write_text(json.dumps(data, indent=2))
    problems = settings_problems(claude_doctor(tmp_path / "home"))
    assert any("settings.json" in line for line in problems), problems


@pytest.mark.parametrize(
    "existing",
    [
        b'{"model": "sonnet", "myNote": 1e400, "ratio": -0.0, "one": 1.0}\n',
        b'{"model": "sonnet", "big": ' + b"9" * 5000 + b"}\n",
        b'{"model": "sonnet", "note": "\\ud800 lone"}\n',
        b'\xef\xbb\xbf{"model": "sonnet"}\n',
    ],
    ids=["1e400", "5000-digit-int", "lone-surrogate", "bom"],
)
def test_settings_json_edge_cases_survive_the_merge_for_claude(root: Path, existing: bytes) -> None:
    """Valid JSON that Python's json would rewrite into a file Claude ignores (issue 15
    item 2): after the merge, claude doctor still loads it, and the odd tokens stay."""
    settings = root / "root/.claude/settings.json"
    settings.parent.mkdir()
    settings.write_bytes(existing)
    proc = run_cli(
        "--headless", "--root", str(root), "--yes", "--mode", "unsafe", "--accept-unsafe-root",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    written = settings.read_bytes()
    assert b'"sandbox"' in written
    for token in (b"1e400", b"-0.0", b"1.0", b"9" * 5000, b"\\ud800", b"\xef\xbb\xbf"):
        if token in existing:
            assert token in written, token
    assert settings_problems(claude_doctor(root / "root")) == []


# What each release says about glob patterns in Read/Edit rules on Linux (issue 25).
GLOB_WARNINGS = (
    "Glob patterns in sandbox permission rules are not fully supported on Linux",  # 2.1.197
    "Glob patterns in sandbox settings are not fully supported on Linux and WSL",  # 2.1.332
)
GLOB_RULES = ("Read(./.env.*)", "Read(**/.env)", "Read(**/.env.*)")


def test_claude_doctor_names_the_glob_credential_rules_an_apply_writes(root: Path) -> None:
    """Both releases warn that the glob patterns of three credential rules may be
    ignored by the Linux sandbox (the others are exact paths or end in ``/**``, which
    it takes whole). What Bash can read despite the warning is measured in
    ``test_claude_managed_settings.py``."""
    proc = run_cli(
        "--headless", "--root", str(root), "--yes",
        "--mode", "unsafe", "--accept-unsafe-root", "--inner-sandbox", "strong",
    )  # fmt: skip
    if proc.returncode == 3 and "was not verified" in proc.stderr:
        pytest.skip(f"inner sandbox strong not verified on this host: {proc.stderr}")
    assert proc.returncode == 0, proc.stderr
    text = claude_doctor(root / "root")
    assert any(warning in text for warning in GLOB_WARNINGS), text[-3000:]
    found = re.search(r"Found (\d+) pattern\(s\): ([^\n]*)", text)
    assert found is not None, text[-3000:]
    assert int(found[1]) == len(GLOB_RULES), found[0]
    assert all(rule in found[2] for rule in GLOB_RULES), found[0]
