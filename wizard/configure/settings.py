"""Claude Code settings: merge the few keys sandbox-setup owns into a settings file.

Owned keys (everything else, and the order of every key, is kept as it was):

- ``sandbox.enabled``: Claude Code's own Bash sandbox on or off;
- ``sandbox.enableWeakerNestedSandbox``: ``true`` only when the inner sandbox
  strength is ``weak`` (chosen from the ``bwrap.nested``/``bwrap.nested_weak``
  probes, never by default); set back to ``false`` only if it was there;
- ``permissions.deny``: rules that hide credentials (:data:`CREDENTIAL_DENY_RULES`)
  are appended when missing; existing rules stay, in their order.

``permissions.disableBypassPermissionsMode`` and every other key are left as the
user had them. When the merged value equals the existing one, the existing
bytes are returned unchanged, so an apply that changes nothing rewrites nothing.

The file is read and written as Claude Code's parser reads it
(:mod:`wizard.configure.claude_json`): every number keeps its token (``1e400``
stays ``1e400``, never ``Infinity``), ``NaN``/``Infinity`` are refused naming the
position, a lone surrogate escape stays an escape, a BOM stays, and of duplicate
keys the last one counts (as in node; the rewrite drops the earlier ones, which
Claude Code never saw). The rendered bytes are parsed again before they are handed
to the writer.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from wizard.base.errors import InputError
from wizard.configure import claude_json

# Claude Code permission rules (gitignore-style paths; "~/" is the home of the
# user running Claude) that keep keys and cloud credentials out of the agent's reads.
CREDENTIAL_DENY_RULES: tuple[str, ...] = (
    "Read(~/.ssh/**)",
    "Read(~/.aws/**)",
    "Read(~/.config/gcloud/**)",
    "Read(~/.azure/**)",
    "Read(~/.docker/config.json)",
    "Read(~/.kube/**)",
    "Read(./.env)",
    "Read(./.env.*)",
    "Read(**/.env)",
    "Read(**/.env.*)",
)


def _decode(text: bytes | str, source: str) -> str:
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 (byte {exc.start}); left untouched") from None


def parse_settings(text: bytes | str, source: str) -> dict[str, Any]:
    """Parse a settings file as Claude Code does (:mod:`wizard.configure.claude_json`:
    numbers kept as their tokens, no NaN/Infinity, a BOM dropped); invalid JSON
    names the file, line and column."""
    text = _decode(text, source).removeprefix(claude_json.BOM)
    if not text.strip(" \t\n\r"):  # JSON's whitespace only: "\x1c" is not an empty file
        return {}
    try:
        data = claude_json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; "
            "fix or remove the file (it was left untouched)"
        ) from None
    except claude_json.NotJsonError as exc:
        raise InputError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.token} "
            "is not a JSON number (Claude Code's parser refuses the whole file); fix or "
            "remove the file (it was left untouched)"
        ) from None
    except RecursionError:
        raise InputError(
            f"{source}: invalid JSON: nested too deeply; fix or remove the file (it was left "
            "untouched)"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{source}: the top level must be a JSON object; left untouched")
    return data


def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{source}: key '{key}' must be an object; left untouched")
    return value


def merge_settings(
    existing: bytes | None, source: str, *, inner_sandbox: str, deny_rules: bool = True
) -> bytes:
    """The settings file content after merging the owned keys into ``existing``.

    ``inner_sandbox`` is ``strong`` | ``weak`` | ``off``.
    """
    original = parse_settings(existing, source) if existing is not None else {}
    try:
        return _merge(original, existing, source, inner_sandbox, deny_rules)
    except RecursionError:  # parsed, but too deep to copy or compare
        raise InputError(f"{source}: JSON nested too deeply; left untouched") from None


def _merge(
    original: dict[str, Any],
    existing: bytes | None,
    source: str,
    inner_sandbox: str,
    deny_rules: bool,
) -> bytes:
    merged = copy.deepcopy(original)  # same key order, number tokens kept
    sandbox = _table(merged, "sandbox", source)
    sandbox["enabled"] = inner_sandbox != "off"
    if inner_sandbox == "weak":
        sandbox["enableWeakerNestedSandbox"] = True
    elif "enableWeakerNestedSandbox" in sandbox:
        sandbox["enableWeakerNestedSandbox"] = False
    if deny_rules:
        permissions = _table(merged, "permissions", source)
        deny = permissions.setdefault("deny", [])
        if not isinstance(deny, list):
            raise InputError(f"{source}: key 'permissions.deny' must be a list; left untouched")
        deny.extend(rule for rule in CREDENTIAL_DENY_RULES if rule not in deny)
    if existing is not None and merged == original:
        return existing
    bom = existing is not None and _decode(existing, source).startswith(claude_json.BOM)
    rendered = claude_json.dumps(merged, bom=bom).encode("utf-8")
    try:  # what Claude Code will read, before it goes anywhere near the disk
        claude_json.check_strict(rendered, merged)
    except ValueError as exc:
        raise InputError(f"{source}: the merged settings would not read back ({exc})") from None
    return rendered
