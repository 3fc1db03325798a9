"""What reaches Claude from the caller's environment, and the base-URL-on-loopback
hint: the pure rules of sandbox_setup.policy.environment."""

from __future__ import annotations

import pytest

from sandbox_setup.base.choices import BaseUrlPort, Mode, Network
from sandbox_setup.policy.environment import (
    DEFAULT_PASS,
    BaseUrlReach,
    base_url_plan_note,
    base_url_reach,
    loopback_endpoint,
    loopback_port_hint,
    pass_name_problem,
    passed_names,
    select_passed,
)


def test_defaults_name_the_endpoint_the_login_and_the_models_only() -> None:
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        assert name in DEFAULT_PASS
    assert "CLAUDE_CODE_OAUTH_TOKEN" in DEFAULT_PASS and "ANTHROPIC_MODEL" in DEFAULT_PASS
    # Cloud provider switches need the cloud's account-wide keys: explicit, not default.
    for name in ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "AWS_SECRET_ACCESS_KEY"):
        assert name not in DEFAULT_PASS
    assert len(set(DEFAULT_PASS)) == len(DEFAULT_PASS)
    for mode in Mode:
        assert all(pass_name_problem(name, mode) is None for name in DEFAULT_PASS)


def test_exactly_the_listed_and_set_variables_pass() -> None:
    environ = {"ANTHROPIC_API_KEY": "k", "GITHUB_TOKEN": "g", "MY_EXTRA": "x", "EMPTY": ""}
    passed, ignored = select_passed(
        ["ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "MY_EXTRA", "EMPTY", "MY_EXTRA"],
        environ,
        Mode.SANDBOX,
    )
    assert passed == {"ANTHROPIC_API_KEY": "k", "MY_EXTRA": "x", "EMPTY": ""}
    assert ignored == ()


@pytest.mark.parametrize(
    ("name", "mode", "refused"),
    [
        ("IS_SANDBOX", Mode.SANDBOX, True),
        ("CLAUDE_CODE_BUBBLEWRAP", Mode.SANDBOX, True),
        ("IS_SANDBOX", Mode.USER, False),
        ("LD_PRELOAD", Mode.USER, True),
        ("HOME", Mode.USER, True),
        ("HTTPS_PROXY", Mode.SANDBOX, True),
    ],
)
def test_a_hand_edited_list_never_passes_what_the_policy_refuses(
    name: str, mode: Mode, refused: bool
) -> None:
    passed, ignored = select_passed([name], {name: "1"}, mode)
    assert (name not in passed) is refused
    assert bool(ignored) is refused


def test_passed_names_keeps_defaults_first() -> None:
    assert passed_names(["X_1", "ANTHROPIC_API_KEY"]) == (*DEFAULT_PASS, "X_1")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8317", ("127.0.0.1", 8317)),
        ("http://127.1.2.3:9/v1", ("127.1.2.3", 9)),
        ("http://localhost:3456/", ("localhost", 3456)),
        ("https://LocalHost.", ("localhost", 443)),
        ("http://gw.localhost:8080", ("gw.localhost", 8080)),
        ("http://[::1]:8080", ("::1", 8080)),
        ("http://[::ffff:127.0.0.1]:81", ("::ffff:127.0.0.1", 81)),
        ("http://user:token@127.0.0.1", ("127.0.0.1", 80)),
        ("https://api.anthropic.com", None),
        ("http://10.0.0.5:8080", None),
        ("http://0.0.0.0:8080", ("0.0.0.0", 8080)),  # connecting to it reaches this host
        ("http://localhost.example.com:1", None),
        ("http://127.0.0.1:99999", None),
        ("ftp://127.0.0.1", None),
        ("not a url", None),
        ("", None),
    ],
)
def test_loopback_endpoint(url: str, expected: tuple[str, int] | None) -> None:
    assert loopback_endpoint(url) == expected


OFF = BaseUrlPort.OFF
NAMES = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
LOCAL = {"ANTHROPIC_BASE_URL": "http://user:s3cret@127.0.0.1:8317/anthropic"}


def test_the_allowlist_needs_the_port_and_the_hint_names_it_not_the_url() -> None:
    hint = loopback_port_hint(LOCAL, NAMES, Network.ALLOWLIST, (), OFF)
    assert hint is not None and "--allow-loopback-port 8317" in hint
    assert "s3cret" not in hint and "/anthropic" not in hint
    assert loopback_port_hint(LOCAL, NAMES, Network.ALLOWLIST, (8317,), OFF) is None


def test_with_base_url_port_auto_no_remedy_since_each_launch_exposes_it() -> None:
    # The launcher exposes the base URL's port for each session (base_url_port = "auto",
    # its default): no hint tells the operator to open it for good; the plan's note
    # says what the launcher does, from the same decision (base_url_reach).
    auto = BaseUrlPort.AUTO
    assert loopback_port_hint(LOCAL, NAMES, Network.ALLOWLIST, (), auto) is None
    assert base_url_reach(8317, Network.ALLOWLIST, (), auto) is BaseUrlReach.PER_SESSION
    assert base_url_reach(8317, Network.ALLOWLIST, (), OFF) is BaseUrlReach.CLOSED
    assert base_url_reach(8317, Network.ALLOWLIST, (8317,), OFF) is BaseUrlReach.CONFIGURED
    assert base_url_reach(8317, Network.HOST, (), OFF) is BaseUrlReach.SHARED
    assert base_url_reach(8317, Network.NONE, (), auto) is BaseUrlReach.NO_NETWORK
    note = base_url_plan_note(LOCAL, NAMES, Network.ALLOWLIST, (), auto)
    assert note is not None and "for that session" in note
    assert "--allow-loopback-port" not in note and "s3cret" not in note
    assert base_url_plan_note(LOCAL, NAMES, Network.ALLOWLIST, (8317,), auto) is None
    closed = base_url_plan_note(LOCAL, NAMES, Network.ALLOWLIST, (), OFF)
    assert closed is not None and "--allow-loopback-port 8317" in closed


def test_no_network_cannot_reach_it_and_host_network_can() -> None:
    hint = loopback_port_hint(LOCAL, NAMES, Network.NONE, (), OFF)
    assert hint is not None and "no network" in hint
    assert loopback_port_hint(LOCAL, NAMES, Network.HOST, (), OFF) is None


def test_no_hint_when_the_url_is_not_passed_or_not_local() -> None:
    assert loopback_port_hint(LOCAL, ("ANTHROPIC_API_KEY",), Network.ALLOWLIST, (), OFF) is None
    remote = {"ANTHROPIC_BASE_URL": "https://gateway.example.com"}
    assert loopback_port_hint(remote, NAMES, Network.ALLOWLIST, (), OFF) is None
    assert loopback_port_hint({}, NAMES, Network.ALLOWLIST, (), OFF) is None
