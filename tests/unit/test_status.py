"""``sandbox-setup --status``: the pure parts (the refusal rule, a session's refusals from
the proxy's log records, the bounded history, the text) and its headless import.

The real session it reports on: tests/integration/test_launch_network.py
(test_status_names_the_session_and_its_refusals_with_the_allowing_command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_setup.boundary.session_history import (
    HISTORY,
    EndCheck,
    PastSession,
    append_history,
    read_history,
)
from sandbox_setup.commands.status import SCHEMA, refusals, render_lines
from sandbox_setup.policy.network import refusal_remedy
from sandbox_setup.policy.network_words import refusal_words
from tests.tools import SRC

ALLOW = "sandbox-setup --headless --allow-domain {} --yes"


@pytest.mark.parametrize(
    ("host", "port", "rule", "command"),
    [
        ("denied.test", 80, "not allowlisted", ALLOW.format("denied.test:80")),
        ("Denied.Test.", 443, "not allowlisted", ALLOW.format("denied.test:443")),
        ("169.254.169.254", 80, "address not allowlisted", None),
        ("169.254.169.254", 80, "not allowlisted", None),  # an address, whatever the rule
        ("10.0.0.5", 80, "not allowlisted", None),
        ("::1", 80, "not allowlisted", None),
        ("localhost", 80, "not allowlisted", None),
        ("db.localhost", 5432, "not allowlisted", None),
        ("metadata.google.internal", 80, "not allowlisted", None),
        ("metadata.allowed.test", 80, "cloud metadata", None),  # refused where it resolves
        ("private.allowed.test", 80, "private", None),
        ("nowhere.allowed.test", 80, "unresolved", None),  # allowed already
        ("x\x1b[31m.test", 80, "malformed", None),
        ("x\x1b[31m.test", 80, "not allowlisted", None),  # never a pattern
    ],
)
def test_the_allowing_command_only_for_names(
    host: str, port: int, rule: str, command: str | None
) -> None:
    assert refusal_remedy(host, port, rule) == command


def test_the_reasons_are_the_typed_rules_in_words() -> None:
    assert refusal_words("not allowlisted") == "not on the allowlist"
    assert refusal_words("unresolved") == "did not resolve"
    assert refusal_words("cloud metadata") == "a cloud metadata address"


def _decision(host: str, port: int, rule: str, launcher: int, time: str) -> dict[str, object]:
    return {"event": "decision", "host": host, "port": port, "rule": rule,
            "allowed": False, "launcher": launcher, "time": time}  # fmt: skip


def test_a_sessions_refusals_are_its_launchers_within_its_time() -> None:
    start = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    entries = [
        _decision("denied.test", 80, "not allowlisted", 42, "2027-01-15T08:00:05Z"),
        _decision("denied.test", 80, "not allowlisted", 42, "2027-01-15T08:00:06Z"),
        _decision("nowhere.test", 443, "unresolved", 42, "2027-01-15T08:00:07Z"),
        _decision("0.0.0.0", 9, "unspecified", 42, "2027-01-15T08:00:01Z"),  # start-up probe
        _decision("other.test", 80, "not allowlisted", 43, "2027-01-15T08:00:05Z"),  # another
        _decision("late.test", 80, "not allowlisted", 42, "2027-01-15T09:00:00Z"),  # pid reused
        {"event": "decision", "host": "ok.test", "port": 443, "allowed": True, "launcher": 42,
         "rule": "allowlisted", "time": "2027-01-15T08:00:05Z"},
        {"event": "session start", "launcher": 42, "time": "2027-01-15T08:00:00Z"},
    ]  # fmt: skip
    found = refusals(entries, 42, start, start + 60)
    assert [(r["asked_for"]["host"], r["count"], r["rule"]) for r in found] == [
        ("denied.test", 2, "not allowlisted"),
        ("nowhere.test", 1, "unresolved"),
    ]
    assert found[0]["allow_command"] == ALLOW.format("denied.test:80")
    assert found[1]["allow_command"] is None and found[1]["reason"] == "did not resolve"


def _past(n: int) -> PastSession:
    return PastSession(
        session=f"s{n}", pid=100 + n, state="/root/.local/state/sandbox-setup",
        config="/etc/sandbox-setup/launcher.toml", agent="claude-agent", mode="sandbox",
        workspaces=("/srv/app",), started=1000.0 + n, ended=1010.0 + n, exit_code=0,
        end_check=EndCheck(True, 0, None),
    )  # fmt: skip


def test_the_history_keeps_the_last_sessions_private(tmp_path: Path) -> None:
    for n in range(7):
        append_history(tmp_path, _past(n), keep=5)
    assert [s.session for s in read_history(tmp_path)] == ["s2", "s3", "s4", "s5", "s6"]
    assert (tmp_path / HISTORY).stat().st_mode & 0o777 == 0o600
    (tmp_path / HISTORY).chmod(0o620)
    with pytest.raises(ValueError, match="group- or world-writable"):
        read_history(tmp_path)


def test_a_history_that_is_not_one_is_said(tmp_path: Path) -> None:
    (tmp_path / HISTORY).write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a sandbox-setup-session-history-1"):
        read_history(tmp_path)
    assert read_history(tmp_path / "none") == []


def _doc(host: str) -> dict[str, object]:
    refusal = {"asked_for": {"host": host, "port": 80}, "count": 3, "rule": "not allowlisted",
               "reason": "not on the allowlist",
               "allow_command": refusal_remedy(host, 80, "not allowlisted",
                                               "/a/very/long/root/path/for/the/test")}  # fmt: skip
    past = {"session": "s", "pid": 1, "agent": "a", "mode": "sandbox", "workspaces": ["/srv/w"],
            "start": "2027-01-15T08:00:00Z", "duration_seconds": 3.0, "exit_code": 0,
            "end_check": {"complete": True, "moved_aside": 0, "quarantine": None},
            "refused": [refusal]}  # fmt: skip
    setup = {"config": "/etc/sandbox-setup/launcher.toml", "state_dir": "/s", "operator": "root",
             "in_host_record": True, "applies": 1, "problem": None, "agent": "a",
             "mode": "sandbox", "workspaces": ["/srv/w"], "claude": "/c", "inner_sandbox": "strong",
             "network": None, "passed_variables": [],
             "host_changes": {"made": [], "relies_on": []},
             "sessions": {"running": [], "recent": [past]}}  # fmt: skip
    return {"schema": SCHEMA, "host": {"root": "/", "shim": {"path": "/p", "installed": True}},
            "setups": [setup], "other_sessions": {"running": [], "recent": []},
            "problems": []}  # fmt: skip


def test_the_text_keeps_each_command_whole_and_escapes_what_the_agent_asked_for() -> None:
    text = [line.plain for line in render_lines(_doc("a-rather-long-name.example.com"), 40)]
    command = ALLOW.format("a-rather-long-name.example.com:80").replace(
        " --yes", " --root /a/very/long/root/path/for/the/test --yes"
    )
    assert f"      to allow it: {command}" in text
    wide = " ".join(" ".join(t.split()) for t in text)
    assert "3x the agent asked for a-rather-long-name.example.com:80: not on the allowlist" in wide
    escaped = [line.plain for line in render_lines(_doc("x\x1b]0;pwned\x07\n.test"), 80)]
    assert not any("\x1b" in t or "\x07" in t for t in escaped)
    assert any("the agent asked for x\\x1b]0;pwned\\x07\\n.test:80" in t for t in escaped)
    assert not any("to allow it" in t for t in escaped)


def test_status_imports_no_textual_and_prints_schema_1(tmp_path: Path) -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv = ['sandbox-setup', '--status', '--json', '--root', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('sandbox_setup', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    print('EXIT', exc.code, file=sys.stderr)\n"
        "    print('TEXTUAL', sorted(m for m in sys.modules if m.split('.')[0] == 'textual'),"
        " file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert "EXIT 0" in result.stderr, result.stderr
    assert "TEXTUAL []" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == 1 and doc["setups"] == [] and doc["host"]["root"] == str(tmp_path)
