"""Which accounts may be the agent (docs/design.md invariants 5, 9 and 14), as pure rules.

The plan refuses an existing account that breaks one (exit 3, naming the rule
and the fix) and the audit reports one that breaks one later; both judge the
facts :mod:`sandbox_setup.base.account_files` gathers. ``sandbox-launch`` judges
the account it switches to by the launch-time subset (:func:`launch_agent_problems`)
at every launch.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.policy.sudoers import SudoersHit, find_sudoers_rules

if TYPE_CHECKING:
    from sandbox_setup.base.account_files import AccountRecords
    from sandbox_setup.base.accounts import Account

# Membership in these groups is a way to root (sudo's defaults, su's pam_wheel).
ADMIN_GROUPS = frozenset({"root", "sudo", "wheel", "admin"})
# The kernel's overflow uid: what an unmapped uid shows as, and nobody's. Files and
# processes of every id-mapped container and NFS export share it.
OVERFLOW_UID = 65534


class PasswordState(enum.StrEnum):
    """What the account's shadow entry says about logging in with a password."""

    LOCKED = "locked"  # "!" or "*": no password login
    EMPTY = "empty"  # anyone can log in
    USABLE = "usable"  # a password hash: someone can log in with it
    NO_ENTRY = "no-entry"
    UNREADABLE = "unreadable"


def password_state(shadow_text: str | None, name: str) -> PasswordState:
    """The state of ``name``'s password in the shadow file's text (None: unreadable)."""
    if shadow_text is None:
        return PasswordState.UNREADABLE
    for line in shadow_text.splitlines():
        fields = line.split(":")
        if len(fields) < 2 or fields[0] != name:
            continue
        password = fields[1]
        if password.startswith(("!", "*")):
            return PasswordState.LOCKED
        return PasswordState.EMPTY if password == "" else PasswordState.USABLE
    return PasswordState.NO_ENTRY


def admin_memberships(groups: Mapping[str, int]) -> list[str]:
    """The groups (name -> gid) that are a way to root: an admin group or gid 0."""
    return sorted(name for name, gid in groups.items() if name in ADMIN_GROUPS or gid == 0)


# --- Which account may be the agent (docs/design.md invariant 9) -------------------------

# A service account is recognised by any one of three signs, because each alone
# means the account belongs to something other than a person's agent:
# - its home is in a tree services keep their data in (/var/lib/postgresql,
#   /srv/www, /run/..., /nonexistent): the agent would own and write that data;
# - its shell refuses logins (nologin, false): the account was made for a daemon,
#   and its files and running processes are that daemon's;
# - its name is a well-known daemon's (postgres, www-data, ...): even made with a
#   regular uid, it gets the service's data through peer authentication, sockets
#   or group permissions that trust the name.
SERVICE_HOME_TREES = (
    "/var", "/srv", "/run", "/nonexistent", "/proc", "/dev", "/sys", "/usr", "/bin",
    "/sbin", "/lib", "/etc", "/boot", "/tmp",
)  # fmt: skip
NOLOGIN_SHELLS = frozenset({"nologin", "false", "sync", "halt", "shutdown"})
# The agent has no login shell: it starts only through sandbox-launch, which gives
# Claude SHELL=/bin/bash (sandbox_setup.launcher.command.base_env). A login by any other
# route (su, a console, an sshd that lets it in) gets nologin (docs/design.md invariant 14).
AGENT_SHELL = "/usr/sbin/nologin"
SERVICE_NAMES = frozenset(
    {
        "nobody", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news",
        "uucp", "proxy", "www-data", "backup", "list", "irc", "gnats", "_apt", "messagebus",
        "sshd", "postgres", "postgresql", "mysql", "mariadb", "redis", "mongodb", "nginx",
        "apache", "httpd", "memcache", "rabbitmq", "elasticsearch", "docker", "containerd",
        "git", "gitlab-runner", "jenkins", "postfix", "dovecot", "bind", "named", "ntp",
        "chrony", "avahi", "polkitd", "tss", "uuidd", "tcpdump", "dnsmasq", "grafana",
        "prometheus", "node_exporter", "minio", "vault", "consul",
    }
)  # fmt: skip


class AccountRule(enum.StrEnum):
    """The rules an agent account must pass; the value is the rule's name in messages."""

    ROOT = "uid 0"
    SYSTEM = "system account"
    SERVICE = "service account"
    LOGIN_SHELL = "login shell"
    PASSWORD = "password"
    SUDO = "sudo"
    ADMIN_GROUP = "admin group"
    PROCESSES = "running processes"
    NOT_OURS = "existing account"


# Rules that no choice of the operator waives; the others give way to --reuse-account.
ABSOLUTE_RULES = frozenset(
    {
        AccountRule.ROOT,
        AccountRule.SYSTEM,
        AccountRule.SERVICE,
        AccountRule.PASSWORD,
        AccountRule.SUDO,
        AccountRule.ADMIN_GROUP,
    }
)


@dataclass(frozen=True, slots=True)
class AccountFacts:
    """What is known about an existing account (gathered by the caller)."""

    name: str
    uid: int
    home: str
    shell: str
    password: PasswordState
    groups: Mapping[str, int]
    sudoers: tuple[SudoersHit, ...]
    uid_min: int
    uid_max: int
    processes: int | None  # None: not known (a --root tree has no processes)
    created_by_setup: bool  # sandbox-setup created it (ledger or journal)
    # A setup's ledger names it as its agent (created or reused with --reuse-account):
    # a nologin shell there is the setup's doing, or the fix the launcher asked for.
    setup_agent: bool = False


def account_facts_of(
    account: Account,
    records: AccountRecords,
    *,
    processes: int | None = None,
    created_by_setup: bool = False,
    setup_agent: bool = False,
) -> AccountFacts:
    """The facts every account rule reads, from the account and its records
    (:func:`sandbox_setup.base.account_files.read_account_records`), the one way the
    plan, the audit and the launch gather them. What only the caller knows (its
    processes, whether a setup created it or names it as its agent) it says."""
    return AccountFacts(
        name=account.name,
        uid=account.uid,
        home=str(account.home),
        shell=account.shell,
        password=password_state(records.shadow, account.name),
        groups=records.groups,
        sudoers=tuple(
            find_sudoers_rules(records.sudoers, account.name, account.uid, records.groups)
        ),
        uid_min=records.uid_range.uid_min,
        uid_max=records.uid_range.uid_max,
        processes=processes,
        created_by_setup=created_by_setup,
        setup_agent=setup_agent,
    )


@dataclass(frozen=True, slots=True)
class AccountProblem:
    """One broken rule: which, and what was found (the caller adds the fix)."""

    rule: AccountRule
    text: str
    hit: SudoersHit | None = None
    group: str | None = None


def _under(path: str, trees: tuple[str, ...]) -> str | None:
    normal = "/" + path.strip("/")
    for tree in trees:
        if normal == tree or normal.startswith(tree + "/"):
            return tree
    return None


def has_login_shell(shell: str) -> bool:
    """Whether an account with the passwd shell field ``shell`` can log in (an empty
    field means ``/bin/sh``)."""
    return not shell or PurePosixPath(shell).name not in NOLOGIN_SHELLS


def service_signs(name: str, home: str, shell: str, *, ours: bool = False) -> list[str]:
    """Why the account looks like a service's (empty: it does not). ``ours``: an agent
    of a setup (created, or reused and recorded), whose nologin shell is the setup's
    doing (it logs in only through sandbox-launch), not a sign."""
    signs = []
    tree = _under(home, SERVICE_HOME_TREES)
    if tree is not None or home in ("", "/"):
        signs.append(f"its home {home or '(none)'} is in {tree or '/'}, where services keep data")
    if not ours and (shell == "" or not has_login_shell(shell)):
        signs.append(f"its shell {shell or '(none)'} refuses logins")
    signs.extend(service_name_signs(name))
    return signs


def service_name_signs(name: str) -> list[str]:
    """The service sign a name alone gives (empty: none)."""
    if name in SERVICE_NAMES:
        return [f"{name} is the name of a well-known service account"]
    return []


def new_agent_name_problem(name: str) -> str | None:
    """Why sandbox-setup must not create an account called ``name`` (None: it may):
    a daemon's name would later be taken for that daemon's account."""
    if name in SERVICE_NAMES:
        return message(
            f"{name} is the name of a well-known service account; an agent with that name "
            "would be mistaken for the service (and get its data once the service is "
            "installed); ",
            Ref(Option.AGENT_USER, Act.CHOOSE_ANOTHER),
        )
    return None


def _uid_problems(facts: AccountFacts) -> list[AccountProblem]:
    """``uid 0`` and ``system account``: root, or a uid outside the regular users'."""
    if facts.uid == 0:
        return [AccountProblem(AccountRule.ROOT, f"{facts.name} has uid 0 (it is root)")]
    if facts.uid_min <= facts.uid <= facts.uid_max:
        return []
    where = "below UID_MIN" if facts.uid < facts.uid_min else "above UID_MAX"
    if facts.uid == OVERFLOW_UID:
        where += ", the kernel's overflow uid (nobody's, every unmapped uid's)"
    return [
        AccountProblem(
            AccountRule.SYSTEM,
            f"{facts.name} has uid {facts.uid}, {where} ({facts.uid_min}-{facts.uid_max} "
            "are the regular users'): a system account",
        )
    ]


def _service_problem(name: str, signs: list[str]) -> list[AccountProblem]:
    if not signs:
        return []
    text = f"{name} is a service account: " + "; ".join(signs)
    return [AccountProblem(AccountRule.SERVICE, text)]


def _way_in_problems(facts: AccountFacts) -> list[AccountProblem]:
    """``password``, ``sudo`` and ``admin group``: someone logs in as the account, or
    the account reaches root."""
    found: list[AccountProblem] = []
    if facts.password in (PasswordState.EMPTY, PasswordState.USABLE):
        what = "an EMPTY" if facts.password is PasswordState.EMPTY else "a usable"
        found.append(AccountProblem(AccountRule.PASSWORD, f"{facts.name} has {what} password"))
    for hit in facts.sudoers:
        nopasswd = " with NOPASSWD" if hit.nopasswd else ""
        found.append(
            AccountProblem(
                AccountRule.SUDO,
                f"a sudoers rule applies to {facts.name}{nopasswd}: {hit.path}:{hit.line}: "
                f"{hit.text}",
                hit=hit,
            )
        )
    for group in admin_memberships(facts.groups):
        found.append(
            AccountProblem(
                AccountRule.ADMIN_GROUP,
                f"{facts.name} is in group {group}, a way to root",
                group=group,
            )
        )
    return found


def agent_account_problems(facts: AccountFacts, *, reuse: bool) -> list[AccountProblem]:
    """Every rule ``facts`` breaks for an agent; the :data:`ABSOLUTE_RULES` always
    count, the rest only without ``reuse`` (--reuse-account). An account
    sandbox-setup created is the setup's own: neither "existing" nor its sessions'
    processes count against it."""
    ours = facts.created_by_setup or facts.setup_agent
    found = _uid_problems(facts)
    signs = service_signs(facts.name, facts.home, facts.shell, ours=ours)
    found += _service_problem(facts.name, signs)
    found += _way_in_problems(facts)
    if not facts.created_by_setup and not reuse:
        if facts.processes:
            found.append(
                AccountProblem(
                    AccountRule.PROCESSES,
                    f"{facts.name} has {facts.processes} running process"
                    f"{'es' if facts.processes != 1 else ''} (someone uses it now)",
                )
            )
        found.append(
            AccountProblem(
                AccountRule.NOT_OURS,
                f"{facts.name} already exists and sandbox-setup did not create it",
            )
        )
    return found


# --- The launch-time subset (sandbox-launch, as root, before it switches) ----------

# What sandbox-launch refuses in the account launcher.toml names, every launch: the
# account may have changed since the apply judged it, or launcher.toml may name one
# no apply judged (a hand edit). The subset, and why not the rest:
# - uid 0, system account (uid outside UID_MIN..UID_MAX, nobody's overflow uid among
#   them): the agent would share a uid with root, a daemon or every unmapped file;
# - service account by its name only: a daemon's name is trusted by that daemon.
#   Not its home (the launch uses launcher.toml's [agent] home, not passwd's; the
#   plan and the audit judge passwd's), and not a nologin shell: the agent every
#   setup makes HAS /usr/sbin/nologin (docs/design.md invariant 14);
# - login shell: an account someone can log in as (su, a console, an sshd that lets
#   it in) starts processes outside any session (invariant 14). An agent made before
#   agents got nologin gets it from a re-apply; a reused account from its owner;
# - password, sudo, admin group: someone logs in with it, or it reaches root;
# - not "running processes" (its own sessions are) nor "existing account" (the
#   launcher has no ledger to ask, and the apply already decided).
LAUNCH_RULES = frozenset(
    {
        AccountRule.ROOT,
        AccountRule.SYSTEM,
        AccountRule.SERVICE,
        AccountRule.LOGIN_SHELL,
        AccountRule.PASSWORD,
        AccountRule.SUDO,
        AccountRule.ADMIN_GROUP,
    }
)


def launch_agent_problems(facts: AccountFacts) -> list[AccountProblem]:
    """Every :data:`LAUNCH_RULES` rule ``facts`` breaks: the account sandbox-launch is
    about to switch to. ``home``, ``processes`` and ``created_by_setup`` are not
    judged here."""
    found = _uid_problems(facts)
    found += _service_problem(facts.name, service_name_signs(facts.name))
    if has_login_shell(facts.shell):
        found.append(
            AccountProblem(
                AccountRule.LOGIN_SHELL,
                f"{facts.name} has the login shell {facts.shell or '/bin/sh (empty field)'}: "
                "someone can log in as it outside any session",
            )
        )
    found += _way_in_problems(facts)
    return found


# --- The workspace group of a setup ------------------------------------------------

WORKSPACE_GROUP_PREFIX = "sandbox-ws-"
# Before each setup had a group of its own, every agent shared this one.
LEGACY_WORKSPACE_GROUP = "sandbox-ws"
GROUP_NAME_MAX = 32  # shadow-utils refuses longer group names


def workspace_group(agent: str) -> str:
    """The group that gives ``agent`` (and only it) its workspaces: one per setup,
    so two setups' agents never share write access. A name too long for groupadd
    keeps a readable start and a hash of the whole."""
    name = WORKSPACE_GROUP_PREFIX + agent
    if len(name) <= GROUP_NAME_MAX:
        return name
    digest = hashlib.sha256(agent.encode("utf-8")).hexdigest()[:6]
    keep = GROUP_NAME_MAX - len(WORKSPACE_GROUP_PREFIX) - len(digest) - 1
    return f"{WORKSPACE_GROUP_PREFIX}{agent[:keep]}-{digest}"
