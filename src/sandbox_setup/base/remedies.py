"""Every command the project prints for the operator to paste, built in one place.

A remedy is a command that works when pasted: the launch's "the API's port is not
allowed" says ``sandbox-setup --headless --allow-loopback-port 10100 --yes``, not
"re-run sandbox-setup with ...". The builders here are the only place those commands
are spelled; :data:`EXAMPLES` gives one filled-in call of each, and a test runs each
command through the real parser and a ``--dry-run`` under a temp root with a saved
setup, so a new builder (added to :data:`EXAMPLES`) is covered too.

Pure functions, stdlib only: the launcher, the checks, the audit, the commands and
the TUI all import it. Every operand is a
:func:`~sandbox_setup.base.printable.pasted_word`: a name with control characters is
``$'...'``, so the command pastes as it is printed."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sandbox_setup.base.printable import pasted_word

# Functions here that build a part of a command, not a command.
HELPERS = ("root_flag",)


def root_flag(root: str) -> str:
    """`` --root DIR`` for a command to paste, when ``root`` is not the live system."""
    return "" if root in ("", "/") else f" --root {pasted_word(root)}"


def change_setup(*options: str, root: str = "/") -> str:
    """The command that changes only ``options`` of the saved setup and applies it."""
    words = "".join(f" {pasted_word(o) if not o.startswith('--') else o}" for o in options)
    return f"sandbox-setup --headless{words}{root_flag(root)} --yes"


def allow_loopback_port(port: int, root: str = "/") -> str:
    """Expose one port of the host's loopback inside the sandbox (sandbox mode)."""
    return change_setup("--allow-loopback-port", str(port), root=root)


def allowlist_with_port(port: int, root: str = "/") -> str:
    """The allowlist network with one loopback port (from network host or none)."""
    return change_setup("--network", "allowlist", "--allow-loopback-port", str(port), root=root)


def apparmor_profile(root: str = "/") -> str:
    """Install and load the AppArmor profile that gives the probed bwrap user namespaces."""
    return change_setup("--apparmor-bwrap-profile", root=root)


def allow_domain(pattern: str, root: str = "/") -> str:
    return change_setup("--allow-domain", pattern, root=root)


def pass_env(names: Iterable[str], root: str = "/") -> str:
    """Hand these variables of the caller's environment to Claude."""
    words: list[str] = []
    for name in names:
        words += ["--pass-env", name]
    return change_setup(*words, root=root)


def replay_answers(path: str, root: str = "/") -> str:
    return f"sandbox-setup --headless --answers {pasted_word(path)} --yes{root_flag(root)}"


def rerun_checks(*ids: str, as_user: str | None = None) -> str:
    user = f" --as-user {pasted_word(as_user)}" if as_user else ""
    return "sandbox-setup --check" + user + "".join(f" {i}" for i in ids)


def audit(root: str = "/") -> str:
    return "sandbox-setup --audit" + root_flag(root)


def status(root: str = "/") -> str:
    """What every setup installed, and its sessions with what the proxy refused."""
    return "sandbox-setup --status" + root_flag(root)


def undo_last(root: str = "/", *, yes: bool = True) -> str:
    return "sandbox-setup --undo" + (" --yes" if yes else "") + root_flag(root)


def undo_all(root: str = "/", *, yes: bool = True) -> str:
    return "sandbox-setup --undo --all" + (" --yes" if yes else "") + root_flag(root)


def undo_commands(applies: int, root: str = "/", *, yes: bool = True) -> list[tuple[str, str]]:
    """(what it does, command) for undoing a setup with ``applies`` applies in effect:
    the last apply alone, and the whole setup (what the apply message and the done
    screen show, so one undo never looks complete while earlier applies remain)."""
    earlier = applies - 1
    stays = (
        f" ({earlier} earlier {'apply stays' if earlier == 1 else 'applies stay'} in effect)"
        if earlier > 0
        else ""
    )
    whole = f"all {applies} applies" if applies > 1 else "its one apply"
    return [
        (f"Undo this apply only{stays}", undo_last(root, yes=yes)),
        (f"Undo the whole setup ({whole}, back to the host before it)", undo_all(root, yes=yes)),
    ]


# One filled-in call of every builder: the remedies test pastes each one.
EXAMPLES: dict[str, Callable[[str], str]] = {
    "change_setup": lambda root: change_setup("--allow-domain", "example.org", root=root),
    "allow_loopback_port": lambda root: allow_loopback_port(10100, root),
    "allowlist_with_port": lambda root: allowlist_with_port(10100, root),
    "allow_domain": lambda root: allow_domain("*.example.com", root),
    "apparmor_profile": lambda root: apparmor_profile(root),
    "pass_env": lambda root: pass_env(["MY_TOKEN", "OTHER_TOKEN"], root),
    "replay_answers": lambda root: replay_answers(
        root.rstrip("/") + "/root/.config/sandbox-setup/answers.toml", root
    ),
    "rerun_checks": lambda root: rerun_checks("bwrap.installed", as_user="nobody"),
    "audit": lambda root: audit(root),
    "status": lambda root: status(root),
    "undo_last": lambda root: undo_last(root),
    "undo_all": lambda root: undo_all(root),
    "undo_commands": lambda root: undo_commands(3, root)[1][1],
}
