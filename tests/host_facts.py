"""Host facts for a test's plan, made by hand: the plan reads none from the host.

:func:`plan_facts` says bwrap and socat are where Debian puts them and root may trust
them, whatever this host has (a unit test of the plan then passes where neither is
installed); the environment is the test's own (``monkeypatch.setenv`` reaches it);
Claude Code is the fake :func:`tests.core_fixtures.make_target_root` puts in
``/usr/local/bin`` (found on the PATH, trusted, the agent may run it, its version
:data:`tests.core_fixtures.CLAUDE_VERSION`); the sandbox-launch root's claude shim runs
is this installation's, trusted. A test about Claude Code's lookup hands in
:func:`claude_facts`, the edge's own lookup in its target root.
"""

from __future__ import annotations

import datetime
import os
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.claude_binary import ClaudeBinary, ClaudeLookup, look_up_claude
from sandbox_setup.configure.claude_shim import ShimLauncher
from sandbox_setup.configure.host_facts import HostFacts, SandboxBinary
from tests.core_fixtures import CLAUDE_VERSION

BWRAP = SandboxBinary("bwrap", "/usr/bin/bwrap")
SOCAT = SandboxBinary("socat", "/usr/bin/socat")
NO_BWRAP = SandboxBinary("bwrap", None)
SHIPPED = PurePosixPath("/usr/local/bin/claude")
# The target root's fake Claude Code, found on the PATH (no --claude given).
CLAUDE = ClaudeLookup(
    None, ClaudeBinary(SHIPPED, SHIPPED, CLAUDE_VERSION, private=False, trusted=True)
)

# This venv's sandbox-launch (what the shim would run), trusted.
SANDBOX_LAUNCH = ShimLauncher(Path(sys.executable).parent / "sandbox-launch")


def claude_facts(
    layout: Layout, given: PurePosixPath | None = None, environ: Mapping[str, str] | None = None
) -> ClaudeLookup:
    """Claude Code as the edge finds it in ``layout``'s target for ``given`` (the
    answers' ``claude``), on ``environ``'s PATH (None: this test's), its version run."""
    return look_up_claude(layout, given, dict(os.environ) if environ is None else environ)


def plan_facts(**changes: Any) -> HostFacts:
    """Facts with bwrap and socat present and trusted, this test's environment and
    clock, the target root's fake Claude Code; ``changes`` replace any of them."""
    values: dict[str, Any] = {
        "bwrap": BWRAP,
        "socat": SOCAT,
        "environ": MappingProxyType(dict(os.environ)),
        "now": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "claude": CLAUDE,
        "sandbox_launch": SANDBOX_LAUNCH,
    }
    values.update(changes)
    return HostFacts(**values)
