"""The one line a launch prints on stderr: mode, agent, directory, network policy.

Always stderr, never stdout, so ``claude --print`` output piped through
``sandbox-launch`` (or the claude shim) stays exactly Claude's; ``sandbox-launch
--quiet`` drops it. :func:`launch_notice` is the only place that builds it:
whatever else a launch wants to tell the operator every time (the egress proxy,
the session runner) goes in as ``notes``, so it stays one line.
Variable *names* may appear in it, values never.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.netwall import (
    NO_SECOND_WALL,
    NO_WALL,
    PORTS_ONLY,
    SECOND_WALL,
    UserNetworkWall,
)
from sandbox_setup.launcher.workdir import WorkDir
from sandbox_setup.policy.environment import BASE_URL, dropped_claude_names, pass_env_command

if TYPE_CHECKING:
    from sandbox_setup.launcher.user.landlock_plan import LandlockPlan
    from sandbox_setup.policy.credentials import GatewaySpec
    from sandbox_setup.policy.landlock import Walls

PREFIX = "sandbox-launch: "


def network_policy(
    mode: Mode,
    network: Network,
    domains: Sequence[str] = (),
    ports: Sequence[int] = (),
    exposed: int | None = None,
) -> str:
    """The network part of the notice, in words; ``exposed``: the port (one of
    ``ports``) exposed for this session only, because ANTHROPIC_BASE_URL points at it."""
    if mode != Mode.SANDBOX:
        return "network of the host (no namespace of its own)"
    if network == Network.NONE:
        return "network none (loopback of its own only)"
    if network == Network.HOST:
        return "network host (shared with the host)"
    allowed = "Claude Code's endpoints"
    if domains:
        allowed += " + " + ", ".join(domains)
    text = f"network allowlist ({allowed}"
    if ports:
        text += "; host loopback port" + ("s " if len(ports) > 1 else " ")
        text += ", ".join(
            f"{p} (from {BASE_URL}, this session only)" if p == exposed else str(p) for p in ports
        )
    return text + ")"


def launch_notice(
    mode: Mode,
    agent: str,
    directory: str,
    network: str,
    *,
    moved_from: str | None = None,
    passed: Sequence[str] = (),
    notes: Sequence[str] = (),
    dropped: Sequence[str] = (),
    refused: Sequence[str] = (),
) -> str:
    """``sandbox-launch: sandbox mode; agent X; in DIR; network ...; passes A, B``.

    ``dropped``: Claude-related variables of the caller's it did not pass (names only),
    with the command that passes them; ``refused``: those it never passes."""
    where = f"in {directory}"
    if moved_from is not None:
        where += f" (you are in {moved_from}, outside the workspace)"
    parts = [f"{mode} mode", f"agent {agent}", where, network]
    if mode == Mode.UNSAFE:
        parts.append("environment inherited")
    elif passed:
        parts.append("passes " + ", ".join(passed))
    else:
        parts.append("passes none of your variables")
    if dropped:
        parts.append(
            f"did not pass {', '.join(dropped)} (to pass them: {pass_env_command(dropped)})"
        )
    if refused:
        parts.append(f"never passes {', '.join(refused)} (a sandbox claim)")
    parts += [note for note in notes if note]
    return PREFIX + "; ".join(parts)


def user_network_words(config: LauncherConfig, plan: LandlockPlan | None) -> str:
    """User mode's network in words: the host's, or the allowlist through the session's
    proxy behind the walls it has here (``plan``: the session's, None: none)."""
    wall = plan.wall if plan is not None else UserNetworkWall.HOST
    if plan is None or wall is UserNetworkWall.HOST:
        return f"network: {NO_WALL}"
    # The session's proxy makes the network the allowlist's (its own namespace, or
    # Landlock's ports: sandbox_setup.policy.landlock).
    allowed = " + ".join(("Claude Code's endpoints", *config.allowed_domains))
    ports = dict.fromkeys(config.loopback_ports)
    if ports:
        allowed += "; host loopback port" + ("s " if len(ports) > 1 else " ")
        allowed += ", ".join(map(str, ports))
    if wall is UserNetworkWall.NAMESPACE:
        second = SECOND_WALL if plan.walls.network else NO_SECOND_WALL
        how = f"a network namespace of its own, {second}"
    else:
        how = f"Landlock's ports only: {PORTS_ONLY}"
    return f"network allowlist through the session's proxy ({allowed}; {how})"


def network_words(
    config: LauncherConfig, plan: LandlockPlan | None, exposed: int | None = None
) -> str:
    """The notice's network part for a launch of ``config`` (user mode's: the walls of
    ``plan``; ``exposed``: see :func:`network_policy`)."""
    if config.mode is Mode.USER:
        return user_network_words(config, plan)
    return network_policy(
        config.mode, config.network, config.allowed_domains, config.loopback_ports, exposed
    )


@dataclass(frozen=True, slots=True)
class Notice:
    """What the launch notice says, as its facts; :meth:`render` words it.

    ``network``: :func:`network_words`; ``dropped``, ``refused``: see
    :func:`launch_notice`; ``walls``: user mode's Landlock walls (shown where any is on);
    ``gateway``: the credentials the session's API gateway keeps outside; ``runs``:
    ``--run``'s program, run instead of Claude Code."""

    mode: Mode
    agent: str
    workdir: WorkDir
    network: str
    passed: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    walls: Walls | None = None
    gateway: tuple[str, ...] = ()
    runs: str | None = None

    def render(self) -> str:
        text = launch_notice(
            self.mode,
            self.agent,
            self.workdir.path,
            self.network,
            moved_from=self.workdir.moved_from,
            passed=self.passed,
            dropped=self.dropped,
            refused=self.refused,
        )
        if self.walls is not None and self.walls.any:
            shown = [n for n, on in (("files", self.walls.files), ("network", self.walls.network),
                                     ("scope", self.walls.scope)) if on]  # fmt: skip
            text += f"; Landlock ABI {self.walls.abi}: {', '.join(shown)}"
        if self.gateway:
            text += (
                f"; API gateway: {', '.join(self.gateway)} kept outside (Claude gets a placeholder)"
            )
        if self.runs is not None:
            text += f"; runs {self.runs}, not Claude Code"
        return text


def notice_of(
    config: LauncherConfig,
    agent: str,
    workdir: WorkDir,
    environ: Mapping[str, str],
    *,
    passed: Sequence[str] = (),
    plan: LandlockPlan | None = None,
    gateway: GatewaySpec | None = None,
    exposed: int | None = None,
    runs: str | None = None,
) -> Notice:
    """The notice of a launch of ``config``, run as ``agent`` in ``workdir``, from its
    parts (:class:`~sandbox_setup.launcher.launch.Launch`'s ``passed``, ``landlock`` and
    ``gateway``): ``environ``, the caller's variables, for the Claude-related ones it did
    not pass; ``exposed``: see :func:`network_policy`; ``runs``: ``--run``'s program."""
    dropped: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    if config.mode is not Mode.UNSAFE:
        dropped, refused = dropped_claude_names(environ, passed, config.mode)
    return Notice(
        mode=config.mode,
        agent=agent,
        workdir=workdir,
        network=network_words(config, plan, exposed),
        passed=tuple(passed),
        dropped=tuple(dropped),
        refused=tuple(refused),
        walls=plan.walls if plan is not None else None,
        gateway=tuple(gateway.names) if gateway is not None else (),
        runs=runs,
    )
