"""Driving the wizard in tests: an app under a temp root with fake findings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen

from sandbox_setup.checks.model import Finding
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.tui.app import SetupApp
from tests.tui.fake_findings import FakeProvider


def make_root(tmp_path: Path, workspaces: Sequence[str] = ("/srv/project",)) -> Path:
    """A target root with an /etc and the workspace directories."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True, exist_ok=True)
    for workspace in workspaces:
        (root / workspace.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return root


def make_app(root: Path, findings: Sequence[Finding], delay: float = 0.0) -> SetupApp:
    return SetupApp(InteractiveCore.for_root(root, FakeProvider(findings, delay)))


async def wait_for(pilot: Pilot[Any], screen_type: type[Screen[Any]], tries: int = 1000) -> Any:
    """Wait until ``screen_type`` is on top (workers post messages asynchronously)."""
    for _ in range(tries):
        if isinstance(pilot.app.screen, screen_type):
            await pilot.pause()
            return pilot.app.screen
        await pilot.pause(0.02)
    raise AssertionError(f"expected {screen_type.__name__}, got {type(pilot.app.screen).__name__}")


async def wait_until(pilot: Pilot[Any], predicate: Any, tries: int = 1000) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not reached")


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*("space" if ch == " " else ch for ch in text))


def make_target_root(tmp_path: Path, workspaces: Sequence[str] = ("/srv/project",)) -> Path:
    """A target root ``useradd --prefix`` can work in, with the real Claude Code
    hard-linked (no copy) at /usr/local/bin/claude."""
    import os

    from tests.tools import claude_binary

    root = make_root(tmp_path, workspaces)
    etc = root / "etc"
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (etc / "group").write_text("root:x:0:\n")
    (etc / "shadow").write_text("root:*:19000:0:99999:7:::\n")
    (etc / "gshadow").write_text("root:*::\n")
    (etc / "shadow").chmod(0o600)
    (etc / "gshadow").chmod(0o600)
    (root / "root").mkdir(mode=0o700)
    (root / "home").mkdir()
    bin_dir = root / "usr/local/bin"
    bin_dir.mkdir(parents=True)
    real = Path(os.path.realpath(claude_binary()))
    try:
        os.link(real, bin_dir / "claude")
    except OSError:  # another filesystem: fall back to a copy
        import shutil

        shutil.copy2(real, bin_dir / "claude")
    return root


def tree(root: Path, skip: Sequence[str] = ()) -> dict[str, bytes]:
    """Every regular file under ``root`` (relative path -> bytes), minus ``skip`` prefixes."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_file() and not path.is_symlink() and not rel.startswith(tuple(skip)):
            files[rel] = path.read_bytes()
    return files


def plain(renderable: Any, width: int = 200) -> str:
    """The text of a Rich renderable (a row's body, a plan part), without styles."""
    import io

    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


def screen_lines(app: Any) -> list[str]:
    """What the terminal shows now, line by line (the compositor's last frame)."""
    return [
        "".join(segment.text for segment in strip)
        for strip in app.screen._compositor.render_strips()
    ]
