"""The core's messages in the wizard's own words.

The core speaks to the command line: its errors say "pass --claude PATH" or "drop
--copy-login". In the TUI there are no flags, only fields on the details step. A
message whose option references are typed (:class:`sandbox_setup.base.message.Message`,
the errors raised with one) is worded here from its parts (:func:`wizard_text`): each
:class:`~sandbox_setup.base.message.Ref` becomes the field's words ("fill in the Claude
Code field", "untick 'Copy my Claude login'"), and the field at fault is the message's
option, not a match on its text.

Text that is not typed yet (findings' remedies, plan notes, some answers' refusals)
still goes through :func:`tui_words`, which rewrites the flags it finds. What it
never touches: a command to paste, that is a line from ``sandbox-setup --ACTION`` on
(the audit's "sandbox-setup --headless --answers ... --yes"; ACTION is one of its
actions, --headless, --check, --audit, --undo), and other programs' flags (docker's
``--security-opt``, usermod's ``--lock``): only sandbox-setup's own options are rewritten.

:data:`FIELD_WORDS` has an entry for every option of the headless path; a unit test
holds it to the parser, so a new flag cannot slip through in its CLI spelling.
"""

from __future__ import annotations

import re

from sandbox_setup.base.answer_fields import ANSWER_FIELDS, Control, option_words, value_nouns
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.message import Act, Message, Option, Ref

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
        (r"pass that path as --claude\b", "enter that path in the Claude Code field"),
        (r"(C|c)hoose --mode user\b", r"\1hoose the dedicated user path"),
        (r" \(--workspace DIR\)", ""),
        (r"reused: --reuse-account\b", "reused: 'Reuse an existing account' is ticked"),
        (
            r"add --accept-unsafe-root \(or accept_unsafe_root = true in answers\)",
            "type the acceptance phrase",
        ),
        (r"--allow-domain needs", "allowed domains need"),
        (r"--allow-loopback-port needs", "loopback ports need"),
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


def _key(option: Option) -> str:
    """The option's key in the tables above (its name, as the parser declares it;
    not :data:`~sandbox_setup.base.message.CLI_FLAGS`, the command line's rendering)."""
    return f"--{option.value}"


def _toggle(ref: Ref, box: str) -> str:
    if ref.act is Act.NAME:
        return box
    return f"untick {box}" if ref.act is Act.DROP else f"tick {box}"


def _choice(ref: Ref, noun: str, words: str) -> str:
    if ref.value is None:
        return words
    if ref.act is Act.NAME:
        return f"the {noun} '{ref.value}'"
    return f"choose the {noun} '{ref.value}'"


def _text_field(ref: Ref, field: str, noun: str) -> str:
    if ref.act in (Act.CHOOSE_ANOTHER, Act.PICK_NEW):
        return f"pick a new {noun}"
    if ref.act is Act.NAME:
        return f"{noun} {ref.value}" if ref.value else field
    return f"enter {ref.value} in {field}" if ref.value else f"fill in {field}"


def wizard_ref(ref: Ref) -> str:
    """One option reference in the wizard's words: the field (or tick box, or
    choice) the details step has for it, and what to do there."""
    key = _key(ref.option)
    if ref.option is Option.ACCEPT_UNSAFE_ROOT:
        text = FIELD_WORDS[key] if ref.act is Act.NAME else "type the acceptance phrase"
    elif key in TOGGLE_WORDS:
        text = _toggle(ref, TOGGLE_WORDS[key])
    elif ref.option is Option.MODE:
        text = _choice(ref, "path", FIELD_WORDS[key])
    elif key in CHOICE_NOUNS:
        text = _choice(ref, CHOICE_NOUNS[key], FIELD_WORDS[key])
    elif key in TEXT_FIELD_WORDS:
        field = TEXT_FIELD_WORDS[key]
        text = _text_field(ref, field, VALUE_NOUNS.get(key, field))
    else:
        text = FIELD_WORDS[key] if ref.act is Act.NAME else f"set {FIELD_WORDS[key]}"
    return text[:1].upper() + text[1:] if ref.capital else text


def wizard_text(text: str) -> str:
    """A core message for a screen: a typed one worded from its parts, other text
    through :func:`tui_words` (not typed yet)."""
    if isinstance(text, Message):
        return "".join(part if isinstance(part, str) else wizard_ref(part) for part in text.parts)
    return tui_words(text)


def error_text(exc: BaseException) -> str:
    """What a screen shows for ``exc``: a core error in the wizard's words, another
    exception as it is (its type's name when it has no message)."""
    if isinstance(exc, SetupError):
        return wizard_text(exc.words if exc.words is not None else str(exc))
    return str(exc) or type(exc).__name__
