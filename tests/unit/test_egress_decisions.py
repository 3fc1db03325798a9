"""The egress proxy keeps the policy's answers for a destination asked again (each tunnel
of a keep-alive pool asks the same question), and never past the policy they came from."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sandbox_setup.launcher.egress.limits import DECISIONS_KEPT
from sandbox_setup.launcher.egress.server import EgressProxy
from sandbox_setup.policy.network import EgressPolicy


def _records(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_decision_asked_again_is_logged_again_and_its_addresses_are_fresh(
    tmp_path: Path,
) -> None:
    log = tmp_path / "decisions.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proxy = EgressProxy(EgressPolicy.build(["a.test"]), fd)
        first, addresses = proxy.decide("a.test", 443, "connect", ["203.0.113.7", "203.0.113.8"])
        addresses.pop(0)  # the server pops what it dials
        again, addresses = proxy.decide("a.test", 443, "socks5", ["203.0.113.7", "203.0.113.8"])
    finally:
        os.close(fd)
    assert first == again and again.allowed
    assert addresses == ["203.0.113.7", "203.0.113.8"]
    records = _records(log)
    assert [r["protocol"] for r in records] == ["connect", "socks5"]  # one line per tunnel
    assert all(r["addresses"] == ["203.0.113.7", "203.0.113.8"] for r in records)


def test_a_replaced_policy_is_asked_afresh() -> None:
    proxy = EgressProxy(EgressPolicy.build(["a.test"]), None)
    assert proxy.decide("a.test", 443, "connect", ["203.0.113.7"])[0].allowed
    assert proxy.needs_lookup("a.test", 443)
    # The proxy re-reads the host's addresses: the address is now this host's own.
    proxy.policy = proxy.base_policy.with_host_addresses(["203.0.113.7"])
    decision, addresses = proxy.decide("a.test", 443, "connect", ["203.0.113.7"])
    assert (decision.allowed, decision.rule, addresses) == (False, "host address", [])
    # Another address, another answer: the question includes the resolved addresses.
    assert proxy.decide("a.test", 443, "connect", ["203.0.113.9"])[0].allowed


def test_the_kept_answers_are_bounded_and_still_right() -> None:
    proxy = EgressProxy(EgressPolicy.build(["a.test"]), None)
    for n in range(DECISIONS_KEPT + 10):
        assert not proxy.decide(f"b{n}.test", 443, "connect", ["203.0.113.7"])[0].allowed
        assert not proxy.needs_lookup(f"b{n}.test", 443)  # refused before any lookup
    assert len(proxy._decisions) <= DECISIONS_KEPT
    assert len(proxy._lookups) <= DECISIONS_KEPT
    assert proxy.decide("a.test", 443, "connect", ["203.0.113.7"])[0].allowed
