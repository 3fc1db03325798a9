"""Claude Code project files in a workspace, judged for what root's ``claude`` would
run or allow when the operator starts it there.

Claude Code reads ``.claude/settings.json`` and ``.claude/settings.local.json`` of
the directory it starts in, and ``.mcp.json`` beside them. Once root has trusted
the folder (or on ``--dangerously-skip-permissions``), hooks, helpers, the status
line, the environment and approved MCP servers of those files run as root. The
agent can write all three. Each hit names the setting by its JSON path
(:attr:`ConfigHit.locator`) so it can be removed while the rest is kept.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable

from sandbox_setup.policy.config_hit import ConfigHit

# Settings whose string value is a command or script Claude Code runs.
_HELPERS = {
    "apiKeyHelper": "Claude Code runs this script for an API key",
    "proxyAuthHelper": "Claude Code runs this command for proxy credentials",
    "awsCredentialExport": "Claude Code runs this script for AWS credentials",
    "awsAuthRefresh": "Claude Code runs this script to refresh AWS login",
    "gcpAuthRefresh": "Claude Code runs this command to refresh GCP login",
    "otelHeadersHelper": "Claude Code runs this script for telemetry headers",
    "policyHelper": "Claude Code runs this program to compute settings",
}
# Settings holding {"type": "command", "command": ...}.
_COMMAND_OBJECTS = {
    "statusLine": "Claude Code runs this command to draw its status line",
    "subagentStatusLine": "Claude Code runs this command to draw subagent status lines",
    "fileSuggestion": "Claude Code runs this command for @-mention file suggestions",
}
_WIDE_MODES = ("bypassPermissions", "acceptEdits", "auto", "dontAsk")


def _short(value: object, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _hook_commands(groups: object) -> list[str]:
    found: list[str] = []
    if isinstance(groups, list):
        for group in groups:
            hooks = group.get("hooks") if isinstance(group, dict) else None
            for hook in hooks if isinstance(hooks, list) else []:
                if isinstance(hook, dict):
                    found.append(str(hook.get("command") or hook.get("url") or hook))
    elif groups:
        found.append(_short(groups))
    return found


def judge_claude_settings(data: object) -> list[ConfigHit]:
    """What a Claude Code settings document makes root's ``claude`` run or allow.

    ``data`` is the parsed JSON; anything but an object is a hit of its own,
    because Claude Code's reading of it cannot be vouched for.
    """
    if not isinstance(data, dict):
        return [
            ConfigHit("settings", _short(data), "not a JSON object", kind="unreadable", locator=())
        ]
    hits: list[ConfigHit] = []
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            commands = _hook_commands(groups)
            if commands:
                hits.append(
                    ConfigHit(
                        f"hooks.{event}",
                        _short("; ".join(commands)),
                        f"Claude Code runs these hooks as root on {event}",
                        locator=("hooks", event),
                    )
                )
    elif hooks:
        hits.append(
            ConfigHit("hooks", _short(hooks), "hooks Claude Code may run", locator=("hooks",))
        )
    for key, why in _HELPERS.items():
        if data.get(key):
            hits.append(ConfigHit(key, _short(data[key]), why, locator=(key,)))
    for key, why in _COMMAND_OBJECTS.items():
        if data.get(key):
            shown = (
                data[key].get("command", data[key]) if isinstance(data[key], dict) else data[key]
            )
            hits.append(ConfigHit(f"{key}.command", _short(shown), why, locator=(key,)))
    env = data.get("env")
    if isinstance(env, dict):
        for name, value in env.items():
            hits.append(
                ConfigHit(
                    f"env.{name}",
                    _short(value),
                    "Claude Code sets this for root's session and every command it runs "
                    "(NODE_OPTIONS, PATH, LD_PRELOAD... run code)",
                    locator=("env", name),
                )
            )
    elif env:
        hits.append(
            ConfigHit("env", _short(env), "environment for root's session", locator=("env",))
        )
    hits += _judge_approvals(data)
    return hits


def _judge_approvals(data: dict[str, object]) -> list[ConfigHit]:
    hits = []
    if data.get("enableAllProjectMcpServers") is True:
        hits.append(
            ConfigHit(
                "enableAllProjectMcpServers",
                "true",
                "starts every MCP server of .mcp.json (commands) without asking",
                locator=("enableAllProjectMcpServers",),
            )
        )
    if data.get("enabledMcpjsonServers"):
        hits.append(
            ConfigHit(
                "enabledMcpjsonServers",
                _short(data["enabledMcpjsonServers"]),
                "starts these MCP servers of .mcp.json (commands) without asking",
                locator=("enabledMcpjsonServers",),
            )
        )
    plugins = data.get("enabledPlugins")
    if isinstance(plugins, dict) and any(plugins.values()):
        hits.append(
            ConfigHit(
                "enabledPlugins",
                _short(sorted(k for k, v in plugins.items() if v)),
                "turns on plugins, which bring their own hooks and MCP servers",
                locator=("enabledPlugins",),
            )
        )
    if data.get("extraKnownMarketplaces"):
        hits.append(
            ConfigHit(
                "extraKnownMarketplaces",
                _short(data["extraKnownMarketplaces"]),
                "adds plugin marketplaces root's Claude Code installs plugins from",
                locator=("extraKnownMarketplaces",),
            )
        )
    permissions = data.get("permissions")
    if isinstance(permissions, dict):
        if permissions.get("defaultMode") in _WIDE_MODES:
            hits.append(
                ConfigHit(
                    "permissions.defaultMode",
                    str(permissions["defaultMode"]),
                    "root's Claude Code stops asking before it acts",
                    kind="widens",
                    locator=("permissions", "defaultMode"),
                )
            )
        for key, why in (
            ("allow", "root's Claude Code runs these without asking"),
            ("additionalDirectories", "root's Claude Code may work in these directories too"),
        ):
            if permissions.get(key):
                hits.append(
                    ConfigHit(
                        f"permissions.{key}",
                        _short(permissions[key]),
                        why,
                        kind="widens",
                        locator=("permissions", key),
                    )
                )
    if data.get("skipDangerousModePermissionPrompt"):
        hits.append(
            ConfigHit(
                "skipDangerousModePermissionPrompt",
                "true",
                "skips the prompt before root's Claude Code bypasses permissions",
                kind="widens",
                locator=("skipDangerousModePermissionPrompt",),
            )
        )
    if "sandbox" in data:
        hits.append(
            ConfigHit(
                "sandbox",
                _short(data["sandbox"]),
                "changes root's Claude Code sandbox (it can turn it off)",
                kind="widens",
                locator=("sandbox",),
            )
        )
    return hits


def judge_mcp_json(data: object) -> list[ConfigHit]:
    """The servers of a project ``.mcp.json``: commands root's Claude Code would
    start (once approved, or at once with ``enableAllProjectMcpServers``)."""
    if not isinstance(data, dict):
        return [ConfigHit("mcp", _short(data), "not a JSON object", kind="unreadable")]
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        if servers:
            return [
                ConfigHit("mcpServers", _short(servers), "MCP servers", locator=("mcpServers",))
            ]
        return []
    hits = []
    for name, server in servers.items():
        spec = server if isinstance(server, dict) else {}
        if spec.get("command"):
            args = spec.get("args")
            shown = " ".join(map(str, [spec["command"], *(args if isinstance(args, list) else [])]))
            why = "root's Claude Code runs this command as an MCP server"
            kind = "runs"
        elif spec.get("headersHelper"):
            shown, why, kind = (
                str(spec["headersHelper"]),
                "Claude Code runs this for headers",
                "runs",
            )
        else:
            shown = str(spec.get("url", server))
            why = "root's Claude Code connects to this server and acts on what it says"
            kind = "connects"
        hits.append(
            ConfigHit(
                f"mcpServers.{name}", _short(shown), why, kind=kind, locator=("mcpServers", name)
            )
        )
    return hits


def without_settings(data: object, hits: Iterable[ConfigHit]) -> object:
    """A copy of the JSON ``data`` without the settings of ``hits`` (their locators);
    everything else is kept as it was."""
    out = copy.deepcopy(data)
    for hit in hits:
        node = out
        path = hit.locator
        if not path:
            continue
        for step in path[:-1]:
            node = node.get(step) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return out
