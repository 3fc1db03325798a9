"""The core's messages in the wizard's own words.

The core speaks to the command line: its errors say "pass --claude PATH" or "drop
--copy-login". In the TUI there are no flags, only fields on the details step, so
:func:`tui_words` rewrites a message the core raised (or a finding it reports)
before a screen shows it. What it never touches: a command to paste, that is a line
from ``sandbox-setup --ACTION`` on (the audit's "sandbox-setup --headless --answers
... --yes"; ACTION is one of its actions, --headless, --check, --audit, --undo), and
other programs' flags (docker's ``--security-opt``, usermod's
``--lock``): only sandbox-setup's own options are rewritten.

:data:`FIELD_WORDS` has an entry for every option of the headless path; a unit test
holds it to the parser, so a new flag cannot slip through in its CLI spelling.
"""

from __future__ import annotations

import re

from sandbox_setup.base.answer_fields import ANSWER_FIELDS, Control, option_words, value_nouns

# The answers' options (sandbox_setup.base.answer_fields declares each, with its words):
# a tick box on the details step ("pass" one is "tick" it),
TOGGLE_WORDS: dict[str, str] = option_words(ANSWER_FIELDS, Control.TICK, "words")
# a text field ("pass --claude PATH" is "fill in" the field),
TEXT_FIELD_WORDS: dict[str, str] = option_words(ANSWER_FIELDS, Control.FIELD, "words")
# a choice ("choose --network none" is "choose the network 'none'").
CHOICE_NOUNS: dict[str, str] = option_words(ANSWER_FIELDS, Control.CHOICE, "noun")
# "--pass-env LD_PRELOAD: ..." (a value refused, named by its flag): what it is instead.
VALUE_NOUNS: dict[str, str] = {
    **value_nouns(ANSWER_FIELDS),
    "--as-user": "probe user",
    "--root": "target root",
}

# Phrases the core uses, first (they read as sentences), then the options by kind,
# then any flag left over (FIELD_WORDS).
PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (
            r"install it or pass --claude PATH",
            "install it, or enter its path in the Claude Code field",
        ),
        (r"pass that path as --claude\b", "enter that path in the Claude Code field"),
        (r"and pass --claude(?: PATH)?\b", "and enter its path in the Claude Code field"),
        (r"(?:pick a new|choose another) --agent-user\b", "pick a new agent user name"),
        (r"pass --agent-user (\S+)", r"enter \1 as the agent user"),
        (r"(C|c)hoose --mode user\b", r"\1hoose the dedicated user path"),
        (r"pass that as --workspace\b", "enter that as the workspace"),
        (r" \(--workspace DIR\)", ""),
        (r"reused: --reuse-account\b", "reused: 'Reuse an existing account' is ticked"),
        (
            r"add --accept-unsafe-root \(or accept_unsafe_root = true in answers\)",
            "type the acceptance phrase",
        ),
        (
            r"re-check with --as-user <agent-user>(?: once it exists)?",
            "re-run the checks once the agent user exists",
        ),
        (r"--allow-domain needs", "allowed domains need"),
        (r"--allow-loopback-port needs", "loopback ports need"),
        (r"(?:sandbox-setup )?--allow-domain (\S+) allows one", r"an allowed domain \1 allows it"),
        (r"(?:sandbox-setup )?--allow-domain PATTERN allows more", "allowed domains allow more"),
        # The host's loopback for ANTHROPIC_BASE_URL: the port is what matters.
        (
            r"use --network allowlist --allow-loopback-port (\d+)",
            r"choose the network 'allowlist' and enter \1 in the loopback ports field",
        ),
        (
            r"only (?:through|with) --allow-loopback-port (\d+)",
            r"only when \1 is in the loopback ports field",
        ),
        (r": re-run sandbox-setup with --allow-loopback-port \d+", ""),
        (r"use --allow-loopback-port\b(?! \d)", "use a loopback port"),
        (r" \(--network allowlist of a headless apply\)", ""),
        (r"--install-claude-shim routes root's claude", "Routing root's claude"),
        *((rf"(?:pass|add) {flag}\b", f"tick {words}") for flag, words in TOGGLE_WORDS.items()),
        *((rf"drop {flag}\b", f"untick {words}") for flag, words in TOGGLE_WORDS.items()),
        *(
            pair
            for flag, noun in CHOICE_NOUNS.items()
            for pair in (
                (rf"(C|c)hoose {flag} ([a-z][\w-]*)", rf"\1hoose the {noun} '\2'"),
                (rf"(?:use|pass) {flag} ([a-z][\w-]*)", rf"choose the {noun} '\1'"),
                (rf"{flag} ([a-z][\w-]*)\b", rf"the {noun} '\1'"),
            )
        ),
        *(
            pair
            for flag, words in TEXT_FIELD_WORDS.items()
            for pair in (
                (rf"(?:pass|use|add) {flag}(?: [A-Z][A-Z_]*)\b", f"fill in {words}"),
                (rf"(?:pass|use|add) {flag} ([^\s:;,)]+)", rf"enter \1 in {words}"),
                (rf"(?:pass|use|add) {flag}\b", f"fill in {words}"),
            )
        ),
        *((rf"{flag} (\S+?): ", rf"{noun} \1: ") for flag, noun in VALUE_NOUNS.items()),
    )
)

# Remedies that are commands to paste on the command line (base/remedies.py) but a
# field of the wizard: put in its words before the commands are set aside.
_ROOT = r"(?: --root \S+)?"
COMMAND_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (
            rf"to allow it: sandbox-setup --headless --network allowlist "
            rf"--allow-loopback-port (\d+){_ROOT} --yes",
            r"to allow it, choose the network 'allowlist' and enter \1 in the loopback ports field",
        ),
        (
            rf"to allow it: sandbox-setup --headless --allow-loopback-port (\d+){_ROOT} --yes",
            r"to allow it, enter \1 in the loopback ports field",
        ),
        (
            rf"to allow it: sandbox-setup --headless --allow-domain (\S+){_ROOT} --yes",
            r"to allow it, enter \1 in the allowed domains field",
        ),
        (
            r"re-check as (?:the agent|that user)(?: once it exists)? \(here with the default "
            r"name\): sandbox-setup --check --as-user \S+",
            "re-run the checks once the agent user exists",
        ),
    )
)

# Every option of the headless path, in the words of the details step.
FIELD_WORDS: dict[str, str] = {
    "--mode": "the path (sandbox, user or unsafe)",
    "--answers": "the saved answers",
    **TEXT_FIELD_WORDS,
    "--settings-scope": "the settings scope",
    "--inner-sandbox": "the inner sandbox choice",
    "--network": "the network choice",
    **TOGGLE_WORDS,
    "--accept-unsafe-root": "the acceptance phrase",
    "--yes": "Apply",
    "--dry-run": "the review",
    "--as-user": "the agent user",
    "--timeout": "the probe timeout",
    "--root": "the target root",
    "--no-workspace": "the workspaces field",
    "--no-allow-domain": "the allowed domains field",
    "--no-allow-loopback-port": "the loopback ports field",
    "--no-pass-env": "the variables to pass field",
    "--no-install-claude-shim": "'Route root's claude through sandbox-launch' unticked",
    "--all": "every apply",
    "--apparmor-bwrap-profile": "the AppArmor profile for bwrap (from saved answers)",
}
_FLAG = re.compile(r"--[a-z][a-z-]*[a-z](?: [A-Z][A-Z_]*\b)?")
# A command to paste: one of sandbox-setup's actions (not a setting's flag named in
# prose, "sandbox-setup --allow-domain PATTERN allows more"), or sandbox-launch.
_COMMAND = re.compile(
    r"sandbox-setup +--(?:headless|check|audit|undo|version|help)\b[^\n]*"
    r"|sandbox-launch +--[^\n]*"
)


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
    for pattern, replacement in COMMAND_PHRASES:
        text = pattern.sub(replacement, text)
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
