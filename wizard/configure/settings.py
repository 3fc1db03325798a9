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
"""

from __future__ import annotations

import json
from typing import Any

from wizard.base.errors import InputError

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


def parse_settings(text: bytes | str, source: str) -> dict[str, Any]:
    """Parse a settings file; invalid JSON names the file, line and column."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{source}: not UTF-8 (byte {exc.start}); left untouched") from None
    if not text.strip(" \t\n\r"):  # JSON's whitespace only: "\x1c" is not an empty file
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; "
            "fix or remove the file (it was left untouched)"
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
    merged = json.loads(json.dumps(original))  # deep copy, same key order
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
    return (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
