"""answers.toml: symmetric load/dump, and errors that name the key and the problem."""

from __future__ import annotations

import datetime
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import (
    Answers,
    dump_answers,
    load_answers,
    parse_answers,
    validate_answers,
)
from tests.core_fixtures import make_target_root

names = st.from_regex(r"[a-z_][a-z0-9_-]{0,20}", fullmatch=True)
# Path components as a saved answers file has them: normalised ("." and ".." never
# appear; parsing normalises them away, so they would not round-trip).
parts = st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True).filter(
    lambda p: p not in (".", "..")
)
paths = st.lists(parts, min_size=1, max_size=3)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
times = st.datetimes(timezones=st.just(datetime.UTC)).map(
    lambda when: when.isoformat(timespec="seconds")
)


@given(
    mode=st.sampled_from(list(Mode)),
    workspaces=st.lists(paths, max_size=3),
    agent=names,
    claude=st.none() | paths,
    scope=st.none() | st.sampled_from(["user", "managed"]),
    inner=st.none() | st.sampled_from(["strong", "weak", "off"]),
    network=st.sampled_from(["host", "none"]),
    flags=st.tuples(st.booleans(), st.booleans()),
    # accepted_at is a time with its offset (anything else is refused on load).
    accepted=st.none() | st.tuples(texts, times),
)
def test_dump_then_parse_gives_the_same_answers(
    mode, workspaces, agent, claude, scope, inner, network, flags, accepted
) -> None:
    answers = Answers(
        mode=mode,
        workspaces=tuple(PurePosixPath("/", *p) for p in workspaces),
        agent_user=agent,
        claude=PurePosixPath("/", *claude) if claude else None,
        settings_scope=scope,
        inner_sandbox=inner,
        network=network,
        copy_login=flags[0],
        accept_unsafe_root=flags[1],
        accepted_by=accepted[0] if accepted else None,
        accepted_at=accepted[1] if accepted else None,
    )
    text = dump_answers(answers)
    assert parse_answers(text) == answers
    assert dump_answers(parse_answers(text)) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('mode = "sandbox"\nworkspaces = [', "invalid TOML"),
        ('mode = "sandbox"\nnetwork = host\n', "line 2, column 11"),
        ('mode = "bogus"', "key 'mode' is 'bogus'"),
        ("workspaces = []", "missing key 'mode'"),
        (
            'mode = "user"\nagent_user = "Bad User"',
            "agent_user 'Bad User' is not a valid user name",
        ),
        ('mode = "user"\nagent_user = 7', "key 'agent_user' must be a str"),
        ('mode = "user"\nworkspaces = ["relative/dir"]', "key 'workspaces' must be an absolute"),
        ('mode = "user"\nnetwork = "wifi"', "key 'network' is 'wifi'"),
        ('mode = "user"\ninner_sandbox = "medium"', "key 'inner_sandbox' is 'medium'"),
        ('mode = "user"\ncopy_login = "yes"', "key 'copy_login' must be a bool"),
        ('mode = "user"\nworkspace = ["/srv"]', "unknown key 'workspace'"),
        ('schema = 9\nmode = "user"', "unsupported schema 9"),
    ],
)
def test_bad_answers_name_the_file_key_and_problem(text: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        parse_answers(text, "/tmp/my-answers.toml")
    assert "/tmp/my-answers.toml" in str(err.value)
    assert expected in str(err.value)


def test_load_answers_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.toml: cannot read"):
        load_answers(tmp_path / "nope.toml")


def test_validate_against_the_target_root(tmp_path: Path) -> None:
    layout = Layout.for_root(make_target_root(tmp_path))
    ok = Answers(mode=Mode.SANDBOX, workspaces=(PurePosixPath("/srv/project"),))
    validate_answers(ok, layout)
    with pytest.raises(InputError, match="workspace /srv/missing does not exist"):
        validate_answers(Answers(Mode.USER, workspaces=(PurePosixPath("/srv/missing"),)), layout)
    with pytest.raises(InputError, match="sandbox mode needs at least one workspace"):
        validate_answers(Answers(Mode.SANDBOX), layout)
    with pytest.raises(RefusedError, match="--accept-unsafe-root"):
        validate_answers(Answers(Mode.UNSAFE), layout)
    with pytest.raises(InputError, match="must not be root"):
        validate_answers(Answers(Mode.USER, agent_user="root"), layout)
    validate_answers(Answers(Mode.UNSAFE, accept_unsafe_root=True), layout)


@pytest.mark.parametrize("ws", ["/", "/tmp", "/etc", "/usr/share/doc", "/home", "/var/tmp", "/srv"])
def test_system_directories_are_not_workspaces(tmp_path: Path, ws: str) -> None:
    layout = Layout.for_root(make_target_root(tmp_path))
    layout.real(PurePosixPath(ws)).mkdir(parents=True, exist_ok=True)
    with pytest.raises(InputError, match=f"workspace {ws} is a system directory"):
        validate_answers(Answers(Mode.USER, workspaces=(PurePosixPath(ws),)), layout)


def test_root_home_is_a_workspace_only_for_roots_own_sessions(tmp_path: Path) -> None:
    layout = Layout.for_root(make_target_root(tmp_path))
    with pytest.raises(InputError, match="workspace /root is a system directory"):
        validate_answers(Answers(Mode.USER, workspaces=(PurePosixPath("/root"),)), layout)
    unsafe = Answers(Mode.UNSAFE, accept_unsafe_root=True, workspaces=(PurePosixPath("/root"),))
    validate_answers(unsafe, layout)  # root's own sessions may start in /root


def test_the_operators_home_is_not_a_workspace_for_another_user(tmp_path: Path) -> None:
    from dataclasses import replace

    from sandbox_setup.base.accounts import Account

    layout = Layout.for_root(make_target_root(tmp_path))
    alice = replace(layout, operator=Account("alice", 1500, 1500, Path("/home/alice"), "/bin/sh"))
    alice.real(PurePosixPath("/home/alice/project")).mkdir(parents=True)
    home = (PurePosixPath("/home/alice"),)
    with pytest.raises(InputError, match="would give the agent user your home /home/alice"):
        validate_answers(Answers(Mode.USER, agent_user="bob", workspaces=home), alice)
    validate_answers(Answers(Mode.USER, agent_user="alice", workspaces=home), alice)
    project = (PurePosixPath("/home/alice/project"),)
    validate_answers(Answers(Mode.USER, agent_user="bob", workspaces=project), alice)
