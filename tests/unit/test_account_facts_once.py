"""The account facts are gathered one way (docs/design.md invariant 9): the plan, the
audit and the launch read an account's records with
``base.account_files.read_account_records`` and turn them into facts with
``policy.accounts.account_facts_of``; only what a caller alone knows differs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sandbox_setup.base.account_files import AccountRecords, read_account_records
from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.base.login_defs import UidRange
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.accounts.agent_account import account_facts
from sandbox_setup.launcher.agent_account import launch_account_facts
from sandbox_setup.policy.accounts import PasswordState, account_facts_of


def test_the_launch_and_the_plan_gather_the_same_facts_of_an_account() -> None:
    nobody = lookup_user("nobody", Path("/"))
    assert nobody is not None
    launch = launch_account_facts(nobody)
    plan = account_facts(Layout.for_root("/"), nobody)
    # What only the plan's caller knows; everything the files say is the same.
    only_the_plan = {"processes", "created_by_setup", "setup_agent"}
    for field in dataclasses.fields(launch):
        if field.name not in only_the_plan:
            assert getattr(launch, field.name) == getattr(plan, field.name), field.name


def test_facts_come_from_the_records_and_what_the_caller_says() -> None:
    account = Account(name="ac-x", uid=1500, gid=1500, home=Path("/home/ac-x"), shell="/bin/sh")
    records = AccountRecords(
        shadow="ac-x:$y$j9T$abc:19000:0:99999:7:::\n",
        groups={"ac-x": 1500, "sudo": 27},
        sudoers={"/etc/sudoers": "%sudo ALL=(ALL:ALL) ALL\n"},
        uid_range=UidRange(uid_min=1000, uid_max=60000),
    )
    facts = account_facts_of(account, records, processes=2, setup_agent=True)
    assert facts.password is PasswordState.USABLE
    assert facts.groups == {"ac-x": 1500, "sudo": 27}
    assert [hit.path for hit in facts.sudoers] == ["/etc/sudoers"]
    assert (facts.uid_min, facts.uid_max, facts.processes) == (1000, 60000, 2)
    assert facts.setup_agent and not facts.created_by_setup


def test_reading_the_records_of_a_root_tree(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "group").write_text("ac-x:x:1500:\nadm:x:4:ac-x\n")
    (etc / "login.defs").write_text("UID_MIN 2000\nUID_MAX 3000\n")
    account = Account(name="ac-x", uid=2500, gid=1500, home=Path("/home/ac-x"), shell="/bin/sh")
    records = read_account_records(Layout.for_root(tmp_path), account)
    assert records.groups == {"ac-x": 1500, "adm": 4}
    assert records.shadow is None and records.sudoers == {}
    assert (records.uid_range.uid_min, records.uid_range.uid_max) == (2000, 3000)
