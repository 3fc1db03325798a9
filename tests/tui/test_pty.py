"""The wizard on a real terminal: tmux gives it a pty (80x24), keys go in as a
person types them, the screen is read back with ``capture-pane``.

It starts, shows its help on ``?``, quits on Ctrl+C with exit 0 before anything
is applied (saying so), and leaves the terminal as it found it: the same ``stty``
settings, the alternate screen left, the cursor shown, mouse reporting off.
The tmux server runs on a socket of its own (``-L tu-...``) and is killed after.
"""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.tools import REPO, require_tool


class Tmux:
    def __init__(self, tmux: str) -> None:
        self.name = f"tu-{secrets.token_hex(4)}"
        self.argv = [tmux, "-L", self.name, "-f", "/dev/null"]

    def kill(self) -> None:
        subprocess.run([*self.argv, "kill-server"], capture_output=True, timeout=30)
        # kill-server leaves the socket file of a -L server behind.
        base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (base / self.name).unlink(missing_ok=True)

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            [*self.argv, *args], capture_output=True, text=True, timeout=30, check=True
        )
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tu")

    def flag(self, name: str) -> str:
        return self("display-message", "-p", "-t", "tu", f"#{{{name}}}").strip()

    def wait(self, what: Callable[[], bool], why: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if what():
                return
            time.sleep(0.1)
        raise AssertionError(f"{why}; the screen:\n{self.screen()}")


def test_the_wizard_starts_helps_and_quits_cleanly_on_a_real_terminal(tmp_path: Path) -> None:
    tmux = Tmux(require_tool("tmux"))
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    wizard = shlex.join([sys.executable, "-m", "sandbox_setup", "--root", str(root)])
    script = (
        # Textual draws on stderr: it stays the terminal, and so does the farewell.
        f"stty -a > {out}/before; {wizard}; echo $? > {out}/rc.tmp; "
        f"stty -a > {out}/after; mv {out}/rc.tmp {out}/rc; exec sleep 300"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    try:
        tmux(
            "new-session", "-d", "-s", "tu", "-x", "80", "-y", "24", "-c", str(REPO),
            *(arg for name, value in env.items() for arg in ("-e", f"{name}={value}")),
            script,
        )  # fmt: skip
        tmux.wait(lambda: "Start host checks" in tmux.screen(), "the welcome never showed")
        assert tmux.flag("alternate_on") == "1"  # the wizard owns the screen now
        tmux("send-keys", "-t", "tu", "?")
        tmux.wait(lambda: "Keys: welcome" in tmux.screen(), "? showed no help")
        assert "Start checks" in tmux.screen() or "Press" in tmux.screen()
        tmux("send-keys", "-t", "tu", "Escape")
        tmux.wait(lambda: "Keys: welcome" not in tmux.screen(), "Escape did not close the help")
        tmux("send-keys", "-t", "tu", "C-c")
        tmux.wait(lambda: (out / "rc").exists(), "Ctrl+C did not quit", timeout=30)
        assert (out / "rc").read_text().strip() == "0"
        assert "quit before applying; nothing was changed" in tmux.screen()
        # A sane terminal: as it was before, out of the alternate screen.
        assert (out / "after").read_text() == (out / "before").read_text()
        assert tmux.flag("alternate_on") == "0"
        assert tmux.flag("cursor_flag") == "1"
        assert tmux.flag("mouse_any_flag") == "0" and tmux.flag("mouse_sgr_flag") == "0"
        assert sorted(p.name for p in root.iterdir()) == ["etc"]  # nothing was written
    finally:
        tmux.kill()
