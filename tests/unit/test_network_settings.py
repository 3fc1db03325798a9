"""Claude's inner sandbox uses the launcher's proxy: sandbox.network.*ProxyPort in the settings."""

from __future__ import annotations

import json

import pytest

from wizard.base.errors import InputError
from wizard.configure.network_settings import merge_network_settings, network_settings
from wizard.configure.settings import merge_settings
from wizard.policy.network import SANDBOX_PROXY_PORT

SOURCE = "/etc/claude-code/managed-settings.json"
PORTS = {"httpProxyPort": SANDBOX_PROXY_PORT, "socksProxyPort": SANDBOX_PROXY_PORT}


def merged(existing: dict[str, object] | None, mode: str, network: str, inner: str) -> bytes:
    raw = None if existing is None else json.dumps(existing, indent=2).encode()
    first = merge_settings(raw, SOURCE, inner_sandbox=inner)
    return merge_network_settings(first, SOURCE, mode, network, inner)


@pytest.mark.parametrize(
    ("mode", "network", "inner", "wanted"),
    [
        ("sandbox", "allowlist", "strong", True),
        ("sandbox", "allowlist", "weak", True),
        ("sandbox", "allowlist", "off", False),  # no inner sandbox, no proxy of its own
        ("sandbox", "host", "strong", False),
        ("sandbox", "none", "strong", False),
        ("user", "host", "strong", False),
        ("unsafe", "host", "strong", False),
    ],
)
def test_the_ports_are_written_only_for_the_allowlist_with_the_inner_sandbox_on(
    mode: str, network: str, inner: str, wanted: bool
) -> None:
    data = json.loads(merged(None, mode, network, inner))
    assert (data["sandbox"].get("network") == PORTS) is wanted
    assert network_settings(mode, network, inner) == ({"network": PORTS} if wanted else {})


def test_the_users_network_keys_are_kept_and_ours_overwritten() -> None:
    existing = {"sandbox": {"network": {"allowedDomains": ["x.test"], "httpProxyPort": 9}}}
    data = json.loads(merged(existing, "sandbox", "allowlist", "strong"))
    assert data["sandbox"]["network"] == {"allowedDomains": ["x.test"], **PORTS}


def test_leaving_the_allowlist_removes_our_ports_but_not_the_users() -> None:
    ours = {"sandbox": {"enabled": True, "network": dict(PORTS)}}
    data = json.loads(merged(ours, "sandbox", "host", "strong"))
    assert "network" not in data["sandbox"]  # emptied by us: removed
    theirs = {"sandbox": {"network": {"httpProxyPort": 8888, "socksProxyPort": 3128}}}
    data = json.loads(merged(theirs, "sandbox", "host", "strong"))
    assert data["sandbox"]["network"] == {"httpProxyPort": 8888}


def test_an_apply_that_changes_nothing_rewrites_nothing() -> None:
    once = merged(None, "sandbox", "allowlist", "strong")
    assert merge_network_settings(once, SOURCE, "sandbox", "allowlist", "strong") is once
    again = merge_settings(once, SOURCE, inner_sandbox="strong")
    assert merge_network_settings(again, SOURCE, "sandbox", "allowlist", "strong") == once


def test_a_network_key_that_is_not_an_object_is_an_error_naming_the_file() -> None:
    bad = json.dumps({"sandbox": {"network": [1]}}).encode()
    with pytest.raises(InputError, match=r"managed-settings\.json: key 'sandbox\.network'"):
        merge_network_settings(bad, SOURCE, "sandbox", "allowlist", "strong")
