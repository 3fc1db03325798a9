"""claude.installed, claude.sandbox_deps and claude.remote_settings.

No probe ever starts Claude Code with a session (invariant 13): here Claude is only
asked ``--version``, which starts none, of the binary
:func:`~sandbox_setup.checks.claude_path.lookup_claude` found (never the claude
shim; a shim given with ``--claude`` is reported as such, not run). The root guard
is judged in :mod:`sandbox_setup.checks.claude_guard`.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from sandbox_setup.base.accounts import lookup_user, operator_account
from sandbox_setup.base.claude_version import parse_claude_version
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.claude_path import lookup_claude
from sandbox_setup.checks.experiments import CLAUDE_QUIET_ENV
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import SAFE_PATH, ProbeResult, which
from sandbox_setup.policy.claude_release import FLOOR, INSTALL_NEWEST, floor_problem
from sandbox_setup.policy.claude_remote import (
    MAY_BE_OVERRIDDEN,
    REMEDY,
    REMOTE_SETTINGS_CACHE,
    WHY,
    remote_settings_caches,
)

# The newest release, on any Node npm runs on (policy.claude_release says why).
INSTALL_REMEDY = f"{INSTALL_NEWEST}   (or: curl -fsSL https://claude.ai/install.sh | bash)"
QUIET_ENV = CLAUDE_QUIET_ENV  # keep the probe off the network and quiet


def judge_given_shim(path: str) -> Verdict:
    """Pure: the Claude Code binary named explicitly is sandbox-setup's claude shim."""
    return Verdict(
        Status.WARN,
        f"{path} is sandbox-setup's claude shim, not Claude Code: not run",
        "a probe never runs the shim: for root it starts a whole agent session through "
        "sandbox-launch",
        message(
            Ref(
                Option.CLAUDE, Act.PASS, metavar="/path/to/real/claude", cli="pass the real binary:"
            ),
            " (the `claude` path in launcher.toml names it)",
        ),
        cause="claude-shim-given",
    )


def judge_claude_installed(
    path: str | None,
    version: ProbeResult | None,
    as_agent: ProbeResult | None,
    *,
    note: str = "",
) -> Verdict:
    """Pure: found, its version, and whether the probe user can run it. ``note``
    (e.g. the claude shims the search passed over) ends the detail."""
    if path is None or version is None:
        return Verdict(
            Status.WARN,
            "Claude Code was not found (PATH, ~/.local/bin, ~/.claude/local, /usr/local/bin)",
            note.lstrip("\n"),
            INSTALL_REMEDY,
            cause="claude-missing",
        )
    if not version.ok:
        return Verdict(
            Status.FAIL,
            f"{path} does not run: " + (version.last_error or f"exit {version.returncode}"),
            version.describe() + note,
            INSTALL_REMEDY,
            cause="claude-broken",
        )
    text = version.stdout.strip().splitlines()[0] if version.stdout.strip() else "?"
    if as_agent is not None and not as_agent.ok:
        return Verdict(
            Status.WARN,
            f"Claude Code {text} at {path}, but the agent user cannot run it",
            as_agent.describe() + note,
            "install it outside private homes (sandbox-setup copies it to "
            "/usr/local/lib/sandbox-setup when applying)",
            cause="claude-unreadable-by-agent",
        )
    below = floor_problem(parse_claude_version(text) or "")
    if below is not None:
        return Verdict(
            Status.WARN,
            f"Claude Code {text} at {path} is below the release floor {FLOOR}",
            below + "\n" + version.describe() + note,
            f"{INSTALL_NEWEST}   (installs the newest release; on Node 20 npm warns "
            "about `engines` and installs it all the same)",
            cause="claude-below-floor",
        )
    return Verdict(Status.PASS, f"Claude Code {text} at {path}", version.describe() + note)


def judge_sandbox_deps(found: dict[str, str | None]) -> Verdict:
    """Pure: socat and ripgrep (Claude Code's sandbox needs them) present?"""
    missing = [name for name, path in found.items() if path is None]
    detail = "\n".join(f"{name}: {path or 'missing'}" for name, path in found.items())
    if missing:
        packages = {"socat": "socat", "rg": "ripgrep"}
        return Verdict(
            Status.FAIL,
            "missing for Claude Code's sandbox: " + ", ".join(missing),
            detail,
            "apt-get install -y " + " ".join(packages.get(m, m) for m in missing),
            cause="sandbox-deps-missing",
        )
    return Verdict(Status.PASS, "socat and ripgrep are installed", detail)


def judge_untrusted_claude(path: str, reason: str) -> Verdict:
    """Pure: a Claude Code binary root will not run (another user could change it)."""
    return Verdict(
        Status.WARN,
        f"{path} was not run: root does not run a binary another user can change",
        reason,
        message(
            "install Claude Code where only root can write (e.g. npm install -g as root) and ",
            Ref(Option.CLAUDE, Act.PASS, cli="pass that path as"),
        ),
        cause="claude-untrusted",
    )


def untrusted_as_root(ctx: Context, path: str, *, as_probe_user: bool) -> str | None:
    """The reason not to run ``path`` when that run would be as root, else None."""
    runs_as_root = os.geteuid() == 0 and (ctx.account is None or not as_probe_user)
    return ctx.untrusted(path) if runs_as_root else None


def check_claude_installed(ctx: Context) -> Verdict:
    lookup = lookup_claude(ctx.claude)
    if lookup.given_shim and lookup.path is not None:
        return judge_given_shim(lookup.path)
    path, note = lookup.runnable, lookup.note()
    if path is None:
        return judge_claude_installed(None, None, None, note=note)
    if ctx.account is not None:
        # The agent is who must run it: ask as the agent first (one run when it works).
        as_agent = ctx.run([path, "--version"], env=QUIET_ENV)
        if as_agent.ok or untrusted_as_root(ctx, path, as_probe_user=False) is not None:
            return judge_claude_installed(path, as_agent, None, note=note)
        # The agent cannot run it: does it run at all (as us, trusted)?
        version = ctx.run([path, "--version"], env=QUIET_ENV, as_probe_user=False)
        return judge_claude_installed(path, version, as_agent, note=note)
    reason = untrusted_as_root(ctx, path, as_probe_user=False)
    if reason is not None:
        return judge_untrusted_claude(path, reason)  # never as root
    version = ctx.run([path, "--version"], env=QUIET_ENV, as_probe_user=False)
    return judge_claude_installed(path, version, None, note=note)


# The binaries Claude Code's own sandbox runs (``bwrapPath``/``socatPath`` name two).
SANDBOX_BINARIES = ("bwrap", "socat", "rg")


def sandbox_binaries() -> dict[str, str | None]:
    """Where ``bwrap``, ``socat`` and ``rg`` are on the probes' PATH (the one the
    launcher gives Claude is a part of it), symlinks resolved; None when absent.

    The nested probes run this bwrap; the plan writes these paths into managed
    settings, so Claude's sandbox runs exactly the binaries that were probed.
    """
    found: dict[str, str | None] = {}
    for name in SANDBOX_BINARIES:
        path = which(name, SAFE_PATH)
        found[name] = os.path.realpath(path) if path else None
    return found


def check_sandbox_deps(ctx: Context) -> Verdict:
    found = sandbox_binaries()
    return judge_sandbox_deps({name: found[name] for name in ("socat", "rg")})


def judge_remote_settings(found: list[tuple[str, PurePosixPath]], looked: list[str]) -> Verdict:
    """Pure: the server-managed settings caches found (``(who, path)``) in the homes of
    ``looked`` (who was looked at, for the detail)."""
    where = "the homes of " + ", ".join(looked) if looked else "no home"
    if not found:
        return Verdict(
            Status.PASS,
            f"no server-managed settings cached (~/{REMOTE_SETTINGS_CACHE}) for "
            + (", ".join(looked) or "anyone"),
            f"looked in {where}",
        )
    return Verdict(
        Status.WARN,
        "server-managed settings cached for "
        + ", ".join(f"{who} ({path})" for who, path in found)
        + f": {MAY_BE_OVERRIDDEN}",
        WHY,
        REMEDY.format(paths=" ".join(str(path) for _, path in found)),
        cause="claude-remote-settings",
    )


def _under(root: Path, path: PurePosixPath) -> Path:
    return root / path.relative_to("/") if path.is_absolute() else root / path


def check_remote_settings(ctx: Context) -> Verdict:
    """The operator's, the probe user's and the agent's homes (the agent launcher.toml
    names, or the one being planned), under ``ctx.root``; a home this account cannot
    look into counts as having none."""
    accounts = [operator_account(ctx.root), ctx.account, lookup_user(ctx.agent_user, ctx.root)]
    homes = [(a.name, PurePosixPath(a.home)) for a in accounts if a is not None]

    def exists(path: PurePosixPath) -> bool:
        return os.path.lexists(_under(ctx.root, path))

    found = remote_settings_caches(homes, exists)
    return judge_remote_settings(found, list(dict.fromkeys(who for who, _ in homes)))
