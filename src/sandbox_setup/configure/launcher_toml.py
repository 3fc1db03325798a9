"""Writing ``launcher.toml`` (its format: :mod:`sandbox_setup.base.launcher_config`, which
the launcher reads): the text for a :class:`LauncherConfig`, merged into the file that is
there so the operator's comments and the keys the tool does not own survive.

tomlkit is imported where a file is written, not when this module loads: the plan, the
TUI and the commands import it on their way, and their first paint need not pay for it.
"""

from __future__ import annotations

from typing import Any

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.launcher_config import LauncherConfig

__all__ = [
    "HEADER",
    "UPGRADABLE_SCHEMAS",
    "check_upgradable",
    "render_launcher_config",
    "update_array",
]

# The schemas an apply can upgrade in place (a file without a ``schema`` key counts
# as older still). Anything else was written by a version this one does not know:
# rewriting it as schema 1 would keep settings it cannot read and claim they are 1.
UPGRADABLE_SCHEMAS = (1,)

HEADER = (
    "# sandbox-setup launcher configuration, read by sandbox-launch.\n"
    "# Written by sandbox-setup; your comments and extra keys are kept on rewrite.\n"
    "# It must stay owned by you or root and not group/world-writable.\n"
)


def check_upgradable(data: dict[str, Any], source: str) -> None:
    """Refuse (InputError naming ``source``) an existing config of a schema this
    version cannot upgrade; see :data:`UPGRADABLE_SCHEMAS`."""
    if "schema" not in data:
        return
    schema = data["schema"]
    if type(schema) is not int or schema not in UPGRADABLE_SCHEMAS:
        raise InputError(
            f"{source}: key 'schema' is {schema!r}: a schema this version does not know "
            f"(it reads and upgrades schema {', '.join(map(str, UPGRADABLE_SCHEMAS))}); "
            "written by another version of sandbox-setup? Use that version, or move the "
            "file away and apply again (it was left untouched)"
        )


def update_array(table: Any, key: str, values: list[str]) -> None:
    """Set ``table[key]`` to ``values``, changing an existing tomlkit array in place:
    items that stay keep their comments (``"/srv/ws", # the main one``) and the
    array its layout. Only when the items that stay changed order is it rebuilt."""
    import tomlkit.items  # why: tomlkit only where a file is written, not when plan loads

    current = table.get(key)
    if not isinstance(current, tomlkit.items.Array) or any(
        not isinstance(item, str) for item in current
    ):
        table[key] = values
        return
    if list(current) == values:
        return
    seen: set[str] = set()
    for index in reversed(range(len(current))):
        item = str(current[index])
        if item not in values or item in seen:
            del current[index]
        seen.add(item)
    kept = [str(item) for item in current]
    if kept != [v for v in values if v in kept]:
        table[key] = _reordered(current, values)
        return
    for index, value in enumerate(values):
        if index >= len(current) or str(current[index]) != value:
            current.insert(index, value)


def _reordered(current: Any, values: list[str]) -> Any:
    """A multi-line array of ``values`` carrying each kept item's comments along
    (tomlkit keeps them in the array's item groups): the one after it on its line, and
    the own-line comments above it, which describe it and move with it; comments after
    the last item stay last. A plain list when the comments cannot be read (another
    tomlkit layout)."""
    import tomlkit  # why: tomlkit only where a file is written, not when plan loads
    import tomlkit.items

    inline: dict[str, str] = {}
    above: dict[str, list[str]] = {}
    pending: list[str] = []
    try:
        for group in current._value:
            text = group.comment.as_string().strip().lstrip("#").strip() if group.comment else None
            if group.value is None or isinstance(group.value, tomlkit.items.Null):
                if text is not None:
                    pending.append(text)
                continue
            above.setdefault(str(group.value), []).extend(pending)
            pending = []
            if text is not None:
                inline[str(group.value)] = text
    except AttributeError:
        return values
    if not inline and not pending and not any(above.values()):
        return values
    array = tomlkit.array()
    for value in values:
        for note in above.get(value, []):
            array.add_line(comment=note)
        array.add_line(value, comment=inline.get(value))
    for note in pending:
        array.add_line(comment=note)
    array.add_line(indent="")
    return array


def render_launcher_config(
    config: LauncherConfig, existing: str | None = None, source: str = "launcher.toml"
) -> str:
    """The TOML text for ``config``, merged into ``existing`` when given.

    Only the keys this tool owns are set; comments and foreign keys in
    ``existing`` are kept. ``existing`` must already be valid TOML (callers
    parse it first to report errors with the file name); one of a schema this
    version does not know is an InputError naming ``source``.
    """
    import tomlkit  # why: tomlkit only where a file is written, not when plan loads

    doc = tomlkit.parse(existing) if existing else tomlkit.parse(HEADER)
    check_upgradable(doc.unwrap(), source)
    doc["schema"] = config.schema
    doc["mode"] = str(config.mode)
    doc["claude"] = str(config.claude)
    if config.claude_version:
        doc["claude_version"] = config.claude_version
    elif "claude_version" in doc:
        del doc["claude_version"]
    agent = doc.get("agent")
    if not isinstance(agent, dict):
        agent = tomlkit.table()
        doc["agent"] = agent
    agent["user"] = config.agent_user
    agent["home"] = str(config.agent_home)
    sandbox = doc.get("sandbox")
    if not isinstance(sandbox, dict):
        sandbox = tomlkit.table()
        doc["sandbox"] = sandbox
    update_array(sandbox, "workspaces", [str(w) for w in config.workspaces])
    sandbox["network"] = str(config.network)
    sandbox["allowed_domains"] = list(config.allowed_domains)
    sandbox["loopback_ports"] = list(config.loopback_ports)
    sandbox["inner_sandbox"] = str(config.inner_sandbox)
    env = doc.get("env")
    if not isinstance(env, dict):
        env = tomlkit.table()
        doc["env"] = env
    env["pass"] = list(config.env_pass)
    limits = doc.get("limits")
    if not isinstance(limits, dict):
        limits = tomlkit.table()
        doc["limits"] = limits
    for key, value in config.limits.to_table().items():
        limits[key] = value
    # [user] is the operator's (landlock, readable): no answer sets it, so a rewrite
    # keeps the table as it is, with any other keys in it.
    if config.unsafe is not None:
        unsafe = doc.get("unsafe")
        if not isinstance(unsafe, dict):
            unsafe = tomlkit.table()
            doc["unsafe"] = unsafe
        unsafe["accepted_by"] = config.unsafe.accepted_by
        unsafe["accepted_at"] = config.unsafe.accepted_at
        unsafe["statement"] = config.unsafe.statement
    elif "unsafe" in doc:
        del doc["unsafe"]
    return tomlkit.dumps(doc)
