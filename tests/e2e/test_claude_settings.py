"""The settings sandbox-setup writes are accepted by the real Claude Code.

``claude doctor`` (Claude Code from npm) prints nothing without a terminal, so it
runs under a pseudo-terminal with ``HOME`` at a temp home holding the settings
the real apply wrote; its report must have no "Invalid settings" section and no
"did not load" line. The same check run on a deliberately broken file must find
the problem, which proves it can fail. Managed settings (the default scope of
sandbox and user modes) get the same check from a copy in the temp home.
"""

from __future__ import annotations

import codecs
import contextlib
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

_CONTROL = re.compile(
    r"\x1b\[(?P<params>[0-9;?>=<]*)(?P<final>[@-~])"  # CSI: moves, erases, colours
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, links
    r"|\x1b(?P<esc>[78=>()][0-9A-Za-z]?)"  # save/restore cursor, keypad, charsets
    r"|(?P<c0>[\r\n\b\t])"
)
# The terminal claude doctor draws on: wide enough that no report line wraps (2.1.332
# prints its glob warning as one long line), tall enough that its renderer (2.1.197's
# redraws only what changed, with cursor moves) never scrolls or clears the screen.
COLUMNS, ROWS = 1000, 500
# 2.1.197's report, read in its binary: the "Diagnostics" frame is drawn only once the
# installation checks are done, and that same frame holds "Installation warnings" and
# "Invalid settings" above its closing line; what comes later (updates, background
# server, Remote Control) never touches them. 2.1.332 prints its report and exits.
HEADERS = ("Diagnostics", "Claude Code doctor")  # 2.1.2xx, 2.1.332
CLOSING = "to close"


class Screen:
    """What a terminal shows after the bytes a program wrote: printed text at the
    cursor, and the controls Claude's renderer uses (CR, LF, cursor up/down/forward/
    back/column/position, erase in line and display, save/restore); colours and modes
    are ignored. Reading the screen, not the stream, is what makes the text the same
    whatever the timing: a redraw that rewrites only the changed cells of a line
    leaves the whole line on the screen, never a fragment in the text."""

    def __init__(self, columns: int = COLUMNS) -> None:
        self.columns = columns
        self.rows: list[list[str]] = [[]]
        self.row = self.col = 0
        self.saved = (0, 0)

    def _line(self) -> list[str]:
        while len(self.rows) <= self.row:
            self.rows.append([])
        return self.rows[self.row]

    def _put(self, char: str) -> None:
        if self.col >= self.columns:  # autowrap
            self.row, self.col = self.row + 1, 0
        line = self._line()
        line.extend(" " * (self.col + 1 - len(line)))
        line[self.col] = char
        self.col += 1

    def _csi(self, params: str, final: str) -> None:
        numbers = [int(p) if p.isdigit() else 0 for p in params.lstrip("?>=<").split(";")]
        n = max(numbers[0], 1)
        if final == "A":
            self.row = max(self.row - n, 0)
        elif final in "BE":
            self.row += n
            self.col = 0 if final == "E" else self.col
        elif final == "C":
            self.col += n
        elif final == "D":
            self.col = max(self.col - n, 0)
        elif final == "G":
            self.col = n - 1
        elif final in "Hf":
            self.row = max(numbers[0], 1) - 1
            self.col = max(numbers[1] if len(numbers) > 1 else 1, 1) - 1
        elif final == "K":
            line = self._line()
            if numbers[0] == 0:
                del line[self.col :]
            elif numbers[0] == 1:
                line[: self.col + 1] = " " * min(self.col + 1, len(line))
            else:
                line.clear()
        elif final == "J":
            if numbers[0] == 0:
                del self._line()[self.col :]
                del self.rows[self.row + 1 :]
            elif numbers[0] == 1:
                for index in range(min(self.row, len(self.rows))):
                    self.rows[index] = []
            else:
                self.rows = [[]]
        # m (colours), h/l (modes), others: nothing on the screen changes

    def feed(self, text: str) -> None:
        at = 0
        for match in _CONTROL.finditer(text):
            for char in text[at : match.start()]:
                self._put(char)
            at = match.end()
            if match["final"] is not None:
                self._csi(match["params"], match["final"])
            elif match["esc"] == "7":
                self.saved = (self.row, self.col)
            elif match["esc"] == "8":
                self.row, self.col = self.saved
            elif match["c0"] == "\r":
                self.col = 0
            elif match["c0"] == "\n":
                self.row += 1
            elif match["c0"] == "\b":
                self.col = max(self.col - 1, 0)
            elif match["c0"] == "\t":
                self.col = (self.col // 8 + 1) * 8
        for char in text[at:]:
            self._put(char)

    def text(self) -> str:
        return "\n".join(re.sub(r"[ \t]+", " ", "".join(row)).rstrip() for row in self.rows)


def screen_text(raw: bytes) -> str:
    screen = Screen()
    screen.feed(raw.decode("utf-8", errors="replace"))
    return screen.text()


def report_complete(text: str) -> bool:
    """Does the screen hold 2.1.197's whole settings report (see :data:`HEADERS`)?"""
    header = max(text.find(h) for h in HEADERS)
    return header >= 0 and text.find(CLOSING, header) >= 0


def claude_doctor(home: Path, timeout: float = 240.0) -> str:
    """``claude doctor``'s report as the screen shows it, run on a pty with
    HOME=home: read until the program exits (2.1.332) or the screen holds the whole
    settings report (2.1.197, which then waits for a key), within ``timeout`` seconds
    however loaded the machine is; past that, the test fails showing the screen."""
    claude = claude_binary()
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "xterm-256color"}
    pid, fd = pty.fork()
    if pid == 0:  # child: exec only, never return into pytest
        try:
            os.execve(claude, [claude, "doctor"], env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    screen, decoder = Screen(), codecs.getincrementaldecoder("utf-8")(errors="replace")
    deadline = time.monotonic() + timeout
    try:
        while not report_complete(screen.text()):
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"claude doctor's report not complete in {timeout:.0f}s:\n"
                            f"{screen.text()[-3000:]}")  # fmt: skip
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the program exited and the pty closed
                chunk = b""
            if not chunk:
                break
            screen.feed(decoder.decode(chunk))
    finally:
        # the program and anything it started (the pty made it a session leader)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    text = screen.text()
    assert any(header in text for header in HEADERS), (
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


@pytest.mark.no_claude
def test_the_screen_holds_whole_lines_a_redraw_rewrote_in_part() -> None:
    """2.1.197's renderer rewrites only the cells that changed (cursor up, column, a
    few characters; these bytes are its doctor's, recorded): the screen shows the whole
    line, where the byte stream holds a fragment ("n to cla"), and erases clear."""
    raw = (
        b"\x1b[3G\xe2\x94\x9c\x1b[5GNot\x1b[9Gsigned\x1b[16Gin\x1b[19Gto\x1b[22Gclaude.ai\r\r\n"
        b"\x1b[3GEnter\x1b[9Gto\x1b[12Gclose\r\r\n"
        b"\r\x1b[2C\x1b[2A\xe2\x94\x94\x1b[5GNot\x1b[9Gsigned\x1b[17Gn to cla\x1b[26Gde.ai\x1b[K"
        b"\r\r\n\r\r\n\x1b[1A\x1b[3G\x1b[38;5;246mEnter to close\x1b[39m\x1b[J"
    )
    text = screen_text(raw)
    assert text.splitlines() == [" └ Not signed in to claude.ai", " Enter to close"], text
    assert report_complete("Diagnostics ✔\n├ Found 1 pattern(s)\n Enter to close")
    assert not report_complete("Enter to close\nDiagnostics")  # the closing line below it


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
