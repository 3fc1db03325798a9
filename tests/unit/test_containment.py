"""Session containment and limits as pure decisions: which cgroup (or none) the host
offers, and the argv and notice each case gives (docs/design.md invariant 10).

The systemd and cgroup v2 cases cannot run on a host without them (this CI host
has neither: cgroup v1 controllers, no systemd), so their argv and plan are
table-tested here; tests/integration/test_sessions.py runs the fallback for real.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sandbox_setup.base.cgroups import (
    CgroupFacts,
    Delegation,
    judge_delegation,
    parse_mountinfo_cgroups,
    parse_own_cgroup,
    v1_dirs,
)
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.limits import Limits, mem_total, memory_bytes
from sandbox_setup.checks.cgroup import judge_cgroup_delegation
from sandbox_setup.checks.model import Status
from sandbox_setup.launcher.containment import (
    Containment,
    ContainmentFacts,
    Tools,
    contain_sandbox_command,
    contain_user_command,
    find_tools,
    plan_containment,
)
from sandbox_setup.launcher.launch import Command
from sandbox_setup.launcher.session.cgroup import EarlySessionCgroup
from sandbox_setup.launcher.trust import ToolNotFound

GIB = 1024**3
MOUNTINFO = (
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "42 31 0:39 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "43 31 0:40 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)


def v2(**changes: object) -> CgroupFacts:
    base: dict[str, object] = {
        "systemd": False,
        "v2_mount": "/sys/fs/cgroup",
        "own_path": "/",
        "controllers": frozenset({"pids", "memory", "cpu"}),
        "subtree": frozenset({"pids", "memory"}),
        "writable": True,
    }
    base.update(changes)
    return CgroupFacts(**base)  # type: ignore[arg-type]


def test_mountinfo_and_own_cgroup_are_parsed() -> None:
    assert parse_mountinfo_cgroups(MOUNTINFO) == (
        "/sys/fs/cgroup/unified",
        "/",
        frozenset({"pids", "memory"}),
    )
    assert parse_own_cgroup("4:memory:/x\n0::/user.slice/session-1.scope\n") == (
        "/user.slice/session-1.scope"
    )
    assert parse_own_cgroup("0::/\n") == "/"


V1_DIRS = (("memory", "/sys/fs/cgroup/memory/vm"), ("pids", "/sys/fs/cgroup/pids"))

CASES = {
    "systemd": (v2(systemd=True), "systemd", ""),
    "root-delegated": (v2(), "cgroup2", ""),
    "no-cgroup2": (
        CgroupFacts(systemd=False, v1_controllers=frozenset({"pids"})),
        "none",
        "mount -t cgroup2",
    ),
    "v1-bound (this CI host)": (
        v2(controllers=frozenset({"hugetlb"}), v1_controllers=frozenset({"pids", "memory"})),
        "none",
        "systemd.unified_cgroup_hierarchy=1",
    ),
    "root-not-enabled": (v2(subtree=frozenset()), "none", 'echo "+pids +memory" >'),
    "nested-not-delegated": (
        v2(own_path="/user.slice", subtree=frozenset()),
        "none",
        "Delegate=yes",
    ),
    "not-writable": (v2(writable=False), "none", "chown"),
    # v2 unusable, but memory and pids are writable cgroup v1 hierarchies (this CI host)
    "v1-hierarchies": (
        v2(
            controllers=frozenset({"hugetlb"}),
            v1_controllers=frozenset({"pids", "memory"}),
            v1_dirs=V1_DIRS,
            v1_writable=True,
        ),
        "cgroup1",
        "",
    ),
    "v1-not-writable": (
        v2(
            controllers=frozenset({"hugetlb"}),
            v1_controllers=frozenset({"pids", "memory"}),
            v1_dirs=V1_DIRS,
            v1_writable=False,
        ),
        "none",
        "systemd.unified_cgroup_hierarchy=1",
    ),
    "v1-memory-only": (
        CgroupFacts(systemd=False, v1_dirs=V1_DIRS[:1], v1_writable=True),
        "none",
        "mount -t cgroup2",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_delegation_is_judged_with_the_cause_and_the_fix(case: str) -> None:
    facts, kind, remedy = CASES[case]
    delegation = judge_delegation(facts)
    assert delegation.kind == kind
    assert remedy in delegation.remedy
    verdict = judge_cgroup_delegation(facts)
    assert verdict.status is (Status.WARN if kind == "none" else Status.PASS)
    if kind == "none":
        assert "RLIMIT_NPROC" in verdict.detail and "NOT limit its memory" in verdict.detail


def test_a_mount_of_a_subtree_maps_the_own_cgroup_into_it() -> None:
    facts = v2(v2_mount="/sys/fs/cgroup", v2_root="/ns", own_path="/ns/app")
    assert facts.own_dir == "/sys/fs/cgroup/app"
    assert v2(v2_root="/elsewhere", own_path="/ns").own_dir is None


TOOLS = Tools(
    unshare="/usr/bin/unshare",
    prlimit="/usr/bin/prlimit",
    systemd_run="/usr/bin/systemd-run",
    setsid="/usr/bin/setsid",
    bash="/usr/bin/bash",
    env="/usr/bin/env",
)
PID_NS = ("--pid", "--fork", "--kill-child", "--mount-proc")


def plan(
    delegation: Delegation,
    mode: Mode = Mode.USER,
    limits: Limits | None = None,
    dedicated: bool = True,
    pid_ns: tuple[str, ...] | None = PID_NS,
):  # type: ignore[no-untyped-def]
    facts = ContainmentFacts(delegation, pid_ns, mem_total=8 * GIB)
    return plan_containment(
        mode, limits or Limits(), facts, TOOLS, agent_uid=1001, dedicated_uid=dedicated,
        session="agent-42",
    )  # fmt: skip


NONE = Delegation("none", "no cgroup here", "boot with systemd")


def test_without_a_cgroup_tasks_are_an_rlimit_and_memory_is_said_to_be_unlimited() -> None:
    found = plan(NONE, limits=Limits(tasks=64))
    assert found.prefix == (
        "/usr/bin/unshare", *PID_NS, "--", "/usr/bin/prlimit", "--nproc=64:64", "--",
    )  # fmt: skip
    assert (found.tasks_by, found.memory, found.cgroup_parent) == ("rlimit", None, None)
    assert found.notice is not None
    assert "memory is not limited (no cgroup here)" in found.notice
    assert "boot with systemd" in found.notice


def test_the_operators_own_uid_gets_no_rlimit_and_is_told_so() -> None:
    found = plan(NONE, dedicated=False)
    assert "/usr/bin/prlimit" not in found.prefix and found.tasks_by == "none"
    assert found.notice is not None and "tasks are not limited" in found.notice


def test_systemd_puts_the_session_in_a_scope_with_both_limits() -> None:
    found = plan(Delegation("systemd", "systemd runs"), limits=Limits(tasks=64, memory="50%"))
    scope = found.prefix[: found.prefix.index("--") + 1]
    assert scope[:2] == ("/usr/bin/systemd-run", "--scope")
    assert "--property=TasksMax=64" in scope
    assert f"--property=MemoryMax={4 * GIB}" in scope  # 50% of 8G
    assert "--unit=sandbox-launch-agent-42" in scope
    assert "/usr/bin/prlimit" not in found.prefix and found.notice is None
    assert plan(Delegation("systemd", "x"), dedicated=False).prefix[1] == "--user"


def test_a_delegated_cgroup2_subtree_is_used_by_the_runner_not_the_argv() -> None:
    found = plan(Delegation("cgroup2", "ok", parent="/sys/fs/cgroup"), limits=Limits(memory="2G"))
    assert found.cgroup_parent == "/sys/fs/cgroup" and found.memory == 2 * GIB
    assert found.prefix == ("/usr/bin/unshare", *PID_NS, "--")
    assert found.notice is None


def test_cgroup_v1_hierarchies_are_used_by_the_runner_not_the_argv() -> None:
    parents = ("/sys/fs/cgroup/memory/vm", "/sys/fs/cgroup/pids")
    found = plan(Delegation("cgroup1", "v1", v1_parents=parents), limits=Limits(memory="2G"))
    assert found.cgroup_v1 == parents and found.cgroup_parent is None
    assert found.memory == 2 * GIB and found.tasks_by == "cgroup"
    assert "/usr/bin/prlimit" not in found.prefix and found.notice is None
    assert any("memory.limit_in_bytes" in note.text for note in found.notes)


def test_v1_cgroup_dirs_are_read_from_mountinfo_and_proc_self_cgroup() -> None:
    mountinfo = (
        "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "31 25 0:27 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
        "32 25 0:28 /outer /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    )
    own = "8:pids:/\n4:memory:/process_api/abc\n1:cpu:/outer/x\n0::/\n"
    assert v1_dirs(mountinfo, own) == (
        ("memory", "/sys/fs/cgroup/memory/process_api/abc"),
        ("pids", "/sys/fs/cgroup/pids"),
    )
    hidden = "30 25 0:26 /other /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    assert v1_dirs(hidden, own) == ()  # our cgroup is outside what the mount shows


def test_user_argv_is_contained_in_order() -> None:
    found = plan(NONE)
    # The parts user_launch gives: setpriv's options and Claude's argv, kept apart.
    command = Command(
        program=("/c", "--print", "x"), drop=("/usr/bin/setpriv", "--reuid=1001", "--no-new-privs")
    )
    contained = contain_user_command(command, found, TOOLS, ctty=True).argv
    setpriv = contained.index("/usr/bin/setpriv")
    assert contained[:setpriv] == found.prefix
    assert contained[setpriv:setpriv + 5] == (
        "/usr/bin/setpriv", "--reuid=1001", "--no-new-privs", "--pdeathsig", "KILL",
    )  # fmt: skip
    rest = contained[setpriv + 6 :]
    assert rest[:4] == ("/usr/bin/setsid", "--wait", "--ctty", "--")
    assert rest[4:6] == ("/usr/bin/bash", "-c") and "exec" not in rest[6]
    assert rest[-6:] == ("/usr/bin/env", "-u", "_", "--", "/c", "--print", "x")[-6:]
    assert "--ctty" not in contain_user_command(command, found, TOOLS, ctty=False).argv


def test_no_pid_namespace_falls_back_to_the_subreaper_and_says_so() -> None:
    found = plan(NONE, pid_ns=None)
    assert "/usr/bin/unshare" not in found.prefix and not found.pid_namespace
    assert any("subreaper" in note.text for note in found.notes)


def test_sandbox_argv_gets_only_the_limits_prefix() -> None:
    found = plan(NONE, mode=Mode.SANDBOX, limits=Limits(tasks=100))
    command = Command(program=("x",), drop=("/usr/bin/setpriv",))
    assert contain_sandbox_command(command, found).argv == (
        "/usr/bin/prlimit", "--nproc=100:100", "--", "/usr/bin/setpriv", "--", "x",
    )  # fmt: skip


def _plan(delegation: Delegation, limits: Limits, cgroup_parent: str | None = None) -> Containment:
    memory = memory_bytes(limits, mem_total())
    return Containment(
        delegation, limits.tasks, memory, 1 << 20, "cgroup", cgroup_parent=cgroup_parent
    )


def test_the_session_runner_takes_the_early_cgroup_its_plan_names(tmp_path: Path) -> None:
    # Not started: no thread, nothing made; only which cgroup is taken is judged here.
    delegation = Delegation("cgroup2", "delegated", parent=str(tmp_path))
    early = EarlySessionCgroup(delegation, Limits())
    cgroup, error = early.take(_plan(delegation, Limits(), cgroup_parent=str(tmp_path)))
    assert cgroup is not None and cgroup.parent == tmp_path and error is None
    assert early.taken
    early.discard()  # the session's now: left alone
    assert early.cgroup is cgroup


def test_an_early_cgroup_another_plan_does_not_name_is_discarded(tmp_path: Path) -> None:
    delegation = Delegation("cgroup2", "delegated", parent=str(tmp_path / "a"))
    early = EarlySessionCgroup(delegation, Limits())
    other = _plan(delegation, Limits(), cgroup_parent=str(tmp_path / "b"))
    assert early.take(other) == (None, None)
    assert not early.taken and early.cgroup is None
    none = EarlySessionCgroup(Delegation("none", "no cgroup here"), Limits())
    assert none.cgroup is None
    assert none.take(_plan(delegation, Limits())) == (None, None)


def _tools_path(tmp_path: Path, systemd_run: int | None) -> str:
    """A PATH with the real prlimit and, unless None, a systemd-run of that mode."""
    directory = tmp_path / "bin"
    directory.mkdir(parents=True)
    (directory / "prlimit").symlink_to(shutil.which("prlimit") or "/usr/bin/prlimit")
    if systemd_run is not None:
        tool = directory / "systemd-run"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(systemd_run)
    return str(directory)


def test_a_missing_systemd_run_is_done_without_and_an_untrusted_one_refuses(
    tmp_path: Path,
) -> None:
    # Told apart by the error's type (ToolNotFound), never by its words.
    systemd = Delegation("systemd", "systemd runs here")
    owners = frozenset({0, os.getuid()})
    missing = find_tools(Mode.SANDBOX, systemd, owners, _tools_path(tmp_path / "a", None))
    assert missing.systemd_run is None and missing.prlimit is not None
    writable = _tools_path(tmp_path / "b", 0o777)  # anyone may replace it
    with pytest.raises(RefusedError, match="systemd-run") as refused:
        find_tools(Mode.SANDBOX, systemd, owners, writable)
    assert not isinstance(refused.value, ToolNotFound)
