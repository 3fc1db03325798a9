"""The sandbox's release gate, run by the real /bin/sh: only the exact token releases.

EOF (the launcher died or failed before verification passed), a wrong token or
a bad fd number must each leave the command unstarted.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from sandbox_setup.launcher.command import GATE_FD, GATE_TOKEN, gate_argv


def _run_gate(tmp_path: Path, written: bytes | None, fd_text: str = "7") -> tuple[int, str]:
    """Run the gate with ``written`` on its pipe (None: EOF); the command touches a marker."""
    marker = tmp_path / "released"
    # The pipe arrives as stdin and a wrapper moves it to fd 7, as the launcher
    # places it below 10; this process's own fds stay untouched.
    wrapper = ["/bin/sh", "-c", 'exec 7<&0 0</dev/null; exec "$@"', "wrapper"]
    gate = [fd_text if a == GATE_FD else a for a in gate_argv()]
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb", buffering=0) as pipe:
        proc = subprocess.Popen(
            [*wrapper, *gate, "/usr/bin/touch", str(marker)],
            stdin=read_end,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(read_end)
        if written is not None:
            # A gate that refuses early may have closed the pipe already.
            with contextlib.suppress(BrokenPipeError):
                pipe.write(written)
                pipe.flush()
    _, stderr = proc.communicate(timeout=10)
    return proc.returncode, "RELEASED" if marker.exists() else stderr


def test_the_exact_token_releases(tmp_path: Path) -> None:
    assert _run_gate(tmp_path, f"{GATE_TOKEN}\n".encode()) == (0, "RELEASED")


@pytest.mark.parametrize(
    "written",
    [
        None,
        b"",
        b"1",
        f"{GATE_TOKEN}x\n".encode(),
        f"x{GATE_TOKEN}\n".encode(),
        GATE_TOKEN.encode(),
    ],
)
def test_eof_or_anything_else_refuses(tmp_path: Path, written: bytes | None) -> None:
    code, stderr = _run_gate(tmp_path, written)
    assert code == 126
    assert "not released; Claude Code was not started" in stderr


@pytest.mark.parametrize("fd_text", ["12", "0", "x", "7;touch /tmp/gate-injected"])
def test_a_bad_fd_number_refuses(tmp_path: Path, fd_text: str) -> None:
    code, stderr = _run_gate(tmp_path, f"{GATE_TOKEN}\n".encode(), fd_text)
    assert code == 126 and stderr != "RELEASED"
