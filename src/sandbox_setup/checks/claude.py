"""claude.installed, claude.root_guard and claude.sandbox_deps.

The root guard is asked of the real Claude Code when it is found: run
``claude --dangerously-skip-permissions --print ok`` as the probe user, stdin
closed, a temp HOME, no IS_SANDBOX, a short timeout. Blocked means it printed the
guard message; anything else (e.g. "Not logged in") means the guard let it pass.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.experiments import CLAUDE_QUIET_ENV
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import SAFE_PATH, ProbeResult, which

GUARD_TEXT = "cannot be used with root/sudo privileges"
GUARD_TIMEOUT = 8.0
INSTALL_REMEDY = (
    "npm install -g @anthropic-ai/claude-code   "
    "(or: curl -fsSL https://claude.ai/install.sh | bash)"
)
QUIET_ENV = CLAUDE_QUIET_ENV  # keep the probe off the network and quiet


def claude_candidates(home: Path) -> list[Path]:
    return [
        home / ".local/bin/claude",
        home / ".claude/local/claude",
        Path("/usr/local/bin/claude"),
        Path("/usr/bin/claude"),
    ]


def find_claude(explicit: str | None = None, home: Path | None = None) -> str | None:
    """Claude Code: the explicit path, else on PATH, else the installers' usual places."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    path = os.environ.get("PATH", "") + os.pathsep + SAFE_PATH
    found = which("claude", path)
    if found:
        return found
    for candidate in claude_candidates(home or Path.home()):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def judge_claude_installed(
    path: str | None, version: ProbeResult | None, as_agent: ProbeResult | None
) -> Verdict:
    """Pure: found, its version, and whether the probe user can run it."""
    if path is None or version is None:
        return Verdict(
            Status.WARN,
            "Claude Code was not found (PATH, ~/.local/bin, ~/.claude/local, /usr/local/bin)",
            "cause: claude-missing",
            INSTALL_REMEDY,
        )
    if not version.ok:
        return Verdict(
            Status.FAIL,
            f"{path} does not run: " + (version.last_error or f"exit {version.returncode}"),
            version.describe() + "\ncause: claude-broken",
            INSTALL_REMEDY,
        )
    text = version.stdout.strip().splitlines()[0] if version.stdout.strip() else "?"
    if as_agent is not None and not as_agent.ok:
        return Verdict(
            Status.WARN,
            f"Claude Code {text} at {path}, but the agent user cannot run it",
            as_agent.describe() + "\ncause: claude-unreadable-by-agent",
            "install it outside private homes (sandbox-setup copies it to "
            "/usr/local/lib/sandbox-setup when applying)",
        )
    return Verdict(Status.PASS, f"Claude Code {text} at {path}", version.describe())


def judge_root_guard(
    result: ProbeResult | None, *, uid: int, operator_is_sandbox: str | None
) -> Verdict:
    """Pure: would the guard block --dangerously-skip-permissions for the probe user?"""
    note = ""
    if operator_is_sandbox is not None:
        note = (
            f"\nYour environment sets IS_SANDBOX={operator_is_sandbox}: Claude Code started "
            "from it would skip this guard although no sandbox was verified."
        )
    if result is None:
        if uid == 0:
            return Verdict(
                Status.SKIP,
                "Claude Code not found; as uid 0 its root guard would block "
                "--dangerously-skip-permissions (judged from the uid)",
                "judged from uid 0 and IS_SANDBOX unset" + note,
            )
        return Verdict(
            Status.SKIP,
            f"Claude Code not found; uid {uid} is not root, so the guard would not fire",
            "judged from the uid" + note,
        )
    output = result.stdout + result.stderr
    if GUARD_TEXT in output:
        return Verdict(
            Status.WARN,
            "the root guard blocks --dangerously-skip-permissions here (uid 0): choose "
            "sandbox or user mode",
            result.describe() + note + "\ncause: root-guard-blocks",
            "sandbox-setup   (choose the sandbox or the user path)",
        )
    if uid == 0:
        return Verdict(
            Status.WARN,
            "this Claude Code did not block --dangerously-skip-permissions as root",
            result.describe() + note + "\ncause: root-guard-absent",
            "choose the sandbox or user path: an agent running as root is unconfined",
        )
    return Verdict(
        Status.PASS,
        f"the guard does not fire: Claude Code runs as uid {uid}, not root",
        result.describe() + note,
    )


def judge_sandbox_deps(found: dict[str, str | None]) -> Verdict:
    """Pure: socat and ripgrep (Claude Code's sandbox needs them) present?"""
    missing = [name for name, path in found.items() if path is None]
    detail = "\n".join(f"{name}: {path or 'missing'}" for name, path in found.items())
    if missing:
        packages = {"socat": "socat", "rg": "ripgrep"}
        return Verdict(
            Status.FAIL,
            "missing for Claude Code's sandbox: " + ", ".join(missing),
            detail + "\ncause: sandbox-deps-missing",
            "apt-get install -y " + " ".join(packages.get(m, m) for m in missing),
        )
    return Verdict(Status.PASS, "socat and ripgrep are installed", detail)


def _claude_for(ctx: Context) -> str | None:
    return find_claude(ctx.claude)


def judge_untrusted_claude(path: str, reason: str) -> Verdict:
    """Pure: a Claude Code binary root will not run (another user could change it)."""
    return Verdict(
        Status.WARN,
        f"{path} was not run: root does not run a binary another user can change",
        f"{reason}\ncause: claude-untrusted",
        "install Claude Code where only root can write (e.g. npm install -g as root) and "
        "pass that path as --claude",
    )


def _untrusted_as_root(ctx: Context, path: str, *, as_probe_user: bool) -> str | None:
    """The reason not to run ``path`` when that run would be as root, else None."""
    runs_as_root = os.geteuid() == 0 and (ctx.account is None or not as_probe_user)
    return ctx.untrusted(path) if runs_as_root else None


def check_claude_installed(ctx: Context) -> Verdict:
    path = _claude_for(ctx)
    if path is None:
        return judge_claude_installed(None, None, None)
    if ctx.account is not None:
        # The agent is who must run it: ask as the agent first (one run when it works).
        as_agent = ctx.run([path, "--version"], env=QUIET_ENV)
        if as_agent.ok or _untrusted_as_root(ctx, path, as_probe_user=False) is not None:
            return judge_claude_installed(path, as_agent, None)
        # The agent cannot run it: does it run at all (as us, trusted)?
        version = ctx.run([path, "--version"], env=QUIET_ENV, as_probe_user=False)
        return judge_claude_installed(path, version, as_agent)
    reason = _untrusted_as_root(ctx, path, as_probe_user=False)
    if reason is not None:
        return judge_untrusted_claude(path, reason)  # never as root
    version = ctx.run([path, "--version"], env=QUIET_ENV, as_probe_user=False)
    return judge_claude_installed(path, version, None)


def check_root_guard(ctx: Context) -> Verdict:
    path = _claude_for(ctx)
    operator_is_sandbox = ctx.facts.env.get("IS_SANDBOX")
    if path is None:
        return judge_root_guard(None, uid=ctx.uid, operator_is_sandbox=operator_is_sandbox)
    reason = _untrusted_as_root(ctx, path, as_probe_user=True)
    if reason is not None:
        return judge_untrusted_claude(path, reason)

    home = tempfile.mkdtemp(prefix="sandbox-setup-guard-")
    try:
        if ctx.account is not None:
            os.chown(home, ctx.account.uid, ctx.account.gid)
        result = ctx.run(
            [path, "--dangerously-skip-permissions", "--print", "ok"],
            env={**QUIET_ENV, "HOME": home},
            timeout=min(ctx.timeout, GUARD_TIMEOUT),
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return judge_root_guard(result, uid=ctx.uid, operator_is_sandbox=operator_is_sandbox)


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
