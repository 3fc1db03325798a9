"""Claude Code settings: merge the few keys sandbox-setup owns into a settings file.

Owned keys (everything else, and the order of every key, is kept as it was), set
from one :class:`SandboxKeys` value:

- ``sandbox.enabled``: Claude Code's own Bash sandbox on or off;
- ``sandbox.enableWeakerNestedSandbox``: ``true`` only when the inner sandbox
  strength is ``weak`` (chosen from the ``bwrap.nested``/``bwrap.nested_weak``
  probes, never by default);
- where the inner sandbox is on, ``sandbox.failIfUnavailable = true`` (a missing
  socat or a broken bwrap makes Claude refuse to start instead of running every
  command unsandboxed, which it otherwise does with one warning line) and
  ``sandbox.allowUnsandboxedCommands = false`` (a ``tool_use`` carrying
  ``dangerouslyDisableSandbox: true`` is still wrapped instead of running on the
  host without a prompt): docs/claude-code-behaviour.md has both measured;
- where the inner sandbox is on, ``sandbox.autoAllowBashIfSandboxed = true``: a
  command Claude's own sandbox confines runs without a prompt in the default
  permission mode, as it did by default up to 2.1.197; 2.1.332 reads the default
  from a server-side flag, so it is written rather than left to Anthropic's server;
- in managed scope, ``sandbox.bwrapPath`` and ``sandbox.socatPath``: the binaries
  the probes used (Claude honours them only in managed settings);
- where the inner sandbox is on, ``sandbox.credentials.envVars`` deny entries for
  :data:`CREDENTIAL_ENV_VARS`, appended when missing: Claude hands its API key to
  every Bash command otherwise, so one injected ``curl`` could send it anywhere the
  network allows. Claude itself still has the key; only the commands lose it;
- ``sandbox.network.httpProxyPort`` and ``socksProxyPort``, when
  :attr:`SandboxKeys.proxy_port` is given (the allowlist network: the port of the
  launcher's proxy inside the sandbox, which Claude's inner sandbox must use
  instead of starting its own, :func:`~sandbox_setup.policy.network.inner_proxy_port`);
  otherwise removed where they hold that port (this tool wrote them: elsewhere,
  127.0.0.1:3128 is nobody's proxy of ours) and kept where the user set another
  value; a ``sandbox.network`` table emptied that way is removed;
- where the inner sandbox is on, the restrictive keys of the newest release, pinned
  rather than left to defaults (docs/claude-code-behaviour.md, "Restrictive settings"):
  ``sandbox.allowNestedUserNamespaces = false``, ``sandbox.filesystem.disabled = false``,
  ``sandbox.network.strictAllowlist = true``, and in managed scope where
  :attr:`SandboxKeys.managed_domains_only` (sandbox mode, :func:`managed_domains_only`)
  ``sandbox.network.allowManagedDomainsOnly = true`` with the operator's domains
  appended to ``sandbox.network.allowedDomains`` (set back to false otherwise, where
  present); in managed scope ``requiredMinimumVersion`` when
  :attr:`SandboxKeys.minimum_version` is given (never removed);
- in managed scope with the inner sandbox on, ``allowManagedHooksOnly = true`` (a
  top-level key Claude reads from managed settings only): hooks run outside Claude's
  Bash sandbox, so the hooks of the agent's own, project and local settings (which it
  can write) and of plugins it installed do not run; set back to false where the inner
  sandbox is off, where present;
- ``permissions.deny``: rules that hide credentials (:data:`CREDENTIAL_DENY_RULES`)
  are appended when missing; existing rules stay, in their order.

Where the inner sandbox is off, the keys that only mean something with it on are
set back to Claude's defaults *if they are present* (``enableWeakerNestedSandbox``
and ``failIfUnavailable`` false, ``allowUnsandboxedCommands`` true), so a file an
earlier apply wrote with the sandbox on says what is true now; in managed scope
``bwrapPath``/``socatPath`` are removed (no sandbox uses them). Appended rules and
deny entries stay: they are harmless without a sandbox and may be the user's.

``permissions.disableBypassPermissionsMode`` and every other key are left as the
user had them. When the merged value equals the existing one, the existing
bytes are returned unchanged, so an apply that changes nothing rewrites nothing.

The file is read and written as Claude Code's parser reads it
(:mod:`sandbox_setup.configure.claude_json`): every number keeps its token (``1e400``
stays ``1e400``, never ``Infinity``), ``NaN``/``Infinity`` are refused naming the
position, a lone surrogate escape stays an escape, a BOM stays, and of duplicate
keys the last one counts (as in node; the rewrite drops the earlier ones, which
Claude Code never saw). The rendered bytes are parsed again before they are handed
to the writer.

:func:`owned_changes` names what differs in owned keys between two files (the
audit's drift summary).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError
from sandbox_setup.configure import claude_json
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT

PROXY_PORT_KEYS = ("httpProxyPort", "socksProxyPort")

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
# The variables that log Claude Code in to its API: Claude needs them, the commands
# it runs in its sandbox do not (sandbox.credentials.envVars, mode "deny").
CREDENTIAL_ENV_VARS: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
INNER_SANDBOXES = ("strong", "weak", "off")


@dataclass(frozen=True)
class SandboxKeys:
    """What the owned ``sandbox.*`` keys are set from (one apply's choices).

    ``managed``: the file is the managed settings, the only place Claude honours
    ``bwrapPath``/``socatPath``; then, with the inner sandbox on, both paths are
    required. ``proxy_port``: the in-sandbox port of the launcher's egress proxy
    (allowlist network only), ``None`` to leave the proxy keys alone.
    ``allowed_domains``: the operator's ``--allow-domain`` patterns, the managed
    allowlist of Claude's sandbox, with ``managed_domains_only`` (managed scope):
    ``allowManagedDomainsOnly``, only where :func:`managed_domains_only` says the
    mode's sessions still run Bash with it (sandbox mode; set back to false otherwise).
    ``minimum_version``: ``requiredMinimumVersion``
    (managed scope only; :func:`~sandbox_setup.policy.claude_release.required_minimum`).
    """

    inner_sandbox: str
    managed: bool = False
    bwrap_path: str | None = None
    socat_path: str | None = None
    proxy_port: int | None = None
    allowed_domains: tuple[str, ...] = ()
    managed_domains_only: bool = False
    minimum_version: str | None = None

    def __post_init__(self) -> None:
        if self.inner_sandbox not in INNER_SANDBOXES:
            raise ValueError(f"inner_sandbox must be one of {INNER_SANDBOXES}")
        if self.managed and self.on and not (self.bwrap_path and self.socat_path):
            raise ValueError("managed settings with the inner sandbox on need both binaries")

    @property
    def on(self) -> bool:
        return self.inner_sandbox != "off"


def managed_domains_only(mode: Mode) -> bool:
    """Do the managed settings of ``mode`` set ``sandbox.network.allowManagedDomainsOnly``?

    Sandbox mode only. Measured with the real releases
    (``tests/e2e/test_claude_restrictive_settings.py::test_user_mode_leaves_managed_domains_only_off_because_claude_could_not_listen``,
    docs/claude-code-behaviour.md): with the key, 2.1.332 takes the proxy ports of its
    Bash sandbox from managed settings only and ignores the ones the user-mode launcher
    passes through ``--settings`` (the session proxy's port is known only at launch: an
    ephemeral host port where the session has no network namespace of its own), so it
    starts a filtering proxy of its own on 127.0.0.1. The session's Landlock domain
    (ABI >= 4, on by default) allows no TCP bind for it (only the two fixed ports of
    its Bash sandbox's bridge, :func:`sandbox_setup.policy.landlock.bridge_ports`), so
    its sandbox fails to initialize ("listen EACCES") and every Bash command of the
    session fails. 2.1.197 keeps the
    ``--settings`` ports and is unaffected. With ``[user] landlock = false`` it would
    work (Claude's proxy denies what is outside the managed allowlist and hands the
    rest to the session's proxy), but that is not the default, and the managed file is
    the host's, written before any launch decides.
    """
    return mode is Mode.SANDBOX


def _decode(text: bytes | str, source: str) -> str:
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 (byte {exc.start}); left untouched") from None


def parse_settings(text: bytes | str, source: str) -> dict[str, Any]:
    """Parse a settings file as Claude Code does (:mod:`sandbox_setup.configure.claude_json`:
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


def _table(data: dict[str, Any], key: str, source: str, where: str = "") -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{source}: key '{where}{key}' must be an object; left untouched")
    return value


def _list(data: dict[str, Any], key: str, source: str, where: str) -> list[Any]:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise InputError(f"{source}: key '{where}{key}' must be a list; left untouched")
    return value


def merge_settings(
    existing: bytes | None, source: str, keys: SandboxKeys, *, deny_rules: bool = True
) -> bytes:
    """The settings file content after merging the owned keys into ``existing``."""
    original = parse_settings(existing, source) if existing is not None else {}
    try:
        return _merge(original, existing, source, keys, deny_rules)
    except RecursionError:  # parsed, but too deep to copy or compare
        raise InputError(f"{source}: JSON nested too deeply; left untouched") from None


def _set_back(table: dict[str, Any], key: str, default: bool) -> None:
    if key in table:
        table[key] = default


def _merge_sandbox(sandbox: dict[str, Any], source: str, keys: SandboxKeys) -> None:
    sandbox["enabled"] = keys.on
    if keys.inner_sandbox == "weak":
        sandbox["enableWeakerNestedSandbox"] = True
    else:
        _set_back(sandbox, "enableWeakerNestedSandbox", False)
    if keys.on:
        sandbox["failIfUnavailable"] = True
        sandbox["allowUnsandboxedCommands"] = False
        # Written, not left to a default: true up to 2.1.197, a server-side flag in
        # 2.1.332, whose schema says false (docs/claude-code-behaviour.md).
        sandbox["autoAllowBashIfSandboxed"] = True
    else:
        _set_back(sandbox, "failIfUnavailable", False)
        _set_back(sandbox, "allowUnsandboxedCommands", True)
    if keys.managed:
        for key, path in (("bwrapPath", keys.bwrap_path), ("socatPath", keys.socat_path)):
            if keys.on and path is not None:
                sandbox[key] = path
            else:
                sandbox.pop(key, None)
    if keys.on:
        # Pinned, not left to defaults (docs/claude-code-behaviour.md, "Settings written").
        sandbox["allowNestedUserNamespaces"] = False
        _table(sandbox, "filesystem", source, "sandbox.")["disabled"] = False
        network = _table(sandbox, "network", source, "sandbox.")
        network["strictAllowlist"] = True
        if keys.managed and keys.managed_domains_only:
            network["allowManagedDomainsOnly"] = True
            allowed = _list(network, "allowedDomains", source, "sandbox.network.")
            allowed.extend(d for d in keys.allowed_domains if d not in allowed)
        else:  # Claude could not start its sandbox (see managed_domains_only)
            _set_back(network, "allowManagedDomainsOnly", False)
        credentials = _table(sandbox, "credentials", source, "sandbox.")
        env_vars = _list(credentials, "envVars", source, "sandbox.credentials.")
        named = [entry.get("name") for entry in env_vars if isinstance(entry, dict)]
        env_vars.extend(
            {"name": name, "mode": "deny"} for name in CREDENTIAL_ENV_VARS if name not in named
        )
    if keys.proxy_port is not None:
        network = _table(sandbox, "network", source, "sandbox.")
        port = claude_json.JsonNumber(str(keys.proxy_port))  # as a parsed file holds it
        for key in PROXY_PORT_KEYS:
            network[key] = port
    elif "network" in sandbox:
        network = _table(sandbox, "network", source, "sandbox.")
        had = bool(network)
        ours = (SANDBOX_PROXY_PORT, claude_json.JsonNumber(str(SANDBOX_PROXY_PORT)))
        for key in PROXY_PORT_KEYS:
            if network.get(key) in ours:
                del network[key]
        if had and not network:
            del sandbox["network"]


def _merge(
    original: dict[str, Any],
    existing: bytes | None,
    source: str,
    keys: SandboxKeys,
    deny_rules: bool,
) -> bytes:
    merged = copy.deepcopy(original)  # same key order, number tokens kept
    _merge_sandbox(_table(merged, "sandbox", source), source, keys)
    if keys.managed and keys.on:
        # A hook runs outside Claude's Bash sandbox (docs/claude-code-behaviour.md).
        merged["allowManagedHooksOnly"] = True
    elif keys.managed:
        _set_back(merged, "allowManagedHooksOnly", False)
    if keys.managed and keys.minimum_version is not None:
        # Never removed: a downgrade below it is what Claude is then to refuse.
        merged["requiredMinimumVersion"] = keys.minimum_version
    if deny_rules:
        permissions = _table(merged, "permissions", source)
        deny = _list(permissions, "deny", source, "permissions.")
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


# The owned keys, as paths into the settings object, in the order drift names them.
OWNED_KEYS: tuple[tuple[str, ...], ...] = (
    ("sandbox", "enabled"),
    ("sandbox", "enableWeakerNestedSandbox"),
    ("sandbox", "failIfUnavailable"),
    ("sandbox", "allowUnsandboxedCommands"),
    ("sandbox", "autoAllowBashIfSandboxed"),
    ("sandbox", "allowNestedUserNamespaces"),
    ("sandbox", "filesystem", "disabled"),
    ("sandbox", "network", "strictAllowlist"),
    ("sandbox", "network", "allowManagedDomainsOnly"),
    ("sandbox", "network", "allowedDomains"),
    ("requiredMinimumVersion",),
    ("allowManagedHooksOnly",),
    ("sandbox", "bwrapPath"),
    ("sandbox", "socatPath"),
    ("sandbox", "credentials", "envVars"),
    ("sandbox", "network", "httpProxyPort"),
    ("sandbox", "network", "socksProxyPort"),
    ("permissions", "deny"),
)
_MISSING = object()


def _lookup(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _shown(value: Any) -> str:
    return "absent" if value is _MISSING else json.dumps(value, ensure_ascii=False)


def owned_changes(current: bytes | None, desired: bytes) -> list[str]:
    """What differs in the owned keys, one line each: ``sandbox.failIfUnavailable is
    false, should be true``. A current file that is missing or not a JSON object
    counts as empty; list-valued keys name the entries that are missing."""
    try:
        now: Any = json.loads(current) if current else {}
    except (ValueError, RecursionError):
        now = {}
    want = json.loads(desired)
    lines = []
    for path in OWNED_KEYS:
        have, should = _lookup(now, path), _lookup(want, path)
        if have == should:
            continue
        name = ".".join(path)
        if isinstance(should, list) and isinstance(have, list):
            missing = [entry for entry in should if entry not in have]
            if missing:  # (appended entries: their order is not ours to judge)
                lines.append(f"{name} lacks {_shown(missing)}")
        else:
            lines.append(f"{name} is {_shown(have)}, should be {_shown(should)}")
    return lines
