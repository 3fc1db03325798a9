"""Property tests over what a previous run (or the operator) left in
``launcher.toml`` and ``answers.toml`` before an apply: a schema this version does
not know, and the operator's comments. An apply either upgrades a file it knows
(keeping every comment and foreign key) or refuses with exit 2 naming the file,
leaving the whole tree byte for byte as it was."""

from __future__ import annotations

import tomllib

import tomlkit
from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.checks.model import Report
from tests.core_fixtures import CONFIG, SANDBOX, snapshot
from tests.property.conftest import (
    CLI_SETTINGS,
    assert_clean_failure,
    assert_valid_setup,
    fresh_root,
    run_main,
)

APPLY = ["--headless", *SANDBOX, "--yes"]
KNOWN_SCHEMAS = (1,)
schemas = (
    st.sampled_from([0, 1, 2, -1, 10**30, "1", 1.0, True])
    | st.integers()
    | st.text(max_size=4)
    | st.floats(allow_nan=False)
    | st.booleans()
)


def is_known(schema: object) -> bool:
    return type(schema) is int and schema in KNOWN_SCHEMAS


@CLI_SETTINGS
@given(schema=schemas, extra=st.booleans())
def test_launcher_config_of_an_unknown_schema_is_refused(
    real_report: Report, schema: object, extra: bool
) -> None:
    with fresh_root() as root:
        assert run_main([*APPLY, "--root", str(root)]).code == 0
        config = root / CONFIG / "launcher.toml"
        doc = tomlkit.parse(config.read_text())
        doc["schema"] = schema
        if extra:
            doc["from_the_future"] = {"knob": "on"}
        config.write_text(tomlkit.dumps(doc))
        before = snapshot(root)
        run = run_main([*APPLY, "--root", str(root)])
        if is_known(schema):
            assert run.code == 0, run.err
            assert_valid_setup(root)
            data = tomllib.loads(config.read_text())
            assert data["schema"] == 1
            if extra:
                assert data["from_the_future"] == {"knob": "on"}
        else:
            assert_clean_failure(run, before, root)
            assert run.code == 2, run
            # The file (as a target path until the root is named in messages, item 15).
            assert "/root/.config/sandbox-setup/launcher.toml" in run.err, run.err
            assert "'schema'" in run.err, run.err


WORKSPACES = ("/srv/project", "/srv/other")
comments = st.text(
    st.characters(whitelist_categories=["L", "N", "Zs", "P"], max_codepoint=0x2FF), max_size=20
).map(lambda text: " ".join(text.split()))


def commented_array(values: list[str], notes: list[str]) -> str:
    lines = [f'    "{value}", # {note}' for value, note in zip(values, notes, strict=True)]
    return "[\n" + "\n".join(lines) + "\n]"


@CLI_SETTINGS
@given(
    first=st.lists(st.sampled_from(WORKSPACES), min_size=1, max_size=2, unique=True),
    second=st.lists(st.sampled_from(WORKSPACES), min_size=1, max_size=2, unique=True),
    notes=st.lists(comments, min_size=2, max_size=2),
)
def test_comments_in_the_launcher_configs_workspace_array_survive(
    real_report: Report, first: list[str], second: list[str], notes: list[str]
) -> None:
    with fresh_root() as root:
        (root / "srv/other").mkdir()

        def apply(workspaces: list[str]) -> None:
            argv = ["--headless", "--mode", "sandbox", "--yes", "--root", str(root)]
            run = run_main(argv + [f"--workspace={w}" for w in workspaces])
            assert run.code == 0, run.err

        apply(first)
        config = root / CONFIG / "launcher.toml"
        text = config.read_text()
        array = "workspaces = " + tomlkit.dumps({"w": first}).split(" = ", 1)[1].strip()
        assert array in text, text
        text = text.replace(array, "workspaces = " + commented_array(first, notes[: len(first)]))
        text = "# the operator's own note\n" + text
        config.write_text(text)
        apply(second)
        after = config.read_text()
        assert tomllib.loads(after)["sandbox"]["workspaces"] == second
        assert after.startswith("# the operator's own note\n"), after
        for value, note in zip(first, notes, strict=False):
            if value in second and note:
                assert f"# {note}" in after, (note, after)
        assert_valid_setup(root)


ANSWERS_KEYS = {
    "schema": st.sampled_from([1, 2, 0, "1"]) | schemas,
    "mode": st.sampled_from(["sandbox", "user", "yolo"]),
    "workspaces": st.just(["/srv/project"]) | st.just("/srv/project"),
    "agent_user": st.sampled_from(["claude-agent", "Bad Name"]),
    "network": st.sampled_from(["host", "none", "bridge"]),
    "surprise": st.integers(0, 3),
}
answers_docs = st.fixed_dictionaries(
    {},
    optional=ANSWERS_KEYS,  # type: ignore[arg-type]
).map(lambda doc: f"# {doc!r}\n" + tomlkit.dumps(doc))
not_toml = st.sampled_from(
    ['mode = "sandbox"\nmode = "user"\n', "schema = \n", "[[x]\n", 'mode = "sandbox" # fine\n']
) | st.text(max_size=40)
existing_answers = (
    answers_docs.map(str.encode)
    | not_toml.map(str.encode)
    | st.binary(max_size=40)
    | answers_docs.map(lambda text: text.encode() + b"# \xff\xfe\n")
)


def reads_as_answers(raw: bytes) -> str | None:
    """None when ``raw`` is an answers file this version reads, else why not."""
    from sandbox_setup.base.errors import InputError
    from sandbox_setup.configure.answers import parse_answers

    try:
        parse_answers(raw.decode("utf-8"), "answers.toml")
    except UnicodeDecodeError:
        return "not UTF-8"
    except InputError as exc:
        return str(exc)
    return None


@CLI_SETTINGS
@given(raw=existing_answers)
def test_a_malformed_existing_answers_file_is_refused_not_overwritten(
    real_report: Report, raw: bytes
) -> None:
    with fresh_root() as root:
        answers = root / CONFIG / "answers.toml"
        answers.parent.mkdir(parents=True)
        answers.write_bytes(raw)
        before = snapshot(root)
        run = run_main([*APPLY, "--root", str(root)])
        problem = reads_as_answers(raw)
        if problem is None:
            assert run.code == 0, run.err
            assert_valid_setup(root)
            after = answers.read_text()
            for line in raw.decode().splitlines():
                if line.lstrip().startswith("#"):
                    assert line in after, (line, after)  # the operator's comments stay
        else:
            assert_clean_failure(run, before, root)
            assert run.code == 2, run
            assert "answers.toml" in run.err, run.err
            if problem == "not UTF-8":
                assert "not UTF-8" in run.err and "line" in run.err, run.err
            elif "invalid TOML" in problem:
                assert "invalid TOML" in run.err and "line" in run.err, run.err
            assert answers.read_bytes() == raw
