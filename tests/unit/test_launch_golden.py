"""Golden files of each mode's whole launch: argv, environment, directory and notes.

Each case builds a launch the way ``sandbox-launch`` does
(:func:`~sandbox_setup.launcher.command.sandbox_launch`,
:func:`~sandbox_setup.launcher.command.user_launch` or
:func:`~sandbox_setup.launcher.command.unsafe_launch`, then, for the first two,
:func:`~sandbox_setup.launcher.containment.plan_containment` and
:func:`~sandbox_setup.launcher.containment.contained_launch`) from fixed, fake inputs:
a launcher config, an agent, host facts, containment facts and tools, the caller's
environment. Nothing is read from this host, and the builders are run where reading
it raises (:func:`no_host`). The result is compared with ``tests/unit/golden/NAME.txt``,
one argument per line, so a review sees every flag a change adds, drops or moves.

After a deliberate change, rewrite the files and review their diff::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/unit/test_launch_golden.py

``inner_sandbox`` varies over the sandbox cases (strong, weak, off); it is Claude's
settings' business, written at apply, and is in each file's header so a launch that
starts to depend on it shows up here.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import pathlib
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.cgroups import Delegation
from sandbox_setup.base.choices import InnerSandbox, Mode, Network
from sandbox_setup.base.launcher_config import LauncherConfig, UnsafeAcceptance
from sandbox_setup.base.limits import Limits
from sandbox_setup.boundary.binds import ro_bind_argv
from sandbox_setup.launcher.command import (
    Agent,
    HostFacts,
    sandbox_launch,
    unsafe_launch,
    user_launch,
)
from sandbox_setup.launcher.containment import (
    PID_NS_ROOT,
    PID_NS_USER,
    ContainmentFacts,
    Tools,
    contained_launch,
    plan_containment,
)
from sandbox_setup.launcher.launch import Command, Launch
from sandbox_setup.launcher.notice import notice_of
from sandbox_setup.launcher.user.landlock_plan import PROXY_PORT, LandlockPlan
from sandbox_setup.launcher.workdir import WorkDir
from sandbox_setup.policy.landlock import user_trees, user_walls
from sandbox_setup.policy.workspace import BindPlan, RoBind

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

GIB = 1024**3
CLAUDE = "/opt/claude/bin/claude"
BWRAP = "/usr/bin/bwrap"
SETPRIV = "/usr/bin/setpriv"
AGENT = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
# A non-root operator: the agent is the operator's own account.
OPERATOR = Agent("dev", 1000, 1000, PurePosixPath("/home/dev"))
WORKSPACES = (PurePosixPath("/srv/project"), PurePosixPath("/srv/docs"))
TOOLS = Tools(
    unshare="/usr/bin/unshare",
    prlimit="/usr/bin/prlimit",
    systemd_run="/usr/bin/systemd-run",
    setsid="/usr/bin/setsid",
    bash="/usr/bin/bash",
    env="/usr/bin/env",
)
# The caller's environment: what may be passed ([env] pass), what never is (a
# sandbox claim, a loader variable, a proxy the sandbox replaces), and the rest.
ENVIRON = {
    "TERM": "xterm-256color",
    "LANG": "en_US.UTF-8",
    "PATH": "/root/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
    "HOME": "/root",
    "ANTHROPIC_API_KEY": "sk-ant-fake-for-the-golden-test",
    "GH_TOKEN": "gh-fake-for-the-golden-test",
    "OPERATOR_SECRET": "not-for-the-agent",
    "CLAUDE_CODE_BUBBLEWRAP": "1",
    "LD_PRELOAD": "/tmp/evil.so",
    "HTTPS_PROXY": "http://proxy.corp.example:3128",
}
ENV_PASS = ("ANTHROPIC_API_KEY", "GH_TOKEN", "IS_SANDBOX", "LD_PRELOAD", "HTTPS_PROXY")
# The workspace boundary's read-only binds of /srv/project, as main.py gets them.
BOUNDARY = BindPlan(
    binds=(
        RoBind(".git/config", "self", "git obeys it"),
        RoBind(".git/hooks", "empty-dir", "git runs them"),
        RoBind(".claude", "empty-dir", "Claude obeys it"),
    ),
    not_bound=(),
)
WORKSPACE_BINDS = tuple(ro_bind_argv(BOUNDARY, "/srv/project", "/srv/project"))
ACCEPTED = UnsafeAcceptance(
    "root (uid 0)", "2026-11-30T04:00:00+00:00", "I accept that Claude runs as root"
)


def config(mode: Mode, **changes: object) -> LauncherConfig:
    values: dict[str, object] = {
        "mode": mode,
        "claude": PurePosixPath(CLAUDE),
        "agent_user": AGENT.name,
        "agent_home": AGENT.home,
        "workspaces": WORKSPACES,
        "env_pass": ENV_PASS,
        "limits": Limits(tasks=512, memory="4G", tmpfs="256M"),
    }
    values.update(changes)
    return LauncherConfig(**values)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class Case:
    """One launch: its golden file's name, a line saying what it is, and its builder."""

    name: str
    what: str
    build: Callable[[], Launch]


def _contained(
    cfg: LauncherConfig,
    launch: Launch,
    agent: Agent,
    facts: ContainmentFacts,
    *,
    dedicated_uid: bool,
    ctty: bool = True,
    directory: str | None = None,
) -> Launch:
    """``launch`` contained, with its notice (``directory``: where Claude starts, when
    not ``launch.cwd``: bwrap's --chdir)."""
    containment = plan_containment(
        cfg.mode,
        cfg.limits,
        facts,
        TOOLS,
        agent_uid=agent.uid,
        dedicated_uid=dedicated_uid,
        session=f"{agent.name}-4242",
    )
    contained = contained_launch(cfg.mode, launch, containment, TOOLS, ctty=ctty)
    where = WorkDir(directory or contained.cwd or str(cfg.workspaces[0]))
    return _noticed(cfg, contained, agent.name, where, ENVIRON)


def _noticed(
    cfg: LauncherConfig, launch: Launch, agent: str, where: WorkDir, environ: dict[str, str]
) -> Launch:
    """``launch`` with its notice, as sandbox-launch gives it one (main.build_launch)."""
    notice = notice_of(cfg, agent, where, environ, passed=launch.passed,
                       plan=launch.landlock, gateway=launch.gateway)  # fmt: skip
    return dataclasses.replace(launch, notice=notice)


def _unsafe(cfg: LauncherConfig, environ: dict[str, str], uid: int, who: str) -> Launch:
    args = ["--dangerously-skip-permissions"]
    launch = unsafe_launch(cfg, CLAUDE, environ, args, uid, who)
    return _noticed(cfg, launch, who, WorkDir("/root/work", None), environ)


def sandbox_allowlist_root() -> Launch:
    cfg = config(
        Mode.SANDBOX,
        network=Network.ALLOWLIST,
        inner_sandbox=InnerSandbox.STRONG,
        allowed_domains=("pypi.org", "*.githubusercontent.com:443"),
        loopback_ports=(5432,),
    )
    facts = HostFacts(
        legacy_tiocsti=True,
        root_links=(("/bin", "usr/bin"), ("/lib", "usr/lib"), ("/lib64", None)),
        resolver_dirs=("/run/systemd/resolve",),
        # /srv/docs is a symlink: bwrap mounts where it leads.
        real_paths=(
            ("/home/claude-agent", "/home/claude-agent"),
            ("/srv/project", "/srv/project"),
            ("/srv/docs", "/data/docs"),
        ),
    )
    launch = sandbox_launch(
        cfg, AGENT, CLAUDE, BWRAP, SETPRIV, facts, ENVIRON, ["--print", "hello"],
        switch_user=True, workdir="/srv/project/app", workspace_binds=WORKSPACE_BINDS,
    )  # fmt: skip
    delegation = Delegation(
        "cgroup2", "a delegated cgroup v2 subtree", parent="/sys/fs/cgroup/sandbox-setup"
    )
    return _contained(
        cfg, launch, AGENT, ContainmentFacts(delegation, None, 8 * GIB), dedicated_uid=True,
        directory="/srv/project/app",
    )  # fmt: skip


def sandbox_host_operator() -> Launch:
    cfg = config(
        Mode.SANDBOX,
        network=Network.HOST,
        inner_sandbox=InnerSandbox.WEAK,
        agent_user=OPERATOR.name,
        agent_home=OPERATOR.home,
        workspaces=(PurePosixPath("/home/dev/src"),),
        limits=Limits(tasks=256, memory="50%", tmpfs="64M"),
    )
    facts = HostFacts(legacy_tiocsti=False, root_links=(("/bin", "usr/bin"),))
    launch = sandbox_launch(
        cfg, OPERATOR, "/usr/local/bin/claude", BWRAP, SETPRIV, facts, ENVIRON, [],
        switch_user=False,
    )  # fmt: skip
    delegation = Delegation("systemd", "systemd runs here")
    return _contained(
        cfg, launch, OPERATOR, ContainmentFacts(delegation, None, 8 * GIB), dedicated_uid=False
    )


def sandbox_none_root() -> Launch:
    cfg = config(Mode.SANDBOX, network=Network.NONE, inner_sandbox=InnerSandbox.OFF)
    facts = HostFacts(
        legacy_tiocsti=True,
        root_links=(("/bin", None), ("/lib", None), ("/sbin", None)),
        resolver_dirs=("/run/resolvconf",),
    )
    launch = sandbox_launch(
        cfg, AGENT, CLAUDE, BWRAP, SETPRIV, facts, ENVIRON,
        ["--dangerously-skip-permissions"], switch_user=True,
    )  # fmt: skip
    delegation = Delegation(
        "none", "no cgroup v2 here", remedy="mount -t cgroup2 none /sys/fs/cgroup"
    )
    return _contained(
        cfg, launch, AGENT, ContainmentFacts(delegation, None, None), dedicated_uid=True
    )


def user_root() -> Launch:
    cfg = config(Mode.USER)
    launch = user_launch(
        cfg, AGENT, CLAUDE, SETPRIV, ENVIRON, ["--continue"], switch_user=True,
        new_session=True, workdir="/srv/docs",
    )  # fmt: skip
    delegation = Delegation(
        "cgroup1",
        "cgroup v1 controllers",
        v1_parents=("/sys/fs/cgroup/memory/vm", "/sys/fs/cgroup/pids/vm"),
    )
    return _contained(
        cfg, launch, AGENT, ContainmentFacts(delegation, PID_NS_ROOT, 8 * GIB), dedicated_uid=True
    )


def user_root_landlock() -> Launch:
    # The shape where user namespaces are refused: Claude's inner sandbox off, so all
    # three walls (sandbox_setup.policy.landlock), with the trees the policy gives.
    cfg = config(Mode.USER, inner_sandbox=InnerSandbox.OFF)
    walls = user_walls(7, enabled=True, inner_sandbox_on=False)
    read, write = user_trees(cfg.agent_home, cfg.workspaces, CLAUDE, CLAUDE)
    plan = LandlockPlan(walls, read, write, (PROXY_PORT,), proxy=True, python="/usr/bin/python3")
    launch = user_launch(
        cfg, AGENT, CLAUDE, SETPRIV, ENVIRON, ["--continue"], switch_user=True,
        new_session=True, workdir="/srv/docs", landlock=plan,
    )  # fmt: skip
    delegation = Delegation("none", "no cgroup here", remedy="boot with cgroup v2")
    return _contained(
        cfg, launch, AGENT, ContainmentFacts(delegation, PID_NS_ROOT, 8 * GIB), dedicated_uid=True
    )


def user_root_abi3_netns() -> Launch:
    # Debian 12's kernel (6.1, Landlock ABI 3) with Claude's inner sandbox on: no
    # Landlock wall at all, so no helper runs; root may make a network namespace, so
    # the session gets one with its proxy (docs/design.md invariant 16).
    cfg = config(Mode.USER)
    walls = user_walls(3, enabled=True, inner_sandbox_on=True)
    plan = LandlockPlan(walls, (), (), (PROXY_PORT,), proxy=True, python="/usr/bin/python3",
                        netns=True)  # fmt: skip
    launch = user_launch(
        cfg, AGENT, CLAUDE, SETPRIV, ENVIRON, ["--continue"], switch_user=True,
        new_session=True, workdir="/srv/docs", landlock=plan,
    )  # fmt: skip
    delegation = Delegation("none", "no cgroup here", remedy="boot with cgroup v2")
    return _contained(
        cfg, launch, AGENT, ContainmentFacts(delegation, PID_NS_ROOT, 8 * GIB), dedicated_uid=True
    )


def user_root_no_pid_namespace() -> Launch:
    cfg = config(Mode.USER, workspaces=())
    launch = user_launch(cfg, AGENT, CLAUDE, SETPRIV, ENVIRON, [], switch_user=True)
    delegation = Delegation("none", "no cgroup here", remedy="boot with cgroup v2")
    return _contained(
        cfg, launch, AGENT, ContainmentFacts(delegation, None, 8 * GIB), dedicated_uid=True
    )


def user_operator() -> Launch:
    cfg = config(Mode.USER, agent_user=OPERATOR.name, agent_home=OPERATOR.home)
    launch = user_launch(
        cfg, OPERATOR, CLAUDE, SETPRIV, ENVIRON, ["-p", "hi"], switch_user=False,
        new_session=False,
    )  # fmt: skip
    without_proc = tuple(o for o in PID_NS_USER if o != "--mount-proc")
    delegation = Delegation("systemd", "systemd runs here")
    return _contained(
        cfg,
        launch,
        OPERATOR,
        ContainmentFacts(delegation, without_proc, 8 * GIB),
        dedicated_uid=False,
        ctty=False,
    )


def unsafe_root_skip_permissions() -> Launch:
    cfg = config(Mode.UNSAFE, unsafe=ACCEPTED)
    return _unsafe(cfg, ENVIRON, 0, "root (uid 0)")


def unsafe_root_is_sandbox_kept() -> Launch:
    cfg = config(Mode.UNSAFE, unsafe=ACCEPTED)
    environ = {**ENVIRON, "IS_SANDBOX": "0"}
    return _unsafe(cfg, environ, 0, "root (uid 0)")


def unsafe_operator() -> Launch:
    cfg = config(Mode.UNSAFE, unsafe=ACCEPTED)
    return _unsafe(cfg, ENVIRON, 1000, "uid 1000")


CASES = (
    Case(
        "sandbox-allowlist-root",
        "sandbox mode, root operator, network allowlist, inner sandbox strong, "
        "TIOCSTI on, a delegated cgroup v2",
        sandbox_allowlist_root,
    ),
    Case(
        "sandbox-host-operator",
        "sandbox mode, non-root operator (its own uid), network host, inner sandbox weak, "
        "TIOCSTI off, systemd",
        sandbox_host_operator,
    ),
    Case(
        "sandbox-none-root",
        "sandbox mode, root operator, network none, inner sandbox off, TIOCSTI on, no cgroup",
        sandbox_none_root,
    ),
    Case(
        "user-root",
        "user mode, root operator, a pid namespace with a fresh /proc, cgroup v1, stdin a terminal",
        user_root,
    ),
    Case(
        "user-root-landlock",
        "user mode, root operator, Landlock ABI 7 with files (inner sandbox off), network "
        "through the session's proxy, scope",
        user_root_landlock,
    ),
    Case(
        "user-root-abi3-netns",
        "user mode, root operator, Landlock ABI 3 (no walls with the inner sandbox on), "
        "the session's own network namespace and proxy",
        user_root_abi3_netns,
    ),
    Case(
        "user-root-no-pid-namespace",
        "user mode, root operator, no workspace, no pid namespace, no cgroup",
        user_root_no_pid_namespace,
    ),
    Case(
        "user-operator",
        "user mode, non-root operator, a user and pid namespace without /proc, systemd, "
        "stdin not a terminal",
        user_operator,
    ),
    Case(
        "unsafe-root-skip-permissions",
        "unsafe mode, root, --dangerously-skip-permissions",
        unsafe_root_skip_permissions,
    ),
    Case(
        "unsafe-root-is-sandbox-kept",
        "unsafe mode, root, --dangerously-skip-permissions, IS_SANDBOX=0 exported",
        unsafe_root_is_sandbox_kept,
    ),
    Case(
        "unsafe-operator",
        "unsafe mode, uid 1000, --dangerously-skip-permissions",
        unsafe_operator,
    ),
)
BY_NAME = {case.name: case for case in CASES}


def _host_read(*args: object, **kwargs: object) -> None:
    raise AssertionError("a launch builder read the host")


@contextmanager
def no_host() -> Iterator[None]:
    """While the builders run, what would read this host (ids, links, /proc, the
    terminal, a probe) raises: the golden files cannot depend on the machine."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("getuid", "geteuid", "getgid", "getpid", "readlink", "isatty", "getcwd"):
            patch.setattr(os, name, _host_read)
        patch.setattr(os.path, "realpath", _host_read)
        patch.setattr(pathlib.Path, "read_text", _host_read)
        patch.setattr(subprocess, "run", _host_read)
        yield


def build(case: Case) -> Launch:
    with no_host():
        return case.build()


def _lines(section: str, values: Sequence[str]) -> list[str]:
    for value in values:
        # One argument per line: a line break inside one would make the file lie.
        assert "\n" not in value, f"{section}: {value!r} spans lines"
    return [f"[{section}]", *values, ""]


def render(case: Case, launch: Launch) -> str:
    """The golden text: a header, then one section per part of the launch."""
    lines = [
        f"# {case.name}: {case.what}",
        "# tests/unit/test_launch_golden.py; UPDATE_GOLDEN=1 rewrites this file",
        "",
    ]
    lines += _lines("argv", launch.argv)
    lines += _lines("env", [f"{key}={value}" for key, value in launch.env.items()])
    lines += _lines("cwd", [launch.cwd or "(not set: bwrap --chdir, or the caller's)"])
    lines += _lines("supervised", ["yes" if launch.supervised else "no"])
    lines += _lines("new_session", ["yes" if launch.new_session else "no"])
    lines += _lines("passed", launch.passed)
    lines += _lines("warning", launch.warning.splitlines() if launch.warning else [])
    lines += _lines("notes", [note.text for note in launch.notes])
    # The one line on stderr at launch (sandbox_setup.launcher.notice), rendered from
    # the same value.
    lines += _lines("notice", [launch.notice.render()] if launch.notice is not None else [])
    return "\n".join(lines)


def golden_diff(name: str, actual: str) -> str:
    """A unified diff from the golden file to ``actual`` ("" when they match)."""
    path = GOLDEN / f"{name}.txt"
    expected = path.read_text() if path.exists() else ""
    diff = difflib.unified_diff(
        expected.splitlines(keepends=True),
        actual.splitlines(keepends=True),
        fromfile=f"tests/unit/golden/{name}.txt",
        tofile=f"{name} as built now",
    )
    return "".join(diff)


def assert_golden(name: str, actual: str, *, update: bool = False) -> None:
    path = GOLDEN / f"{name}.txt"
    if update:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
        return
    diff = golden_diff(name, actual)
    if diff:
        raise AssertionError(
            f"the launch differs from {path.name} (UPDATE_GOLDEN=1 rewrites it after a "
            f"deliberate change; review the diff):\n{diff}"
        )


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_launch_matches_its_golden_file(case: Case) -> None:
    assert_golden(case.name, render(case, build(case)), update=UPDATE)


def test_every_golden_file_has_a_case() -> None:
    """A golden file whose case is gone would stay behind, unchecked."""
    assert {path.stem for path in GOLDEN.glob("*.txt")} == set(BY_NAME)


def _without(argv: tuple[str, ...], flag: str, count: int = 1) -> tuple[str, ...]:
    at = argv.index(flag)
    return argv[:at] + argv[at + count :]


def _replaced(argv: tuple[str, ...], old: str, new: str) -> tuple[str, ...]:
    at = argv.index(old)
    return (*argv[:at], new, *argv[at + 1 :])


def _swapped_last_binds(argv: tuple[str, ...]) -> tuple[str, ...]:
    # Claude's directory bound read-only before the workspace boundary, not after it.
    at = argv.index("--ro-bind", argv.index("/srv/project/.claude"))
    return argv[: at - 5] + argv[at : at + 3] + argv[at - 5 : at] + argv[at + 3 :]


@dataclasses.dataclass(frozen=True)
class Mutation:
    """One slip in a case's launch, as a change to the builder would make it, and a
    line the failure's diff must show."""

    case: str
    change: Callable[[Launch], Launch]
    shows: str


def _argv(change: Callable[[tuple[str, ...]], tuple[str, ...]]) -> Callable[[Launch], Launch]:
    # The whole argv as one part: a slip anywhere in it, whichever stage made it.
    return lambda launch: dataclasses.replace(launch, command=Command(change(launch.argv)))


def _env(key: str, value: str) -> Callable[[Launch], Launch]:
    return lambda launch: dataclasses.replace(launch, env={**launch.env, key: value})


MUTATIONS = {
    "no --unshare-net": Mutation(
        "sandbox-allowlist-root", _argv(lambda a: _without(a, "--unshare-net")), "---unshare-net"
    ),
    "no --cap-drop ALL": Mutation(
        "sandbox-none-root", _argv(lambda a: _without(a, "--cap-drop", 2)), "---cap-drop"
    ),
    "no --new-session": Mutation(
        "sandbox-allowlist-root", _argv(lambda a: _without(a, "--new-session")), "---new-session"
    ),
    "/usr bound writable": Mutation(
        "sandbox-host-operator", _argv(lambda a: _replaced(a, "--ro-bind", "--bind")), "+--bind"
    ),
    "two binds in the other order": Mutation(
        "sandbox-allowlist-root", _argv(_swapped_last_binds), "+/opt/claude/bin"
    ),
    "no --pdeathsig": Mutation(
        "user-root", _argv(lambda a: _without(a, "--pdeathsig", 2)), "---pdeathsig"
    ),
    "a secret passed to Claude": Mutation(
        "user-root", _env("OPERATOR_SECRET", "x"), "+OPERATOR_SECRET=x"
    ),
    "IS_SANDBOX overridden": Mutation(
        "unsafe-root-is-sandbox-kept", _env("IS_SANDBOX", "1"), "+IS_SANDBOX=1"
    ),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_one_flag_change_fails_the_comparison(name: str) -> None:
    mutation = MUTATIONS[name]
    case = BY_NAME[mutation.case]
    mutated = render(case, mutation.change(build(case)))
    with pytest.raises(AssertionError) as failed:
        assert_golden(case.name, mutated)
    # The message is a unified diff from the golden file, and it shows the change.
    diff = str(failed.value).split("\n", 1)[1]
    assert diff.startswith(f"--- tests/unit/golden/{case.name}.txt\n+++ ")
    assert mutation.shows in diff.splitlines()[2:]
