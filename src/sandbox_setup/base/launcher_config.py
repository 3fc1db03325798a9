"""``launcher.toml``: the contract between the wizard (writes) and the launcher
(reads) and the audit (compares).

Format (``schema = 1``)::

    schema = 1
    mode = "sandbox"                 # sandbox | user | unsafe
    claude = "/usr/local/lib/sandbox-setup/claude"   # absolute path
    claude_version = "2.1.332"       # optional, recorded at apply

    [agent]
    user = "claude-agent"
    home = "/home/claude-agent"

    [sandbox]
    workspaces = ["/srv/project"]
    network = "allowlist"            # allowlist | host | none
    allowed_domains = ["example.com", "*.example.org:8443"]   # beyond Claude's own
    loopback_ports = [8080]          # host 127.0.0.1 ports seen inside at the same port
                                     # (both also in user mode: its session proxy and
                                     # Landlock's connect list, where ABI >= 4)
    inner_sandbox = "strong"         # strong | weak | off
    base_url_port = "auto"           # optional; auto | off: a loopback ANTHROPIC_BASE_URL
                                     # of the launch exposes its port for that session
    api_gateway = "auto"             # optional; auto | off: the session's gateway keeps
                                     # an exported API key or token out of the sandbox

    [env]
    pass = ["ANTHROPIC_API_KEY", ...] # the caller's variables Claude gets (nothing else)

    [limits]
    tasks = 1024                     # processes + threads of a session
    memory = "50%"                   # of the host's RAM, or a size ("4G")
    tmpfs = "512M"                   # each of the sandbox's /tmp, /run, /dev/shm

    [user]                           # user mode
    landlock = true                  # confine the agent with Landlock where the kernel has it
    readable = ["/opt/tools"]        # more trees the agent may read (Landlock file rules)

    [unsafe]                         # only in unsafe mode
    accepted_by = "root (uid 0)"
    accepted_at = "2026-11-30T04:00:00+00:00"
    statement = "..."

Reading uses :mod:`tomllib` (no third-party import on the launcher path). The writer
is :mod:`sandbox_setup.configure.launcher_toml`, where an apply writes the file: it
merges into the existing tomlkit document so comments and keys the tool does not own
survive.
"""

from __future__ import annotations

import enum
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, TypeVar

from sandbox_setup.base.choices import ApiGateway, BaseUrlPort, InnerSandbox, Mode, Network, values
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.limits import Limits

SCHEMA = 1
ChoiceT = TypeVar("ChoiceT", bound=enum.StrEnum)


@dataclass(frozen=True, slots=True)
class UnsafeAcceptance:
    """The ``[unsafe]`` table: who accepted unsafe mode, when, and the statement."""

    accepted_by: str
    accepted_at: str
    statement: str


@dataclass(frozen=True, slots=True)
class LauncherConfig:
    """What ``launcher.toml`` says (see the module docstring for its format)."""

    mode: Mode
    claude: PurePosixPath
    agent_user: str
    agent_home: PurePosixPath
    workspaces: tuple[PurePosixPath, ...] = ()
    network: Network = Network.HOST
    inner_sandbox: InnerSandbox = InnerSandbox.STRONG
    allowed_domains: tuple[str, ...] = ()
    loopback_ports: tuple[int, ...] = ()
    env_pass: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    # Not written by an apply (no answer sets it): the operator's own edit, kept on
    # rewrite like any key the tool does not own; the launcher reads it.
    base_url_port: BaseUrlPort = field(default=BaseUrlPort.AUTO, compare=False)
    api_gateway: ApiGateway = field(default=ApiGateway.AUTO, compare=False)  # likewise
    claude_version: str | None = None
    unsafe: UnsafeAcceptance | None = None
    # [user]: Landlock for user mode (sandbox_setup.policy.landlock); default on.
    user_landlock: bool = True
    user_readable: tuple[PurePosixPath, ...] = ()
    schema: int = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


def _require(table: dict[str, Any], key: str, kind: type, where: str, source: str) -> Any:
    if key not in table:
        raise InputError(f"{source}: missing key '{where}{key}'")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(
            f"{source}: key '{where}{key}' must be a {kind.__name__}, not {type(value).__name__}"
        )
    if isinstance(value, str) and "\x00" in value:
        raise InputError(f"{source}: key '{where}{key}' contains a NUL character")
    return value


def _choice(
    table: dict[str, Any],
    key: str,
    choice: type[ChoiceT],
    default: ChoiceT,
    where: str,
    source: str,
) -> ChoiceT:
    if key not in table:
        return default
    value = table[key]
    try:
        return choice(value) if isinstance(value, str) else choice("\0")
    except ValueError:
        raise InputError(
            f"{source}: key '{where}{key}' is {value!r}; expected one of "
            + ", ".join(values(choice))
        ) from None


def _strings(table: dict[str, Any], key: str, where: str, source: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{source}: key '{where}{key}' must be a list of strings")
    return tuple(value)


def absolute_path(value: str, key: str, source: str) -> PurePosixPath:
    """``value`` as an absolute path, or an error naming ``source`` and ``key``."""
    if "\x00" in value:
        raise InputError(f"{source}: key '{key}' contains a NUL character")
    path = PurePosixPath(normal_path(value))
    if not path.is_absolute():
        raise InputError(f"{source}: key '{key}' must be an absolute path, got {value!r}")
    return path


def normal_path(value: str) -> str:
    """``value`` with repeated slashes, ``.`` and ``..`` collapsed, also the leading
    ``//`` that POSIX lets a system treat specially and Linux does not: ``//srv//project``
    is ``/srv/project`` (it was called a symlink to itself)."""
    if not value.startswith("/"):
        return value
    return os.path.normpath("/" + value.lstrip("/"))


def load_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML; an error names ``source`` and the line (tomllib's message)."""
    if text.startswith("\ufeff"):
        # An editor's "UTF-8 with BOM": tomllib would say "Invalid statement (at line 1)".
        raise InputError(
            f"{source}: starts with a byte-order mark (U+FEFF, an editor's \"UTF-8 with "
            'BOM"), which TOML does not allow; save it as UTF-8 without a BOM'
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib names the line, except at the very end: name that line too.
        where = f"at end of document, line {text.count(chr(10)) + 1}"
        message = str(exc).replace("at end of document", where)
        raise InputError(f"{source}: invalid TOML: {message}") from None
    except RecursionError:
        raise InputError(f"{source}: invalid TOML: nested too deeply") from None


def parse_launcher_config(text: str, source: str = "launcher.toml") -> LauncherConfig:
    """Parse and validate; every error names the file and the key (or line)."""
    data = load_toml(text, source)
    schema = _require(data, "schema", int, "", source)
    if schema != SCHEMA:
        raise InputError(f"{source}: unsupported schema {schema} (this version reads {SCHEMA})")
    mode_text = _require(data, "mode", str, "", source)
    try:
        mode = Mode(mode_text)
    except ValueError:
        raise InputError(
            f"{source}: key 'mode' is {mode_text!r}; expected one of "
            + ", ".join(m.value for m in Mode)
        ) from None
    claude = absolute_path(_require(data, "claude", str, "", source), "claude", source)
    agent = data.get("agent")
    if not isinstance(agent, dict):
        raise InputError(f"{source}: missing table [agent]")
    agent_user = _require(agent, "user", str, "agent.", source)
    agent_home = absolute_path(_require(agent, "home", str, "agent.", source), "agent.home", source)
    sandbox = data.get("sandbox", {})
    if not isinstance(sandbox, dict):
        raise InputError(f"{source}: 'sandbox' must be a table")
    workspaces_raw = sandbox.get("workspaces", [])
    if not isinstance(workspaces_raw, list) or not all(isinstance(w, str) for w in workspaces_raw):
        raise InputError(f"{source}: key 'sandbox.workspaces' must be a list of paths")
    workspaces = tuple(absolute_path(w, "sandbox.workspaces", source) for w in workspaces_raw)
    network = _choice(sandbox, "network", Network, Network.HOST, "sandbox.", source)
    inner = _choice(sandbox, "inner_sandbox", InnerSandbox, InnerSandbox.STRONG, "sandbox.", source)
    domains = _strings(sandbox, "allowed_domains", "sandbox.", source)
    base_url_port = _choice(
        sandbox, "base_url_port", BaseUrlPort, BaseUrlPort.AUTO, "sandbox.", source
    )
    api_gateway = _choice(sandbox, "api_gateway", ApiGateway, ApiGateway.AUTO, "sandbox.", source)
    ports = sandbox.get("loopback_ports", [])
    if not isinstance(ports, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 65535 for p in ports
    ):
        raise InputError(f"{source}: key 'sandbox.loopback_ports' must be a list of ports 1-65535")
    env = data.get("env", {})
    if not isinstance(env, dict):
        raise InputError(f"{source}: 'env' must be a table")
    env_pass = _strings(env, "pass", "env.", source)
    limits = Limits.from_table(data.get("limits", {}), "limits.", source)
    if mode is Mode.SANDBOX and not workspaces:
        raise InputError(f"{source}: sandbox mode needs at least one 'sandbox.workspaces' entry")
    unsafe = None
    unsafe_table = data.get("unsafe")
    if unsafe_table is not None:
        if not isinstance(unsafe_table, dict):
            raise InputError(f"{source}: 'unsafe' must be a table")
        unsafe = UnsafeAcceptance(
            accepted_by=_require(unsafe_table, "accepted_by", str, "unsafe.", source),
            accepted_at=_require(unsafe_table, "accepted_at", str, "unsafe.", source),
            statement=_require(unsafe_table, "statement", str, "unsafe.", source),
        )
    user = data.get("user", {})
    if not isinstance(user, dict):
        raise InputError(f"{source}: 'user' must be a table")
    user_landlock = user.get("landlock", True)
    if not isinstance(user_landlock, bool):
        raise InputError(f"{source}: key 'user.landlock' must be true or false")
    user_readable = tuple(
        absolute_path(p, "user.readable", source)
        for p in _strings(user, "readable", "user.", source)
    )
    version = data.get("claude_version")
    if version is not None and not isinstance(version, str):
        raise InputError(f"{source}: key 'claude_version' must be a string")
    known = {
        "schema", "mode", "claude", "claude_version", "agent", "sandbox", "unsafe", "env", "limits",
        "user",
    }  # fmt: skip
    return LauncherConfig(
        mode=mode,
        claude=claude,
        agent_user=agent_user,
        agent_home=agent_home,
        workspaces=workspaces,
        network=network,
        inner_sandbox=inner,
        allowed_domains=domains,
        loopback_ports=tuple(ports),
        env_pass=env_pass,
        limits=limits,
        base_url_port=base_url_port,
        api_gateway=api_gateway,
        claude_version=version,
        unsafe=unsafe,
        user_landlock=user_landlock,
        user_readable=user_readable,
        schema=schema,
        extra={k: v for k, v in data.items() if k not in known},
    )
