"""The operator's answers are declared once (base/answer_fields.py): a field added
there, and only there (with its typed attribute), is found in the flags, the answers
file, the wizard's answers and the wizard's words."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import sandbox_setup.cli as cli
import sandbox_setup.commands.apply as apply_command
from sandbox_setup.base.answer_fields import (
    ANSWER_FIELDS,
    SEPARATE_AGENT,
    AnswerField,
    Control,
    Kind,
    Value,
    flagged,
    option_words,
    value_nouns,
)
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.paths import Layout
from sandbox_setup.commands import wording
from sandbox_setup.configure.answers import Answers, dump_answers, parse_answers
from sandbox_setup.tui.draft import wizard_answers

# Two new answers, as a developer would add them: one entry each in the table...
NEW_FIELDS = (
    AnswerField(
        "colour_prompt",
        Kind.TOGGLE,
        Value.BOOL,
        "--colour-prompt",
        help="colour the agent's prompt",
        words="'Colour the prompt'",
        control=Control.TICK,
        modes=SEPARATE_AGENT,
        form_id="colour-prompt",
        title="The agent's prompt",
        tick="Colour the prompt",
    ),
    AnswerField(
        "mirrors",
        Kind.LIST,
        Value.STRINGS,
        "--mirror",
        "URL",
        "a package mirror (repeatable)",
        noun="mirror",
        words="the mirrors field",
        control=Control.FIELD,
    ),
)
FIELDS = (*ANSWER_FIELDS, *NEW_FIELDS)
# ...and their typed attributes on the answers.
Extended = dataclasses.make_dataclass(
    "Extended",
    [
        ("colour_prompt", bool, dataclasses.field(default=False)),
        ("mirrors", tuple[str, ...], dataclasses.field(default=())),
    ],
    bases=(Answers,),
    frozen=True,
)


@pytest.fixture
def extended(monkeypatch: pytest.MonkeyPatch) -> None:
    """The product's modules reading the extended table."""
    monkeypatch.setattr(cli, "ANSWER_FIELDS", FIELDS)
    monkeypatch.setattr(apply_command, "ANSWER_FIELDS", FIELDS)


def test_a_field_added_in_one_place_is_a_flag(extended: None, tmp_path: Path) -> None:
    parser = cli.build_parser()
    args = parser.parse_args(
        ["--headless", "--colour-prompt", "--mirror", "https://a", "--mirror", "https://b",
         "--no-mirror", "https://b"]
    )  # fmt: skip
    assert args.colour_prompt is True and args.no_mirror == ["https://b"]
    help_text = parser.format_help()
    assert "--colour-prompt" in help_text and "--no-mirror URL" in help_text
    assert "remove this mirror from the saved setup's list" in help_text
    # The headless path changes the answers by it (a saved setup plus the flags).
    base = Extended(Mode.SANDBOX, mirrors=("https://b",))
    changed = apply_command._changed(base, args, Layout.for_root(tmp_path))
    assert changed.colour_prompt is True  # type: ignore[attr-defined]
    assert changed.mirrors == ("https://a",)  # type: ignore[attr-defined]
    # ...and refuses to combine it with --answers, as every answer flag.
    args = parser.parse_args(["--headless", "--answers", "/a.toml", "--mirror", "x"])
    with pytest.raises(InputError, match="cannot be combined with --mirror"):
        apply_command.answers_from_args(args, Layout.for_root(tmp_path))


def test_a_field_added_in_one_place_is_in_the_answers_file() -> None:
    answers = Extended(Mode.USER, colour_prompt=True, mirrors=("https://a",))
    text = dump_answers(answers, FIELDS)
    assert "colour_prompt = true" in text and 'mirrors = ["https://a"]' in text
    assert parse_answers(text, fields=FIELDS, model=Extended) == answers
    # At its default it is left out, and the file is still read back.
    assert "mirrors" not in dump_answers(Extended(Mode.USER), FIELDS)
    with pytest.raises(InputError, match="key 'mirrors' must be a list of strings"):
        parse_answers('mode = "user"\nmirrors = 3\n', fields=FIELDS, model=Extended)
    # The product's own table does not know it: an unknown key, named.
    with pytest.raises(InputError, match="unknown key 'colour_prompt'"):
        parse_answers(text)


def test_a_field_added_in_one_place_is_in_the_wizard() -> None:
    details = Extended(Mode.SANDBOX, colour_prompt=True, mirrors=("https://a",))
    kept = wizard_answers(details, Mode.SANDBOX, None, None, FIELDS)
    assert kept.colour_prompt is True and kept.mirrors == ("https://a",)  # type: ignore[attr-defined]
    # Unsafe mode holds no agent of its own: the declaration's modes drop the toggle.
    unsafe = wizard_answers(details, Mode.UNSAFE, "root", "2026-11-30T04:00:00+00:00", FIELDS)
    assert unsafe.colour_prompt is False  # type: ignore[attr-defined]
    assert unsafe.mirrors == ("https://a",)  # type: ignore[attr-defined]


def test_a_field_added_in_one_place_is_in_the_wizards_words() -> None:
    assert option_words(FIELDS, Control.TICK, "words")["--colour-prompt"] == "'Colour the prompt'"
    assert option_words(FIELDS, Control.FIELD, "words")["--mirror"] == "the mirrors field"
    assert value_nouns(FIELDS)["--mirror"] == "mirror"


def test_the_table_and_the_answers_attributes_are_the_same() -> None:
    """The typed attributes (plan, audit and launcher read them) and the declarations
    name the same answers, in a unit test rather than a second list."""
    attributes = {f.name for f in dataclasses.fields(Answers)} - {"extra"}
    assert [f.key for f in ANSWER_FIELDS] == list(dict.fromkeys(f.key for f in ANSWER_FIELDS))
    assert {f.key for f in ANSWER_FIELDS} == attributes


def test_every_headless_answer_option_is_declared() -> None:
    """The parser's headless options are the declarations' flags, and the options of
    the run itself (--answers, --yes, --dry-run): nothing added beside the table."""
    parser = cli.build_parser()
    group = next(g for g in parser._action_groups if g.title == "headless options")
    options = {a.option_strings[-1] for a in group._group_actions}
    declared = {flag for f in flagged() for flag in f.flags()}
    assert options == declared | {"--answers", "--yes", "--dry-run"}


def test_the_wording_tables_are_the_declarations() -> None:
    assert option_words(ANSWER_FIELDS, Control.TICK, "words") == wording.TOGGLE_WORDS
    assert option_words(ANSWER_FIELDS, Control.FIELD, "words") == wording.TEXT_FIELD_WORDS
    assert option_words(ANSWER_FIELDS, Control.CHOICE, "noun") == wording.CHOICE_NOUNS
    assert value_nouns().items() <= wording.VALUE_NOUNS.items()
    # Every answer flag the wizard might meet in a message has its words.
    for f in flagged():
        assert f.flag in wording.FIELD_WORDS, f.flag


def _loaded(module: str) -> list[str]:
    """The sandbox_setup.configure and tomlkit modules a fresh interpreter holds once it
    imported ``module``."""
    code = (
        f"import sys, {module}; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'tomlkit' "
        "or m.startswith('sandbox_setup.configure'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_first_paint_loads_no_answers_rules_nor_the_toml_writer() -> None:
    """The wizard's first screen (tui.app and what it imports) holds the one answers
    model without loading its rules or tomlkit; reading answers loads no tomlkit either:
    it comes with the function that writes a file."""
    assert _loaded("sandbox_setup.tui.app") == []
    assert "tomlkit" not in _loaded("sandbox_setup.configure.answers_file")
