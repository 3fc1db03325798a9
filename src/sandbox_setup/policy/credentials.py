"""The operator's API credentials stay outside the session (docs/design.md invariant 17).

Where the launch environment holds ``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` or
``CLAUDE_CODE_OAUTH_TOKEN`` (and ``ANTHROPIC_CUSTOM_HEADERS``, where a gateway's own
secret header travels) and the session has a network namespace of its own, the
session's gateway holds them: Claude gets ``ANTHROPIC_BASE_URL`` pointing at the
gateway's listener inside the namespace and a placeholder in place of each secret; the
gateway (run by the egress proxy, out of the agent's reach) forwards Claude's API
requests to the real upstream, with the secret in place of the placeholder in the
credential headers (``x-api-key``, ``Authorization``) and the held custom headers
added. The upstream is the operator's ``ANTHROPIC_BASE_URL`` (a proxy launcher's
loopback port) or Anthropic's API.

The placeholder stays the same for an agent and a variable, whatever the secret: Claude
Code asks once to approve a new custom API key (``customApiKeyResponses`` in its
``~/.claude.json`` keeps the last 20 characters of the keys answered), so a placeholder
that changed at each session would ask at each session.

Not kept outside: a claude.ai login that Claude refreshes itself (its files are the
agent's, copied with ``--copy-login``), and a secret that root's managed settings'
``env`` table holds (Claude reads that file itself, so the agent can too). Both are
said where they are chosen.

This module decides; :mod:`sandbox_setup.launcher.egress.gateway` serves.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# Each credential variable and the prefix its placeholder takes (the same form as the
# real thing, so Claude's own checks of the format hold).
CREDENTIALS: Mapping[str, str] = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-",
    "ANTHROPIC_AUTH_TOKEN": "sk-ant-",
    "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-",
}
CUSTOM_HEADERS = "ANTHROPIC_CUSTOM_HEADERS"
HELD = (*CREDENTIALS, CUSTOM_HEADERS)
BASE_URL = "ANTHROPIC_BASE_URL"
DEFAULT_UPSTREAM = "https://api.anthropic.com"
# The headers whose values may carry a placeholder; nothing else is ever rewritten.
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization"})
# Where the gateway listens inside the session's namespace: the first free port from
# here on (never the proxy's, never an exposed loopback port).
FIRST_GATEWAY_PORT = 3129
PLACEHOLDER_MARK = "sandbox-setup-placeholder-"


COPY_LOGIN_NOTE = (
    "copy_login: the copied claude.ai login is the agent's own file (Claude refreshes it "
    "itself), so the agent can read it; the session's API gateway keeps outside only an "
    "API key or token exported to sandbox-launch (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, "
    "CLAUDE_CODE_OAUTH_TOKEN; claude setup-token makes the last one)"
)


def passed_credential(environ: Mapping[str, str], passed: Sequence[str]) -> str | None:
    """The first key or token variable set in ``environ`` that the launcher passes
    (``passed``: its ``[env] pass``): Claude logs in with it, whatever login the agent's
    home holds. None: none."""
    return next((n for n in CREDENTIALS if n in passed and environ.get(n, "").strip()), None)


def placeholder(agent: str, name: str) -> str:
    """The placeholder Claude gets for credential ``name`` of ``agent``: the same at
    every session (see the module docstring), never derived from the secret."""
    import hashlib  # here: only a launch with a credential to keep out loads OpenSSL

    digest = hashlib.sha256(f"sandbox-setup\0{agent}\0{name}".encode()).hexdigest()[:32]
    return f"{CREDENTIALS[name]}{PLACEHOLDER_MARK}{digest}"


def gateway_port(taken: Sequence[int]) -> int:
    port = FIRST_GATEWAY_PORT
    while port in taken:
        port += 1
    return port


def parse_custom_headers(text: str) -> tuple[tuple[str, str], ...]:
    """``ANTHROPIC_CUSTOM_HEADERS`` as Claude Code reads it: ``Name: value`` lines."""
    found = []
    for line in text.replace("\r", "").split("\n"):
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and name and all(c.isalnum() or c in "-_" for c in name):
            found.append((name, value.strip()))
    return tuple(found)


@dataclass(frozen=True)
class GatewaySpec:
    """What the session's gateway serves: its port inside the namespace, the upstream
    URL, and the secrets (never shown: ``repr`` leaves them out)."""

    port: int
    upstream: str
    replacements: tuple[tuple[str, str], ...] = field(repr=False)  # (placeholder, secret)
    headers: tuple[tuple[str, str], ...] = field(repr=False)  # held custom headers
    names: tuple[str, ...] = ()  # the variables it holds

    def to_wire(self) -> bytes:
        return json.dumps(
            {"port": self.port, "upstream": self.upstream, "names": list(self.names),
             "replacements": [list(r) for r in self.replacements],
             "headers": [list(h) for h in self.headers]}
        ).encode()  # fmt: skip

    @classmethod
    def from_wire(cls, data: bytes) -> GatewaySpec:
        raw = json.loads(data)
        return cls(
            port=int(raw["port"]),
            upstream=str(raw["upstream"]),
            replacements=tuple((str(a), str(b)) for a, b in raw["replacements"]),
            headers=tuple((str(a), str(b)) for a, b in raw["headers"]),
            names=tuple(map(str, raw["names"])),
        )


def upstream_problem(url: str) -> str | None:
    """Why the gateway cannot forward to ``url`` (None: it can)."""
    try:
        split = urllib.parse.urlsplit(url)
        split.port  # noqa: B018 (a bad port raises)
    except ValueError:
        return "ANTHROPIC_BASE_URL is not a URL the gateway can forward to"
    if split.scheme not in ("http", "https") or not split.hostname:
        return "ANTHROPIC_BASE_URL is not an http or https URL"
    if split.query or split.fragment or split.username or split.password:
        return "ANTHROPIC_BASE_URL carries a query, fragment or login the gateway does not forward"
    return None


@dataclass(frozen=True)
class GatewayChoice:
    """The launch's credentials: ``spec`` (None: no gateway) and the environment Claude
    gets; ``why``: why there is no gateway though a credential is passed (None: there is
    one, or nothing to hold)."""

    spec: GatewaySpec | None
    env: Mapping[str, str]
    why: str | None = None


def choose_gateway(
    env: Mapping[str, str],
    passed: Sequence[str],
    agent: str,
    *,
    enabled: bool,
    namespace: str | None,
    port: int,
    managed: Mapping[str, object] | None = None,
) -> GatewayChoice:
    """Hold the passed credentials in the session's gateway where it can be.

    ``enabled``: ``[sandbox] api_gateway`` is ``auto``. ``namespace``: None when the
    session has a network namespace of its own for the gateway to listen in, else why
    not. ``port``: the gateway's port in it. ``managed``: the managed settings' ``env``
    table (Claude applies it over its environment)."""
    held = [name for name in HELD if name in passed and env.get(name)]
    if not any(name in CREDENTIALS for name in held):
        return GatewayChoice(None, env)
    if not enabled:
        return GatewayChoice(None, env, '[sandbox] api_gateway = "off"')
    if namespace is not None:
        return GatewayChoice(None, env, namespace)
    managed = managed or {}
    if BASE_URL in managed or any(name in managed for name in HELD):
        return GatewayChoice(
            None, env, "the managed settings' env names the API's URL or credentials, "
            "which Claude applies over the gateway's",
        )  # fmt: skip
    upstream = env.get(BASE_URL) if BASE_URL in passed and env.get(BASE_URL) else None
    upstream = (upstream or DEFAULT_UPSTREAM).rstrip("/")
    problem = upstream_problem(upstream)
    if problem is not None:
        return GatewayChoice(None, env, problem)
    new = dict(env)
    replacements = []
    for name in held:
        if name in CREDENTIALS:
            fake = placeholder(agent, name)
            replacements.append((fake, env[name]))
            new[name] = fake
    headers = parse_custom_headers(env.get(CUSTOM_HEADERS, "")) if CUSTOM_HEADERS in held else ()
    new.pop(CUSTOM_HEADERS, None)
    new[BASE_URL] = f"http://127.0.0.1:{port}"
    spec = GatewaySpec(port, upstream, tuple(replacements), headers, tuple(held))
    return GatewayChoice(spec, new)


def describe_gateway(choice: GatewayChoice) -> str | None:
    """The launch line's words for the credentials (None: nothing to say)."""
    if choice.spec is not None:
        return (
            f"API gateway: {', '.join(choice.spec.names)} kept outside the sandbox "
            f"(Claude gets a placeholder and ANTHROPIC_BASE_URL=http://127.0.0.1:{choice.spec.port})"
        )
    if choice.why is not None:
        return f"API key passed to Claude as it is, readable by the agent: {choice.why}"
    return None


__all__ = [
    "COPY_LOGIN_NOTE",
    "CREDENTIALS",
    "GatewayChoice",
    "GatewaySpec",
    "choose_gateway",
    "describe_gateway",
    "placeholder",
]
