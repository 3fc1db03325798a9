"""The account ``launcher.toml`` names as the agent, judged at every launch as root
(docs/design.md invariants 9 and 14).

The apply judged the account when it wrote ``launcher.toml``; the launch judges it
again, because the account may have changed since (a password set, a login shell
given back, a sudoers line) and because ``launcher.toml`` may name one no apply
judged (``agent.user = "nobody"`` by hand). The rule is the launch-time subset of
the one the plan and the audit apply
(:func:`sandbox_setup.policy.accounts.launch_agent_problems`, which says why each
rule is in it or not); a refusal (exit 3) names the account, every rule it breaks
and the fix, before anything is started.
"""

from __future__ import annotations

from sandbox_setup.base.account_files import read_account_records
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.policy.accounts import (
    AGENT_SHELL,
    AccountFacts,
    AccountProblem,
    AccountRule,
    account_facts_of,
    launch_agent_problems,
)


def launch_account_facts(account: Account) -> AccountFacts:
    """What the launch-time rule judges, read from this host (``/etc/login.defs``'s
    uid range, shadow, group, sudoers). Processes and the ledger are not read: the
    launch-time rule does not judge them."""
    return account_facts_of(account, read_account_records(Layout.for_root("/"), account))


def launch_fix(problem: AccountProblem, name: str) -> str:
    """The command (or choice) that fixes ``problem`` for a launch."""
    if problem.rule is AccountRule.LOGIN_SHELL:
        return (
            "run sandbox-setup again: an agent it created gets "
            f"{AGENT_SHELL} (journaled); an account reused with --reuse-account: usermod --shell "
            f"{AGENT_SHELL} {name}"
        )
    if problem.rule is AccountRule.PASSWORD:
        return f"usermod --lock {name}"
    if problem.rule is AccountRule.SUDO and problem.hit is not None:
        return f"visudo -f {problem.hit.path}  # delete line {problem.hit.line}"
    if problem.rule is AccountRule.ADMIN_GROUP and problem.group is not None:
        return f"usermod --remove --groups {problem.group} {name}"
    return (
        "set [agent] user in launcher.toml to the agent sandbox-setup created, or run "
        "sandbox-setup to create one"
    )


def refuse_unfit_agent(account: Account) -> None:
    """Refuse (exit 3) to start anything as ``account`` when it breaks a launch-time rule."""
    problems = launch_agent_problems(launch_account_facts(account))
    if not problems:
        return
    parts = [f"[{p.rule}] {p.text} (fix: {launch_fix(p, account.name)})" for p in problems]
    raise RefusedError(
        f"agent user {account.name!r} cannot be the agent of a launch: "
        + "; ".join(parts)
        + "; nothing was started"
    )
