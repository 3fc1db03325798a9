"""The core's messages in the wizard's own words.

The core speaks to the command line: its errors say "pass --claude PATH" or "drop
--copy-login". In the TUI there are no flags, only fields on the details step. A
message whose option references are typed (:class:`sandbox_setup.base.message.Message`,
the errors raised with one) is worded here from its parts (:func:`wizard_text`): each
:class:`~sandbox_setup.base.message.Ref` becomes the field's words ("fill in the Claude
Code field", "untick 'Copy my Claude login'"), and the field at fault is the message's
option, not a match on its text.

The other typed parts: a :class:`~sandbox_setup.base.message.Change` (on the command
line a command to paste, ``sandbox-setup --headless --allow-loopback-port 8080 --yes``)
is the fields to set; a :class:`~sandbox_setup.base.message.Recheck` is "re-run the
checks"; :class:`~sandbox_setup.base.message.CliOnly` words are left out. Plain text
is shown as it is: nothing here reads, matches or rewrites a message's text (docs/
design.md invariant 19), so text that names an option must be typed where it is
written (tests/unit/test_tui_core.py finds any that is not). Commands to paste that
the wizard has no field for (``sandbox-setup --audit``) and other programs' flags
(docker's ``--security-opt``) are plain text, and stay.

:data:`FIELD_WORDS` has an entry for every option of the headless path; a unit test
holds it to the parser, so a new flag cannot slip through in its CLI spelling.
"""

from __future__ import annotations

import dataclasses

from sandbox_setup.base.answer_fields import ANSWER_FIELDS, Control, option_words, value_nouns
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.message import Act, Change, CliOnly, Message, Option, Part, Recheck, Ref

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


def _key(option: Option) -> str:
    """The option's key in the tables above (its name, as the parser declares it;
    not :data:`~sandbox_setup.base.message.CLI_FLAGS`, the command line's rendering)."""
    return f"--{option.value}"


def _toggle(ref: Ref, box: str) -> str:
    if ref.act is Act.GIVEN:
        return f"{box} is ticked"
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
    if ref.act is Act.GIVEN and key not in TOGGLE_WORDS:
        ref = dataclasses.replace(ref, act=Act.NAME)  # a value given: named
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
    elif ref.act is Act.NAME:
        text = f"{FIELD_WORDS[key]} {ref.value}" if ref.value else FIELD_WORDS[key]
    else:
        text = f"set {FIELD_WORDS[key]}"
    return text[:1].upper() + text[1:] if ref.capital else text


def wizard_change(change: Change) -> str:
    """A change of the saved setup: the fields to set ("to allow it, choose the network
    'allowlist' and enter 8080 in the loopback ports field")."""
    return f"{change.lead}, " + " and ".join(wizard_ref(ref) for ref in change.refs)


# The wizard's checks screen re-runs the checks itself; once the agent exists, its
# probes run as the agent (sandbox_setup.configure.probes.choose_probe_user).
RECHECK = "re-run the checks once the agent user exists"


def wizard_part(part: Part) -> str:
    """One typed part in the wizard's words."""
    if isinstance(part, str):
        return part
    if isinstance(part, Ref):
        return wizard_ref(part)
    if isinstance(part, Change):
        return wizard_change(part)
    if isinstance(part, Recheck):
        return RECHECK
    assert isinstance(part, CliOnly)
    return ""


def wizard_text(text: str) -> str:
    """A core message for a screen: a typed one worded from its parts; plain text as
    it is (it names no option of ours: the core types those)."""
    if isinstance(text, Message):
        return "".join(wizard_part(part) for part in text.parts)
    return text


def error_text(exc: BaseException) -> str:
    """What a screen shows for ``exc``: a core error in the wizard's words, another
    exception as it is (its type's name when it has no message)."""
    if isinstance(exc, SetupError):
        return wizard_text(exc.words if exc.words is not None else str(exc))
    return str(exc) or type(exc).__name__
