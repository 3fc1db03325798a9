"""Table tests of the audit's safety rules (pure judging over gathered facts)."""

from __future__ import annotations

import stat

import pytest

from sandbox_setup.audit.model import Severity
from sandbox_setup.audit.rules import (
    judge_agent_home,
    judge_owned_file,
    judge_parent_dirs,
    judge_password,
    judge_sudoers,
    judge_workspace,
)
from sandbox_setup.base.pathfacts import PathFacts
from sandbox_setup.policy.sudoers import find_sudoers_rules
from sandbox_setup.policy.trust import writable_by_others

FILE = stat.S_IFREG
DIR = stat.S_IFDIR


def facts(mode: int, uid: int = 0, gid: int = 0, kind: int = FILE) -> PathFacts:
    return PathFacts(shown="/x/launcher.toml", exists=True, uid=uid, gid=gid, mode=kind | mode)


@pytest.mark.parametrize(
    ("mode", "uid", "ids"),
    [
        (0o600, 0, []),
        (0o644, 1000, []),  # the operator's own file
        (0o666, 0, ["audit.safety.config_mode"]),
        (0o620, 0, ["audit.safety.config_mode"]),
        (0o644, 4242, ["audit.safety.config_owner"]),
        (0o646, 4242, ["audit.safety.config_owner", "audit.safety.config_mode"]),
    ],
)
def test_owned_file(mode: int, uid: int, ids: list[str]) -> None:
    found = judge_owned_file(facts(mode, uid), {0, 1000}, "audit.safety.config", "config")
    assert [f.id for f in found] == ids
    for finding in found:
        assert "/x/launcher.toml" in finding.summary
        assert "/x/launcher.toml" in finding.remedy


def test_owned_file_missing_is_not_judged_here() -> None:
    assert judge_owned_file(PathFacts("/x", exists=False), {0}, "p", "w") == []


@pytest.mark.parametrize(
    ("mode", "uid", "bad"),
    [
        (0o755, 0, False),
        (0o700, 1000, False),
        (0o1777, 0, False),  # root-owned sticky, like /tmp
        (0o1777, 1000, True),  # sticky but owned by someone else
        (0o777, 0, True),
        (0o775, 0, True),
        (0o755, 4242, True),
    ],
)
def test_parent_dirs(mode: int, uid: int, bad: bool) -> None:
    d = facts(mode, uid, kind=DIR)
    found = judge_parent_dirs([d], {0, 1000}, "audit.safety.config_dir", "the config")
    assert bool(found) is bad
    assert all(f.id == "audit.safety.config_dir" for f in found)


def test_writable_by_others_sticky_file_is_still_writable() -> None:
    assert writable_by_others(facts(0o1666))


@pytest.mark.parametrize(
    ("mode", "uid", "expect"),
    [
        (0o700, 1001, None),
        (0o750, 1001, Severity.MEDIUM),
        (0o700, 0, Severity.MEDIUM),
    ],
)
def test_agent_home(mode: int, uid: int, expect: Severity | None) -> None:
    found = judge_agent_home(facts(mode, uid, kind=DIR), "agent", 1001, 1001)
    assert (found[0].severity if found else None) == expect
    if found:
        assert found[0].id == "audit.safety.agent_home"
        assert "chown 1001:1001" in found[0].remedy


def test_agent_home_missing() -> None:
    found = judge_agent_home(PathFacts("/home/a", exists=False), "a", 1001, 1001)
    assert [f.id for f in found] == ["audit.safety.agent_home"]
    assert "missing" in found[0].summary


@pytest.mark.parametrize(
    ("mode", "access", "ids"),
    [
        (0o2770, True, []),
        (0o2777, True, ["audit.safety.workspace_mode"]),
        (0o2750, False, ["audit.safety.workspace_access"]),
    ],
)
def test_workspace(mode: int, access: bool, ids: list[str]) -> None:
    assert [f.id for f in judge_workspace(facts(mode, kind=DIR), access)] == ids


def test_workspace_missing() -> None:
    found = judge_workspace(PathFacts("/srv/p", exists=False), True)
    assert [f.id for f in found] == ["audit.safety.workspace_missing"]


SHADOW = "root:*:19000:0:99999:7:::\n{line}\nnobody:*:19000:0:99999:7:::\n"


@pytest.mark.parametrize(
    ("entry", "expect"),
    [
        ("agent:!:19000:0:99999:7:::", None),
        ("agent:!$y$j9T$abc:19000:0:99999:7:::", None),
        ("agent:*:19000:0:99999:7:::", None),
        ("agent:$y$j9T$abc$def:19000:0:99999:7:::", Severity.HIGH),
        ("agent::19000:0:99999:7:::", Severity.CRITICAL),
        ("other:$y$x:19000::::::", Severity.MEDIUM),  # no entry for the agent
    ],
)
def test_password(entry: str, expect: Severity | None) -> None:
    found = judge_password(SHADOW.format(line=entry), "agent", "/etc/shadow")
    assert (found[0].severity if found else None) == expect
    assert all(f.id == "audit.safety.password" for f in found)


def test_password_unreadable_shadow_and_prefix_remedy() -> None:
    found = judge_password(None, "agent", "/r/etc/shadow", prefix="/r")
    assert found[0].severity is Severity.MEDIUM
    assert found[0].remedy == "usermod --prefix /r --lock agent"


GROUPS = {"agent": 1001, "workspace": 1002}


@pytest.mark.parametrize(
    ("text", "lines", "nopasswd"),
    [
        ("root ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n", [], []),
        ("agent ALL=(ALL) NOPASSWD: ALL\n", [1], [True]),
        ("# agent ALL=(ALL) ALL\n", [], []),
        ("bob, agent ALL=(ALL) ALL  # temporary\n", [1], [False]),
        ("%workspace ALL=(root) /usr/bin/apt\n", [1], [False]),
        ("%#1001 ALL=(ALL) NOPASSWD: ALL\n", [1], [True]),
        ("#1001 ALL=(ALL) ALL\n", [1], [False]),
        ("ALL ALL=(ALL) NOPASSWD: /bin/true\n", [1], [True]),
        ("User_Alias BOTS = x, agent\nBOTS ALL = NOPASSWD: ALL\n", [2], [True]),
        ("Defaults:agent !requiretty\n", [], []),
        ("agentx ALL=(ALL) ALL\n%agents ALL=ALL\n", [], []),
        ("!agent ALL=(ALL) ALL\n", [], []),
        ("#includedir /etc/sudoers.d\n@includedir /etc/sudoers.d\n", [], []),
        ("agent ALL=(ALL) \\\n   NOPASSWD: ALL\n", [1], [True]),
    ],
)
def test_sudoers(text: str, lines: list[int], nopasswd: list[bool]) -> None:
    hits = find_sudoers_rules({"/etc/sudoers": text}, "agent", 1001, GROUPS)
    assert [h.line for h in hits] == lines
    assert [h.nopasswd for h in hits] == nopasswd


def test_sudoers_alias_across_files_and_finding() -> None:
    files = {
        "/etc/sudoers": "User_Alias BOTS = agent\n",
        "/etc/sudoers.d/bots": "BOTS ALL=(ALL) NOPASSWD: ALL\n",
    }
    found = judge_sudoers(find_sudoers_rules(files, "agent", 1001, GROUPS), "agent")
    assert [f.id for f in found] == ["audit.safety.sudoers"]
    assert found[0].severity is Severity.CRITICAL
    assert "/etc/sudoers.d/bots:1" in found[0].summary
    assert "NOPASSWD" in found[0].summary
    assert "visudo -f /etc/sudoers.d/bots" in found[0].remedy
