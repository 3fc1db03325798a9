"""Which base URL a launch uses, from where, and the one loopback port it exposes for
it (issue 28): the rule (policy), the config switch, the managed settings reader and
the reachability check."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import BaseUrlPort, Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.launcher.base_url import managed_env, unreachable
from sandbox_setup.launcher.notice import network_policy
from sandbox_setup.policy.environment import (
    FROM_CALLER,
    FROM_MANAGED,
    BaseUrl,
    base_url_in_effect,
    base_url_port,
    base_url_port_problem,
    base_url_where,
    dropped_claude_names,
    pass_env_command,
)

AUTO, OFF = BaseUrlPort.AUTO, BaseUrlPort.OFF


def test_the_managed_settings_win_over_the_caller_as_in_claude_code() -> None:
    caller = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8317"}
    managed = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9000"}
    assert base_url_in_effect(caller) == BaseUrl("http://127.0.0.1:8317", FROM_CALLER)
    assert base_url_in_effect(caller, managed) == BaseUrl("http://127.0.0.1:9000", FROM_MANAGED)
    assert base_url_in_effect({}, {"ANTHROPIC_BASE_URL": 17}) is None  # not a string
    assert base_url_in_effect({"ANTHROPIC_BASE_URL": " "}) is None


@pytest.mark.parametrize(
    ("url", "port"),
    [
        ("http://127.0.0.1:8317", 8317),
        ("http://127.3.4.5:10100/anthropic", 10100),
        ("http://[::1]:4000", 4000),
        ("http://localhost:4001", 4001),
        ("http://user:token@LOCALHOST.:4002", 4002),
        ("http://127.0.0.1", 80),
        ("https://api.anthropic.com", None),  # not loopback: the proxy's allowlist decides
        ("http://10.0.0.5:8317", None),
        ("http://127.0.0.1:99999", None),  # not a port
    ],
)
def test_only_a_loopback_base_url_exposes_its_port(url: str, port: int | None) -> None:
    base = BaseUrl(url, FROM_CALLER)
    assert base_url_port(base, Mode.SANDBOX, Network.ALLOWLIST, AUTO, ()) == port


def test_the_port_is_exposed_only_where_it_is_needed_and_allowed() -> None:
    base = BaseUrl("http://127.0.0.1:8317", FROM_CALLER)
    assert base_url_port(base, Mode.SANDBOX, Network.ALLOWLIST, OFF, ()) is None  # switched off
    assert base_url_port(base, Mode.SANDBOX, Network.ALLOWLIST, AUTO, (8317,)) is None  # there
    assert base_url_port(base, Mode.SANDBOX, Network.HOST, AUTO, ()) is None  # host's loopback
    assert base_url_port(base, Mode.SANDBOX, Network.NONE, AUTO, ()) is None  # none: nothing
    assert base_url_port(base, Mode.USER, Network.ALLOWLIST, AUTO, ()) is None  # host network
    assert base_url_port(None, Mode.SANDBOX, Network.ALLOWLIST, AUTO, ()) is None
    assert base_url_port_problem(3128, FROM_CALLER) is not None  # the proxy's own port
    assert base_url_port_problem(8317, FROM_CALLER) is None


def test_the_notice_names_the_port_and_where_it_came_from() -> None:
    text = network_policy(Mode.SANDBOX, Network.ALLOWLIST, (), (5432, 8317), exposed=8317)
    assert text.endswith(
        "host loopback ports 5432, 8317 (from ANTHROPIC_BASE_URL, this session only))"
    )


def test_where_never_repeats_the_url() -> None:
    assert base_url_where("http://u:s3cret@127.0.0.1:8317/x?key=s3cret") == "127.0.0.1 port 8317"
    assert base_url_where("https://gw.example") == "gw.example port 443"


def test_dropped_names_are_the_claude_related_ones_not_passed() -> None:
    environ = {
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "1",
        "ANTHROPIC_BETAS": "x",
        "ANTHROPIC_API_KEY": "k",
        "CLAUDE_CODE_BUBBLEWRAP": "1",
        "GITHUB_TOKEN": "t",
        "CLAUDE_\x1b[31mX": "not a variable name",
    }
    passable, refused = dropped_claude_names(environ, ["ANTHROPIC_API_KEY"], Mode.SANDBOX)
    assert passable == ("ANTHROPIC_BETAS", "CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    assert refused == ("CLAUDE_CODE_BUBBLEWRAP",)
    assert pass_env_command(passable) == (
        "sandbox-setup --headless --pass-env ANTHROPIC_BETAS "
        "--pass-env CLAUDE_CODE_AUTO_COMPACT_WINDOW --yes"
    )


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
    assert parse_launcher_config(BASE).base_url_port is AUTO
    off = BASE + 'base_url_port = "off"  # my proxy stays closed\n'
    config = parse_launcher_config(off)
    assert config.base_url_port is OFF
    with pytest.raises(InputError, match=r"sandbox\.base_url_port.*auto, off"):
        parse_launcher_config(BASE + 'base_url_port = "yes"\n')
    # An apply rewrites from its answers (which have no such key): the operator's
    # switch and its comment stay.
    fresh = LauncherConfig(
        mode=Mode.SANDBOX, claude=PurePosixPath("/usr/bin/claude"), agent_user="claude-agent",
        agent_home=PurePosixPath("/home/claude-agent"), workspaces=(PurePosixPath("/srv/app"),),
        network=Network.ALLOWLIST,
    )  # fmt: skip
    rewritten = render_launcher_config(fresh, off)
    assert 'base_url_port = "off"  # my proxy stays closed' in rewritten
    assert parse_launcher_config(rewritten).base_url_port is OFF


def test_managed_settings_count_only_when_root_owns_and_guards_them(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the file must be root's to count")
    directory = tmp_path / "claude-code"
    directory.mkdir(mode=0o755)
    path = directory / "managed-settings.json"
    path.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9000"}}))
    path.chmod(0o644)
    tmp_path.chmod(0o755)
    assert managed_env(path) == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9000"}
    path.chmod(0o666)  # anyone may write it: it counts for nothing
    assert managed_env(path) is None
    path.chmod(0o644)
    os.chown(path, 65534, 65534)  # not root's
    assert managed_env(path) is None
    assert managed_env(directory / "absent.json") is None


def test_a_closed_port_is_unreachable_and_an_open_one_is_not() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert unreachable(f"http://127.0.0.1:{port}") is None
    started = time.monotonic()
    why = unreachable(f"http://127.0.0.1:{port}")
    assert why is not None and "nothing answers there" in why
    assert time.monotonic() - started < 1
    assert unreachable("http://") == "it names no host"
