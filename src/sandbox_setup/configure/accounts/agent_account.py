"""Whether an account may be the agent user (docs/design.md invariants 5 and 9).

The facts (uid range from login.defs, passwd entry, groups, sudoers, shadow,
running processes, whether sandbox-setup created it) are gathered here and judged
by :func:`sandbox_setup.policy.accounts.agent_account_problems`, the rule the audit
applies too. A refusal (exit 3) names every rule broken and the fix, before
anything is written.
"""

from __future__ import annotations

from sandbox_setup.base.account_files import read_account_records
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.processes import processes_of_uid
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.ledger import created_accounts, read_ledger
from sandbox_setup.policy.accounts import (
    AccountFacts,
    AccountProblem,
    AccountRule,
    account_facts_of,
    agent_account_problems,
    new_agent_name_problem,
)


def account_facts(layout: Layout, agent: Account) -> AccountFacts:
    """Everything the account rules judge, read from the target system."""
    return account_facts_of(
        agent,
        read_account_records(layout, agent),
        processes=len(processes_of_uid(agent.uid)) if layout.live else None,
        created_by_setup=agent.name in created_accounts(layout),
        setup_agent=agent.name in read_ledger(layout),
    )


def problem_fix(layout: Layout, problem: AccountProblem, name: str) -> str:
    """The command (or choice) that fixes ``problem``; a choice names the option as a
    typed part (each face words it: base/message.py)."""
    prefix = "" if layout.live else f"--prefix {layout.root} "
    if problem.rule is AccountRule.PASSWORD:
        return f"usermod {prefix}--lock {name}"
    if problem.rule is AccountRule.SUDO and problem.hit is not None:
        return f"visudo -f {problem.hit.path}  # delete line {problem.hit.line}"
    if problem.rule is AccountRule.ADMIN_GROUP and problem.group is not None:
        return " ".join(users.remove_from_group_argv(layout, name, problem.group))
    if problem.rule is AccountRule.NOT_OURS:
        return message(
            Ref(Option.REUSE_ACCOUNT, Act.PASS), " to make it the agent (it must pass every rule)"
        )
    if problem.rule is AccountRule.PROCESSES:
        return message(
            "stop them, or ",
            Ref(Option.REUSE_ACCOUNT, Act.PASS),
            " if this account is meant for the agent",
        )
    return message(
        Ref(Option.AGENT_USER, Act.CHOOSE_ANOTHER), " (sandbox-setup creates a new one, locked)"
    )


def refusal(layout: Layout, name: str, problems: list[AccountProblem]) -> RefusedError:
    parts: list[str | Ref] = [f"the account {name} cannot be the agent user: "]
    for i, p in enumerate(problems):
        parts += [
            "; " if i else "",
            f"[{p.rule}] {p.text} (fix: ",
            problem_fix(layout, p, name),
            ")",
        ]
    return RefusedError(
        message(
            *parts,
            "; or ",
            Ref(Option.AGENT_USER, Act.PICK_NEW),
            " (sandbox-setup creates it locked)",
            option=Option.AGENT_USER,
        )
    )


def check_agent_account(
    layout: Layout, name: str, agent: Account | None, *, reuse: bool
) -> AccountFacts | None:
    """Refuse (exit 3) an agent account that breaks a rule; return its facts (None
    when the account does not exist yet and sandbox-setup will create it)."""
    if agent is None:
        problem = new_agent_name_problem(name)
        if problem is not None:
            raise RefusedError(message(f"agent user {name}: ", problem))
        return None
    facts = account_facts(layout, agent)
    problems = agent_account_problems(facts, reuse=reuse)
    if problems:
        raise refusal(layout, name, problems)
    return facts
