"""The core's messages in the wizard's own words.

The core speaks to the command line: its errors say "pass --claude PATH" or "drop
--copy-login". In the TUI there are no flags, only fields on the details step, so
:func:`tui_words` rewrites a message the core raised (or a finding it reports)
before a screen shows it. What it never touches: a command to paste, that is a line
from ``sandbox-setup --`` on (the audit's "sandbox-setup --headless --answers ...
--yes"), and other programs' flags (docker's ``--security-opt``, usermod's
``--lock``): only sandbox-setup's own options are rewritten.

:data:`FIELD_WORDS` has an entry for every option of the headless path; a unit test
holds it to the parser, so a new flag cannot slip through in its CLI spelling.
"""

from __future__ import annotations

import re

# Phrases the core uses, first (they read as sentences), then any flag left over.
PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (
            r"install it or pass --claude PATH",
            "install it, or enter its path in the Claude Code field",
        ),
        (r"pass that path as --claude\b", "enter that path in the Claude Code field"),
        (r"and pass --claude\b", "and enter its path in the Claude Code field"),
        (r"--claude (\S+?): ", r"Claude Code \1: "),
        (r"pick a new --agent-user\b", "pick a new agent user name"),
        (r"pass --agent-user (\S+)", r"enter \1 as the agent user"),
        (r"[Cc]hoose --mode user\b", "choose the dedicated user path"),
        (r"[Cc]hoose --inner-sandbox (\w+)", r"choose the inner sandbox '\1'"),
        (r"use --settings-scope user\b", "choose the settings scope 'user'"),
        (r"pass that as --workspace\b", "enter that as the workspace"),
        (r" \(--workspace DIR\)", ""),
        (r"drop --copy-login\b", "untick 'Copy my Claude login'"),
        (
            r"add --accept-unsafe-root \(or accept_unsafe_root = true in answers\)",
            "type the acceptance phrase",
        ),
        (r"re-check with --as-user <agent-user>", "re-run the checks once the agent user exists"),
        (r"--allow-domain needs", "allowed domains need"),
        (r"--allow-loopback-port needs", "loopback ports need"),
        (r"--allow-domain (\S+) allows one", r"an allowed domain \1 allows it"),
        (r"--allow-domain PATTERN allows more", "allowed domains allow more"),
        (r"use --allow-loopback-port\b", "use a loopback port"),
    )
)

# Every option of the headless path, in the words of the details step.
FIELD_WORDS: dict[str, str] = {
    "--mode": "the path (sandbox, user or unsafe)",
    "--answers": "the saved answers",
    "--workspace": "the workspaces field",
    "--agent-user": "the agent user field",
    "--claude": "the Claude Code field",
    "--settings-scope": "the settings scope",
    "--inner-sandbox": "the inner sandbox choice",
    "--network": "the network choice",
    "--allow-domain": "the allowed domains field",
    "--allow-loopback-port": "the loopback ports field",
    "--pass-env": "the variables to pass field",
    "--reuse-account": "'Reuse an existing account'",
    "--include-private": "'Include private files'",
    "--install-claude-shim": "'Route root's claude through sandbox-launch'",
    "--copy-login": "'Copy my Claude login'",
    "--accept-unsafe-root": "the acceptance phrase",
    "--yes": "Apply",
    "--dry-run": "the review",
    "--as-user": "the agent user",
    "--timeout": "the probe timeout",
    "--root": "the target root",
}
_FLAG = re.compile(r"--[a-z][a-z-]*[a-z](?: [A-Z][A-Z_]*\b)?")
_COMMAND = re.compile(r"sandbox-(?:setup|launch) +--[^\n]*")


def _fields(text: str) -> str:
    def word(match: re.Match[str]) -> str:
        flag = match.group(0).split(" ")[0]
        return FIELD_WORDS.get(flag, match.group(0))

    for pattern, replacement in PHRASES:
        text = pattern.sub(replacement, text)
    return _FLAG.sub(word, text)


def tui_words(text: str) -> str:
    """``text`` with sandbox-setup's flags put in the wizard's words; commands to
    paste (``sandbox-setup --...`` to the end of the line) are kept as they are."""
    out: list[str] = []
    last = 0
    for command in _COMMAND.finditer(text):
        out.append(_fields(text[last : command.start()]))
        out.append(command.group(0))
        last = command.end()
    out.append(_fields(text[last:]))
    return "".join(out)


def names_a_flag(text: str) -> list[str]:
    """sandbox-setup's flags ``text`` still names outside commands to paste (tests)."""
    prose = _COMMAND.sub("", text)
    return [m.split(" ")[0] for m in _FLAG.findall(prose) if m.split(" ")[0] in FIELD_WORDS]
