"""Property tests of the CLI over generated input: answers files, flags, user
names, workspace paths. Never a traceback; an invalid input is exit 2 (3 for a
refusal) with one message and nothing written; a valid one applies and every
file it wrote parses."""

from __future__ import annotations

import re

import tomlkit
from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.checks.model import Report
from tests.core_fixtures import passwd_entry, snapshot
from tests.property.conftest import (
    CLI_SETTINGS,
    CONFIG,
    assert_clean_failure,
    assert_valid_setup,
    fresh_root,
    run_main,
)

valid_names = st.from_regex(r"[a-z_][a-z0-9_-]{0,31}", fullmatch=True)
odd_names = st.text(
    st.sampled_from("abcXYZ019_-.$@ \t/:é\n") | st.characters(blacklist_categories=["Cs"]),
    max_size=40,
)
# Debian's useradd rule, stated here independently of the code under test.
VALID_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
names = valid_names | odd_names | valid_names.map(lambda n: n + "\n")
workspaces = st.sampled_from(
    ["/srv/project", "/srv/project/src", "/srv/nope", "srv/project", "/etc", "/tmp", "/",
     "/srv/project/../project", "/srv//project/", "/root", "/srv/project/README.md", ""]
) | st.text(st.sampled_from("/.aé x\n"), max_size=12)  # fmt: skip
scalar = st.text(max_size=12) | st.integers(-3, 3) | st.booleans() | st.floats(allow_nan=False)
values = {
    "schema": st.sampled_from([1, 2, "1"]) | scalar,
    "mode": st.sampled_from(["sandbox", "user", "unsafe", "yolo", ""]) | scalar,
    "workspaces": st.lists(workspaces, max_size=2) | scalar,
    "agent_user": names | scalar,
    "claude": st.sampled_from(["/usr/local/bin/claude", "/nope", "claude"]) | scalar,
    "settings_scope": st.sampled_from(["user", "managed", "global"]) | scalar,
    "inner_sandbox": st.sampled_from(["strong", "weak", "off", "on"]) | scalar,
    "network": st.sampled_from(["host", "none", "bridge"]) | scalar,
    "copy_login": st.booleans() | scalar,
    "accept_unsafe_root": st.booleans() | scalar,
    "accepted_by": st.text(max_size=12),
    "accepted_at": st.text(max_size=12),
    "surprise": scalar,
}
random_docs = st.fixed_dictionaries(
    {"mode": values["mode"]},
    optional={k: v for k, v in values.items() if k != "mode"},
)
VALID_DOCS: tuple[dict[str, object], ...] = (
    {"schema": 1, "mode": "sandbox", "workspaces": ["/srv/project"]},
    {"mode": "user", "agent_user": "agent", "settings_scope": "user", "network": "none"},
    {"mode": "unsafe", "accept_unsafe_root": True},
    {"mode": "sandbox", "workspaces": ["/srv/project"], "inner_sandbox": "weak"},
)


@st.composite
def one_key_changed(draw: st.DrawFn) -> dict[str, object]:
    """A valid answers file with at most one key set to a generated value."""
    doc: dict[str, object] = dict(draw(st.sampled_from(VALID_DOCS)))
    key = draw(st.none() | st.sampled_from(sorted(values)))
    if key is not None:
        doc[key] = draw(values[key])
    return doc


answers_docs = one_key_changed() | random_docs


def apply_or_refuse(argv: list[str]) -> tuple[int, str]:
    """Run an apply in a fresh tree; check the all-or-nothing promise either way."""
    with fresh_root() as root:
        before = snapshot(root)
        run = run_main([*argv, "--root", str(root)])
        assert "Traceback" not in run.err
        if run.code == 0:
            assert_valid_setup(root)
        else:
            assert_clean_failure(run, before, root)
        return run.code, run.err


@CLI_SETTINGS
@given(doc=answers_docs)
def test_answers_files(real_report: Report, doc: dict[str, object]) -> None:
    with fresh_root() as root:
        path = root / "answers-in.toml"
        path.write_text(tomlkit.dumps(doc))
        before = snapshot(root)
        run = run_main(["--headless", "--answers", str(path), "--yes", "--root", str(root)])
        if run.code == 0:
            assert_valid_setup(root)
        else:
            assert_clean_failure(run, before, root)
            if run.code == 2:  # the message names the file, or the key at fault
                named = [str(path), "workspace", *(k for k in doc if k != "schema")]
                assert any(word in run.err for word in named), run.err


@CLI_SETTINGS
@given(text=st.text(max_size=80) | st.binary(max_size=80).map(lambda b: b.decode("latin-1")))
def test_answers_files_that_are_not_toml(real_report: Report, text: str) -> None:
    with fresh_root() as root:
        path = root / "answers-in.toml"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        before = snapshot(root)
        run = run_main(["--headless", "--answers", str(path), "--yes", "--root", str(root)])
        if run.code != 0:
            assert_clean_failure(run, before, root)


flag_tokens = st.sampled_from(
    ["--mode", "sandbox", "user", "unsafe", "--workspace", "/srv/project", "/srv/x", "rel",
     "--agent-user", "claude-agent", "Bad Name", "--claude", "/usr/local/bin/claude",
     "--settings-scope", "user", "managed", "--inner-sandbox", "weak", "off", "--network",
     "none", "--copy-login", "--accept-unsafe-root", "--yes", "--dry-run", "--json",
     "--answers", "/nonexistent.toml", "--timeout", "x", "--as-user", "nobody",
     "--list-checks", "identity.root", "--", "-", "--bogus", ""]
)  # fmt: skip
actions = st.sampled_from([["--headless"], ["--undo"], ["--audit"], ["--check", "--list-checks"]])


@CLI_SETTINGS
@given(action=actions, tokens=st.lists(flag_tokens, max_size=8))
def test_any_flag_combination(real_report: Report, action: list[str], tokens: list[str]) -> None:
    with fresh_root() as root:
        before = snapshot(root)
        # --root first and last: argparse keeps the last one, and after a "--" token
        # the last is a positional, so the first still keeps every run in the tree.
        run = run_main(["--root", str(root), *action, *tokens, "--root", str(root)])
        assert run.code in (0, 1, 2, 3), run
        assert "Traceback" not in run.err
        if run.code in (2, 3):
            assert run.err.strip(), "an error exit must say why"
            assert snapshot(root) == before
        else:
            after = snapshot(root)
            if (root / CONFIG / "launcher.toml").exists():
                assert_valid_setup(root)
            else:  # e.g. "--undo --yes" with nothing to undo: only its lock file
                changed = {p for p in set(after) | set(before) if after.get(p) != before.get(p)}
                assert all(p.startswith("root/.local/") for p in changed), changed


@CLI_SETTINGS
@given(name=names)
def test_user_names(real_report: Report, name: str) -> None:
    code, err = apply_or_refuse(
        # NAME=value form: a name that starts with "-" is a value here, not a flag.
        ["--headless", "--mode", "user", f"--agent-user={name}", "--settings-scope", "user",
         "--yes"]
    )  # fmt: skip
    if VALID_NAME.fullmatch(name) and name not in ("root", "nobody"):
        # Every name the validation accepts, the real useradd accepts too.
        assert code == 0, err
    elif not VALID_NAME.fullmatch(name):
        assert code == 2 and "is not a valid user name" in err, err


@CLI_SETTINGS
@given(name=valid_names.filter(lambda n: n not in ("root", "nobody")))
def test_accepted_user_names_are_created(real_report: Report, name: str) -> None:
    with fresh_root() as root:
        argv = ["--headless", "--mode", "user", f"--agent-user={name}", "--yes"]
        run = run_main([*argv, "--root", str(root)])
        assert run.code == 0, run.err
        entry = passwd_entry(root, name)
        assert entry is not None and entry[6] != "" and entry[2] != "0"


@CLI_SETTINGS
@given(paths=st.lists(workspaces, min_size=1, max_size=3))
def test_workspace_paths(real_report: Report, paths: list[str]) -> None:
    argv = ["--headless", "--mode", "sandbox", "--yes"]
    for path in paths:
        argv.append(f"--workspace={path}")
    code, err = apply_or_refuse(argv)
    if code == 2:
        assert "workspace" in err or "--workspace" in err, err
