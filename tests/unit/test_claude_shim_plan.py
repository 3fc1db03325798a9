"""The claude shim in the plan: where it goes, what it runs, when it is refused, and
that nothing ever mistakes it for the real Claude Code (fake target roots only)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from sandbox_setup.base.accounts import Account
from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.pathfacts import resolved_chain
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.claude_binary import find_claude
from sandbox_setup.configure.claude_shim import SHIM_KIND, find_sandbox_launch, render_shim
from sandbox_setup.configure.plan import build_plan
from sandbox_setup.policy.claude_shim import SHIM_PATH, is_claude_shim
from sandbox_setup.policy.trust import chain_problems
from tests.core_fixtures import make_target_root, snapshot
from tests.host_facts import claude_facts, plan_facts
from tests.unit.test_plan import report

WS = (PurePosixPath("/srv/project"),)
SHIMMED = Answers(Mode.SANDBOX, workspaces=WS, install_claude_shim=True)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


def plant_shim(layout: Layout) -> Path:
    shim = layout.real(SHIM_PATH)
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_bytes(render_shim("/usr/local/bin/sandbox-launch", "/root/x.toml"))
    shim.chmod(0o755)
    return shim


def test_the_shim_is_python_that_compiles_and_carries_the_marker() -> None:
    data = render_shim("/opt/sandbox-setup/bin/sandbox-launch", "/root/.config/s/launcher.toml")
    assert data.startswith(b"#!/usr/bin/python3 -IS\n") and is_claude_shim(data)
    compile(data, "claude-shim", "exec")
    assert b"'/opt/sandbox-setup/bin/sandbox-launch'" in data
    assert b"'/root/.config/s/launcher.toml'" in data
    assert not is_claude_shim(b"\x7fELF" + b"\0" * 4096)


def test_the_plan_installs_it_last_as_root_0755_running_this_sandbox_launch(
    layout: Layout,
) -> None:
    before = snapshot(layout.root)
    plan = build_plan(report(), SHIMMED, layout, facts=plan_facts())
    assert snapshot(layout.root) == before  # planning writes nothing
    shim = plan.actions[-1]
    assert shim.kind == SHIM_KIND and shim.target == str(SHIM_PATH)
    assert "owner root, mode 0755" in shim.describe()
    data = shim.desired()  # type: ignore[attr-defined]
    assert data == render_shim(str(find_sandbox_launch()), str(layout.launcher_config))
    assert Path(sys.executable).parent / "sandbox-launch" == find_sandbox_launch()
    assert any("this host's path" in note for note in plan.notes)
    assert any("/usr/bin/python3" in note for note in plan.notes)  # not in the fake root
    assert plan.answers.install_claude_shim


def test_without_the_option_there_is_no_shim(layout: Layout) -> None:
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    assert SHIM_KIND not in [a.kind for a in plan.actions]


def test_a_file_already_at_its_path_is_replaced_with_a_note(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/bin")
    other = layout.real(SHIM_PATH)
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\necho someone else's claude\n")
    other.chmod(0o755)
    # Found first on PATH it would be taken for Claude (and refused), so name the real one.
    with pytest.raises(InputError, match="where the shim goes"):
        build_plan(report(), SHIMMED, layout, facts=plan_facts(claude=claude_facts(layout)))
    real = PurePosixPath("/usr/local/bin/claude")
    facts = plan_facts(claude=claude_facts(layout, real))
    plan = build_plan(report(), replace(SHIMMED, claude=real), layout, facts=facts)
    assert plan.actions[-1].backs_up()
    assert any("not sandbox-setup's shim" in note for note in plan.notes)


def test_a_symlink_at_its_path_is_an_input_error(layout: Layout) -> None:
    link = layout.real(SHIM_PATH)
    link.parent.mkdir(parents=True)
    link.symlink_to("/usr/local/bin/claude")
    # The link resolves inside the root to the real Claude, which the search then finds
    # at the shim's path first (it used to follow the link onto the host, find nothing
    # there and go on): refused for that, or for the symlink; an input error either way.
    with pytest.raises(InputError, match=r"symlink|where the shim goes"):
        build_plan(report(), SHIMMED, layout, facts=plan_facts(claude=claude_facts(layout)))


def test_refused_in_unsafe_mode(layout: Layout) -> None:
    answers = Answers(Mode.UNSAFE, accept_unsafe_root=True, install_claude_shim=True)
    with pytest.raises(InputError, match="unsafe mode"):
        build_plan(report(), answers, layout, facts=plan_facts())


def test_refused_for_a_non_root_operator(layout: Layout) -> None:
    operator = Account("alice", 1000, 1000, Path("/home/alice"), "/bin/sh")
    with pytest.raises(InputError, match="root operator"):
        build_plan(
            report(),
            replace(SHIMMED, agent_user="alice"),
            replace(layout, operator=operator),
            facts=plan_facts(),
        )


def test_refused_when_the_real_claude_lives_where_the_shim_goes(layout: Layout) -> None:
    real = layout.real(SHIM_PATH)
    real.parent.mkdir(parents=True)
    real.write_bytes(layout.real(PurePosixPath("/usr/local/bin/claude")).read_bytes())
    real.chmod(0o755)
    facts = plan_facts(claude=claude_facts(layout, SHIM_PATH))
    with pytest.raises(InputError, match="where the shim goes"):
        build_plan(report(), replace(SHIMMED, claude=SHIM_PATH), layout, facts=facts)


def test_finding_claude_skips_the_shim_and_refuses_it_by_name(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_shim(layout)
    monkeypatch.setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/bin")
    assert find_claude(layout).path == PurePosixPath("/usr/local/bin/claude")
    with pytest.raises(InputError, match="claude shim, not Claude Code"):
        find_claude(layout, SHIM_PATH)
    # A re-apply after the shim went in still records the real binary.
    plan = build_plan(report(), SHIMMED, layout, facts=plan_facts(claude=claude_facts(layout)))
    assert plan.launcher_config.claude == PurePosixPath("/usr/local/bin/claude")


def test_a_leftover_shim_is_named_when_it_is_no_longer_asked_for(layout: Layout) -> None:
    plant_shim(layout)
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    assert any("still at /usr/local/sbin/claude" in note for note in plan.notes)


def test_this_setups_shim_no_longer_asked_for_is_removed_in_the_plan(layout: Layout) -> None:
    """Unticked (or ``--no-install-claude-shim``): the shim that runs this setup's
    launcher config is a ``remove-file`` step; another config's is only named."""
    shim = plant_shim(layout)
    shim.write_bytes(render_shim("/usr/local/bin/sandbox-launch", str(layout.launcher_config)))
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    removal = [a for a in plan.actions if a.kind == "remove-file"]
    assert [a.target for a in removal] == [str(SHIM_PATH)]
    assert removal[0].is_change() and "--- /usr/local/sbin/claude (current)" in removal[0].diff()
    assert not any("still at /usr/local/sbin/claude" in note for note in plan.notes)
    still = build_plan(report(), SHIMMED, layout, facts=plan_facts())
    assert not any(a.kind == "remove-file" for a in still.actions)


def test_the_plan_names_the_loopback_port_a_local_base_url_needs(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8317")
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    # base_url_port = "auto" (the launcher's default): each launch exposes it itself.
    assert not any("--allow-loopback-port 8317" in note for note in plan.notes), plan.notes
    assert any("port 8317" in note and "for that session" in note for note in plan.notes)
    config = layout.real(layout.launcher_config)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('schema = 1\n[sandbox]\nbase_url_port = "off"\n')  # the operator's
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    assert any("--allow-loopback-port 8317" in note for note in plan.notes)
    allowed = Answers(Mode.SANDBOX, workspaces=WS, loopback_ports=(8317,))
    assert not any(
        "8317" in note for note in build_plan(report(), allowed, layout, facts=plan_facts()).notes
    )
    host = Answers(Mode.SANDBOX, workspaces=WS, network=Network.HOST)
    assert not any(
        "8317" in note for note in build_plan(report(), host, layout, facts=plan_facts()).notes
    )


def _shim_trusted() -> Callable[[str], bool]:
    """The shim's own copy of the trust rule, taken from the rendered text."""
    namespace: dict[str, Any] = {"__name__": "claude_shim_under_test"}
    exec(compile(render_shim("/x", "/y"), "claude-shim", "exec"), namespace)
    check: Callable[[str], bool] = namespace["trusted"]
    return check


def test_the_shims_copy_of_the_trust_rule_agrees_with_the_rule(tmp_path: Path) -> None:
    base = tmp_path / "t"
    base.mkdir(mode=0o755)
    cases: dict[str, Path] = {}

    def make(name: str, mode: int = 0o755, owner: int = 0, parent: Path = base) -> Path:
        path = parent / name
        path.write_text("#!/bin/sh\n")
        os.chmod(path, mode)
        os.chown(path, owner, owner)
        cases[name] = path
        return path

    make("good")
    make("world-writable", 0o757)
    make("group-writable", 0o775)
    make("not-roots", owner=65534)
    dirs = [("open-dir", 0o777, 0), ("sticky-root", 0o1777, 0),
            ("sticky-nobody", 0o1777, 65534), ("nobodys-dir", 0o755, 65534)]  # fmt: skip
    for name, mode, owner in dirs:
        directory = base / name
        directory.mkdir()
        os.chmod(directory, mode)
        os.chown(directory, owner, owner)
        make("inside-" + name, parent=directory)
    link = base / "link-to-good"
    link.symlink_to(cases["good"])
    cases["link"] = link
    cases["missing"] = base / "missing"
    shim_trusted = _shim_trusted()
    verdicts = {}
    for name, path in cases.items():
        real = Path(os.path.realpath(path))
        rule = not chain_problems(*resolved_chain(real), frozenset({0}))
        assert shim_trusted(str(path)) is rule, name
        verdicts[name] = rule
    # The cases cover both answers, so the agreement means something.
    assert verdicts["good"] and verdicts["inside-sticky-root"] and verdicts["link"]
    refused = ("world-writable", "group-writable", "not-roots", "inside-open-dir",
               "inside-sticky-nobody", "inside-nobodys-dir", "missing")  # fmt: skip
    assert not any(verdicts[n] for n in refused)
