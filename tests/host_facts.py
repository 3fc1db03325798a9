"""Host facts for a test's plan, made by hand: the plan reads none from the host.

:func:`plan_facts` says bwrap and socat are where Debian puts them and root may trust
them, whatever this host has (a unit test of the plan then passes where neither is
installed); the environment is the test's own (``monkeypatch.setenv`` reaches it).
"""

from __future__ import annotations

import datetime
import os
from types import MappingProxyType
from typing import Any

from sandbox_setup.configure.host_facts import HostFacts, SandboxBinary

BWRAP = SandboxBinary("bwrap", "/usr/bin/bwrap")
SOCAT = SandboxBinary("socat", "/usr/bin/socat")
NO_BWRAP = SandboxBinary("bwrap", None)


def plan_facts(**changes: Any) -> HostFacts:
    """Facts with bwrap and socat present and trusted, this test's environment and
    clock; ``changes`` replace any of them."""
    values: dict[str, Any] = {
        "bwrap": BWRAP,
        "socat": SOCAT,
        "environ": MappingProxyType(dict(os.environ)),
        "now": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    values.update(changes)
    return HostFacts(**values)
