"""Judging the sandbox from outside: namespaces, capabilities, no_new_privs, uid."""

from __future__ import annotations

import os

import pytest

from sandbox_setup.launcher.session.supervise import (
    NAMESPACES,
    children_of,
    judge_sandbox,
    parse_child_pid,
    parse_status,
    read_namespaces,
)

HOST = {k: f"{k}:[40265318{i}]" for i, k in enumerate(NAMESPACES)}
CHILD = {k: f"{k}:[40265320{i}]" for i, k in enumerate(NAMESPACES)}
GOOD = {"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "NoNewPrivs": "1",
        "Uid": "1001\t1001\t1001\t1001"}  # fmt: skip


def test_a_good_sandbox_passes() -> None:
    assert judge_sandbox(HOST, CHILD, GOOD, 1001) == []


@pytest.mark.parametrize("kind", NAMESPACES)
def test_each_shared_namespace_fails(kind: str) -> None:
    child = dict(CHILD, **{kind: HOST[kind]})
    problems = judge_sandbox(HOST, child, GOOD, 1001)
    assert problems == [f"{kind} namespace is the launcher's own ({HOST[kind]})"]


def test_unreadable_namespace_fails() -> None:
    child = {k: v for k, v in CHILD.items() if k != "pid"}
    assert judge_sandbox(HOST, child, GOOD, 1001) == [
        "pid namespace of the sandbox could not be read"
    ]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"CapEff": "000001ffffffffff"}, "CapEff"),
        ({"CapPrm": "0000000000000001"}, "CapPrm"),
        ({"NoNewPrivs": "0"}, "NoNewPrivs"),
        ({"Uid": "0\t0\t0\t0"}, "uid"),
        ({"Uid": "1001\t0\t1001\t1001"}, "uid"),
    ],
)
def test_privilege_problems_fail(change: dict[str, str], needle: str) -> None:
    problems = judge_sandbox(HOST, CHILD, dict(GOOD, **change), 1001)
    assert len(problems) == 1 and needle in problems[0]


def test_missing_status_fields_fail() -> None:
    assert len(judge_sandbox(HOST, CHILD, {}, 1001)) == 4


def test_parse_status() -> None:
    fields = parse_status("Name:\tbwrap\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n")
    assert fields == {"Name": "bwrap", "CapEff": "0000000000000000", "NoNewPrivs": "1"}


@pytest.mark.parametrize(
    ("line", "pid"),
    [
        ('{ "child-pid": 4242, "cgroup-namespace": 4026532183, "ipc-namespace": 1 }', 4242),
        ('{ "exit-code": 0 }', None),
        ("not json", None),
        ('{ "child-pid": -1 }', None),
        ('{ "child-pid": "12" }', None),
        ("[1, 2]", None),
    ],
)
def test_parse_child_pid(line: str, pid: int | None) -> None:
    assert parse_child_pid(line) == pid


def test_read_namespaces_and_children_of_this_process() -> None:
    own = read_namespaces("self")
    assert set(own) == set(NAMESPACES)
    assert own["user"].startswith("user:[")
    import subprocess

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert child.pid in children_of(os.getpid())
        assert os.getpid() not in children_of(os.getpid())
    finally:
        child.kill()
        child.wait()
