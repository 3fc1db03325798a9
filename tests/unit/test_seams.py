"""Test seams are arguments, never the environment (issue 23).

Production code reads no ``*_TEST_*`` variable: what a test replaces (the egress
proxy's resolver, a failing step, a pause in an apply) is passed to the real entry
points by the programs in :mod:`tests.seams`. These tests keep it that way and check
those programs' own parsing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox_setup.configure.apply import ApplySeams
from sandbox_setup.launcher.egress.server import EgressProxy, resolve_by_dns
from sandbox_setup.launcher.seams import REAL, LaunchSeams
from sandbox_setup.launcher.session.supervise import launcher_namespaces, read_namespaces
from sandbox_setup.policy.network import EgressPolicy
from tests.seams import launch_with_seams, setup_with_seams
from tests.tools import SRC

# An environment variable's name with TEST as one of its words: SANDBOX_LAUNCH_TEST_RESOLVE,
# SANDBOX_SETUP_TEST_PAUSE_AFTER, TEST_BREAK_ENV, ...
TEST_NAME = re.compile(r"\b[A-Z][A-Z0-9_]*_TEST(?:_[A-Z0-9]+)*\b|\bTEST_[A-Z0-9_]*ENV\b")


def test_no_production_code_names_a_test_variable() -> None:
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".tcss", ".toml", ".json", ".sh", "")
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if TEST_NAME.search(line)
    ]
    assert found == [], "production code names a test hook variable:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        'TEST_RESOLVE_ENV = "SANDBOX_LAUNCH_TEST_RESOLVE"',
        'os.environ.get("SANDBOX_SETUP_TEST_PAUSE_AFTER")',
        'environ.get("MY_TEST_HOOK") == "1"',
        'if os.environ.get("FOO_TEST"):',
    ],
)
def test_the_grep_catches_a_hook(line: str) -> None:
    assert TEST_NAME.search(line)


@pytest.mark.parametrize("line", ["def test_pause(count):", "CONTEST_ENTRY = 1", "LATEST_X = 2"])
def test_the_grep_leaves_other_names(line: str) -> None:
    assert not TEST_NAME.search(line)


def test_the_real_seams_replace_nothing() -> None:
    assert LaunchSeams() == REAL
    assert (REAL.resolver, REAL.after_proxy_drop, REAL.host_namespaces) == (None, None, None)
    assert ApplySeams() == ApplySeams(after_change=None, before_rename=None)
    assert launcher_namespaces(12345, ("user", "pid")) == read_namespaces("self", ("user", "pid"))


def test_the_proxy_resolves_through_the_resolver_it_is_given() -> None:
    asked = []

    def resolver(name: str, port: int) -> list[str]:
        asked.append((name, port))
        return ["203.0.113.7", "::1", "203.0.113.7"]

    proxy = EgressProxy(EgressPolicy.build(["a.test"]), None, resolver)
    # the name normalized, the answer without duplicates, in the resolver's order
    assert proxy.resolve("A.Test.", 443) == ["203.0.113.7", "::1"]
    assert asked == [("a.test", 443)]
    assert EgressProxy(EgressPolicy.build([]), None).resolver is resolve_by_dns


def test_a_resolver_answer_still_passes_the_address_rules() -> None:
    proxy = EgressProxy(EgressPolicy.build(["a.test"]), None, lambda name, port: ["127.0.0.1"])
    decision, addresses = proxy.decide("a.test", 443, "http", proxy.resolve("a.test", 443))
    assert not decision.allowed
    assert decision.rule == "loopback"
    assert addresses == []  # nothing to dial


def test_the_launch_seams_program_builds_the_seams(tmp_path: Path) -> None:
    names = tmp_path / "map.json"
    names.write_text('{"A.test": ["203.0.113.10", "::1"]}')
    seams, rest = launch_with_seams.parse_seams(
        [f"--seam-resolve={names}", "--seam-corrupt-verify", "--config", "c.toml", "--", "-p"]
    )
    assert rest == ["--config", "c.toml", "--", "-p"]
    assert seams.resolver is not None and seams.host_namespaces is not None
    assert list(seams.resolver("a.test", 443)) == ["203.0.113.10", "::1"]
    assert list(seams.resolver("b.test", 443)) == []
    assert seams.after_proxy_drop is None
    assert launch_with_seams.parse_seams(["--seam-break-proxy"])[0].after_proxy_drop is not None
    assert launch_with_seams.parse_seams(["--config", "--seam-break-proxy"]) == (
        LaunchSeams(),
        ["--config", "--seam-break-proxy"],
    )  # only leading options are seams


@pytest.mark.parametrize("content", ["nope", '["a"]', '{"a": "1.2.3.4"}', '{"a": ["x"]}'])
def test_a_broken_resolve_map_is_refused(tmp_path: Path, content: str) -> None:
    bad = tmp_path / "map.json"
    bad.write_text(content)
    with pytest.raises(ValueError):
        launch_with_seams.load_resolve_map(bad)


def test_the_setup_seams_program_builds_the_seams() -> None:
    seams, rest = setup_with_seams.parse_seams(["--seam-pause-after=3", "--headless", "--yes"])
    assert rest == ["--headless", "--yes"] and seams.after_change is not None
    seams.after_change(2)  # not yet: returns
    seams, _ = setup_with_seams.parse_seams(["--seam-pause-in-write=launcher.toml"])
    assert seams.before_rename is not None
    seams.before_rename(Path("/etc/other.toml"))  # another file: returns
    with pytest.raises(SystemExit):
        setup_with_seams.parse_seams(["--seam-pause-after=x"])
