"""``sandbox-launch``: start Claude Code the way ``launcher.toml`` says, or refuse.

Order of a launch: read and trust-check the config (owner, mode, every
directory on its path), parse it strictly (any problem is a refusal, exit 3),
trust-check the Claude binary and the tools (bwrap, setpriv) found on PATH,
resolve the agent, build the command (:mod:`sandbox_setup.launcher.command`), then

* ``sandbox``: supervise bwrap and verify it before Claude runs
  (:mod:`sandbox_setup.launcher.session.supervise`), exit with Claude's status;
* ``user``: run Claude contained, in a session of its own on a pty the launcher
  relays (:mod:`sandbox_setup.launcher.session.runner`), which forwards signals and
  returns its status;
* ``unsafe``: exec, so signals and the exit status are Claude's own.

The code reads in that order: :func:`main`, :func:`run`, :func:`_launch`, then the
stages as they run, each given the launch's inputs as one :class:`Request`. What the
launch will do is one typed value (:class:`sandbox_setup.launcher.launch.Launch`),
built by :func:`build_launch`'s stages and rendered by the notice and ``--dry-run``.

This module and everything it imports stay free of Textual and tomlkit (a test
says so): the launcher only reads its config.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.choices import InnerSandbox, Mode, Network
from sandbox_setup.base.console import OutputError, prepare_streams
from sandbox_setup.base.errors import InputError, RefusedError, SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.landlock import abi_version
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.base.netwall import NO_WALL, UserNetworkWall
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import printable, printable_lines
from sandbox_setup.base.version import package_version
from sandbox_setup.launcher.base_url import managed_env, refuse_unreachable
from sandbox_setup.launcher.command import (
    Agent,
    check_workspace_paths,
    gather_host_facts,
    sandbox_launch,
    unsafe_launch,
    user_launch,
)
from sandbox_setup.launcher.containment import Containment, contain
from sandbox_setup.launcher.egress.network import build_policy, is_allowlist, state_dir
from sandbox_setup.launcher.launch import Launch, Note, Topic, notes
from sandbox_setup.launcher.notice import Notice, notice_of
from sandbox_setup.launcher.seams import REAL, LaunchSeams
from sandbox_setup.launcher.session.cgroup import EarlySessionCgroup
from sandbox_setup.launcher.trust import (
    DEFAULT_PATH,
    find_trusted_tool,
    read_trusted_text,
    refuse_claude_shim,
)
from sandbox_setup.launcher.user.landlock_plan import PROXY_PORT, LandlockPlan
from sandbox_setup.launcher.workdir import WorkDir, choose_workdir, current_directory, real_paths
from sandbox_setup.policy.environment import (
    BaseUrl,
    base_url_in_effect,
    base_url_port,
    base_url_port_problem,
    loopback_port_hint,
    select_passed,
)
from sandbox_setup.policy.limits import over_maximum
from sandbox_setup.policy.names import user_name_problem
from sandbox_setup.policy.network_words import USER_MODE_BELOW_NETWORK_ABI
from sandbox_setup.policy.trust import check_trusted_file

if TYPE_CHECKING:
    from sandbox_setup.base.cgroups import Delegation
    from sandbox_setup.boundary.session import Boundary

USAGE = """usage: sandbox-launch [--dry-run] [--quiet] [--config PATH] [--] [claude arguments ...]
       sandbox-launch [--dry-run] [--quiet] [--config PATH] --run PROGRAM [arguments ...]

Start Claude Code as launcher.toml says (sandbox, user or unsafe mode), or refuse.

options:
  --dry-run      print the command line and environment it would use; start nothing
  --quiet        no launch notice or notes on stderr (warnings, refusals and what the
                 end-of-session workspace scan moved aside are still printed)
  --config PATH  launcher config (default: ~/.config/sandbox-setup/launcher.toml)
  --run PROGRAM  run PROGRAM (a root-owned program on PATH, e.g. git, or an absolute
                 path) instead of Claude Code, as the agent in the same containment
                 and with the same end-of-session scan, and none of your variables:
                 the safe way to review the agent's work, e.g.
                 sandbox-launch --run git -C /srv/app log -p
                 (sandbox and user mode; it gets a terminal of its own)
  --version      print sandbox-launch's version and the Claude Code version recorded
                 at the last apply; starts nothing
  -h, --help     show this help

Arguments after the options (or after --) go to Claude Code unchanged. Claude Code
starts in the directory you are in when that is inside a workspace; elsewhere, in
the only workspace (with several, cd into one first).

exit codes:
  0    ok (or Claude Code's own status)
  2    usage error, or you are in none of several workspaces
  3    refused, fail-closed (untrusted or invalid config, sandbox not verified,
       unsafe without recorded acceptance, missing agent user or tool)
  70   internal error (a bug; the traceback is in the state directory's crash.log)
  130  interrupted
  other: Claude Code's exit status (128+N when it died of signal N)"""


def main(argv: Sequence[str] | None = None, *, seams: LaunchSeams = REAL) -> int:
    """Console script entry point. ``seams``: what a test replaces (see
    :mod:`sandbox_setup.launcher.seams`); the console script passes none."""
    try:
        prepare_streams("sandbox-launch")
    except OutputError as exc:
        print(f"sandbox-launch: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except InputError as exc:
        print(f"sandbox-launch: {printable_lines(str(exc))}\n\n{USAGE}", file=sys.stderr)
        return int(ExitCode.USAGE)
    if options is None:
        try:
            print(USAGE)
        except OutputError as exc:  # --help > /dev/full
            print(f"sandbox-launch: {exc}", file=sys.stderr)
            return int(exc.exit_code)
        return int(ExitCode.OK)
    if options.version:
        try:
            print("\n".join(version_lines(options)))
        except OutputError as exc:
            print(f"sandbox-launch: {exc}", file=sys.stderr)
            return int(exc.exit_code)
        return int(ExitCode.OK)
    try:
        return run(options, os.environ, seams)
    except RefusedError as exc:
        # Refusals quote paths (a workspace's, a config's): invariant 15.
        print(f"sandbox-launch: refused: {printable_lines(str(exc))}", file=sys.stderr)
        return int(ExitCode.REFUSED)
    except SetupError as exc:
        print(f"sandbox-launch: {printable_lines(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("sandbox-launch: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        # Fail closed: whatever went wrong, nothing may start half-checked. A bug is
        # exit 70 (a config problem is always a RefusedError, exit 3).
        print("sandbox-launch: Claude Code was not started, or was stopped", file=sys.stderr)
        from sandbox_setup.base.crashlog import report_crash  # only ever on this path

        report_crash("sandbox-launch", exc, _state_dir())
        return int(ExitCode.INTERNAL)


def _state_dir() -> Path | None:
    try:
        return state_dir()
    except Exception:
        return None


@dataclass(frozen=True, slots=True)
class Options:
    """The launcher's own options; the rest of the command line is Claude's."""

    dry_run: bool
    config: Path | None
    claude_args: tuple[str, ...]
    quiet: bool = False
    # --run: a program to run instead of Claude (its arguments are claude_args).
    program: str | None = None
    # --version: print versions, start nothing.
    version: bool = False


def parse_args(argv: Sequence[str]) -> Options | None:
    """Our options come first; the first other argument (or ``--``) starts Claude's."""
    dry_run, quiet, config, program, version = False, False, None, None, False
    args = list(argv)
    while args:
        arg = args[0]
        if arg == "--":
            args.pop(0)
            break
        if arg in ("-h", "--help"):
            return None
        if arg == "--run" or arg.startswith("--run="):
            if arg == "--run":
                if len(args) < 2:
                    raise InputError("--run needs a program (e.g. --run git log)")
                program = args.pop(1)
            else:
                program = arg.partition("=")[2]
            if not program or program.startswith("-"):
                raise InputError(f"--run needs a program, not {program!r} (e.g. --run git log)")
            args.pop(0)
            break  # the rest is the program's
        if arg == "--version":
            version = True
        elif arg == "--dry-run":
            dry_run = True
        elif arg == "--quiet":
            quiet = True
        elif arg == "--config" or arg.startswith("--config="):
            if arg == "--config":
                if len(args) < 2:
                    raise InputError("--config needs a path")
                value = args.pop(1)
            else:
                value = arg.partition("=")[2]
            if not value:
                raise InputError("--config needs a path")
            config = Path(value).absolute()
        else:
            break
        args.pop(0)
    return Options(
        dry_run=dry_run,
        config=config,
        claude_args=tuple(args),
        quiet=quiet,
        program=program,
        version=version,
    )


def version_lines(options: Options) -> list[str]:
    """``--version``: this launcher's version and the Claude Code version the last apply
    recorded in launcher.toml (read as a launch reads it: trust-checked, parsed
    strictly). Nothing is started: not Claude, not ``claude --version``."""
    lines = [f"sandbox-launch {package_version()}"]
    path = options.config or default_config_path()
    try:
        real, config = load_config(path, frozenset({0, os.getuid()}))
    except (RefusedError, InputError) as exc:
        lines.append(f"Claude Code: unknown (launcher config: {printable_lines(str(exc))})")
        return lines
    recorded = config.claude_version or "not recorded"
    lines.append(f"Claude Code: {recorded} (recorded at apply; {printable(str(config.claude))})")
    lines.append(f"launcher config: {printable(str(real))}, mode {config.mode}")
    return lines


def default_config_path() -> Path:
    return Path(Layout.for_root("/").launcher_config)


def run(options: Options, environ: Mapping[str, str], seams: LaunchSeams = REAL) -> int:
    """One launch of ``options``: its config read and judged, then :func:`_launch`."""
    uid = os.getuid()
    if os.geteuid() != uid:
        raise RefusedError("sandbox-launch must not run setuid (real and effective uid differ)")
    owners = frozenset({0, uid})
    real, config = load_config(options.config or default_config_path(), owners)
    # The session's cgroup is joined in the background meanwhile (see the class).
    separate = config.mode is not Mode.UNSAFE and not options.dry_run
    early = EarlySessionCgroup.start(config.limits) if separate else None
    request = Request(
        options,
        environ,
        uid,
        owners,
        real,
        config,
        delegation=early.delegation if early is not None else None,
    )
    try:
        return _launch(request, early, seams)
    finally:
        if early is not None:
            early.discard()  # not taken by a session (a refused launch): removed


def _launch(request: Request, early: EarlySessionCgroup | None, seams: LaunchSeams) -> int:
    """The stages, in order: the base URL's port, the workspace boundary, the launch
    (:func:`build_launch`), then what it says, and the session (or ``exec``)."""
    options = request.options
    # A --run review talks to no API: its base URL neither opens a port nor refuses.
    base = None if options.program else launch_base_url(request.config, request.environ)
    config, exposed = expose_base_url_port(request.config, base)
    request = replace(request, config=config, exposed=exposed)
    if base is not None and not options.dry_run and _may_reach(config):
        refuse_unreachable(base)  # in seconds, not Claude's minutes of retries
    check_workspace_paths(config)  # before the boundary walks them
    boundary = start_boundary(config, options.dry_run)
    if boundary is not None:  # for the history of sessions (sandbox-setup --status)
        boundary.config, boundary.agent = str(request.config_path), config.agent_user
        request = replace(request, workspace_binds=tuple(boundary.bind_args))
    # However the launch ends (refused before bwrap, a session that could not start,
    # an error), the boundary ends too: placeholders out, the scan, the baseline.
    # (A session's own end hook has done it already: then this does nothing.)
    try:
        launch, agent, containment = build_launch(request)
        if options.program is not None and boundary is not None:
            launch = review_git_trust(launch, config, boundary)
        hooks = [boundary.end] if boundary is not None else []
        if boundary is not None and agent is not None:
            boundary.agent_uid = agent.uid  # its end removes Claude's mount-point files
        if launch.warning:
            print(printable_lines(launch.warning), file=sys.stderr)
        if launch.notice is not None and not options.quiet and not options.dry_run:
            print(printable_lines(launch.notice.render()), file=sys.stderr)
        if options.dry_run:
            print(printable_lines(describe(launch, request.config_path, config.mode)))
            return int(ExitCode.OK)
        if launch.cwd:
            try:
                os.chdir(launch.cwd)
            except OSError as exc:
                raise RefusedError(f"cannot enter {launch.cwd}: {exc.strerror}") from None
        if agent is not None and containment is not None:
            # Imported here: a session's only (not --dry-run's nor unsafe mode's), and
            # while the session's cgroup may still be being joined (start_boundary).
            from sandbox_setup.launcher.session.runner import run_session, session_end_hooks

            return run_session(
                launch,
                agent,
                containment,
                switch_user=request.uid == 0,
                hooks=[*hooks, *session_end_hooks()],
                network=config if _has_proxy(launch, config) else None,
                quiet=options.quiet,
                early_cgroup=early,
                seams=seams,
                while_running=boundary.prepare_end if boundary is not None else None,
            )
    finally:
        if boundary is not None:
            boundary.end()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(launch.argv[0], list(launch.argv), dict(launch.env))
    except OSError as exc:
        raise RefusedError(f"cannot start {launch.argv[0]}: {exc.strerror}") from None


@dataclass(frozen=True, slots=True)
class Request:
    """One launch's inputs: what the stages below read, given as one value."""

    options: Options
    environ: Mapping[str, str]
    uid: int
    owners: frozenset[int]  # who may own what the launcher trusts: root and the caller
    config_path: Path  # the launcher config, trust-checked, as its real path
    config: LauncherConfig
    # The cgroup delegation, judged already (EarlySessionCgroup, before the launcher
    # moved into the session's cgroup); None: judged by the containment.
    delegation: Delegation | None = None
    # The base URL's loopback port this session exposes beyond the configured ones
    # (expose_base_url_port), for the notice.
    exposed: int | None = None
    # The workspace boundary's read-only binds (sandbox mode's bwrap argv).
    workspace_binds: tuple[str, ...] = ()

    @property
    def path_env(self) -> str | None:
        return self.environ.get("PATH")


def load_config(path: Path, owners: frozenset[int]) -> tuple[Path, LauncherConfig]:
    """Trust-check, then parse strictly: every problem is a refusal."""
    if not path.exists() and not path.is_symlink():
        raise RefusedError(f"launcher config {path} does not exist; run sandbox-setup to create it")
    real, text = read_trusted_text(path, owners, "launcher config")
    try:
        config = parse_launcher_config(text, str(real))
    except InputError as exc:  # includes TOML nested too deeply to parse
        raise RefusedError(str(exc)) from None
    problem = user_name_problem(config.agent_user)
    if problem is not None:
        raise RefusedError(f"{real}: key 'agent.user' {problem}")
    for key, items in (
        ("workspaces", config.workspaces),
        ("allowed_domains", config.allowed_domains),
        ("loopback_ports", config.loopback_ports),
    ):
        problem = over_maximum(key, items)
        if problem is not None:  # more than the launcher handles: refuse before anything
            raise RefusedError(f"{real}: key 'sandbox.{key}': {problem}")
    if is_allowlist(config) or config.mode is Mode.USER:
        # The proxy builds the same policy at launch (user mode's where Landlock confines
        # the network); building it here refuses a bad pattern for --dry-run too, with
        # the same words (it used to pass, exit 0).
        build_policy(config)
    return real, config


def launch_base_url(config: LauncherConfig, environ: Mapping[str, str]) -> BaseUrl | None:
    """The ``ANTHROPIC_BASE_URL`` this launch gives Claude, from the places that count
    (:func:`sandbox_setup.policy.environment.base_url_in_effect`): the caller's
    variables as passed (unsafe mode: all of them) and root's managed settings."""
    if config.mode is Mode.UNSAFE:
        passed: Mapping[str, str] = environ
    else:
        passed, _ = select_passed(config.env_pass, environ, config.mode)
    return base_url_in_effect(passed, managed_env())


def expose_base_url_port(
    config: LauncherConfig, base: BaseUrl | None
) -> tuple[LauncherConfig, int | None]:
    """``config`` with the base URL's loopback port added to the ports this session
    exposes (``[sandbox] base_url_port = "auto"``), and that port; unchanged and None
    when there is none to add. The session then exposes it exactly as a configured
    ``--allow-loopback-port``: the same forwarders, ``NO_PROXY`` and egress log."""
    port = base_url_port(
        base, config.mode, config.network, config.base_url_port, config.loopback_ports
    )
    if port is None or base is None:
        return config, None
    problem = base_url_port_problem(port, base.source)
    ports = (*config.loopback_ports, port)
    problem = problem or over_maximum("loopback_ports", ports)
    if problem is not None:
        raise RefusedError(problem)
    return replace(config, loopback_ports=ports), port


def _may_reach(config: LauncherConfig) -> bool:
    """Can this launch reach a network at all (not a sandbox with network none)?"""
    return not (config.mode is Mode.SANDBOX and config.network == Network.NONE)


def start_boundary(config: LauncherConfig, dry_run: bool) -> Boundary | None:
    """The workspace boundary of a session with an agent of its own (not unsafe
    mode); see :mod:`sandbox_setup.boundary.session`."""
    if config.mode is Mode.UNSAFE:
        return None
    # Imported once the session's cgroup is being joined (EarlySessionCgroup, a kernel
    # wait in a thread): the import's time then passes within that wait.
    from sandbox_setup.boundary.session import Boundary

    try:
        return Boundary.start(
            _workspace_pairs(config),
            state_dir(),
            sandbox=config.mode is Mode.SANDBOX,
            dry_run=dry_run,
        )
    except OSError as exc:
        raise RefusedError(
            f"cannot set up the workspace boundary ({exc}); refusing to launch without it"
        ) from None


def _workspace_pairs(config: LauncherConfig) -> list[tuple[str, str]]:
    """(path the session shows, real host path) of each workspace."""
    real = dict(real_paths(config.workspaces))
    return [(str(w), real.get(str(w), str(w))) for w in config.workspaces]


def build_launch(request: Request) -> tuple[Launch, Agent | None, Containment | None]:
    """The launch of the request's config (or of ``--run``'s program), by the stages
    below in order: the program, trusted; the agent and where it starts; the mode's
    command; its containment; the notice. Each adds the notes it knows."""
    claude, request = _program(request)
    config = request.config
    if config.mode is Mode.UNSAFE:
        uid = request.uid
        who = "root (uid 0)" if uid == 0 else f"uid {uid}"
        launch = unsafe_launch(
            config, str(claude), request.environ, request.options.claude_args, uid, who
        )
        here = current_directory() or "a directory that no longer exists"
        return replace(launch, notice=_notice(request, launch, who, WorkDir(here))), None, None
    agent = resolve_agent(config, request.uid)
    workdir = choose_workdir(
        config.workspaces, real_paths(config.workspaces), current_directory(), agent.home
    )
    if config.mode is Mode.SANDBOX:
        separate = _sandbox_launch(request, agent, claude, workdir)
    else:
        separate = _user_launch(request, agent, claude, workdir)
    launch, containment = contain(
        config, agent, separate, request.uid, request.owners, request.path_env,
        request.delegation,
    )  # fmt: skip
    notice = _notice(request, launch, agent.name, workdir, claude)
    return replace(launch, notice=notice), agent, containment


def _program(request: Request) -> tuple[Path, Request]:
    """The program the launch starts, trusted: Claude, or ``--run``'s, and the request
    as that program gets it."""
    config, program = request.config, request.options.program
    if program is not None:
        claude = _review_program(program, config, request.owners, request.path_env)
        # Nothing of the caller's environment: a review program needs no API key, and
        # the agent's own config (a pager) would see whatever it is given. It is not
        # Claude: no inner sandbox of its own to configure (no --settings added), and
        # in user mode Landlock then confines its files too.
        config = replace(config, env_pass=(), inner_sandbox=InnerSandbox.OFF)
        request = replace(request, config=config)
    else:
        claude = check_trusted_file(config.claude, request.owners, "Claude binary")
    if not os.access(claude, os.X_OK):
        raise RefusedError(
            f"{'program' if program else 'Claude binary'} {claude} is not executable"
        )
    refuse_claude_shim(claude)
    return claude, request


def _review_program(
    program: str, config: LauncherConfig, owners: frozenset[int], path_env: str | None
) -> Path:
    """The program of ``--run``: trusted like every tool the launcher starts (root's or
    the operator's, nobody else can write it or a directory above it)."""
    if config.mode is Mode.UNSAFE:
        raise RefusedError(
            "--run needs an agent account (sandbox or user mode); in unsafe mode there is "
            "none, and the program would run as you"
        )
    if "/" in program:
        return check_trusted_file(Path(program).absolute(), owners, f"--run program {program}")
    if shutil.which(program, path=path_env or DEFAULT_PATH) is None:
        raise RefusedError(f"--run: {program} not found on PATH ({path_env or DEFAULT_PATH})")
    return find_trusted_tool(program, owners, path_env)


def resolve_agent(config: LauncherConfig, uid: int) -> Agent:
    """The agent account: the configured user (root), which must pass the launch-time
    account rule, or the operator (non-root)."""
    if uid != 0:
        me = lookup_user(uid)
        if config.agent_user not in {str(uid), me.name if me else None}:
            raise RefusedError(
                f"agent user {config.agent_user!r} differs from you (uid {uid}); only root "
                "can switch users. Run as root, or set [agent] user to your own name"
            )
        return Agent(me.name if me else str(uid), uid, os.getgid(), config.agent_home)
    account = lookup_user(config.agent_user)
    if account is None:
        raise RefusedError(
            f"agent user {config.agent_user!r} does not exist; create it with sandbox-setup "
            "(or fix [agent] user)"
        )
    # Root switches to it: never root, a system or service account, nor one someone
    # can log in as (the launch-time rule; a non-root operator is its own agent).
    from sandbox_setup.launcher.agent_account import refuse_unfit_agent  # root's only

    refuse_unfit_agent(account)
    return Agent(account.name, account.uid, account.gid, config.agent_home)


def _sandbox_launch(request: Request, agent: Agent, claude: Path, workdir: WorkDir) -> Launch:
    """Sandbox mode's launch: bwrap, as :func:`sandbox_launch` builds it here."""
    config, environ, owners = request.config, request.environ, request.owners
    launch = sandbox_launch(
        config,
        agent,
        str(claude),
        str(find_trusted_tool("bwrap", owners, request.path_env)),
        str(find_trusted_tool("setpriv", owners, request.path_env)),
        gather_host_facts(binds=(agent.home, *config.workspaces)),
        environ,
        request.options.claude_args,
        switch_user=request.uid == 0,
        workdir=workdir.path,
        workspace_binds=request.workspace_binds,
        managed=managed_env(),
    )
    hint = loopback_port_hint(
        environ, launch.passed, config.network, config.loopback_ports, config.base_url_port
    )
    if hint is None:
        return launch
    return launch.adding(warnings=[Note(Topic.NETWORK, f"sandbox-launch: {hint}")])


def _user_launch(request: Request, agent: Agent, claude: Path, workdir: WorkDir) -> Launch:
    """User mode's launch: setpriv, behind the walls this host gives
    (:func:`landlock_plan`), and what it says of those it does not."""
    config = request.config
    setpriv = find_trusted_tool("setpriv", request.owners, request.path_env)
    abi = abi_version()
    plan = landlock_plan(config, agent, claude, abi, request.owners, request.path_env)
    launch = user_launch(
        config,
        agent,
        str(claude),
        str(setpriv),
        request.environ,
        request.options.claude_args,
        switch_user=request.uid == 0,
        workdir=workdir.path,
        landlock=plan,
        managed=managed_env(),
    )
    notes, warnings = _missing_walls(config, launch.landlock, abi)
    return launch.adding(notes, warnings)


def landlock_plan(
    config: LauncherConfig,
    agent: Agent,
    claude: Path,
    abi: int,
    owners: frozenset[int],
    path_env: str | None,
) -> LandlockPlan | None:
    """User mode's Landlock here (``abi``: what the kernel offers the launcher, which the
    agent's helper then applies and reports); None when off or not available."""
    # User mode's only, as the namespace probe below: a sandbox launch imports neither.
    from sandbox_setup.launcher.egress.netns import namespace_possible
    from sandbox_setup.policy.landlock import bridge_ports, user_trees, user_walls

    inner_on = config.inner_sandbox != InnerSandbox.OFF
    walls = user_walls(abi, config.user_landlock, inner_on)
    # Where root may make a network namespace, the session gets one whatever Landlock
    # gives (its proxy inside, the exposed ports forwarded in): an address wall, and
    # Landlock's ports the second one where ABI >= 4. Tried live here, so --dry-run
    # says what the launch does (docs/design.md invariant 16).
    netns = namespace_possible()
    if not walls.any and not netns.possible:
        return None
    read, write = user_trees(
        config.agent_home,
        config.workspaces,
        str(claude),
        os.path.realpath(claude),
        readable=[str(p) for p in config.user_readable],
    )
    # Claude's Bash sandbox's bridge listens inside its own network namespace: allowed
    # only where the session has one of its own (the policy says why that is safe).
    bridge = tuple(map(str, bridge_ports(netns.possible, inner_on))) if walls.network else ()
    connect = tuple(dict.fromkeys((PROXY_PORT, *map(str, config.loopback_ports), *bridge)))
    # The system's python3 (trusted like every tool): the agent can run it, where the
    # launcher's own interpreter may sit in root's home.
    python = str(find_trusted_tool("python3", owners, path_env))
    proxy = walls.network or netns.possible  # the allowlist's proxy: either wall has one
    return LandlockPlan(walls, read, write, connect, bind=bridge, proxy=proxy, python=python,
                        netns=netns.possible, netns_why=netns.why)  # fmt: skip


def _missing_walls(
    config: LauncherConfig, plan: LandlockPlan | None, abi: int
) -> tuple[tuple[Note, ...], tuple[Note, ...]]:
    """User mode's notes and warnings on the walls it does not have here (``plan``:
    the session's, as :func:`user_launch` kept it; ``abi``: the kernel's Landlock)."""
    if plan is not None and plan.wall is not UserNetworkWall.HOST:
        return (), ()
    said: list[Note] = []
    if config.allowed_domains or config.loopback_ports:
        # The lists are the namespace's and Landlock's network wall's: without either
        # they change nothing.
        said.append(Note(Topic.NETWORK, (
            "sandbox.allowed_domains and sandbox.loopback_ports change nothing here: "
            + USER_MODE_BELOW_NETWORK_ABI)))  # fmt: skip
    if plan is not None:
        return tuple(said), ()
    # No Landlock wall and no namespace of its own: say so (docs/design.md invariant 16).
    from sandbox_setup.launcher.egress.netns import namespace_possible  # user mode's only

    netns = namespace_possible()
    network = Note(
        Topic.NETWORK, f"network: {NO_WALL} (no network namespace of its own: {netns.why})"
    )
    if not config.user_landlock:
        off = "Landlock is off ([user] landlock = false): the agent account's own limits only"
        return (*said, Note(Topic.LANDLOCK, off), network), ()
    what = (
        "this kernel has no Landlock"
        if abi < 1
        else f"Landlock ABI {abi} has no TCP rules (ABI 4), and file rules would forbid the "
        "mounts Claude's own sandbox needs"
    )
    lacking = (
        f"{what}: the agent reads what its account may and reaches the host's network, "
        "loopback services included"
    )
    warning = Note(Topic.LANDLOCK, f"sandbox-launch: note: {lacking}")
    return (*said, Note(Topic.LANDLOCK, lacking), network), (warning,)


def _notice(
    request: Request,
    launch: Launch,
    agent: str,
    workdir: WorkDir,
    program: Path | None = None,
) -> Notice:
    """The launch notice's facts (:func:`~sandbox_setup.launcher.notice.notice_of`)."""
    review = request.options.program is not None
    return notice_of(
        request.config,
        agent,
        workdir,
        # --run: the notice lists no "not passed" variables (none are, on purpose).
        {} if review else request.environ,
        passed=launch.passed,
        plan=launch.landlock,
        gateway=launch.gateway,
        exposed=request.exposed,
        runs=str(program) if review and program is not None else None,
    )


def review_git_trust(launch: Launch, config: LauncherConfig, boundary: Boundary) -> Launch:
    """A ``--run`` review's launch with the workspaces' repositories (as the start scan
    found them) as git's ``safe.directory``, in its environment only
    (:mod:`sandbox_setup.policy.git_review`)."""
    from sandbox_setup.policy.git_review import (  # --run's only
        MAX_SAFE_DIRECTORIES,
        review_git_env,
        review_safe_directories,
    )

    paths = review_safe_directories(
        _workspace_pairs(config), boundary.layouts, sandbox=config.mode is Mode.SANDBOX
    )
    env = review_git_env(paths[:MAX_SAFE_DIRECTORIES])
    if not env:
        return launch
    said = [
        "git trusts the workspaces' repositories found at start for this run only "
        "(safe.directory in its environment, GIT_CONFIG_*)"
    ]
    if len(paths) > MAX_SAFE_DIRECTORIES:
        said.append(
            f"{len(paths) - MAX_SAFE_DIRECTORIES} more repositories stay untrusted "
            f"(at most {MAX_SAFE_DIRECTORIES} in the environment)"
        )
    reviewed = replace(launch, env={**launch.env, **env})
    return reviewed.adding(notes(Topic.REVIEW, said))


def describe(launch: Launch, config_path: Path, mode: Mode) -> str:
    """The ``--dry-run`` text: the command, its environment, where it runs."""
    lines = [f"# sandbox-launch --dry-run: mode {mode}, config {config_path}"]
    lines.append(f"command: {shlex.join(launch.argv)}")
    if launch.cwd:
        lines.append(f"cwd: {launch.cwd}")
    if mode is Mode.UNSAFE:
        lines.append("environment: inherited from this shell unchanged, except as noted")
    else:
        lines.append("environment (nothing else is inherited):")
        for key, value in launch.env.items():
            shown = "<set, not shown>" if key in launch.passed else value
            lines.append(f"  {key}={shown}")
    lines += [f"note: {note.text}" for note in launch.notes]
    if launch.notice is not None:
        lines.append(f"notice (on stderr at launch): {launch.notice.render()}")
    return "\n".join(lines)


def _has_proxy(launch: Launch, config: LauncherConfig) -> bool:
    if launch.supervised:
        return is_allowlist(config)
    return launch.landlock is not None and launch.landlock.proxy


if __name__ == "__main__":
    sys.exit(main())
