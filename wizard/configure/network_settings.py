"""The network keys of Claude's settings: its inner sandbox must use the launcher's proxy.

Claude Code's own Bash sandbox (sandbox-runtime) starts an HTTP and a SOCKS proxy of
its own unless ``sandbox.network.httpProxyPort`` and ``socksProxyPort`` name one; a
proxy of its own inside our sandbox would apply *its* rules, not ours. So where the
launcher gives the sandbox the allowlist network and the inner sandbox is on, both
ports are the launcher's bridge, :data:`~wizard.policy.network.SANDBOX_PROXY_PORT`
(one port for both: the proxy tells HTTP from SOCKS5 by the first byte).

Owned keys: ``sandbox.network.httpProxyPort`` and ``sandbox.network.socksProxyPort``,
set to that port where wanted; elsewhere removed when they hold that port (this tool
wrote them: on the host's network, 127.0.0.1:3128 is nobody's proxy of ours), kept when
the user set another value. An emptied ``sandbox.network`` table is removed again.

:func:`merge_network_settings` runs over the bytes :func:`~wizard.configure.settings.
merge_settings` produced (same JSON layout), and returns them unchanged when nothing
changes, so an apply that changes nothing still rewrites nothing.
"""

from __future__ import annotations

import json
from typing import Any

from wizard.base.errors import InputError
from wizard.configure.settings import parse_settings
from wizard.policy.network import SANDBOX_PROXY_PORT

PORT_KEYS = ("httpProxyPort", "socksProxyPort")


def network_settings(mode: str, network: str | None, inner_sandbox: str) -> dict[str, Any]:
    """The ``sandbox.network`` keys to set ({} when none are wanted)."""
    if mode == "sandbox" and network == "allowlist" and inner_sandbox != "off":
        return {"network": dict.fromkeys(PORT_KEYS, SANDBOX_PROXY_PORT)}
    return {}


def merge_network_settings(
    current: bytes, source: str, mode: str, network: str | None, inner_sandbox: str
) -> bytes:
    """``current`` (a settings file) with the owned network keys as they must be."""
    original = parse_settings(current, source)
    merged = json.loads(json.dumps(original))
    sandbox = merged.get("sandbox")
    if not isinstance(sandbox, dict):
        return current  # merge_settings made it an object; anything else was refused there
    wanted = network_settings(mode, network, inner_sandbox).get("network", {})
    table = sandbox.get("network")
    if table is not None and not isinstance(table, dict):
        raise InputError(f"{source}: key 'sandbox.network' must be an object; left untouched")
    if wanted:
        table = sandbox.setdefault("network", {})
        table.update(wanted)
    elif table is not None:
        for key in PORT_KEYS:
            if table.get(key) == SANDBOX_PROXY_PORT:
                del table[key]
        if not table and original["sandbox"].get("network"):
            del sandbox["network"]
    if merged == original:
        return current
    return (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
