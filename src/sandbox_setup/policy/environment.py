"""Which variables of the caller's environment reach Claude Code
(docs/design.md: ``--pass-env``, ``[env] pass``; invariant 17 for the credentials).

The launcher passes nothing of the caller's environment but the variables named
here: by default the ones that say where Claude's API is, how to log in to it
and which models to ask for (:data:`DEFAULT_PASS`), plus whatever the operator
lists (``--pass-env NAME``, ``[env] pass``). Some names are never taken from the
caller: the ones the launcher sets itself, the ones that claim a sandbox, and
the ones that would make the sandbox's tools (the dynamic loader, socat,
bwrap) run other code.

How the defaults were chosen (Claude Code's documented environment variables,
code.claude.com/docs/en/env-vars and model-config, checked against the names
the 2.1.197 binary reads): what a launcher or an operator exports to point
Claude at an endpoint and log in to it, and nothing that changes what the agent
may do.

* The endpoint: ``ANTHROPIC_BASE_URL`` (a gateway or a local proxy, as the
  proxy launchers of the first bug report set it) and
  ``ANTHROPIC_CUSTOM_HEADERS`` (a gateway's own auth header travels there).
* The login: ``ANTHROPIC_API_KEY`` (``x-api-key``), ``ANTHROPIC_AUTH_TOKEN``
  (``Authorization: Bearer``, what gateways and local proxies take) and
  ``CLAUDE_CODE_OAUTH_TOKEN`` (``claude setup-token``, a subscription login
  without the interactive ``/login``).
* The models: ``ANTHROPIC_MODEL``, the per-family slots
  ``ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL`` with the ``_NAME``,
  ``_DESCRIPTION`` and ``_SUPPORTED_CAPABILITIES`` that describe a gateway's
  model to Claude, ``ANTHROPIC_CUSTOM_MODEL_OPTION`` (same suffixes),
  ``CLAUDE_CODE_SUBAGENT_MODEL``, and the deprecated
  ``ANTHROPIC_SMALL_FAST_MODEL`` that older launchers still export.

Left out on purpose, each for ``--pass-env`` when an operator wants it:

* The cloud providers (``CLAUDE_CODE_USE_BEDROCK``, ``_VERTEX``, ``_FOUNDRY``):
  the switch alone is useless and confusing without the cloud's credentials
  (``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS``, ...), and those are keys to
  the operator's whole cloud account, not to Claude's API; handing them to the
  agent must be an explicit choice, name by name.
* Tuning and feature switches (``API_TIMEOUT_MS``, ``ANTHROPIC_BETAS``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``, ``DISABLE_AUTOUPDATER``, ...):
  harmless, but they neither name the endpoint nor log in; the operator's
  settings (or ``--pass-env``) own them.
* Anything else of the caller's (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
  ``SSH_AUTH_SOCK``, ...): Claude's Bash tool sees every variable Claude gets,
  so a credential that is not for Claude's API never reaches the agent unless
  it is listed.
"""

from __future__ import annotations

import enum
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sandbox_setup.base import remedies
from sandbox_setup.base.choices import BaseUrlPort, Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.message import Act, Change, Option, Ref, message
from sandbox_setup.policy.addresses import parse_address
from sandbox_setup.policy.names import shown
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT

_MODEL_SLOTS = ("OPUS", "SONNET", "HAIKU")
_MODEL_SUFFIXES = ("", "_NAME", "_DESCRIPTION", "_SUPPORTED_CAPABILITIES")
# What a launcher or an operator sets to point Claude Code at its API, log in to
# it and pick its models (see the module docstring for why these and no more).
DEFAULT_PASS = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_MODEL",
    *(f"ANTHROPIC_DEFAULT_{slot}_MODEL{sfx}" for slot in _MODEL_SLOTS for sfx in _MODEL_SUFFIXES),
    *(f"ANTHROPIC_CUSTOM_MODEL_OPTION{sfx}" for sfx in _MODEL_SUFFIXES),
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)
# Set by the launcher itself (a caller's value would be replaced anyway).
LAUNCHER_OWNED = frozenset({"HOME", "PATH", "SHELL", "USER", "LOGNAME", "TERM", "LANG"})
# A sandbox claim: only the launcher makes it, and only inside a verified sandbox.
SANDBOX_CLAIMS = frozenset({"IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP"})
# Would change what the launcher's own tools or the proxy settings do.
NEVER_PASSED = frozenset(
    {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "IFS", "SHELLOPTS"}
)
PROXY_VARIABLES = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
    | {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")


def pass_name_problem(name: str, mode: Mode) -> str | None:
    """Why ``name`` may not be passed from the caller to Claude (None: it may)."""
    if not _NAME.match(name):
        return "not an environment variable name (letters, digits and '_')"
    if name in LAUNCHER_OWNED:
        return f"{name} is set by the launcher itself"
    if name in SANDBOX_CLAIMS and mode is Mode.SANDBOX:
        return f"{name} is a sandbox claim; in sandbox mode only the verified sandbox sets it"
    if name in NEVER_PASSED or name.startswith("LD_"):
        return f"{name} changes how programs are loaded or started; it is never passed"
    if name in PROXY_VARIABLES and mode is Mode.SANDBOX:
        return f"{name} is set by the launcher to its egress proxy in sandbox mode"
    return None


def validate_pass_names(names: Iterable[str], mode: Mode, what: str) -> tuple[str, ...]:
    """``names`` in order, once each; :class:`InputError` naming the first refused."""
    seen: list[str] = []
    for name in names:
        problem = pass_name_problem(name, mode)
        if problem is not None:
            # A name that is not one (a newline in it) is shown escaped, never raw.
            raise InputError(f"{what} {name if _NAME.match(name) else shown(name)}: {problem}")
        if name not in seen:
            seen.append(name)
    return tuple(seen)


def passed_names(extra: Iterable[str]) -> tuple[str, ...]:
    """What the launcher passes: the defaults, then the operator's, once each."""
    return tuple(dict.fromkeys((*DEFAULT_PASS, *extra)))


def select_passed(
    names: Iterable[str], environ: Mapping[str, str], mode: Mode
) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """The variables of ``environ`` the launcher hands to Claude, and those it refuses.

    Exactly ``names`` (the config's ``[env] pass``), each only when set. A name
    the policy refuses (a sandbox claim in sandbox mode, the loader's, the
    launcher's own) is ignored even when a config lists it: the wizard never
    writes one, so such a config was edited by hand. Returns ``(passed,
    ((name, why ignored), ...))``.
    """
    passed: dict[str, str] = {}
    ignored: list[tuple[str, str]] = []
    for name in dict.fromkeys(names):
        problem = pass_name_problem(name, mode)
        if problem is not None:
            ignored.append((name, problem))
        elif name in environ:
            passed[name] = environ[name]
    return passed, tuple(ignored)


# The variable that names Claude's API endpoint.
BASE_URL = "ANTHROPIC_BASE_URL"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def loopback_endpoint(url: str) -> tuple[str, int] | None:
    """``(host, port)`` when ``url`` points at this host's loopback, else None.

    Loopback is 127.0.0.0/8, ::1 (also IPv4-mapped), ``localhost`` and names under
    ``.localhost`` (RFC 6761), and the unspecified address. The port is the URL's,
    or the scheme's default.
    """
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:  # a port out of range or not a number: not a usable endpoint
        return None
    if not host:
        return None
    host = host.rstrip(".").lower()
    address = parse_address(host)
    # The unspecified address (0.0.0.0, ::) counts: connecting to it reaches this host.
    loopback = (
        address.is_loopback or address.is_unspecified
        if address is not None
        else host == "localhost" or host.endswith(".localhost")
    )
    if not loopback:
        return None
    if port is None:
        port = _DEFAULT_PORTS.get(parts.scheme.lower())
    if port is None:
        return None
    return host, port


class BaseUrlReach(enum.Enum):
    """How a sandbox (its own network) reaches a base URL on the host's loopback: the
    one decision the plan's note, the launch line and the launcher's exposure share."""

    SHARED = "shared"  # network host: the sandbox shares the host's loopback
    CONFIGURED = "configured"  # the port is one of the configured loopback ports
    PER_SESSION = "per-session"  # base_url_port = "auto": each launch exposes it for itself
    CLOSED = "closed"  # allowlist, base_url_port = "off", the port not configured
    NO_NETWORK = "no-network"  # network none: nothing is reachable


def base_url_reach(
    port: int, network: Network, loopback_ports: Iterable[int], setting: BaseUrlPort
) -> BaseUrlReach:
    """How the sandbox reaches loopback ``port`` (a base URL's) with this network,
    these configured ports and ``[sandbox] base_url_port``."""
    if network == Network.HOST:
        return BaseUrlReach.SHARED
    if network == Network.NONE:
        return BaseUrlReach.NO_NETWORK
    if port in set(loopback_ports):
        return BaseUrlReach.CONFIGURED
    if setting is BaseUrlPort.AUTO:
        return BaseUrlReach.PER_SESSION
    return BaseUrlReach.CLOSED


def loopback_port_hint(
    environ: Mapping[str, str],
    names: Iterable[str],
    network: Network,
    loopback_ports: Iterable[int],
    setting: BaseUrlPort,
    root: str = "/",
) -> str | None:
    """What to do when the passed base URL is on the host's loopback but the sandbox
    cannot reach it (None when it can, or when there is nothing to say).

    Only a sandbox with a network of its own is concerned (:func:`base_url_reach`):
    ``allowlist`` reaches one host loopback port through ``--allow-loopback-port PORT``,
    or, at launch (``setting``: the config's ``base_url_port``), through
    ``base_url_port = "auto"``; ``none`` reaches nothing. The URL itself is never
    repeated (it may carry a token); host and port are.
    """
    if BASE_URL not in names:
        return None
    endpoint = loopback_endpoint(environ.get(BASE_URL, ""))
    if endpoint is None:
        return None
    host, port = endpoint
    reach = base_url_reach(port, network, loopback_ports, setting)
    where = f"{BASE_URL} points at {host} port {port} on this host's loopback"
    if reach is BaseUrlReach.NO_NETWORK:
        return message(
            f"{where}, but the sandbox has no network (network none), so Claude Code cannot "
            "reach it; ",
            Change("to allow it", (ALLOWLIST, _port(port)), root),
        )
    if reach is not BaseUrlReach.CLOSED:
        return None
    where += '; with base_url_port "off" the sandbox reaches only the ports allowed'
    return message(f"{where}; ", Change("to allow it", (_port(port),), root))


# The changes of the saved setup that let the sandbox reach one loopback port: the
# command to paste on the command line (base/remedies.py), the fields in the wizard.
ALLOWLIST = Ref(Option.NETWORK, Act.CHOOSE, value="allowlist")


def _port(port: int) -> Ref:
    return Ref(Option.ALLOW_LOOPBACK_PORT, Act.USE, value=str(port))


def base_url_plan_note(
    environ: Mapping[str, str],
    names: Iterable[str],
    network: Network,
    loopback_ports: Iterable[int],
    setting: BaseUrlPort,
    root: str = "/",
) -> str | None:
    """What the plan says about the operator's loopback base URL: the remedy when the
    sandbox cannot reach it (:func:`loopback_port_hint`, as the launch says it), or,
    where every launch exposes its port for that session (:class:`BaseUrlReach`
    ``PER_SESSION``, what the launcher does), that, and nothing to open for good."""
    hint = loopback_port_hint(environ, names, network, loopback_ports, setting, root)
    if hint is not None or BASE_URL not in names:
        return hint
    endpoint = loopback_endpoint(environ.get(BASE_URL, ""))
    if endpoint is None:
        return None
    host, port = endpoint
    if base_url_reach(port, network, loopback_ports, setting) is not BaseUrlReach.PER_SESSION:
        return None
    return (
        f"{BASE_URL} points at {host} port {port} on this host's loopback: each launch "
        "whose environment has it exposes that one port to the sandbox for that session "
        '(base_url_port = "auto" in [sandbox] of launcher.toml), and says so in its launch '
        "line; nothing to open for good"
    )


# --- the base URL a launch uses, and the one port it may expose ([sandbox] base_url_port) -
#
# A proxy launcher (``ocx claude ...``) starts its API proxy on the host's loopback and
# exports ANTHROPIC_BASE_URL=http://127.0.0.1:PORT to its child only, so no plan can
# know PORT in advance. With ``[sandbox] base_url_port = "auto"`` (the default) the
# launch exposes exactly that port, for that session, the way a configured
# ``--allow-loopback-port`` is exposed. Which base URLs count, and from where, is this:
#
# * the caller's environment, as the launcher passes it to Claude (ANTHROPIC_BASE_URL in
#   ``[env] pass``, and set): the operator, or the program the operator ran, chose it;
# * the ``env`` table of the root-owned managed settings
#   (/etc/claude-code/managed-settings.json), which Claude Code applies over its process
#   environment: root chose it, and it wins over the caller's, as in Claude Code.
#
# Never a file the agent can write: its own ~/.claude/settings.json or a workspace's
# .claude/settings*.json would let the agent choose which loopback service of the host
# the next session reaches. (Claude may still obey such a file; it then reaches only
# what the operator exposed.)

FROM_CALLER = "your environment"
FROM_MANAGED = "the managed settings"
# Claude-related names: what the launch line lists when it did not pass one.
CLAUDE_PREFIXES = ("CLAUDE_", "ANTHROPIC_")


@dataclass(frozen=True, slots=True)
class BaseUrl:
    """The ``ANTHROPIC_BASE_URL`` a launch gives Claude, and where it came from (words)."""

    url: str
    source: str


def base_url_in_effect(
    passed: Mapping[str, str], managed_env: Mapping[str, object] | None = None
) -> BaseUrl | None:
    """The base URL Claude Code will use, from the places that count (see above).

    ``passed``: the caller's variables the launcher hands to Claude (in unsafe mode,
    the whole inherited environment); ``managed_env``: the managed settings' ``env``
    table, None when there is none (or it is not root's and trusted).
    """
    managed = (managed_env or {}).get(BASE_URL)
    if isinstance(managed, str) and managed.strip():
        return BaseUrl(managed, FROM_MANAGED)
    url = passed.get(BASE_URL, "")
    if url.strip():
        return BaseUrl(url, FROM_CALLER)
    return None


def base_url_port(
    base: BaseUrl | None,
    mode: Mode,
    network: Network,
    setting: BaseUrlPort,
    configured: Iterable[int],
) -> int | None:
    """The host loopback port this launch exposes for ``base`` (None: none to expose).

    Only a sandbox with the allowlist network needs one (``host`` and user mode share
    the host's loopback; ``none`` reaches nothing), only with ``base_url_port = "auto"``,
    only a loopback URL, and only a port not configured already.
    """
    if base is None or mode is not Mode.SANDBOX:
        return None
    endpoint = loopback_endpoint(base.url)
    if endpoint is None:
        return None
    reach = base_url_reach(endpoint[1], network, configured, setting)
    return endpoint[1] if reach is BaseUrlReach.PER_SESSION else None


def base_url_port_problem(port: int, source: str) -> str | None:
    """Why ``port`` (a base URL's) cannot be exposed, or None."""
    if port == SANDBOX_PROXY_PORT:
        return (
            f"{BASE_URL} (from {source}) points at loopback port {port}, the port of the "
            "launcher's egress proxy inside the sandbox; run the API proxy on another port"
        )
    return None


def url_endpoint(url: str) -> tuple[str, int] | str:
    """``(host, port)`` a URL connects to (the scheme's port when it names none), or
    why it names none."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return "it is not a URL with a valid port"
    if not host:
        return "it names no host"
    if port is None:
        port = _DEFAULT_PORTS.get(parts.scheme.lower())
        if port is None:
            return f"its scheme {parts.scheme!r} is not http or https"
    return host, port


def base_url_where(url: str) -> str:
    """``host port N`` of ``url``, never the URL itself (it may carry a token)."""
    endpoint = url_endpoint(url)
    if isinstance(endpoint, str):
        return "an address that is not a usable URL"
    return f"{endpoint[0]} port {endpoint[1]}"


def dropped_claude_names(
    environ: Mapping[str, str], passed: Iterable[str], mode: Mode
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The Claude-related variables (``CLAUDE_*``, ``ANTHROPIC_*``) set in ``environ``
    that the launch did not pass: ``(passable, sandbox claims)``. The first can be
    added with ``--pass-env``; the second the policy never passes in ``mode``. (A name
    that is not a variable name at all is in neither: nothing passes it.)"""
    given = set(passed)
    passable: list[str] = []
    claims: list[str] = []
    for name in sorted(environ):
        if name in given or not name.startswith(CLAUDE_PREFIXES):
            continue
        if pass_name_problem(name, mode) is None:
            passable.append(name)
        elif name in SANDBOX_CLAIMS:
            claims.append(name)
    return tuple(passable), tuple(claims)


def pass_env_command(names: Iterable[str]) -> str:
    """The command that adds ``names`` to ``[env] pass`` and changes nothing else."""
    return remedies.pass_env(names)
