"""The real Claude Code through ``sandbox-launch`` as a live agent account, watched from
the host: what every process of the agent was, where it ran, and what was left.

The e2e tests of what Claude itself starts (its tool cgroups, background tasks, its
in-process file tools) need to tell the agent's processes apart from everything else
on the host, so the agent is a live ``ac-`` account of its own
(:func:`tests.live_accounts.live_account`), not ``nobody``. One
:func:`launch_session` is one ``claude --print`` turn scripted by the fake Messages
API, run as :func:`tests.e2e.test_launch_claude_sandbox.launch` runs it: the
installed copy of the launcher, a private mount namespace with the managed settings
an apply writes and a fresh /tmp, the tree under /var/tmp.

While it runs, an :class:`AgentWatch` polls /proc for the agent's processes and
records, for each, its parent, its command line, its cgroups and the limits that
hold for it there (the smallest ``pids.max`` and memory limit on the way up to the
hierarchy's root), read from the host while the process and its cgroups exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox_setup.base.cgroups import judge_delegation, read_cgroup_facts
from sandbox_setup.base.choices import InnerSandbox, Mode, Network
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.limits import Limits, size_bytes
from sandbox_setup.base.processes import processes_of_uid, read_process
from sandbox_setup.checks.claude import sandbox_binaries
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.configure.settings import SandboxKeys, managed_domains_only, merge_settings
from sandbox_setup.policy.environment import passed_names
from tests.claude_run import FAKE_API_KEY, ClaudeRun, with_managed_settings
from tests.fake_api import FakeMessagesAPI
from tests.installed import installed_copy
from tests.launch_fixtures import LaunchTree, launcher_env, make_launch_tree
from tests.live_accounts import LiveAccount
from tests.tools import (
    CLAUDE_OLDEST,
    ClaudeRelease,
    claude_binary,
    release_tuple,
    require_root,
    require_tool,
)

# One live account per run; a second run beside this one (a helper's branch) names its
# own through SANDBOX_SETUP_TEST_E2E_AGENT so the two never remove each other's.
AGENT = os.environ.get("SANDBOX_SETUP_TEST_E2E_AGENT", "ac-claude-e2e")
PROMPT = "Run the scripted command."
MANAGED = "/etc/claude-code/managed-settings.json"
CGROUP_ROOT = Path("/sys/fs/cgroup")
# The session's limits in these tests: low enough to tell from the host's, high
# enough for Claude (about 100 tasks) and its tools.
LIMITS = Limits(tasks=512, memory="1G", tmpfs="256M")


@dataclass(frozen=True)
class Cgroup:
    """One line of /proc/PID/cgroup: the hierarchy's controllers and the path in it."""

    hierarchy: str  # "0" for cgroup v2
    controllers: tuple[str, ...]
    path: str

    @property
    def mount(self) -> Path:
        """Where the hierarchy is mounted (the usual layout: v1 per controller)."""
        if self.hierarchy == "0":
            unified = CGROUP_ROOT / "unified"
            return unified if unified.is_dir() else CGROUP_ROOT
        name = ",".join(c.removeprefix("name=") for c in self.controllers)
        return CGROUP_ROOT / name

    @property
    def directory(self) -> Path:
        return self.mount / self.path.lstrip("/")


def parse_cgroups(text: str) -> list[Cgroup]:
    found = []
    for line in text.splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        found.append(Cgroup(hierarchy, tuple(filter(None, controllers.split(","))), path))
    return found


def smallest_limit(directory: Path, names: Sequence[str], mount: Path) -> int | None:
    """The smallest of the limit files ``names`` in ``directory`` and its ancestors up to
    ``mount`` (None: no limit anywhere on the way)."""
    smallest: int | None = None
    current = directory
    while True:
        for name in names:
            try:
                text = (current / name).read_text().strip()
            except OSError:
                continue
            if text.isdigit() and (smallest is None or int(text) < smallest):
                smallest = int(text)
        if current == mount or mount not in current.parents:
            return smallest
        current = current.parent


@dataclass(frozen=True)
class Limited:
    """The limits that hold for one process: tasks and memory (None: unlimited)."""

    tasks: int | None
    memory: int | None


def limits_of(cgroups: Sequence[Cgroup]) -> Limited:
    tasks = memory = None
    for cgroup in cgroups:
        if cgroup.hierarchy == "0" or "pids" in cgroup.controllers:
            found = smallest_limit(cgroup.directory, ["pids.max"], cgroup.mount)
            tasks = found if tasks is None or (found is not None and found < tasks) else tasks
        if cgroup.hierarchy == "0" or "memory" in cgroup.controllers:
            names = ["memory.max", "memory.limit_in_bytes"]
            found = smallest_limit(cgroup.directory, names, cgroup.mount)
            memory = found if memory is None or (found is not None and found < memory) else memory
    return Limited(tasks, memory)


@dataclass(frozen=True)
class AgentProcess:
    """One process of the agent as the host saw it at one sweep. ``exe`` is the binary
    it runs (its command line can change: Claude sets its process title)."""

    pid: int
    ppid: int
    exe: str
    argv: tuple[str, ...]
    parent_exe: str
    cgroups: tuple[Cgroup, ...]
    limits: Limited
    user_ns: str
    pid_ns: str
    raw_cgroups: str

    @property
    def name(self) -> str:
        return os.path.basename(self.exe)

    def cgroup(self, controller: str) -> Cgroup | None:
        """Its cgroup in the hierarchy of ``controller`` (v1), else the unified one."""
        for cgroup in self.cgroups:
            if controller in cgroup.controllers:
                return cgroup
        return next((c for c in self.cgroups if c.hierarchy == "0"), None)


def _argv(pid: int) -> tuple[str, ...]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)


class AgentWatch:
    """Records every process of ``uid`` while it runs: an :class:`AgentProcess` each
    time its command line or its cgroups change (a child execs after the fork; Claude
    may move a tool into a cgroup of its own after starting it), and when each was last
    seen alive (one clock reading per sweep of /proc)."""

    def __init__(self, uid: int) -> None:
        self.uid = uid
        self.observed: dict[int, list[AgentProcess]] = {}
        self.last_seen: dict[int, float] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> AgentWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    @property
    def seen(self) -> dict[int, AgentProcess]:
        """Each process as it was last observed."""
        return {pid: views[-1] for pid, views in self.observed.items()}

    def every_observation(self) -> list[AgentProcess]:
        return [view for views in self.observed.values() for view in views]

    def _poll(self) -> None:
        while not self._stop.wait(0.02):
            try:
                self._sweep()
            except Exception as exc:  # a dead watch would pass every test: say why
                self.errors.append(repr(exc))
                return

    def _sweep(self) -> None:
        now = time.monotonic()
        for process in processes_of_uid(self.uid):
            if process.running:
                self._look(process.pid, process.ppid)
                self.last_seen[process.pid] = now

    def _look(self, pid: int, ppid: int) -> None:
        try:
            cgroup_text = Path(f"/proc/{pid}/cgroup").read_text()
            argv = _argv(pid)
            exe = os.readlink(f"/proc/{pid}/exe")
            views = self.observed.get(pid)
            if views and (views[-1].exe, views[-1].argv, views[-1].raw_cgroups) == (
                exe,
                argv,
                cgroup_text,
            ):
                return
            parent_exe = os.readlink(f"/proc/{ppid}/exe") if ppid > 0 else ""
            user_ns = os.readlink(f"/proc/{pid}/ns/user")
            pid_ns = os.readlink(f"/proc/{pid}/ns/pid")
            cgroups = tuple(parse_cgroups(cgroup_text))
            limits = limits_of(cgroups)
            # An exiting process shows the root cgroup and no command line: what it read
            # counts only if it still runs now, after the reads.
            process = read_process(pid)
        except OSError:
            return  # gone already
        if not argv or process is None or not process.running or process.ppid != ppid:
            return
        view = AgentProcess(
            pid, ppid, exe, argv, parent_exe, cgroups, limits, user_ns, pid_ns, cgroup_text
        )
        self.observed.setdefault(pid, []).append(view)

    def matching(self, *words: str) -> list[AgentProcess]:
        """The processes whose argv holds each of ``words`` as one of its arguments."""
        return [p for p in self.seen.values() if all(w in p.argv for w in words)]


@dataclass(frozen=True)
class SessionRun:
    """One launch: what Claude printed, what the fake API got, what the watch saw,
    the launcher's pid (its session cgroup is named after it) and what of the agent
    still ran right after the launcher returned."""

    run: ClaudeRun
    api: FakeMessagesAPI
    watch: AgentWatch
    launcher_pid: int
    left: tuple[int, ...]


@dataclass(frozen=True)
class AgentTree:
    tree: LaunchTree
    agent: LiveAccount
    debug_log: Path = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "debug_log", self.tree.home / "claude-debug.log")

    def config(
        self,
        mode: str,
        inner: str,
        env_pass: Sequence[str] = (),
        limits: Limits = LIMITS,
        loopback_ports: Sequence[int] = (),
        landlock: bool = True,
        allowed_domains: Sequence[str] = (),
    ) -> Path:
        """``loopback_ports``: in user mode, the host loopback ports Landlock lets the
        agent connect to besides the session's proxy (the fake API's); ``landlock``
        False writes ``[user] landlock = false``; ``allowed_domains``: what the
        session's proxy allows beyond Claude's endpoints."""
        config = LauncherConfig(
            mode=Mode(mode),
            claude=PurePosixPath(claude_binary()),
            agent_user=self.agent.name,
            agent_home=PurePosixPath(self.tree.home),
            workspaces=(PurePosixPath(self.tree.workspace),),
            network=Network.HOST,  # the fake API is on the host's loopback
            inner_sandbox=InnerSandbox(inner),
            env_pass=passed_names(env_pass),
            limits=limits,
            loopback_ports=tuple(loopback_ports),
            allowed_domains=tuple(allowed_domains),
        )
        path = self.tree.config_dir / f"{mode}-{inner}.toml"
        text = render_launcher_config(config)
        path.write_text(text if landlock else text + "\n[user]\nlandlock = false\n")
        path.chmod(0o644)
        return path

    def debug_lines(self, needle: str) -> list[str]:
        """Lines of Claude's debug log (``--debug-file``) that hold ``needle``."""
        try:
            text = self.debug_log.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines() if needle in line]


@contextmanager
def agent_tree() -> Iterator[AgentTree]:
    """A launch tree under /var/tmp (the launch mounts a fresh /tmp) whose home and
    workspace are the live agent's."""
    require_root()
    for tool in ("bwrap", "setpriv", "socat", "unshare", "useradd"):
        require_tool(tool)
    with make_launch_tree("/var/tmp", agent=AGENT) as tree:
        yield AgentTree(tree, tree.agent)


def written_settings(inner: str, mode: str = "sandbox") -> dict[str, Any]:
    """The managed settings an apply writes for this inner sandbox strength and mode."""
    binaries = sandbox_binaries()
    assert binaries["bwrap"] and binaries["socat"], binaries
    keys = SandboxKeys(
        inner,
        managed=True,
        bwrap_path=binaries["bwrap"],
        socat_path=binaries["socat"],
        managed_domains_only=managed_domains_only(Mode(mode)),
    )
    data: dict[str, Any] = json.loads(merge_settings(None, MANAGED, keys))
    return data


def claude_args(
    base_url: str,
    debug_log: Path,
    extra: Sequence[str] = (),
    print_mode: bool = True,
    api_in_settings: bool = True,
) -> list[str]:
    """Claude's arguments: bypass mode, the fake API through ``--settings`` (the launcher
    passes nothing of the caller's but what it names), its debug log, one prompt;
    ``print_mode``: ``--print`` with one JSON result (off for ``--bg``);
    ``api_in_settings`` False: the API's URL and key are the caller's exported ones."""
    api = {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": FAKE_API_KEY}
    flag = {
        "env": {
            **(api if api_in_settings else {}),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": "2",
        }
    }
    printed = ["--print", "--output-format", "json"] if print_mode else []
    return [
        *printed, "--dangerously-skip-permissions", "--settings", json.dumps(flag),
        "--debug-file", str(debug_log), *extra, "--", PROMPT,
    ]  # fmt: skip


def launch_session(
    at: AgentTree,
    api: FakeMessagesAPI,
    *,
    mode: str,
    inner: str,
    caller_env: Mapping[str, str] | None = None,
    env_pass: Sequence[str] = (),
    settings: Mapping[str, Any] | None = None,
    extra_args: Sequence[str] = (),
    print_mode: bool = True,
    timeout: float = 180,
    landlock: bool = True,
    api_in_settings: bool = True,
    while_running: Callable[[AgentWatch], None] | None = None,
    allowed_domains: Sequence[str] = (),
    seams: Sequence[str] = (),
    netns: str | None = None,
) -> SessionRun:
    """``sandbox-launch`` as root for one scripted turn, with ``caller_env`` exported
    (the launcher passes only what ``env_pass`` and its defaults name) and ``settings``
    as the managed settings (default: what an apply writes for ``inner``).
    ``while_running``: called in a thread of its own with the host's watch once the
    launch has started (e.g. to tell a waiting command the host has seen it).
    ``seams``: ``--seam-...`` options (the installed copy's ``launch_with_seams.py``
    runs then); ``netns``: the ``ip netns`` namespace the launch runs in (a test's
    world, :func:`tests.integration.egress_world.make_world`)."""
    # User mode: Landlock lets the agent connect only to the session's proxy and the
    # exposed loopback ports; the fake API (given through --settings, which the
    # launcher does not read) is one.
    api_port = urllib.parse.urlsplit(api.base_url).port
    ports = (api_port,) if mode == "user" and api_port else ()
    config = at.config(
        mode, inner, env_pass, loopback_ports=ports, landlock=landlock,
        allowed_domains=allowed_domains,
    )  # fmt: skip
    copy = installed_copy()
    entry = (
        [str(copy.seams / "launch_with_seams.py"), *seams]
        if seams
        else ["-m", "sandbox_setup.launcher"]
    )
    launcher = [str(copy.python), *entry, "--config", str(config), "--"]
    launcher += claude_args(api.base_url, at.debug_log, extra_args, print_mode, api_in_settings)
    argv = ["/bin/sh", "-c", 'mount -t tmpfs -o mode=1777 tmpfs /tmp && exec "$@"', "sh"]
    argv = with_managed_settings(
        [*argv, *launcher], written_settings(inner, mode) if settings is None else settings,
        at.tree.base,
    )  # fmt: skip
    if netns is not None:
        argv = ["ip", "netns", "exec", netns, *argv]
    env = launcher_env(caller_env)
    env.pop("PYTHONPATH", None)  # the copy, never the checkout
    env["XDG_STATE_HOME"] = str(at.tree.base / "state")  # never root's state directory
    with AgentWatch(at.agent.uid) as watch:
        # unshare and both shells exec: this pid is the launcher's.
        proc = subprocess.Popen(
            argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        helper = None
        if while_running is not None:
            helper = threading.Thread(target=while_running, args=(watch,), daemon=True)
            helper.start()
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        left = tuple(p.pid for p in processes_of_uid(at.agent.uid) if p.running)
        if helper is not None:
            helper.join(5)
    run = ClaudeRun(tuple(argv), proc.returncode, stdout, stderr)
    return SessionRun(run, api, watch, proc.pid, left)


def wait_until_seen(flag: str) -> str:
    """Shell for a scripted command: wait (at most 120 s) until the file ``flag`` (a
    path relative to the workspace) exists, as :func:`tell_when_seen` makes it."""
    return f"for i in $(seq 1200); do [ -e {flag} ] && break; sleep 0.1; done; echo seen=$i"


def tell_when_seen(
    flag: Path, *wanted: Callable[[AgentProcess], bool]
) -> Callable[[AgentWatch], None]:
    """For ``launch_session(while_running=...)``: once the host's watch has seen, for
    each of ``wanted``, a process of the agent it holds for, create ``flag``, so the
    command waiting with :func:`wait_until_seen` goes on: a process the test must see
    lives until the host saw it, however slow the watch is under load (never a sleep
    that hopes). Gives up after 120 s (the test then fails on what it never saw)."""

    def run(watch: AgentWatch) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not watch.errors:
            seen = list(watch.seen.values())
            if all(any(want(p) for p in seen) for want in wanted):
                flag.touch()
                return
            time.sleep(0.05)

    return run


def changed_since_oldest(release: ClaudeRelease) -> bool:
    """Is ``release`` newer than the oldest supported one (:data:`CLAUDE_OLDEST`)? What
    the tests pin as changed was seen in 2.1.332; the release it changed in is not
    known, and where the newest installed is still the oldest, it behaves as that."""
    return release_tuple(release.version) > release_tuple(CLAUDE_OLDEST)


def session_cgroup_names(launcher_pid: int, agent: str) -> set[str]:
    """The names the session cgroup of a launcher of this pid has: ``sandbox-launch-PID``
    (a cgroup v1 or v2 child it makes) or the systemd scope ``sandbox-launch-AGENT-PID``."""
    return {f"sandbox-launch-{launcher_pid}", f"sandbox-launch-{agent}-{launcher_pid}.scope"}


def session_has_cgroup() -> bool:
    """Does a launch from here get a session cgroup (the launcher's own judgement)?"""
    kind: str = judge_delegation(read_cgroup_facts()).kind
    return kind != "none"


def ancestors(session: SessionRun, process: AgentProcess) -> list[AgentProcess]:
    """The agent's processes above ``process``, nearest first (up to the first one that
    is not the agent's, e.g. the launcher)."""
    seen, pid = session.watch.seen, process.ppid
    found: list[AgentProcess] = []
    while pid in seen and len(found) < 64:
        found.append(seen[pid])
        pid = seen[pid].ppid
    return found


def claude_process(session: SessionRun) -> AgentProcess:
    """Claude itself: the one process running the Claude binary with none above it
    (the binary also runs as its helpers: ripgrep, apply-seccomp, the background
    supervisor and its workers)."""
    assert not session.watch.errors, session.watch.errors
    binary = os.path.realpath(claude_binary())
    ours = [p for p in session.watch.seen.values() if p.exe == binary]
    top = [p for p in ours if not any(a.exe == binary for a in ancestors(session, p))]
    assert len(top) == 1, f"not one Claude: {[(p.pid, p.argv[:3]) for p in ours]}"
    return top[0]


def assert_contained(session: SessionRun, at: AgentTree, limits: Limits = LIMITS) -> None:
    """Every process of the agent the host saw ran in the session's cgroup under the
    session's limits (where the host gives sessions a cgroup), and none was left when
    the launcher returned."""
    views = session.watch.every_observation()
    assert not session.watch.errors, session.watch.errors
    assert views, "the host saw no process of the agent: the test proves nothing"
    if session_has_cgroup():
        names = session_cgroup_names(session.launcher_pid, at.agent.name)
        memory = size_bytes(limits.memory)
        for view in views:
            for controller in ("pids", "memory"):
                cgroup = view.cgroup(controller)
                assert cgroup is not None and set(cgroup.path.split("/")) & names, (
                    f"{view.argv[:3]} ran outside the session's cgroup: {view.raw_cgroups}"
                )
            assert view.limits.tasks is not None and view.limits.tasks <= limits.tasks, view
            assert view.limits.memory is not None and view.limits.memory <= memory, view
    assert session.left == (), f"left running after the launcher returned: {session.left}"
