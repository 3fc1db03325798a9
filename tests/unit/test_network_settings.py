"""Claude's inner sandbox uses the launcher's proxy: sandbox.network.*ProxyPort in the settings."""

from __future__ import annotations

import json

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.configure.settings import SandboxKeys, merge_settings
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT, inner_proxy_port

SOURCE = "/etc/claude-code/managed-settings.json"
PORTS = {"httpProxyPort": SANDBOX_PROXY_PORT, "socksProxyPort": SANDBOX_PROXY_PORT}
STRICT = {"strictAllowlist": True}  # written wherever the inner sandbox is on


def keys(mode: str, network: str, inner: str) -> SandboxKeys:
    return SandboxKeys(inner_sandbox=inner, proxy_port=inner_proxy_port(mode, network, inner))


def merged(existing: dict[str, object] | None, mode: str, network: str, inner: str) -> bytes:
    raw = None if existing is None else json.dumps(existing, indent=2).encode()
    return merge_settings(raw, SOURCE, keys(mode, network, inner))


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
    written = dict(data["sandbox"].get("network", {}))
    assert written.pop("strictAllowlist", None) is (True if inner != "off" else None)
    assert (written == PORTS) is wanted
    assert inner_proxy_port(mode, network, inner) == (SANDBOX_PROXY_PORT if wanted else None)


def test_the_users_network_keys_are_kept_and_ours_overwritten() -> None:
    existing = {"sandbox": {"network": {"allowedDomains": ["x.test"], "httpProxyPort": 9}}}
    data = json.loads(merged(existing, "sandbox", "allowlist", "strong"))
    assert data["sandbox"]["network"] == {"allowedDomains": ["x.test"], **STRICT, **PORTS}


def test_leaving_the_allowlist_removes_our_ports_but_not_the_users() -> None:
    ours = {"sandbox": {"enabled": True, "network": dict(PORTS)}}
    data = json.loads(merged(ours, "sandbox", "host", "strong"))
    assert data["sandbox"]["network"] == STRICT  # our ports removed
    theirs = {"sandbox": {"network": {"httpProxyPort": 8888, "socksProxyPort": 3128}}}
    data = json.loads(merged(theirs, "sandbox", "host", "strong"))
    assert data["sandbox"]["network"] == {"httpProxyPort": 8888, **STRICT}
    empty = {"sandbox": {"network": {}}}  # the user's own empty table stays
    assert json.loads(merged(empty, "sandbox", "host", "off"))["sandbox"]["network"] == {}
    data = json.loads(merged(ours, "sandbox", "host", "off"))
    assert "network" not in data["sandbox"]  # emptied by us: removed


def test_an_apply_that_changes_nothing_rewrites_nothing() -> None:
    once = merged(None, "sandbox", "allowlist", "strong")
    assert merge_settings(once, SOURCE, keys("sandbox", "allowlist", "strong")) is once


def test_a_network_key_that_is_not_an_object_is_an_error_naming_the_file() -> None:
    bad = json.dumps({"sandbox": {"network": [1]}}).encode()
    for mode, network in (("sandbox", "allowlist"), ("sandbox", "host")):
        with pytest.raises(InputError, match=r"managed-settings\.json: key 'sandbox\.network'"):
            merge_settings(bad, SOURCE, keys(mode, network, "strong"))
