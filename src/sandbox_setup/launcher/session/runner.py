"""Run one agent session, contained and limited, and end it completely.

Both separate-agent modes (``sandbox``, ``user``) go through :func:`run_session`:

1. the launcher becomes a child subreaper (every orphan of the session becomes
   its child, so it can find and end them), joins a session keyring of its own
   for the agent (:mod:`sandbox_setup.launcher.session.keyring`), joins the session's cgroup when
   the host delegates one (:mod:`sandbox_setup.launcher.containment`), prints the limits
   notice (what is not limited here);
2. the session runs: ``sandbox`` is supervised and verified
   (:mod:`sandbox_setup.launcher.session.supervise`); ``user`` runs contained
   (``unshare --pid ...``, see :mod:`sandbox_setup.launcher.containment`) in a new
   session on a pty of its own that the launcher relays to the operator's
   terminal (:mod:`sandbox_setup.launcher.session.pty_relay`), with signals passed on;
3. **the session ended** (however: Claude exited, the launcher got SIGTERM or
   SIGHUP, the terminal hung up, an error): every process of the session still
   alive is killed and reaped, the cgroup removed; then the end-of-session hooks
   run (:data:`SessionHook`, given to :func:`run_session`; the workspace
   boundary's end-of-session scan goes there), and only then does the launcher
   return to the operator's shell, with Claude's exit status.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import TYPE_CHECKING

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.process_tree import running_descendants
from sandbox_setup.base.processes import descendants, read_process
from sandbox_setup.launcher.command import Agent
from sandbox_setup.launcher.containment import Containment
from sandbox_setup.launcher.egress.network import state_dir
from sandbox_setup.launcher.launch import Launch
from sandbox_setup.launcher.seams import REAL, LaunchSeams
from sandbox_setup.launcher.session.cgroup import (
    EarlySessionCgroup,
    SessionCgroup,
    SessionCgroupV1,
    session_cgroup,
)
from sandbox_setup.launcher.session.keyring import SessionKeyring, join_new_session_keyring
from sandbox_setup.launcher.session.pty_relay import PtyRelay, TerminalState, install_winch
from sandbox_setup.launcher.session.supervise import run_supervised
from sandbox_setup.launcher.user.landlock_plan import BASE_URL_PORT, PROXY_PORT, substitute
from sandbox_setup.policy.network import user_proxy_port

if TYPE_CHECKING:
    from sandbox_setup.launcher.egress.session import EgressSession
    from sandbox_setup.launcher.user.landlock_gate import LandlockGate

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
END_TIMEOUT = 10.0  # seconds to end what is left of a session
HANGUP_GRACE = 3.0  # after SIGHUP/SIGTERM, before the session is killed
FORWARDED = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """What the end-of-session hooks are told."""

    agent: Agent
    exit_code: int | None  # Claude's status (None: the session failed to run)
    how: str  # "exited", "signal SIGHUP", "error", ...
    killed: tuple[int, ...]  # pids that were still alive and were killed at the end
    keyring: SessionKeyring | None


SessionHook = Callable[[SessionEnd], None]


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def reap_children() -> None:
    """Collect every exited child (orphans of the session land here)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_descendants(timeout: float = END_TIMEOUT) -> tuple[int, ...]:
    """SIGKILL every live descendant of the launcher until none is left (bounded:
    a fork loop is outrun, since each round kills all that exist and the killed
    cannot fork again). Returns the pids killed."""
    return _end_descendants(timeout)[0]


def _end_descendants(timeout: float = END_TIMEOUT) -> tuple[tuple[int, ...], bool]:
    """:func:`kill_descendants`, and whether none is left (False: some outlived the
    deadline). The launcher is a child subreaper, so every orphan of the session is
    its child: its tree is walked through the ``children`` files
    (:func:`~sandbox_setup.base.process_tree.running_descendants`), all of /proc only where
    the kernel has none."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    own = os.getpid()
    while True:
        reap_children()
        alive = running_descendants(own)
        if alive is None:  # no children files here: walk all of /proc
            alive = []
            for pid in descendants(own):
                info = read_process(pid)
                if info is not None and info.running:
                    alive.append(pid)
        if not alive:
            return tuple(killed), True
        if time.monotonic() > deadline:
            print(
                f"sandbox-launch: WARNING: {len(alive)} process(es) of the session could not "
                f"be ended: {', '.join(map(str, alive[:10]))}",
                file=sys.stderr,
            )
            return tuple(killed), False
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            if pid not in killed:
                killed.append(pid)
        time.sleep(0.01)


def _die_with_launcher() -> None:
    # The session's first process (unshare) dies with the launcher, even SIGKILLed.
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def inner_group(first: int, master: int | None) -> int | None:
    """The process group a terminal's signal would reach: the foreground group of
    the session's pty, or (no pty) the group of the session ``setsid`` made below
    ``first``; None before it exists."""
    if master is not None:
        with contextlib.suppress(OSError):
            group = os.tcgetpgrp(master)
            if group > 0:
                return group
    for pid in descendants(first):
        info = read_process(pid)
        if info is not None and info.running and info.session == pid:
            return info.pgrp
    return None


def _first_step(netns: int) -> Callable[[], None]:
    """The session's first process, before it execs: it dies with the launcher and
    enters the session's network namespace (still root: before the privilege drop)."""
    # Imported here, not in the forked child; only a session with a namespace needs it.
    from sandbox_setup.launcher.egress.netns import join_namespace

    def step() -> None:
        _die_with_launcher()
        join_namespace(netns)

    return step


class _EarlyLeave:
    """The launcher leaves the session's cgroup once the sandbox is verified, in a
    thread of its own: a cgroup move waits for an RCU grace period (milliseconds),
    which then passes while Claude starts instead of at the session's end. Everything
    of the session descends from bwrap, already in the cgroup, and stays there; the
    launcher starts nothing more for the session."""

    def __init__(self, cgroup: SessionCgroup | SessionCgroupV1) -> None:
        self.cgroup = cgroup
        self.thread: threading.Thread | None = None

    def start(self, _sandbox_pid: int = 0) -> None:
        """Start leaving (a ``before_release`` hook of :func:`run_supervised`)."""
        thread = threading.Thread(target=self.cgroup.leave, name="leave-cgroup", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            return  # no thread: the cgroup's close leaves it, as it always did
        self.thread = thread

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


@dataclass(slots=True)
class _UserSession:
    """A running user-mode session, as its signal handlers see it."""

    child: subprocess.Popen[bytes] | None = None
    master: int | None = None
    how: str = "exited"
    kill_at: float | None = None
    pending: list[int] = field(default_factory=list)

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if signum in (signal.SIGTERM, signal.SIGHUP):
            self.how = f"signal {signal.Signals(signum).name}"
            if self.kill_at is None:
                self.kill_at = time.monotonic() + HANGUP_GRACE
        group = inner_group(self.child.pid, self.master) if self.child is not None else None
        if group is None:
            self.pending.append(signum)  # delivered once the session's group exists
            return
        # As the terminal would: to Claude's process group, never to unshare above it.
        with contextlib.suppress(OSError):
            os.killpg(group, signum)

    def deliver_pending(self) -> None:
        ready = self.child is not None and inner_group(self.child.pid, self.master) is not None
        if self.pending and ready:
            pending, self.pending = self.pending, []
            for signum in pending:
                self.on_signal(signum, None)

    def check_deadline(self) -> None:
        self.deliver_pending()
        if self.child is None or self.kill_at is None or time.monotonic() < self.kill_at:
            return
        with contextlib.suppress(OSError):
            self.child.kill()  # its first process; the rest dies with it (pdeathsig)


def run_user_session(
    launch: Launch,
    agent: Agent | None = None,
    network: LauncherConfig | None = None,
    seams: LaunchSeams = REAL,
    while_running: Callable[[], None] | None = None,
) -> tuple[int, str]:
    """Run the contained user-mode argv in a new session (on a relayed pty when the
    operator is at a terminal); its exit status (128+N for signal N) and how it ended.

    With ``launch.landlock``: the session's egress proxy first (``network``: the config,
    when the plan has one), then the session, held at its Landlock helper until
    :class:`~sandbox_setup.launcher.user.landlock_gate.LandlockGate` verified it."""
    # User mode's own (a sandbox does not import them).
    from sandbox_setup.launcher.egress.netns import new_namespace
    from sandbox_setup.launcher.egress.session import EgressSession
    from sandbox_setup.launcher.user.landlock_gate import LandlockGate

    egress: EgressSession | None = None
    gate: LandlockGate | None = None
    netns: int | None = None
    try:
        if launch.landlock is not None:
            assert agent is not None
            plan = launch.landlock
            table: dict[str, str] = {}
            if plan.base_url_port is not None:
                table[BASE_URL_PORT] = str(plan.base_url_port)
            if plan.proxy:
                # One egress session start for sandbox and user mode (EgressSession).
                # With a network namespace of the session's own, as sandbox mode's:
                # loopback only, the proxy listening inside, the exposed ports (and a
                # loopback base URL's) forwarded in; made, served and probed before the
                # session starts, which joins it before anything of the agent runs.
                # Without (Landlock's ports the wall): an ephemeral host port.
                assert network is not None
                ports = (*network.loopback_ports, *filter(None, [plan.base_url_port]))
                egress = EgressSession.start(
                    replace(network, loopback_ports=ports), agent.uid, agent.gid,
                    state_dir(), resolver=seams.resolver, after_drop=seams.after_proxy_drop,
                    mode="user", proxy_port=user_proxy_port(ports) if plan.netns else 0,
                    gateway=launch.gateway if plan.netns else None,
                )  # fmt: skip
                if plan.netns:
                    netns = new_namespace()
                    egress.ready_in(netns)
                else:
                    egress.ready_on_host()
                table[PROXY_PORT] = str(egress.proxy_port)
            if plan.walls.any:  # else the namespace only: no Landlock helper runs
                gate = LandlockGate.open(plan, state_dir(), netns)
                table.update(gate.fd_table())
            env = {key: substitute([value], table)[0] for key, value in launch.env.items()}
            filled = launch.command.each_part(lambda part: substitute(part, table))
            launch = replace(launch, command=filled, env=env)
        return _run_user_session(launch, gate, netns, while_running)
    finally:
        if gate is not None:
            gate.close()
        if egress is not None:
            egress.close()
        if netns is not None:
            os.close(netns)


def _run_user_session(
    launch: Launch,
    gate: LandlockGate | None,
    netns: int | None = None,
    while_running: Callable[[], None] | None = None,
) -> tuple[int, str]:
    relay = PtyRelay.for_stdio()
    stdio = relay.child_stdio() if relay is not None else (0, 1, 2)
    state = _UserSession(master=relay.master if relay is not None else None)
    # With a pty, a resize reaches the session through it (SIGWINCH from its kernel
    # side); without one, the launcher's SIGWINCH is passed on like the others.
    forwarded = FORWARDED if relay is not None else (*FORWARDED, signal.SIGWINCH)
    previous = {sig: signal.signal(sig, state.on_signal) for sig in forwarded}
    restore_winch = install_winch(relay) if relay is not None else None
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        try:
            child = subprocess.Popen(
                list(launch.argv),
                env=dict(launch.env),
                cwd=launch.cwd,
                stdin=stdio[0],
                stdout=stdio[1],
                stderr=stdio[2],
                start_new_session=True,
                preexec_fn=_die_with_launcher if netns is None else _first_step(netns),
                pass_fds=gate.child_fds if gate is not None else (),
            )
        except OSError as exc:
            raise RefusedError(f"cannot start {launch.argv[0]}: {exc.strerror}") from None
        except subprocess.SubprocessError as exc:  # the first step (joining the netns)
            raise RefusedError(f"cannot start the session: {exc}") from None
        state.child = child
        try:
            if gate is not None:
                gate.after_start()
                gate.verify()  # RefusedError: the session is killed below, nothing released
                gate.release()
            if while_running is not None:
                while_running()
            if relay is not None:
                relay.start()
                while child.poll() is None:
                    state.check_deadline()
                    if not relay.pump(0.05):
                        break  # nothing holds the pty any more
                relay.drain()
            while True:
                try:
                    code = child.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    state.check_deadline()
        except BaseException:
            with contextlib.suppress(OSError):
                child.kill()
            child.wait()
            state.how = "error"
            raise
    finally:
        if restore_winch is not None:
            restore_winch()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if relay is not None:
            relay.close()
    return (code if code >= 0 else 128 - code), state.how


def _run_sandbox(
    launch: Launch,
    agent: Agent,
    network: LauncherConfig | None,
    seams: LaunchSeams,
    before_release: Callable[[int], None] | None = None,
    while_running: Callable[[], None] | None = None,
) -> int:
    if network is None:
        return run_supervised(launch, agent.uid, before_release=before_release,
                              host_namespaces=seams.host_namespaces,
                              after_release=while_running)  # fmt: skip
    # The egress session starts once bwrap is started (its policy, its log and the
    # proxy's fork overlap the sandbox's set-up), is ready before the release, and is
    # closed however the session ends.
    sessions: list[EgressSession] = []

    def start_egress() -> None:
        # Imported here, not for the host's network; and once bwrap is started, so
        # that the import overlaps bwrap's own set-up of the sandbox.
        from sandbox_setup.launcher.egress.session import EgressSession

        sessions.append(EgressSession.start(
            network, agent.uid, agent.gid, state_dir(),
            resolver=seams.resolver, after_drop=seams.after_proxy_drop, gateway=launch.gateway,
        ))  # fmt: skip

    def release_hook(sandbox_pid: int) -> None:
        sessions[0].ready(sandbox_pid)  # the proxy first: it is forked in the cgroup already
        if before_release is not None:
            before_release(sandbox_pid)

    try:
        return run_supervised(launch, agent.uid, before_release=release_hook,
                              after_start=start_egress, after_release=while_running,
                              host_namespaces=seams.host_namespaces)  # fmt: skip
    finally:
        for session in sessions:
            session.close()


def run_session(
    launch: Launch,
    agent: Agent,
    containment: Containment,
    *,
    switch_user: bool,
    hooks: Sequence[SessionHook] = (),
    network: LauncherConfig | None = None,
    quiet: bool = False,
    early_cgroup: EarlySessionCgroup | None = None,
    seams: LaunchSeams = REAL,
    while_running: Callable[[], None] | None = None,
) -> int:
    """Run the session ``launch`` describes; see the module doc. Returns Claude's status.

    ``while_running``: runs once Claude is released, while the launcher waits for the
    session (e.g. importing what ``hooks`` need, off the launch's wall clock).

    ``early_cgroup``: the session's cgroup, made and joined while the launch was
    prepared (:class:`~sandbox_setup.launcher.session.cgroup.EarlySessionCgroup`); taken when
    ``containment`` plans the same one.

    ``network``: the config of a sandbox with network allowlist, whose egress proxy
    runs for the session (forked once bwrap is started, handed its listeners in the sandbox's
    network namespace and probed from inside before Claude is released, stopped before
    the session's leftovers are killed).

    ``seams``: what a test replaces (the proxy's resolver, a failing step); the real
    launch passes none (:mod:`sandbox_setup.launcher.seams`)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    keyring = join_new_session_keyring(agent.uid, agent.gid, switch_user=switch_user)
    cgroup, error = early_cgroup.take(containment) if early_cgroup is not None else (None, None)
    if cgroup is None:
        cgroup = session_cgroup(
            containment.cgroup_parent,
            containment.cgroup_v1,
            containment.tasks,
            containment.memory,
        )
        if cgroup is not None:
            try:
                cgroup.enter()
            except OSError as exc:
                error = exc
    if cgroup is not None and error is not None:
        raise RefusedError(
            f"cannot make the session's cgroup {cgroup.path}: {error.strerror}"
        ) from None
    if containment.notice and not quiet:  # a note, like the launch notice (--quiet)
        print(containment.notice, file=sys.stderr)
    code: int | None = None
    how = "error"
    ended = False  # every process of the session is gone already (nothing left to kill)
    early = _EarlyLeave(cgroup) if cgroup is not None else None
    try:
        if launch.supervised:
            terminal = TerminalState.save()
            try:
                code = _run_sandbox(
                    launch,
                    agent,
                    network,
                    seams,
                    early.start if early is not None else None,
                    while_running,
                )
            finally:
                # Nothing may touch the terminal once it is restored. What this kills is
                # not reported: the pass below would find none left, and reports that.
                ended = _end_descendants()[1]
                terminal.restore()
            how = "exited"
        else:
            code, how = run_user_session(launch, agent, network, seams, while_running)
    finally:
        # The session ended. Nothing of it may outlive this point. (After a pass that
        # left none, none can be: only the session's own processes could start more.)
        killed = () if ended else kill_descendants()
        if early is not None:
            early.join()
        if cgroup is not None:
            killed += tuple(cgroup.close())
        end = SessionEnd(agent, code, how, killed, keyring)
        errors: list[BaseException] = []
        for hook in hooks:
            try:
                hook(end)
            except Exception as exc:  # every hook runs; the first error is raised after
                errors.append(exc)
        if errors:
            raise errors[0]
    assert code is not None  # an exception otherwise
    return code


def session_end_hooks() -> list[SessionHook]:
    """The hooks every session runs when it ended (before the launcher returns).
    None of its own: the workspace boundary's end (docs/design.md invariant 8) is passed
    in by the pipeline (launcher/main.py)."""
    return []
