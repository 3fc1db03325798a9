"""The agent-account rules (docs/design.md invariant 9), table-tested as pure functions, and
the pieces around them: the per-setup group name, login.defs, the ledger's merge."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.login_defs import uid_range_from_text
from sandbox_setup.configure.ledger import SetupRecord, parse_ledger, render_ledger, users_of
from sandbox_setup.policy.accounts import (
    LAUNCH_RULES,
    AccountFacts,
    AccountRule,
    PasswordState,
    agent_account_problems,
    launch_agent_problems,
    new_agent_name_problem,
    service_signs,
    workspace_group,
)
from sandbox_setup.policy.sudoers import SudoersHit


def facts(**changes: object) -> AccountFacts:
    base: dict[str, object] = {
        "name": "agent",
        "uid": 1500,
        "home": "/home/agent",
        "shell": "/bin/bash",
        "password": PasswordState.LOCKED,
        "groups": {"agent": 1500},
        "sudoers": (),
        "uid_min": 1000,
        "uid_max": 60000,
        "processes": 0,
        "created_by_setup": False,
    }
    base.update(changes)
    return AccountFacts(**base)  # type: ignore[arg-type]


def replace_facts(found: AccountFacts, **changes: object) -> AccountFacts:
    return dataclasses.replace(found, **changes)  # type: ignore[arg-type]


def rules(found: AccountFacts, reuse: bool = False) -> set[AccountRule]:
    return {p.rule for p in agent_account_problems(found, reuse=reuse)}


CASES = {
    # The accounts of the issue: each refused for what it is, even with --reuse-account.
    "postgres": (
        facts(name="postgres", uid=105, home="/var/lib/postgresql"),
        {AccountRule.SYSTEM, AccountRule.SERVICE},
    ),
    "nobody": (
        facts(name="nobody", uid=65534, home="/nonexistent", shell="/usr/sbin/nologin"),
        {AccountRule.SYSTEM, AccountRule.SERVICE},
    ),
    "daemon": (
        facts(name="daemon", uid=1, home="/usr/sbin", shell="/usr/sbin/nologin"),
        {AccountRule.SYSTEM, AccountRule.SERVICE},
    ),
    "password": (facts(password=PasswordState.USABLE), {AccountRule.PASSWORD}),
    "empty-password": (facts(password=PasswordState.EMPTY), {AccountRule.PASSWORD}),
    "sudo-group": (facts(groups={"agent": 1500, "sudo": 27}), {AccountRule.ADMIN_GROUP}),
    "gid-0": (facts(groups={"agent": 1500, "wheel": 0}), {AccountRule.ADMIN_GROUP}),
    "sudoers": (
        facts(sudoers=(SudoersHit("/etc/sudoers", 3, "agent ALL=(ALL) ALL", False),)),
        {AccountRule.SUDO},
    ),
    "root": (facts(uid=0), {AccountRule.ROOT}),
    "service-home-regular-uid": (facts(home="/srv/app"), {AccountRule.SERVICE}),
    "service-name-regular-uid": (facts(name="www-data"), {AccountRule.SERVICE}),
    "nologin-regular-uid": (facts(shell="/bin/false"), {AccountRule.SERVICE}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_absolute_rules_hold_even_for_a_reused_account(case: str) -> None:
    found, expected = CASES[case]
    assert rules(found, reuse=True) == expected
    assert expected <= rules(found, reuse=False)


def test_an_existing_account_needs_the_explicit_reuse() -> None:
    assert rules(facts()) == {AccountRule.NOT_OURS}
    assert rules(facts(), reuse=True) == set()


def test_running_processes_count_unless_reused_or_the_setups_own() -> None:
    busy = facts(processes=3)
    problems = agent_account_problems(busy, reuse=False)
    assert {p.rule for p in problems} == {AccountRule.PROCESSES, AccountRule.NOT_OURS}
    assert "3 running processes" in next(
        p.text for p in problems if p.rule is AccountRule.PROCESSES
    )
    assert rules(busy, reuse=True) == set()
    # The setup's own agent has its sessions' processes: not a reason to refuse.
    assert rules(facts(processes=3, created_by_setup=True)) == set()


def launch_rules(found: AccountFacts) -> set[AccountRule]:
    return {p.rule for p in launch_agent_problems(found)}


# The agent as sandbox-setup makes it: regular uid, nologin, locked, its own group.
AGENT = facts(shell="/usr/sbin/nologin", created_by_setup=True)
LAUNCH_CASES = {
    # What sandbox-launch refuses in the account launcher.toml names.
    "the-setups-agent": (AGENT, set()),
    "nobody": (
        facts(name="nobody", uid=65534, home="/nonexistent", shell="/usr/sbin/nologin"),
        {AccountRule.SYSTEM, AccountRule.SERVICE},
    ),
    "daemon": (
        facts(name="daemon", uid=1, home="/usr/sbin", shell="/usr/sbin/nologin"),
        {AccountRule.SYSTEM, AccountRule.SERVICE},
    ),
    "root": (facts(name="root", uid=0, home="/root"), {AccountRule.ROOT, AccountRule.LOGIN_SHELL}),
    "service-name-regular-uid": (
        facts(name="postgres", shell="/usr/sbin/nologin"),
        {AccountRule.SERVICE},
    ),
    "a-persons-account": (
        facts(name="alice", password=PasswordState.USABLE, groups={"alice": 1500, "sudo": 27}),
        {AccountRule.LOGIN_SHELL, AccountRule.PASSWORD, AccountRule.ADMIN_GROUP},
    ),
    "login-shell-only": (facts(), {AccountRule.LOGIN_SHELL}),
    "empty-shell-field": (facts(shell=""), {AccountRule.LOGIN_SHELL}),
    "empty-password": (replace_facts(AGENT, password=PasswordState.EMPTY), {AccountRule.PASSWORD}),
    "sudoers": (
        replace_facts(
            AGENT,
            sudoers=(SudoersHit("/etc/sudoers.d/x", 1, "agent ALL=(ALL) NOPASSWD: ALL", True),),
        ),
        {AccountRule.SUDO},
    ),
    "gid-0-group": (
        replace_facts(AGENT, groups={"agent": 1500, "staff": 0}),
        {AccountRule.ADMIN_GROUP},
    ),
}


@pytest.mark.parametrize("case", list(LAUNCH_CASES))
def test_the_launch_time_rule(case: str) -> None:
    found, expected = LAUNCH_CASES[case]
    assert launch_rules(found) == expected
    assert expected <= LAUNCH_RULES


def test_the_launch_rule_judges_neither_home_nor_processes_nor_the_ledger() -> None:
    # launcher.toml's [agent] home is what the launch uses (passwd's: plan and audit);
    # the agent's own sessions are its processes; the launcher has no ledger.
    assert launch_rules(replace_facts(AGENT, home="/var/tmp/agent-home")) == set()
    assert launch_rules(replace_facts(AGENT, processes=5, created_by_setup=False)) == set()


def test_the_launch_rule_is_the_plans_absolute_rules_with_the_login_shell_for_nologin() -> None:
    # Every absolute rule the plan applies that the launch applies too says the same
    # text for the same account (one rule, two callers).
    for found, _expected in LAUNCH_CASES.values():
        plan = {p.rule: p.text for p in agent_account_problems(found, reuse=True)}
        for problem in launch_agent_problems(found):
            if problem.rule in (AccountRule.ROOT, AccountRule.SYSTEM, AccountRule.PASSWORD,
                                AccountRule.SUDO, AccountRule.ADMIN_GROUP):  # fmt: skip
                assert plan[problem.rule] == problem.text


def test_the_overflow_uid_is_named() -> None:
    (problem,) = [p for p in launch_agent_problems(LAUNCH_CASES["nobody"][0])
                  if p.rule is AccountRule.SYSTEM]  # fmt: skip
    assert "65534, above UID_MAX" in problem.text and "overflow uid" in problem.text


def test_a_setups_reused_agent_given_nologin_is_not_a_service_account() -> None:
    # The launch refuses a reused account's login shell; its owner's fix (nologin) must
    # not make the next apply or audit call it a service account.
    reused = facts(shell="/usr/sbin/nologin")
    assert AccountRule.SERVICE in rules(reused, reuse=True)
    assert rules(replace_facts(reused, setup_agent=True), reuse=True) == set()
    assert launch_rules(replace_facts(reused, setup_agent=True)) == set()


def test_login_defs_range_and_its_defaults() -> None:
    text = "# comment\nUID_MIN\t\t 2000\nUID_MAX 3000 # trailing\nSYS_UID_MAX 999\n"
    parsed = uid_range_from_text(text, "/etc/login.defs")
    assert (parsed.uid_min, parsed.uid_max) == (2000, 3000)
    assert (uid_range_from_text(None, "x").uid_min, uid_range_from_text("", "x").uid_max) == (
        1000,
        60000,
    )
    # A uid regular on Debian is a system account where UID_MIN is higher.
    assert AccountRule.SYSTEM in rules(facts(uid=1500, uid_min=parsed.uid_min))


def test_service_signs_name_what_they_saw() -> None:
    assert service_signs("alice", "/home/alice", "/bin/zsh") == []
    signs = service_signs("postgres", "/var/lib/postgresql", "/usr/sbin/nologin")
    assert len(signs) == 3 and "/var" in signs[0]
    assert new_agent_name_problem("postgres") is not None
    assert new_agent_name_problem("claude-agent") is None


def test_each_agent_gets_its_own_group_within_groupadds_limit() -> None:
    assert workspace_group("claude-agent") == "sandbox-ws-claude-agent"
    assert workspace_group("a") != workspace_group("b")
    long_a, long_b = "x" * 30 + "a", "x" * 30 + "b"
    assert len(workspace_group(long_a)) == 32 and workspace_group(long_a) != workspace_group(long_b)


def record(agent: str, **changes: object) -> SetupRecord:
    base: dict[str, object] = {
        "agent": agent,
        "mode": "sandbox",
        "group": workspace_group(agent),
        "workspaces": ("/srv/a",),
        "created_user": True,
        "created_group": True,
    }
    base.update(changes)
    return SetupRecord(**base)  # type: ignore[arg-type]


def test_ledger_keeps_other_setups_and_what_was_created() -> None:
    first = render_ledger(None, record("a"), "setups.json")
    both = render_ledger(first, record("b", mode="user", workspaces=("/srv/b",)), "setups.json")
    # A re-apply finds the account already there; it stays recorded as created.
    again = render_ledger(both, record("a", created_user=False, created_group=False), "x")
    records = parse_ledger(again, "x")
    assert sorted(records) == ["a", "b"]
    assert records["a"].created_user and records["a"].created_group
    assert records["b"].workspaces == ("/srv/b",)
    assert users_of(records, group="sandbox-ws-b") == ["b"]
    assert json.loads(again)["format"] == "sandbox-setup-setups-1"
    assert render_ledger(again, record("a", created_user=False), "x") == again


def test_a_malformed_ledger_is_an_input_error_naming_the_file() -> None:
    with pytest.raises(InputError, match=r"setups\.json: invalid JSON"):
        render_ledger(b"{not json", record("a"), "setups.json")
    with pytest.raises(InputError, match="not a sandbox-setup ledger"):
        parse_ledger(b'{"format": "other"}', "setups.json")
