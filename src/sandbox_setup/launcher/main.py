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

This module and everything it imports stay free of Textual and tomlkit (a test
says so): the launcher only reads its config.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.console import OutputError, prepare_streams
from sandbox_setup.base.crashlog import report_crash
from sandbox_setup.base.errors import InputError, RefusedError, SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import printable_lines
from sandbox_setup.boundary.session import Boundary
from sandbox_setup.launcher.command import (
    Agent,
    Launch,
    gather_host_facts,
    sandbox_launch,
    unsafe_launch,
    user_launch,
)
from sandbox_setup.launcher.containment import Containment, contain
from sandbox_setup.launcher.egress.network import build_policy, is_allowlist, state_dir
from sandbox_setup.launcher.notice import config_notice
from sandbox_setup.launcher.seams import REAL, LaunchSeams
from sandbox_setup.launcher.session.cgroup import EarlySessionCgroup
from sandbox_setup.launcher.session.runner import run_session, session_end_hooks
from sandbox_setup.launcher.trust import find_trusted_tool, read_trusted_text, refuse_claude_shim
from sandbox_setup.launcher.workdir import WorkDir, choose_workdir, current_directory, real_paths
from sandbox_setup.policy.environment import loopback_port_hint
from sandbox_setup.policy.limits import over_maximum
from sandbox_setup.policy.names import user_name_problem
from sandbox_setup.policy.trust import check_trusted_file

if TYPE_CHECKING:
    from sandbox_setup.base.cgroups import Delegation

USAGE = """usage: sandbox-launch [--dry-run] [--quiet] [--config PATH] [--] [claude arguments ...]

Start Claude Code as launcher.toml says (sandbox, user or unsafe mode), or refuse.

options:
  --dry-run      print the command line and environment it would use; start nothing
  --quiet        no launch notice or notes on stderr (warnings, refusals and what the
                 end-of-session workspace scan moved aside are still printed)
  --config PATH  launcher config (default: ~/.config/sandbox-setup/launcher.toml)
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


@dataclass(frozen=True, slots=True)
class Options:
    """The launcher's own options; the rest of the command line is Claude's."""

    dry_run: bool
    config: Path | None
    claude_args: tuple[str, ...]
    quiet: bool = False


def parse_args(argv: Sequence[str]) -> Options | None:
    """Our options come first; the first other argument (or ``--``) starts Claude's."""
    dry_run, quiet, config = False, False, None
    args = list(argv)
    while args:
        arg = args[0]
        if arg == "--":
            args.pop(0)
            break
        if arg in ("-h", "--help"):
            return None
        if arg == "--dry-run":
            dry_run = True
        elif arg == "--quiet":
            quiet = True
        elif arg == "--config" or arg.startswith("--config="):
            if arg == "--config":
                if len(args) < 2:
                    raise InputError("--config needs a path")
                value = args.pop(1)
            else:
                value = arg.split("=", 1)[1]
            if not value:
                raise InputError("--config needs a path")
            config = Path(value).absolute()
        else:
            break
        args.pop(0)
    return Options(dry_run=dry_run, config=config, claude_args=tuple(args), quiet=quiet)


def default_config_path() -> Path:
    return Path(Layout.for_root("/").launcher_config)


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
    if is_allowlist(config):
        # The proxy builds the same policy at launch; building it here refuses a bad
        # pattern for --dry-run too, with the same words (it used to pass, exit 0).
        build_policy(config)
    return real, config


def resolve_agent(config: LauncherConfig, uid: int) -> Agent:
    """The agent account: the configured user (root) or the operator (non-root)."""
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
    if account.uid == 0:
        raise RefusedError(f"agent user {config.agent_user!r} is root; the agent must not be")
    return Agent(account.name, account.uid, account.gid, config.agent_home)


def build_launch(
    config: LauncherConfig,
    claude_args: Sequence[str],
    uid: int,
    environ: Mapping[str, str],
    owners: frozenset[int],
    workspace_binds: Sequence[str] = (),
    delegation: Delegation | None = None,
) -> tuple[Launch, Agent | None, Containment | None]:
    claude = check_trusted_file(config.claude, owners, "Claude binary")
    if not os.access(claude, os.X_OK):
        raise RefusedError(f"Claude binary {claude} is not executable")
    refuse_claude_shim(claude)
    path_env = environ.get("PATH")
    if config.mode is Mode.UNSAFE:
        who = "root (uid 0)" if uid == 0 else f"uid {uid}"
        launch = unsafe_launch(config, str(claude), environ, claude_args, uid, who)
        here = current_directory() or "a directory that no longer exists"
        return _with_notice(launch, config, who, WorkDir(here)), None, None
    agent = resolve_agent(config, uid)
    workdir = choose_workdir(
        config.workspaces, real_paths(config.workspaces), current_directory(), agent.home
    )
    separate = _separate_launch(
        config, agent, claude, claude_args, uid, environ, owners, workdir, workspace_binds
    )
    launch, containment = contain(config, agent, separate, uid, owners, path_env, delegation)
    return _with_notice(launch, config, agent.name, workdir), agent, containment


def _separate_launch(
    config: LauncherConfig,
    agent: Agent,
    claude: Path,
    claude_args: Sequence[str],
    uid: int,
    environ: Mapping[str, str],
    owners: frozenset[int],
    workdir: WorkDir,
    workspace_binds: Sequence[str] = (),
) -> Launch:
    path_env = environ.get("PATH")
    if config.mode is Mode.SANDBOX:
        bwrap = find_trusted_tool("bwrap", owners, path_env)
        setpriv = find_trusted_tool("setpriv", owners, path_env)
        launch = sandbox_launch(
            config,
            agent,
            str(claude),
            str(bwrap),
            str(setpriv),
            gather_host_facts(binds=(agent.home, *config.workspaces)),
            environ,
            claude_args,
            switch_user=uid == 0,
            workdir=workdir.path,
            workspace_binds=workspace_binds,
        )
        hint = loopback_port_hint(environ, launch.passed, config.network, config.loopback_ports)
        if hint is not None:
            warnings = [w for w in (launch.warning, f"sandbox-launch: {hint}") if w]
            launch = replace(launch, warning="\n".join(warnings))
        return launch
    setpriv = find_trusted_tool("setpriv", owners, path_env)
    return user_launch(
        config,
        agent,
        str(claude),
        str(setpriv),
        environ,
        claude_args,
        switch_user=uid == 0,
        workdir=workdir.path,
    )


def _with_notice(launch: Launch, config: LauncherConfig, agent: str, workdir: WorkDir) -> Launch:
    return replace(launch, notice=config_notice(config, agent, workdir, launch.passed))


def start_boundary(config: LauncherConfig, dry_run: bool) -> Boundary | None:
    """The workspace boundary of a session with an agent of its own (not unsafe
    mode); see :mod:`sandbox_setup.boundary.session`."""
    if config.mode is Mode.UNSAFE:
        return None
    real = dict(real_paths(config.workspaces))
    pairs = [(str(w), real.get(str(w), str(w))) for w in config.workspaces]
    try:
        return Boundary.start(
            pairs, state_dir(), sandbox=config.mode is Mode.SANDBOX, dry_run=dry_run
        )
    except OSError as exc:
        raise RefusedError(
            f"cannot set up the workspace boundary ({exc}); refusing to launch without it"
        ) from None


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
    lines += [f"note: {note}" for note in launch.notes]
    if launch.notice:
        lines.append(f"notice (on stderr at launch): {launch.notice}")
    return "\n".join(lines)


def run(options: Options, environ: Mapping[str, str], seams: LaunchSeams = REAL) -> int:
    uid = os.getuid()
    if os.geteuid() != uid:
        raise RefusedError("sandbox-launch must not run setuid (real and effective uid differ)")
    owners = frozenset({0, uid})
    config_path = options.config or default_config_path()
    real, config = load_config(config_path, owners)
    # The session's cgroup is joined in the background meanwhile (see the class).
    separate = config.mode is not Mode.UNSAFE and not options.dry_run
    early = EarlySessionCgroup.start(config.limits) if separate else None
    try:
        return _run_checked(options, environ, uid, owners, real, config, early, seams)
    finally:
        if early is not None:
            early.discard()  # not taken by a session (a refused launch): removed


def _run_checked(
    options: Options,
    environ: Mapping[str, str],
    uid: int,
    owners: frozenset[int],
    real: Path,
    config: LauncherConfig,
    early: EarlySessionCgroup | None,
    seams: LaunchSeams,
) -> int:
    boundary = start_boundary(config, options.dry_run)
    # However the launch ends (refused before bwrap, a session that could not start,
    # an error), the boundary ends too: placeholders out, the scan, the baseline.
    # (A session's own end hook has done it already: then this does nothing.)
    try:
        launch, agent, containment = build_launch(
            config,
            options.claude_args,
            uid,
            environ,
            owners,
            boundary.bind_args if boundary is not None else (),
            early.delegation if early is not None else None,
        )
        hooks = [boundary.end] if boundary is not None else []
        if launch.warning:
            print(printable_lines(launch.warning), file=sys.stderr)
        if launch.notice and not options.quiet and not options.dry_run:
            print(printable_lines(launch.notice), file=sys.stderr)
        if options.dry_run:
            print(printable_lines(describe(launch, real, config.mode)))
            return int(ExitCode.OK)
        if launch.cwd:
            try:
                os.chdir(launch.cwd)
            except OSError as exc:
                raise RefusedError(f"cannot enter {launch.cwd}: {exc.strerror}") from None
        if agent is not None and containment is not None:
            return run_session(
                launch,
                agent,
                containment,
                switch_user=uid == 0,
                hooks=[*hooks, *session_end_hooks()],
                network=config if launch.supervised and is_allowlist(config) else None,
                quiet=options.quiet,
                early_cgroup=early,
                seams=seams,
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
        report_crash("sandbox-launch", exc, _state_dir())
        return int(ExitCode.INTERNAL)


def _state_dir() -> Path | None:
    try:
        return state_dir()
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
