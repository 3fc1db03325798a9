"""How a session is contained and limited (docs/design.md invariant 10), as argv and a plan.

Containment: when a session ends, however it ends, nothing of the agent is left.

- ``sandbox`` mode: bubblewrap's own pid namespace (``--unshare-pid``); when its
  first process exits, the kernel kills everything else in it.
- ``user`` mode: the same from ``unshare --pid --fork --kill-child --mount-proc``
  (``--user --map-current-user`` added for a non-root operator). The session's
  first process is ``sh -c '"$@"; exit "$?"'`` as the agent: it reaps orphans, the
  kernel shields it from the agent's signals (a namespace's init gets only those
  it handles), and it dies with the launcher (``setpriv --pdeathsig KILL``). Where
  no pid namespace can be made here (probed at launch), the launcher, a child
  subreaper, kills every descendant when the session ends
  (:mod:`sandbox_setup.launcher.session.runner`).

Limits (``[limits]``): tasks and memory from a cgroup where there is one
(:mod:`sandbox_setup.base.cgroups`: a systemd scope, or a child of a delegated cgroup v2
subtree that the launcher itself joins, so every process of the session is in
it); otherwise tasks by ``RLIMIT_NPROC`` (``prlimit --nproc``) on the agent's
dedicated uid, and memory not at all (the launch notice says so). The sandbox's
/tmp, /run and /dev/shm are tmpfs of ``tmpfs`` bytes each (bwrap ``--size``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, replace

from sandbox_setup.base.cgroups import Delegation, judge_delegation, read_cgroup_facts
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.limits import Limits, mem_total, memory_bytes, size_bytes
from sandbox_setup.launcher.command import Agent
from sandbox_setup.launcher.launch import Command, Launch, Note, Topic, notes
from sandbox_setup.launcher.trust import ToolNotFound, find_trusted_tool

# bash, not dash: on Ctrl-C dash aborts its script with 130 even when Claude caught
# the signal and exited otherwise; bash waits and returns Claude's status. Not
# "exec": the shell must stay the session's first process (and reap orphans).
# bash exports PWD, SHLVL and _ on its own: the clean environment stays clean.
REAPER_SCRIPT = 'unset PWD SHLVL; "$@"; exit "$?"'
REAPER_NAME = "sandbox-session"
PID_NS_ROOT = ("--pid", "--fork", "--kill-child", "--mount-proc")
PID_NS_USER = ("--user", "--map-current-user", *PID_NS_ROOT)
PROBE_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Tools:
    """The trusted binaries containment uses (None: not installed)."""

    unshare: str | None = None
    prlimit: str | None = None
    systemd_run: str | None = None
    setsid: str = "/usr/bin/setsid"
    bash: str = "/bin/bash"
    env: str = "/usr/bin/env"


@dataclass(frozen=True, slots=True)
class ContainmentFacts:
    """What the host offers, read (and probed) at launch."""

    delegation: Delegation
    pid_namespace: tuple[str, ...] | None  # unshare options that worked; None: none did
    mem_total: int | None  # bytes of RAM (MemTotal)


@dataclass(frozen=True, slots=True)
class Containment:
    """How one session is contained and limited, decided before it starts."""

    delegation: Delegation
    tasks: int
    memory: int | None  # bytes; None: not limited
    tmpfs: int  # bytes, each of the sandbox's tmpfs mounts
    tasks_by: str  # "cgroup" | "rlimit" | "none"
    prefix: tuple[str, ...] = ()  # before the privilege drop (systemd-run, unshare, prlimit)
    pid_namespace: bool = False  # user mode: the session has a pid namespace of its own
    notes: tuple[Note, ...] = ()
    # What is NOT limited here, and how to limit it (None: everything is): a line of
    # its own on stderr (notice), and a note of --dry-run's.
    unlimited: str | None = None
    cgroup_parent: str | None = None  # cgroup2: where the session's cgroup is made
    cgroup_v1: tuple[str, str] | None = None  # cgroup1: the memory and pids parents

    @property
    def memory_limited(self) -> bool:
        return self.memory is not None

    @property
    def notice(self) -> str | None:
        """The line the session prints on stderr about what is not limited."""
        return None if self.unlimited is None else f"sandbox-launch: note: {self.unlimited}"


def find_tools(
    mode: Mode, delegation: Delegation, owners: frozenset[int], path_env: str | None
) -> Tools:
    """The trusted tools: prlimit (tasks where no cgroup does it), unshare (user
    mode's pid namespace) and, where systemd runs, systemd-run. A missing or
    untrusted prlimit or unshare refuses the launch, as any tool does."""
    systemd_run = None
    if delegation.kind == "systemd":
        # There, but untrusted: a refusal, never skipped silently (ToolNotFound is not).
        with contextlib.suppress(ToolNotFound):
            systemd_run = str(find_trusted_tool("systemd-run", owners, path_env))
    prlimit = str(find_trusted_tool("prlimit", owners, path_env))
    if mode is not Mode.USER:
        return Tools(prlimit=prlimit, systemd_run=systemd_run)
    return Tools(
        unshare=str(find_trusted_tool("unshare", owners, path_env)),
        prlimit=prlimit,
        systemd_run=systemd_run,
        setsid=str(find_trusted_tool("setsid", owners, path_env)),
        bash=str(find_trusted_tool("bash", owners, path_env)),
        env=str(find_trusted_tool("env", owners, path_env)),
    )


def probe_pid_namespace(unshare: str, as_root: bool) -> tuple[str, ...] | None:
    """The unshare options that make a pid namespace here (with a fresh /proc if
    possible), tried live with ``true``; None when none works."""
    base = PID_NS_ROOT if as_root else PID_NS_USER
    without_proc = tuple(o for o in base if o != "--mount-proc")
    for options in (base, without_proc):
        try:
            done = subprocess.run(
                [unshare, *options, "--", "true"],
                capture_output=True,
                timeout=PROBE_TIMEOUT,
                check=False,
                cwd="/",
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return options
    return None


def gather_containment_facts(
    mode: Mode, tools: Tools, as_root: bool, delegation: Delegation
) -> ContainmentFacts:
    pid_ns = None
    if mode is Mode.USER and tools.unshare is not None:
        pid_ns = probe_pid_namespace(tools.unshare, as_root)
    return ContainmentFacts(delegation=delegation, pid_namespace=pid_ns, mem_total=mem_total())


def plan_containment(
    mode: Mode,
    limits: Limits,
    facts: ContainmentFacts,
    tools: Tools,
    *,
    agent_uid: int,
    dedicated_uid: bool,
    session: str,
) -> Containment:
    """Pure: the containment for a ``mode`` session of ``agent_uid`` (``dedicated_uid``:
    a separate agent account, not the operator's own) on a host with ``facts``."""
    delegation = facts.delegation
    memory = memory_bytes(limits, facts.mem_total)
    tmpfs = size_bytes(limits.tmpfs)
    prefix: list[str] = []
    said: list[str] = []
    kind = delegation.kind
    if kind == "systemd" and tools.systemd_run is None:
        kind = "none"
        delegation = Delegation("none", "systemd runs, but systemd-run is not installed")
    if kind == "systemd" and tools.systemd_run is not None:
        prefix.append(tools.systemd_run)
        if not dedicated_uid:
            # The operator's own uid: its own user manager makes the scope.
            prefix.append("--user")
        # A scope, not a service: the session stays the launcher's child, in the
        # foreground, and only its cgroup is systemd's. Quiet, so stderr is Claude's;
        # collected when it ends, even when it failed, so no unit is left behind.
        prefix += ["--scope", "--quiet", "--collect", f"--unit=sandbox-launch-{session}"]
        prefix.append(f"--property=TasksMax={limits.tasks}")
        if memory is not None:
            # No swap: the memory limit cannot be sidestepped by swapping out.
            prefix += [f"--property=MemoryMax={memory}", "--property=MemorySwapMax=0"]
        prefix.append("--")
        tasks_by = "cgroup"
        said.append(f"the session runs in the systemd scope sandbox-launch-{session}")
    elif kind == "cgroup2":
        tasks_by = "cgroup"
        said.append(
            f"the session runs in a cgroup of its own below {delegation.parent} "
            f"(pids.max {limits.tasks}" + (f", memory.max {memory})" if memory else ")")
        )
    elif kind == "cgroup1" and delegation.v1_parents is not None:
        tasks_by = "cgroup"
        memory_dir, pids_dir = delegation.v1_parents
        said.append(
            f"the session runs in cgroups of its own below {pids_dir} (pids.max "
            f"{limits.tasks})"
            + (f" and {memory_dir} (memory.limit_in_bytes {memory})" if memory else "")
        )
    else:
        memory = None
        tasks_by = "none"
    if mode is Mode.USER and facts.pid_namespace is not None and tools.unshare is not None:
        prefix += [tools.unshare, *facts.pid_namespace, "--"]
        said.append(
            "the session has a pid namespace of its own: when its first process ends, "
            "the kernel ends every other one"
        )
    elif mode is Mode.USER:
        said.append(
            "no pid namespace could be made here: sandbox-launch, a child subreaper, kills "
            "every process of the session when it ends"
        )
    if tasks_by == "none" and dedicated_uid and tools.prlimit is not None:
        # No cgroup: RLIMIT_NPROC (soft and hard, so the agent cannot raise it) counts
        # the agent uid's tasks, which only a dedicated uid makes the session's own.
        prefix += [tools.prlimit, f"--nproc={limits.tasks}:{limits.tasks}", "--"]
        tasks_by = "rlimit"
    missing = []
    if memory is None:
        missing.append(f"memory is not limited ({delegation.reason})")
    if tasks_by == "none":
        missing.append("tasks are not limited (the agent is your own uid)")
    elif tasks_by == "rlimit":
        said.append(
            f"tasks: at most {limits.tasks} processes and threads of uid {agent_uid} "
            "(RLIMIT_NPROC: all of the agent's sessions together)"
        )
    unlimited = None
    if missing:
        unlimited = "in this session " + "; ".join(missing)
        if delegation.remedy:
            unlimited += f"; to limit it: {delegation.remedy}"
    return Containment(
        delegation=delegation,
        tasks=limits.tasks,
        memory=memory,
        tmpfs=tmpfs,
        tasks_by=tasks_by,
        prefix=tuple(prefix),
        pid_namespace=mode is Mode.USER and facts.pid_namespace is not None,
        notes=notes(Topic.LIMITS, said),
        unlimited=unlimited,
        cgroup_parent=delegation.parent if kind == "cgroup2" else None,
        cgroup_v1=delegation.v1_parents if kind == "cgroup1" else None,
    )


def reaper_argv(tools: Tools, ctty: bool) -> list[str]:
    """The session's first process in user mode, before Claude's argv: a session of
    its own (``setsid``; with the session's pty as its controlling terminal when
    stdin is one), so the terminal's signals reach only Claude's process group,
    never unshare or the launcher; then the reaping shell."""
    setsid = [tools.setsid, "--wait", *(["--ctty"] if ctty else []), "--"]
    return [*setsid, tools.bash, "-c", REAPER_SCRIPT, REAPER_NAME, tools.env, "-u", "_", "--"]


def contain_user_command(
    command: Command, containment: Containment, tools: Tools, *, ctty: bool
) -> Command:
    """User mode's command (:func:`sandbox_setup.launcher.command.user_launch`) as the
    contained session: the limits' prefix, setpriv dying with its parent, the reaper."""
    return replace(
        command,
        limits=containment.prefix,
        die_with_parent=True,
        reaper=tuple(reaper_argv(tools, ctty)),
    )


def contain_sandbox_command(command: Command, containment: Containment) -> Command:
    """``setpriv ... bwrap ...`` with the limits' prefix (bwrap makes the pid namespace)."""
    return replace(command, limits=containment.prefix)


USER_SESSION_NOTE = Note(
    Topic.SESSION,
    "runs in a new session under sandbox-launch, on a pty of its own that sandbox-launch "
    "relays to this terminal (the agent never holds this terminal); signals are passed on, "
    "and Claude's exit status is returned",
)
KEYRING_NOTE = Note(
    Topic.SESSION, "the session starts with a new, empty session keyring of its own"
)


def _stdin_is_tty() -> bool:
    try:
        return os.isatty(0)
    except OSError:
        return False


def contain(
    config: LauncherConfig,
    agent: Agent,
    launch: Launch,
    uid: int,
    owners: frozenset[int],
    path_env: str | None,
    delegation: Delegation | None = None,
) -> tuple[Launch, Containment]:
    """``launch`` (sandbox or user mode) contained and limited as this host allows:
    the argv to run, its notes for --dry-run, and the plan the session runner follows.
    ``delegation``: judged already (:class:`EarlySessionCgroup`, before the launcher
    moved into the session's cgroup); judged here otherwise."""
    if delegation is None:
        delegation = judge_delegation(read_cgroup_facts())
    tools = find_tools(config.mode, delegation, owners, path_env)
    facts = gather_containment_facts(config.mode, tools, uid == 0, delegation)
    containment = plan_containment(
        config.mode,
        config.limits,
        facts,
        tools,
        agent_uid=agent.uid,
        dedicated_uid=uid == 0,
        session=f"{agent.name}-{os.getpid()}",
    )
    # stdin a terminal: the session's pty (the relay's) is its controlling terminal.
    contained = contained_launch(config.mode, launch, containment, tools, ctty=_stdin_is_tty())
    return contained, containment


def contained_launch(
    mode: Mode, launch: Launch, containment: Containment, tools: Tools, *, ctty: bool
) -> Launch:
    """Pure: ``launch`` (sandbox or user mode) as ``containment`` runs it: the argv
    and the notes for --dry-run (``ctty``: the session's pty is its terminal)."""
    if mode is Mode.USER:
        command = contain_user_command(launch.command, containment, tools, ctty=ctty)
        # The session runner's pty: the session's own, whatever TIOCSTI allows.
        session: tuple[Note, ...] = (USER_SESSION_NOTE,)
    else:
        command = contain_sandbox_command(launch.command, containment)
        session = ()
    said = (*session, KEYRING_NOTE, *containment.notes)
    said += notes(Topic.LIMITS, [containment.unlimited or ""])
    return replace(launch, command=command, notes=(*launch.notes, *said))
