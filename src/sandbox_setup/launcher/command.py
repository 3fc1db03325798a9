"""The exact command and environment for each mode: pure functions over facts.

Nothing here touches the host; :func:`gather_host_facts` (the one reader) and
the launcher's trust checks produce the inputs, so every argv can be
table-tested and printed by ``--dry-run``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from sandbox_setup.base.choices import ApiGateway, Mode, Network
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig, UnsafeAcceptance
from sandbox_setup.base.limits import size_bytes
from sandbox_setup.launcher.egress.network import (
    PROXY_ENV,
    exposed_ports,
    network_env,
    network_notes,
    network_notice,
)
from sandbox_setup.launcher.launch import Command, Launch, Note, Topic, notes
from sandbox_setup.launcher.user.landlock_plan import (
    BASE_URL_PORT,
    PROXY_PORT,
    LandlockPlan,
    helper_argv,
)
from sandbox_setup.policy.credentials import (
    GatewayChoice,
    choose_gateway,
    describe_gateway,
    gateway_port,
)
from sandbox_setup.policy.environment import (
    BASE_URL,
    SANDBOX_CLAIMS,
    loopback_endpoint,
    select_passed,
)
from sandbox_setup.policy.network import CLAUDE_ENDPOINTS, SANDBOX_PROXY_PORT, user_proxy_port
from sandbox_setup.policy.system_dirs import bind_conflict
from sandbox_setup.policy.unsafe import ACCEPTANCE_KEYS, acceptance_problem

# PATH inside the sandbox and for the agent user: system directories only.
AGENT_PATH = "/usr/local/bin:/usr/bin:/bin"
# The shell Claude Code runs its Bash tool with (the account has none: nologin).
AGENT_SHELL = "/bin/bash"
SKIP_PERMISSIONS = "--dangerously-skip-permissions"
# bwrap reads these fds; the real numbers are known only when the pipes exist.
STATUS_FD = "{status-fd}"
BLOCK_FD = "{block-fd}"
GATE_FD = "{gate-fd}"
# bwrap takes EOF on --block-fd as a release, so a launcher that died during
# verification would let the sandbox go on. The sandbox's command is therefore
# this gate: it execs Claude only after reading the exact token from an fd the
# launcher alone can write; EOF (a dead or failed launcher) means refuse.
# $1 is the gate fd; dash only takes fd numbers 0-9 in redirections.
GATE_SHELL = "/bin/sh"
GATE_TOKEN = "release"
GATE_SCRIPT = (
    "fd=$1; shift; case $fd in [3-9]) ;; *) exit 126 ;; esac; "
    f'if read -r token <&"$fd" && [ "$token" = {GATE_TOKEN} ]; then '
    'eval "exec $fd<&-"; exec "$@"; fi; '
    'echo "sandbox-launch: the sandbox was not released; Claude Code was not started" >&2; '
    "exit 126"
)
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

UNSAFE_WARNING = (
    "sandbox-launch: WARNING: unsafe mode: Claude Code runs as {who} with NO OS sandbox; "
    "it can read and change everything this account can. To set up a real sandbox or a "
    "dedicated user, run: sandbox-setup"
)


@dataclass(frozen=True, slots=True)
class Agent:
    """The account Claude runs as (the operator's own when not root)."""

    name: str
    uid: int
    gid: int
    home: PurePosixPath


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What the sandbox argv depends on, read from the host once."""

    legacy_tiocsti: bool
    # (path, symlink target or None for a real directory), for the ROOT_LINKS present.
    root_links: tuple[tuple[str, str | None], ...] = ()
    resolver_dirs: tuple[str, ...] = ()
    # (configured path, where its symlinks lead) for the home and the workspaces:
    # bwrap binds the resolved source, so a link planted in a previous session
    # (say, workspace -> /) is judged and mounted as what it really is.
    real_paths: tuple[tuple[str, str], ...] = ()


def gather_host_facts(root: Path = Path("/"), binds: Sequence[PurePosixPath] = ()) -> HostFacts:
    """Read what the sandbox argv depends on.

    That is the tiocsti sysctl, the root symlinks, where resolv.conf lives, and
    where the writable ``binds`` really are.
    """
    try:
        tiocsti = (root / "proc/sys/dev/tty/legacy_tiocsti").read_text().strip() != "0"
    except OSError:
        tiocsti = True  # kernels without the knob (before 6.2) always allow TIOCSTI
    links: list[tuple[str, str | None]] = []
    for name in ROOT_LINKS:
        real = root / name.lstrip("/")
        if real.is_symlink():
            links.append((name, os.readlink(real)))
        elif real.is_dir():
            links.append((name, None))
    # The binds are what bwrap will mount on this machine: resolved on the live system.
    real_paths = tuple((str(path), os.path.realpath(path)) for path in binds)
    return HostFacts(
        legacy_tiocsti=tiocsti,
        root_links=tuple(links),
        resolver_dirs=resolver_dirs(root),
        real_paths=real_paths,
    )


def resolver_dirs(root: Path = Path("/")) -> tuple[str, ...]:
    """Directories under /run that /etc/resolv.conf's symlink chain passes through.

    systemd-resolved and resolvconf keep the file under /run, which the sandbox
    replaces with a tmpfs; those directories are bound back so DNS keeps working.
    """
    found: list[str] = []
    current = PurePosixPath("/etc/resolv.conf")
    for _ in range(20):  # a symlink loop ends the walk, as it would for the resolver
        real = root / str(current).lstrip("/")
        if not real.is_symlink():
            break
        target = PurePosixPath(os.readlink(real))
        current = PurePosixPath(os.path.normpath(current.parent / target))
        if str(current).startswith("/run/") and str(current.parent) not in found:
            found.append(str(current.parent))
    return tuple(found)


def base_env(agent: Agent, environ: Mapping[str, str]) -> dict[str, str]:
    """The clean environment: HOME PATH SHELL TERM LANG, nothing inherited beyond those.
    SHELL is bash: the agent account's own login shell is nologin."""
    env = {"HOME": str(agent.home), "PATH": AGENT_PATH, "SHELL": AGENT_SHELL}
    env["TERM"] = environ.get("TERM", "dumb")
    env["LANG"] = environ.get("LANG", "C.UTF-8")
    return env


def launch_env(
    config: LauncherConfig, agent: Agent, environ: Mapping[str, str]
) -> tuple[dict[str, str], tuple[str, ...], tuple[Note, ...]]:
    """:func:`base_env` plus exactly the caller's ``[env] pass`` variables that are set.

    Returns ``(env, passed names, notes)``; a name the policy refuses is ignored
    with a note (:func:`sandbox_setup.policy.environment.select_passed`).
    """
    env = base_env(agent, environ)
    passed, ignored = select_passed(config.env_pass, environ, config.mode)
    env.update(passed)
    said = [f"[env] pass lists {name}, not passed: {why}" for name, why in ignored]
    return env, tuple(passed), notes(Topic.ENVIRONMENT, said)


def with_gateway(
    config: LauncherConfig,
    agent: Agent,
    env: Mapping[str, str],
    passed: Sequence[str],
    namespace: str | None,
    port: int,
    managed: Mapping[str, object] | None,
) -> tuple[GatewayChoice, tuple[Note, ...], Note | None]:
    """The credentials held by the session's gateway where it can be
    (:func:`sandbox_setup.policy.credentials.choose_gateway`): the choice, the notes for
    ``--dry-run`` and the warning when a credential is passed as it is."""
    choice = choose_gateway(
        env, passed, agent.name, enabled=config.api_gateway is ApiGateway.AUTO,
        namespace=namespace, port=port, managed=managed,
    )  # fmt: skip
    said = describe_gateway(choice)
    warning = None
    if choice.spec is None and choice.why is not None and config.api_gateway is ApiGateway.AUTO:
        warning = Note(Topic.GATEWAY, f"sandbox-launch: warning: {said}")
    return choice, notes(Topic.GATEWAY, [said or ""]), warning


def _check_writable_bind(path: PurePosixPath | str, what: str) -> None:
    # The wizard's list (sandbox_setup.policy.system_dirs), so the launcher refuses at least
    # as much.
    system = bind_conflict(path)
    if system is not None:
        raise RefusedError(
            f"{what} {path} would make system directory {system} writable or hide it "
            "inside the sandbox; choose a directory of its own (e.g. /srv/project)"
        )


def check_workspace_paths(config: LauncherConfig) -> None:
    """Sandbox mode: refuse a workspace that names a system directory (``/``, ``/usr``)
    from its path alone, before anything walks it (the boundary's scan of ``/`` would
    take minutes); :func:`sandbox_launch` checks it again with the symlinks resolved."""
    if config.mode is not Mode.SANDBOX:
        return
    for workspace in config.workspaces:
        _check_writable_bind(workspace, "workspace")


def _privilege_drop(setpriv: str, agent: Agent, switch_user: bool) -> tuple[str, ...]:
    """setpriv and its options (:class:`~sandbox_setup.launcher.launch.Command`'s
    ``drop``: the ``--`` after them is the command's join)."""
    # no_new_privs, in every case: nothing the agent runs gains privileges through a
    # setuid binary or file capabilities (the launcher verifies it in the sandbox).
    if not switch_user:
        # A non-root operator: the agent is its own uid already.
        return (setpriv, "--no-new-privs")
    return (
        setpriv,
        # root's uid and gid, real and effective, become the agent's.
        f"--reuid={agent.uid}",
        f"--regid={agent.gid}",
        # The agent's own supplementary groups (the workspace group), none of root's.
        "--init-groups",
        # No --reset-env: the launcher gives the exact environment (launch_env), and
        # setpriv must neither rebuild it from passwd nor drop the passed variables.
        "--no-new-privs",
    )


def bwrap_argv(
    config: LauncherConfig,
    agent: Agent,
    claude: str,
    bwrap: str,
    facts: HostFacts,
    workdir: str | None = None,
    workspace_binds: Sequence[str] = (),
) -> list[str]:
    """bwrap's options: new namespaces, read-only system, writable home and workspaces,
    then the gate (the part of the command before Claude's: ``claude`` is only bound).

    The sandbox's environment is bwrap's own, which the launcher sets exactly
    (:func:`launch_env`): passed variables carry secrets, and bwrap's argv, where
    ``--setenv`` would put them, is world-readable in /proc. Only the sandbox claim
    and, with network allowlist, the proxy variables (no secrets) are added here,
    inside (:mod:`sandbox_setup.launcher.egress.network`).
    """
    argv = [bwrap]
    # Namespaces of its own. The agent is unprivileged (setpriv dropped root and set
    # no_new_privs), so bwrap can make the others only inside a user namespace of its own,
    # and whatever that namespace grants counts for nothing outside it.
    argv.append("--unshare-user")
    # Host processes are invisible and cannot be signalled; when the sandbox's first
    # process ends, the kernel ends every other one in it (containment, invariant 10).
    argv.append("--unshare-pid")
    # No System V IPC or POSIX message queue shared with the host's processes.
    argv.append("--unshare-ipc")
    # A hostname change inside stays inside.
    argv.append("--unshare-uts")
    # The cgroup tree seen inside starts at the cgroup the session runs in, not the
    # host's root; "-try": skipped where the kernel has no cgroup namespaces (the
    # verification does not ask for one).
    argv.append("--unshare-cgroup-try")
    if config.network != Network.HOST:
        # none and allowlist: a network namespace of its own (loopback only); the
        # allowlist's only way out is the launcher's egress proxy.
        argv.append("--unshare-net")
    # The launcher supervises the sandbox: if it dies, the sandbox dies too (SIGKILL)
    # instead of running on unwatched.
    argv.append("--die-with-parent")
    # No capabilities inside, said outright whatever uid bwrap runs as (its default
    # keeps them for uid 0 in a user namespace): nothing in the sandbox may remount what
    # is read-only or unmount what covers a protected path. The launcher verifies it
    # from outside before release.
    argv += ["--cap-drop", "ALL"]
    if facts.legacy_tiocsti:
        # Without a new session a sandboxed process could push keystrokes into the
        # operator's terminal (TIOCSTI). It costs SIGWINCH, which the launcher forwards.
        argv.append("--new-session")
    # The system, read-only: programs and their configuration are there, and nothing
    # of them can change. Nothing else of the host's / is mounted: /root, other homes,
    # /var, /srv and the rest do not exist inside unless bound below.
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for path, target in facts.root_links:
        # /bin, /lib... as on the host: the same symlink into /usr (merged /usr), or
        # the directory itself, read-only.
        if target is None:
            argv += ["--ro-bind", path, path]
        else:
            argv += ["--symlink", target, path]
    # Each tmpfs has the configured size ([limits] tmpfs): unsized, each may take half
    # the host's RAM.
    size = str(size_bytes(config.limits.tmpfs))
    # A fresh /proc of the new pid namespace: it shows the sandbox's processes only
    # (the host's would show every process of the host, and the launcher's).
    argv += ["--proc", "/proc"]
    # bwrap's own small /dev (null, zero, random, tty, pts...): no device of the host.
    argv += ["--dev", "/dev"]
    # Shared memory for the programs that need it, private to the session.
    argv += ["--size", size, "--tmpfs", "/dev/shm"]
    # /dev read-only once /dev/shm is on it: nothing can be created there.
    argv += ["--remount-ro", "/dev"]
    # An empty /tmp of the session's own, gone with it: the host's /tmp (other users'
    # files and sockets) is not there.
    argv += ["--size", size, "--tmpfs", "/tmp"]
    # An empty /run: the host's runtime sockets (systemd, D-Bus, a container engine's)
    # cannot be reached.
    argv += ["--size", size, "--tmpfs", "/run"]
    for resolver in facts.resolver_dirs:
        # Where /etc/resolv.conf leads under /run (systemd-resolved, resolvconf), bound
        # back read-only so names still resolve.
        argv += ["--ro-bind", resolver, resolver]
    # The only writable places: the agent's home and the workspaces, bound from where
    # they really are (facts.real_paths), as sandbox_launch judged them.
    real = dict(facts.real_paths)
    for writable in map(str, (agent.home, *config.workspaces)):
        argv += ["--bind", real.get(writable, writable), writable]
    # The workspace boundary: what root's git and Claude obey, read-only inside
    # (sandbox_setup.boundary.session); after the workspaces' own binds, which they cover.
    argv += workspace_binds
    claude_dir = str(PurePosixPath(claude).parent)
    if not claude_dir.startswith("/usr/"):
        # Claude's directory outside /usr would not be there at all. Last, so the binary
        # stays read-only even inside a writable directory.
        argv += ["--ro-bind", claude_dir, claude_dir]
    # No --clearenv: bwrap already runs with exactly launch_env's environment, and
    # --setenv would put the passed variables (secrets) in bwrap's argv, which anyone
    # can read in /proc. Never the caller's claims (launch_env does not pass them
    # either), then our own.
    for claim in sorted(SANDBOX_CLAIMS - {"IS_SANDBOX"}):
        argv += ["--unsetenv", claim]
    # The proxy variables override any the caller passed: inside, the proxy is ours.
    for key, value in network_env(config).items():
        argv += ["--setenv", key, value]
    # The sandbox claim Claude Code obeys: set where it is true, inside bwrap only,
    # and Claude runs only once the launcher verified the sandbox (the gate below).
    argv += ["--setenv", "IS_SANDBOX", "1"]
    # Where Claude starts (sandbox_setup.launcher.workdir); the first workspace by default.
    argv += ["--chdir", workdir or str(config.workspaces[0])]
    # bwrap reports the sandbox's pid on the status fd and waits on the block fd: in
    # between, the launcher verifies the sandbox from outside (namespaces, capabilities,
    # no_new_privs, uid; sandbox_setup.launcher.session.supervise).
    argv += ["--json-status-fd", STATUS_FD, "--block-fd", BLOCK_FD]
    # The gate, then Claude: EOF on --block-fd also releases bwrap, so Claude is exec'd
    # only when the launcher writes GATE_TOKEN after a verification that passed.
    argv += ["--", *gate_argv()]
    return argv


def gate_argv() -> list[str]:
    """The sandbox's command before Claude's: ``sh -c GATE_SCRIPT sandbox-gate FD``."""
    return [GATE_SHELL, "-c", GATE_SCRIPT, "sandbox-gate", GATE_FD]


def sandbox_launch(
    config: LauncherConfig,
    agent: Agent,
    claude: str,
    bwrap: str,
    setpriv: str,
    facts: HostFacts,
    environ: Mapping[str, str],
    claude_args: Sequence[str],
    switch_user: bool,
    workdir: str | None = None,
    workspace_binds: Sequence[str] = (),
    managed: Mapping[str, object] | None = None,
) -> Launch:
    """Drop to the agent (root only), then bwrap as the agent; verified before release.

    ``workdir``: where Claude starts inside (:mod:`sandbox_setup.launcher.workdir`); the
    first workspace when not given.
    """
    real = dict(facts.real_paths)
    for what, path in [("agent home", agent.home)] + [("workspace", w) for w in config.workspaces]:
        _check_writable_bind(path, what)
        if real.get(str(path), str(path)) != str(path):
            _check_writable_bind(real[str(path)], f"{what} {path}, a symlink to")
    command = Command(
        program=(claude, *claude_args),
        drop=_privilege_drop(setpriv, agent, switch_user),
        wrapper=tuple(bwrap_argv(config, agent, claude, bwrap, facts, workdir, workspace_binds)),
    )
    env, passed, env_notes = launch_env(config, agent, environ)
    allowlist = config.network == Network.ALLOWLIST
    namespace = None if allowlist else f"network {config.network}: no egress proxy to serve it"
    endpoint = loopback_endpoint(env.get(BASE_URL, "")) if BASE_URL in passed else None
    if allowlist and endpoint is not None and endpoint[1] not in exposed_ports(config):
        # The operator kept that port closed (base_url_port = "off"): no way round it.
        namespace = f"ANTHROPIC_BASE_URL's loopback port {endpoint[1]} is not exposed"
    port = gateway_port((SANDBOX_PROXY_PORT, *exposed_ports(config))) if allowlist else 0
    gateway, gateway_notes, gateway_warning = with_gateway(
        config, agent, env, passed, namespace, port, managed
    )
    warnings = (
        *notes(Topic.NETWORK, [network_notice(config) or ""]),
        *filter(None, [gateway_warning]),
    )
    gate = Note(
        Topic.SANDBOX,
        f"{STATUS_FD}, {BLOCK_FD} and {GATE_FD} are pipe fds chosen at launch; "
        "IS_SANDBOX=1 is set only inside bwrap; the gate execs Claude only when the "
        f"launcher, after verifying the sandbox, writes {GATE_TOKEN!r} to {GATE_FD}",
    )
    return Launch(
        command=command,
        env=dict(gateway.env),
        cwd=None,
        supervised=True,
        gateway=gateway.spec,
        warnings=warnings,
        notes=(gate, *env_notes, *notes(Topic.NETWORK, network_notes(config)), *gateway_notes),
        passed=passed,
        bwrap_new_session=facts.legacy_tiocsti,
        bwrap_unshare_net=config.network != Network.HOST,
    )


def user_launch(
    config: LauncherConfig,
    agent: Agent,
    claude: str,
    setpriv: str,
    environ: Mapping[str, str],
    claude_args: Sequence[str],
    switch_user: bool,
    new_session: bool = True,
    workdir: str | None = None,
    landlock: LandlockPlan | None = None,
    managed: Mapping[str, object] | None = None,
) -> Launch:
    """setpriv to the agent with a clean environment and no_new_privs, in the workspace.

    ``landlock``: the walls the session gets (:mod:`sandbox_setup.policy.landlock`): the
    Landlock helper goes before Claude; with the network wall, the session's egress
    proxy is Claude's only way out (its port, ``{proxy-port}`` here, is known at start).

    ``new_session`` (pass ``HostFacts.legacy_tiocsti``): run it in its own
    session so it cannot inject keystrokes into the operator's terminal.
    ``workdir``: where Claude starts (:mod:`sandbox_setup.launcher.workdir`); the first
    workspace (or the agent's home) when not given.
    """
    env, passed, env_notes = launch_env(config, agent, environ)
    env["USER"] = env["LOGNAME"] = agent.name
    cwd = workdir or (str(config.workspaces[0]) if config.workspaces else str(agent.home))
    said: list[Note] = [*env_notes]
    confine: list[str] = []
    gateway = GatewayChoice(None, env)
    warning = None
    if landlock is not None:
        landlock = _with_base_url_port(landlock, env, passed)
        if landlock.proxy and landlock.netns:
            exposed = (*config.loopback_ports, *filter(None, [landlock.base_url_port]))
            port = gateway_port((user_proxy_port(exposed), *exposed))
            gateway, gateway_notes, warning = with_gateway(
                config, agent, env, passed, None, port, managed
            )
            if gateway.spec is not None:  # Landlock's ports: the gateway's too
                landlock = replace(landlock, connect=(*landlock.connect, str(port)))
        else:
            why = landlock.netns_why or "no network namespace of its own for the session"
            gateway, gateway_notes, warning = with_gateway(
                config, agent, env, passed, why, 0, managed
            )
        said += gateway_notes
        env = dict(gateway.env)
        # No Landlock walls (off, or none on this kernel): the plan is the namespace's
        # only, and no helper runs.
        confine = helper_argv(landlock) if landlock.walls.any else []
        said += notes(Topic.LANDLOCK, landlock.walls.describe(
            config.inner_sandbox != "off", landlock.netns, config.user_landlock))  # fmt: skip
        if landlock.proxy:
            proxy = f"http://127.0.0.1:{PROXY_PORT}"
            env.update(dict.fromkeys(PROXY_ENV, proxy))
            env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
            # The session's proxy replaces any the caller passed: it is no secret of theirs.
            ours = {*PROXY_ENV, "NO_PROXY", "no_proxy"}
            passed = tuple(name for name in passed if name not in ours)
            if config.inner_sandbox != "off":
                # Claude's Bash sandbox would start proxies of its own on loopback ports
                # the agent may not connect to: its commands use this session's instead.
                claude_args, note = with_proxy_settings(claude_args)
                said.append(Note(Topic.NETWORK, note))
            allowed = ", ".join((*CLAUDE_ENDPOINTS, *config.allowed_domains))
            if landlock.netns:
                exposed = (*config.loopback_ports, *filter(None, [landlock.base_url_port]))
                said.append(Note(Topic.NETWORK,
                    f"the egress proxy (the allowlist: {allowed}) listens at "
                    f"127.0.0.1:{user_proxy_port(exposed)} inside the session's network namespace "
                    "(made by the launcher, loopback only), runs as the agent, and is probed "
                    "from inside before Claude starts; the exposed loopback ports are "
                    "forwarded in to the host's 127.0.0.1",
                ))  # fmt: skip
            else:
                said.append(Note(Topic.NETWORK,
                    f"the egress proxy (the allowlist: {allowed}) listens on an ephemeral "
                    f"port of 127.0.0.1 chosen at start ({PROXY_PORT}), runs as the agent, "
                    "and is probed before Claude starts",
                ))  # fmt: skip
                if landlock.netns_why:
                    said += notes(
                        Topic.NETWORK, [f"no network namespace of its own: {landlock.netns_why}"]
                    )
            if config.loopback_ports:
                said.append(Note(Topic.NETWORK,
                    "host loopback ports the agent may connect to (sandbox.loopback_ports): "
                    + ", ".join(map(str, dict.fromkeys(config.loopback_ports))),
                ))  # fmt: skip
        if landlock.walls.any:
            said.append(Note(Topic.LANDLOCK,
                "Landlock is applied by the session's helper before Claude starts and "
                "verified from outside (a probe in the same domain must fail to reach the "
                "launcher's canaries); anything else refuses the launch",
            ))  # fmt: skip
    if landlock is None:
        why = "user mode has no network namespace of its own here"
        gateway, gateway_notes, warning = with_gateway(config, agent, env, passed, why, 0, managed)
        said += gateway_notes
    # new_session: the containment gives the session its own (the runner's pty) and says
    # so (sandbox_setup.launcher.containment.contained_launch).
    return Launch(
        command=Command(
            program=(claude, *claude_args),
            drop=_privilege_drop(setpriv, agent, switch_user),
            wrapper=tuple(confine),
        ),
        env=env,
        cwd=cwd,
        supervised=False,
        new_session=new_session,
        notes=tuple(said),
        passed=passed,
        landlock=landlock,
        gateway=gateway.spec,
        warnings=(warning,) if warning is not None else (),
    )


def with_proxy_settings(claude_args: Sequence[str]) -> tuple[list[str], str]:
    """Claude's arguments with its Bash sandbox's proxy ports set to the session proxy's
    (:data:`PROXY_PORT`), and a note. Claude Code reads only its last ``--settings``:
    one the caller gave inline (JSON) gets the two keys merged in; none, one of ours
    goes first; a settings *file* of the caller's is left as it is, and the note says
    what that costs (its Bash sandbox then starts proxies Landlock refuses)."""
    args = list(claude_args)
    end = args.index("--") if "--" in args else len(args)
    last = None
    for index in range(end):
        if args[index] == "--settings" and index + 1 < end:
            last = index + 1
        elif args[index].startswith("--settings="):
            last = index
    port = _Placeholder(PROXY_PORT)
    ports = {"httpProxyPort": port, "socksProxyPort": port}
    note = (
        "Claude Code's Bash sandbox uses the session's proxy (sandbox.network.httpProxyPort "
        "and socksProxyPort through --settings): proxies of its own would listen on "
        "ports Landlock refuses, or have no way out of the session's network namespace"
    )
    if last is None:
        return ["--settings", _settings_json({"sandbox": {"network": ports}}), *args], note
    value = args[last]
    prefix = "--settings=" if value.startswith("--settings=") else ""
    try:
        given = json.loads(value.removeprefix(prefix))
    except ValueError:
        given = None
    if not isinstance(given, dict):
        return args, (
            "your --settings names a file: Claude Code's Bash sandbox is not told the "
            "session's proxy, and its own proxies cannot listen under Landlock; give "
            "--settings inline (JSON) or set [user] landlock = false"
        )
    sandbox = given.setdefault("sandbox", {})
    if not isinstance(sandbox, dict):
        sandbox = given["sandbox"] = {}
    network = sandbox.setdefault("network", {})
    if not isinstance(network, dict):
        network = sandbox["network"] = {}
    network.update(ports)
    args[last] = prefix + _settings_json(given)
    return args, note + " (merged into your inline --settings)"


class _Placeholder(str):
    """A value written into the JSON as it is, unquoted: the session proxy's port,
    a number known when the session starts (:data:`PROXY_PORT` until then)."""


def _settings_json(data: object) -> str:
    """``json.dumps(data)``, byte for byte, but a :class:`_Placeholder` bare."""
    if isinstance(data, _Placeholder):
        return str.__str__(data)
    if isinstance(data, dict):
        items = (f"{json.dumps(key)}: {_settings_json(value)}" for key, value in data.items())
        return "{" + ", ".join(items) + "}"
    return json.dumps(data)


def _with_base_url_port(
    plan: LandlockPlan, env: Mapping[str, str], passed: Sequence[str]
) -> LandlockPlan:
    """A loopback ``ANTHROPIC_BASE_URL`` that was passed: its port may be connected to
    (as the sandbox's ``base_url_port = "auto"`` exposes it). The port stands in argv
    as :data:`BASE_URL_PORT` (the URL is the caller's, never printed)."""
    endpoint = loopback_endpoint(env.get(BASE_URL, "")) if BASE_URL in passed else None
    if endpoint is None or not (plan.walls.network or plan.netns):
        return plan
    # Forwarded into the session's namespace; with Landlock's network wall, connectable.
    connect = (*plan.connect, BASE_URL_PORT) if plan.walls.network else plan.connect
    return replace(plan, connect=connect, base_url_port=endpoint[1])


def unsafe_launch(
    config: LauncherConfig,
    claude: str,
    environ: Mapping[str, str],
    claude_args: Sequence[str],
    uid: int,
    who: str,
) -> Launch:
    """Claude unconfined; refused without a recorded acceptance."""
    if config.unsafe is None:
        raise RefusedError(
            "unsafe mode is configured but no acceptance is recorded ([unsafe] accepted_by, "
            "accepted_at, statement); Claude Code was not started. Run: sandbox-setup"
        )
    _check_acceptance(config.unsafe)
    env = dict(environ)
    said: list[str] = []
    # Only an explicit bypass request by root needs the guard relaxed, and an
    # IS_SANDBOX the user exported (even "0") always wins.
    if SKIP_PERMISSIONS in claude_args and uid == 0:
        if "IS_SANDBOX" in env:
            said.append(f"IS_SANDBOX={env['IS_SANDBOX']} kept as you exported it")
        else:
            env["IS_SANDBOX"] = "1"
            said.append("IS_SANDBOX=1 set: root asked for --dangerously-skip-permissions")
    return Launch(
        command=Command(program=(claude, *claude_args)),
        env=env,
        cwd=None,
        supervised=False,
        warnings=(Note(Topic.UNSAFE, UNSAFE_WARNING.format(who=who)),),
        notes=notes(Topic.UNSAFE, said),
    )


def _check_acceptance(accepted: UnsafeAcceptance) -> None:
    recorded = {key: getattr(accepted, key) for key in ACCEPTANCE_KEYS}
    blank = acceptance_problem(recorded)
    if blank is not None:
        raise RefusedError(
            f"unsafe mode: unsafe.{blank} is empty in the config, so no acceptance is "
            "recorded; Claude Code was not started. Run: sandbox-setup"
        )
