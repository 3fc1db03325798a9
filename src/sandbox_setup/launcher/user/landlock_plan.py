"""User mode's Landlock plan, launcher side: what the session's helper applies, and
its argv (the placeholders the session runner fills in).

The walls and trees are the policy's (:mod:`sandbox_setup.policy.landlock`); the helper
that applies them to itself before exec'ing the session is
:mod:`sandbox_setup.launcher.user.landlock_exec`; the gate that verifies it before Claude is
released is :mod:`sandbox_setup.launcher.user.landlock_gate`. Apart from the gate so that
what builds every launch's command (:mod:`sandbox_setup.launcher.command`) does not
import the gate's canaries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.netwall import UserNetworkWall
from sandbox_setup.policy.network import user_network_wall

if TYPE_CHECKING:
    from sandbox_setup.policy.landlock import Walls

STATUS_FD = "{landlock-status-fd}"
GATE_FD = "{landlock-gate-fd}"
PROXY_PORT = "{proxy-port}"
BASE_URL_PORT = "{base-url-port}"
# The helper's script (helper_source(), some 300 lines) stands in argv as this until
# the session starts: --dry-run and the golden files show the command, not the text.
HELPER = "{landlock-helper}"


@dataclass(frozen=True, slots=True)
class LandlockPlan:
    """What the session's helper applies (and the runner verifies), and the session's
    network: its own namespace and proxy. ``walls`` may be all off (Landlock off, or
    none on this kernel) while ``netns`` holds: the namespace does not depend on
    Landlock (docs/design.md invariant 16); then no helper runs and nothing is verified."""

    walls: Walls
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    connect: tuple[str, ...] = ()  # ports; PROXY_PORT stands for the session proxy's
    # ports that may be bound (policy.landlock.bridge_ports: only in a namespace of its own)
    bind: tuple[str, ...] = ()
    proxy: bool = False  # a user-mode egress proxy runs for the session
    python: str = "/usr/bin/python3"  # the trusted interpreter that runs the helper
    base_url_port: int | None = None  # a passed loopback ANTHROPIC_BASE_URL's (not shown)
    # The session runs in a network namespace of its own (root may make one here), its
    # proxy listening inside at SANDBOX_PROXY_PORT; False: Landlock's ports are the wall
    # where ``walls.network``, else none (``netns_why`` says why). Implies ``proxy``.
    netns: bool = False
    netns_why: str = ""

    @property
    def wall(self) -> UserNetworkWall:
        return user_network_wall(self.walls.network and self.proxy, self.netns)


def helper_source() -> str:
    """The helper as one script for ``python -I -S -c``: the binding, then the helper.

    Given as text, not imported from the launcher's install: the agent runs it, and
    may not read a package that lives in root's home (nor a venv's interpreter there).
    """
    here = Path(__file__).resolve().parent
    binding = (here.parents[1] / "base" / "landlock.py").read_text()
    helper = (here / "landlock_exec.py").read_text()
    drop = ("from __future__ import annotations", "from sandbox_setup.base.landlock import")
    kept = [line for line in helper.splitlines() if not line.startswith(drop)]
    return binding + "\n" + "\n".join(kept) + "\n"


def helper_argv(plan: LandlockPlan) -> list[str]:
    """``python3 -I -S -c HELPER OPTIONS --``: the session's argv goes after it."""
    argv = [plan.python, "-I", "-S", "-c", HELPER]
    argv += ["--status-fd", STATUS_FD, "--gate-fd", GATE_FD]
    if plan.walls.files:
        argv.append("--files")
        for path in plan.read:
            argv += ["--read", path]
        for path in plan.write:
            argv += ["--write", path]
    if plan.walls.network:
        argv.append("--network")
        for port in plan.connect:
            argv += ["--connect", port]
        for port in plan.bind:
            argv += ["--bind", port]
    if plan.walls.scope:
        argv.append("--scope")
    return [*argv, "--"]


def substitute(values: Sequence[str], table: Mapping[str, str]) -> list[str]:
    """``values`` with the placeholders of ``table`` replaced; :data:`HELPER`, an
    argument of its own, becomes :func:`helper_source`."""
    out = []
    for value in values:
        if value == HELPER:
            out.append(helper_source())
            continue
        for key, real in table.items():
            value = value.replace(key, real)
        out.append(value)
    return out
