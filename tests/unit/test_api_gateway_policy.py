"""Which credentials the session's API gateway holds, and what Claude gets instead
(docs/design.md invariant 17; the rule is :mod:`sandbox_setup.policy.credentials`)."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from sandbox_setup.base.choices import ApiGateway, Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.launcher.command import Agent, HostFacts, sandbox_launch, user_launch
from sandbox_setup.policy.credentials import (
    DEFAULT_UPSTREAM,
    GatewayChoice,
    GatewaySpec,
    choose_gateway,
    parse_custom_headers,
    placeholder,
)

SECRET = "sk-ant-api03-the-real-secret"
TOKEN = "the-real-token"
AGENT = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
FACTS = HostFacts(legacy_tiocsti=False, root_links=(), resolver_dirs=())
ALL = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
)


def choose(env: dict[str, str], **kw: object) -> GatewayChoice:
    args: dict[str, object] = {"enabled": True, "namespace": None, "port": 3129}
    args.update(kw)
    return choose_gateway(env, tuple(env), "claude-agent", **args)  # type: ignore[arg-type]


def test_the_placeholder_is_the_same_for_an_agent_and_never_the_secret() -> None:
    first = placeholder("claude-agent", "ANTHROPIC_API_KEY")
    assert first == placeholder("claude-agent", "ANTHROPIC_API_KEY")  # every session
    assert first.startswith("sk-ant-api03-sandbox-setup-placeholder-")
    assert first != placeholder("other-agent", "ANTHROPIC_API_KEY")
    assert first != placeholder("claude-agent", "ANTHROPIC_AUTH_TOKEN")
    # Claude keeps the last 20 characters of an approved key: they differ per agent.
    assert first[-20:] != placeholder("other-agent", "ANTHROPIC_API_KEY")[-20:]


def test_an_exported_key_is_held_and_claude_gets_a_placeholder_and_the_gateway() -> None:
    env = {"HOME": "/h", "ANTHROPIC_API_KEY": SECRET}
    choice = choose_gateway(env, ("ANTHROPIC_API_KEY",), "claude-agent", enabled=True,
                            namespace=None, port=3129)  # fmt: skip
    assert choice.spec is not None and choice.why is None
    assert choice.env["ANTHROPIC_API_KEY"] == placeholder("claude-agent", "ANTHROPIC_API_KEY")
    assert choice.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:3129"
    assert choice.spec.upstream == DEFAULT_UPSTREAM
    assert choice.spec.replacements == ((choice.env["ANTHROPIC_API_KEY"], SECRET),)
    assert SECRET not in repr(choice.spec) and SECRET not in choice.env.values()
    assert GatewaySpec.from_wire(choice.spec.to_wire()) == choice.spec


def test_the_operators_base_url_is_the_upstream_and_custom_headers_stay_outside() -> None:
    headers = "X-Gateway-Key: hdr-secret\nbad line\nX-Team: a"
    env = {"ANTHROPIC_AUTH_TOKEN": TOKEN, "ANTHROPIC_BASE_URL": "http://127.0.0.1:10100/",
           "ANTHROPIC_CUSTOM_HEADERS": headers}  # fmt: skip
    choice = choose(env)
    assert choice.spec is not None
    spec = choice.spec
    assert spec is not None
    assert spec.upstream == "http://127.0.0.1:10100"
    assert spec.headers == (("X-Gateway-Key", "hdr-secret"), ("X-Team", "a"))
    assert "ANTHROPIC_CUSTOM_HEADERS" not in choice.env
    assert spec.names == ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_CUSTOM_HEADERS")


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"enabled": False}, 'api_gateway = "off"'),
        ({"namespace": "no network namespace here"}, "no network namespace here"),
        ({"managed": {"ANTHROPIC_BASE_URL": "http://x"}}, "managed settings"),
        ({"managed": {"ANTHROPIC_API_KEY": "k"}}, "managed settings"),
    ],
)
def test_where_the_gateway_cannot_be_the_key_is_passed_and_why_is_said(
    kw: dict[str, object], why: str
) -> None:
    env = {"ANTHROPIC_API_KEY": SECRET}
    choice = choose(env, **kw)
    assert choice.spec is None and why in (choice.why or "")
    assert choice.env == env


def test_nothing_to_hold_without_a_credential_and_no_gateway_to_an_odd_upstream() -> None:
    assert choose({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}).why is None
    odd = choose({"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "ftp://x"})
    assert odd.spec is None and "http" in (odd.why or "")


def test_custom_headers_are_read_as_claude_reads_them() -> None:
    assert parse_custom_headers("A: 1\r\nB:2\n: x\nC D: 3\n") == (("A", "1"), ("B", "2"))


def config(**changes: object) -> LauncherConfig:
    values: dict[str, object] = {
        "mode": Mode.SANDBOX, "claude": PurePosixPath("/c"), "agent_user": "claude-agent",
        "agent_home": PurePosixPath("/home/claude-agent"), "workspaces": (PurePosixPath("/srv/a"),),
        "env_pass": ALL,
    }  # fmt: skip
    values.update(changes)
    return LauncherConfig(**values)  # type: ignore[arg-type]


def test_a_sandbox_launch_with_the_allowlist_holds_the_key_and_says_so() -> None:
    cfg = config(network=Network.ALLOWLIST, loopback_ports=(3129,))
    launch = sandbox_launch(cfg, AGENT, "/c", "/usr/bin/bwrap", "/usr/bin/setpriv", FACTS,
                            {"ANTHROPIC_API_KEY": SECRET}, [], switch_user=True)  # fmt: skip
    assert launch.gateway is not None and launch.gateway.port == 3130  # 3129 is exposed
    assert launch.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:3130"
    assert SECRET not in launch.env.values() and not any(SECRET in a for a in launch.argv)
    assert any("API gateway: ANTHROPIC_API_KEY kept outside" in n.text for n in launch.notes)
    assert launch.warning is None


def test_without_a_namespace_the_key_is_passed_with_a_warning_unless_switched_off() -> None:
    environ = {"ANTHROPIC_API_KEY": SECRET}
    launch = sandbox_launch(config(network=Network.HOST), AGENT, "/c", "/usr/bin/bwrap",
                            "/usr/bin/setpriv", FACTS, environ, [], switch_user=True)  # fmt: skip
    assert launch.gateway is None and launch.env["ANTHROPIC_API_KEY"] == SECRET
    assert "API key passed to Claude as it is" in (launch.warning or "")
    user = user_launch(config(mode=Mode.USER), AGENT, "/c", "/usr/bin/setpriv", environ, [], True)
    assert user.gateway is None and "no network namespace" in (user.warning or "")
    off = config(network=Network.HOST, api_gateway=ApiGateway.OFF)
    quiet = sandbox_launch(off, AGENT, "/c", "/usr/bin/bwrap", "/usr/bin/setpriv", FACTS,
                           environ, [], switch_user=True)  # fmt: skip
    assert quiet.gateway is None and "API key passed" not in (quiet.warning or "")


BASE = """schema = 1
mode = "sandbox"
claude = "/usr/bin/claude"
[agent]
user = "claude-agent"
home = "/home/claude-agent"
[sandbox]
workspaces = ["/srv/app"]
network = "allowlist"
"""


def test_the_switch_is_read_defaults_to_auto_and_survives_a_rewrite() -> None:
    assert parse_launcher_config(BASE).api_gateway is ApiGateway.AUTO  # an old config
    off = BASE + 'api_gateway = "off"  # my key, my risk\n'
    assert parse_launcher_config(off).api_gateway is ApiGateway.OFF
    with pytest.raises(InputError, match=r"sandbox\.api_gateway.*auto, off"):
        parse_launcher_config(BASE + 'api_gateway = "yes"\n')
    fresh = parse_launcher_config(BASE)
    rewritten = render_launcher_config(fresh, off)
    assert 'api_gateway = "off"  # my key, my risk' in rewritten


def test_no_gateway_to_a_loopback_port_the_operator_kept_closed() -> None:
    # base_url_port = "off" and the port not configured: it stays closed, the gateway
    # included (Claude then cannot reach it, as before; the launch says why).
    environ = {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:8317"}
    launch = sandbox_launch(config(network=Network.ALLOWLIST), AGENT, "/c", "/usr/bin/bwrap",
                            "/usr/bin/setpriv", FACTS, environ, [], switch_user=True)  # fmt: skip
    assert launch.gateway is None
    assert "loopback port 8317 is not exposed" in (launch.warning or "")
    exposed = config(network=Network.ALLOWLIST, loopback_ports=(8317,))
    opened = sandbox_launch(exposed, AGENT, "/c", "/usr/bin/bwrap", "/usr/bin/setpriv", FACTS,
                            environ, [], switch_user=True)  # fmt: skip
    assert opened.gateway is not None and opened.gateway.upstream == "http://127.0.0.1:8317"
