"""The one line a launch prints on stderr: mode, agent, directory, network policy.

Always stderr, never stdout, so ``claude --print`` output piped through
``sandbox-launch`` (or the claude shim) stays exactly Claude's; ``sandbox-launch
--quiet`` drops it. :func:`launch_notice` is the only place that builds it:
whatever else a launch wants to tell the operator every time (the egress proxy,
the session runner) goes in as ``notes``, so it stays one line.
Variable *names* may appear in it, values never.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.launcher.workdir import WorkDir
from sandbox_setup.policy.environment import BASE_URL, pass_env_command

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


def config_notice(
    config: LauncherConfig,
    agent: str,
    workdir: WorkDir,
    passed: Sequence[str],
    notes: Sequence[str] = (),
    *,
    exposed: int | None = None,
    dropped: Sequence[str] = (),
    refused: Sequence[str] = (),
) -> str:
    """:func:`launch_notice` for a launch of ``config``."""
    network = network_policy(
        config.mode, config.network, config.allowed_domains, config.loopback_ports, exposed
    )
    return launch_notice(
        config.mode,
        agent,
        workdir.path,
        network,
        moved_from=workdir.moved_from,
        passed=passed,
        notes=notes,
        dropped=dropped,
        refused=refused,
    )
