"""The plan reads no live host fact and runs no program: bwrap, socat, their trust, the
environment, the clock and Claude Code (the binary, its trust, whether the agent may run
it, its version, or why none was found) are facts handed in (sandbox_setup.configure.
host_facts), so the same answers make a different plan from different facts, on any
host, with the live look-ups and every program run refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

import pytest

import sandbox_setup.configure.host_facts as host_facts
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.claude_binary import INSTALLED_CLAUDE, ClaudeBinary, ClaudeLookup
from sandbox_setup.configure.claude_shim import (
    SHIM_KIND,
    ShimLauncher,
    look_up_launcher,
    render_shim,
)
from sandbox_setup.configure.host_facts import SandboxBinary
from sandbox_setup.configure.plan import Plan, build_plan
from tests.core_fixtures import make_target_root
from tests.host_facts import CLAUDE, NO_BWRAP, claude_facts, plan_facts
from tests.unit.test_plan import report

WS = (PurePosixPath("/srv/project"),)
SANDBOX = Answers(Mode.SANDBOX, workspaces=WS)
# The edge itself, before the fixture below refuses every binding of it.
GATHER = host_facts.gather_host_facts
LIVE_LOOKUPS = (
    "sandbox_binaries",
    "untrusted_reason",
    "gather_host_facts",
    # Claude Code: found on the PATH or at --claude, judged, and run for its version.
    "look_up_claude",
    "find_claude",
    "locate_claude",
    "read_claude_version",
)


class ReadTheHost(AssertionError):
    """A live look-up the plan must not make."""


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


@pytest.fixture(autouse=True)
def no_live_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every binding of the live look-ups in the product refuses, as does ``which`` for
    the sandbox's binaries and any program run: a plan that asked the host fails here."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ReadTheHost(f"the plan read the live host: {args}")

    for name, module in list(sys.modules.items()):
        if not name.startswith("sandbox_setup"):
            continue
        for lookup in LIVE_LOOKUPS:
            if callable(getattr(module, lookup, None)):
                monkeypatch.setattr(module, lookup, refuse)
    real_which = shutil.which

    def which(cmd: str, *args: Any, **kwargs: Any) -> str | None:
        if str(cmd).rsplit("/", 1)[-1] in ("bwrap", "socat", "setfacl", "getfacl"):
            raise ReadTheHost(f"the plan looked for {cmd} on this host")
        return real_which(cmd, *args, **kwargs)

    monkeypatch.setattr(shutil, "which", which)
    for run in ("run", "Popen", "check_output", "call"):
        monkeypatch.setattr(subprocess, run, refuse)


def sandbox_settings(plan: Plan) -> dict[str, Any]:
    action = next(a for a in plan.actions if "Claude settings" in a.describe())
    data: dict[str, Any] = json.loads(action.desired())  # type: ignore[attr-defined]
    return dict(data["sandbox"])


def test_the_probed_binaries_are_facts_not_look_ups(layout: Layout) -> None:
    here = plan_facts(
        bwrap=SandboxBinary("bwrap", "/opt/here/bwrap"),
        socat=SandboxBinary("socat", "/opt/here/socat"),
    )
    plan = build_plan(report(), SANDBOX, layout, facts=here)
    assert sandbox_settings(plan)["bwrapPath"] == "/opt/here/bwrap"
    assert sandbox_settings(plan)["socatPath"] == "/opt/here/socat"
    # The same answers where the facts say bwrap is missing, or untrusted: refused.
    with pytest.raises(RefusedError, match=r"sandbox\.bwrapPath: no bwrap was found"):
        build_plan(report(), SANDBOX, layout, facts=plan_facts(bwrap=NO_BWRAP))
    untrusted = SandboxBinary("bwrap", "/opt/here/bwrap", "/opt/here is world-writable")
    with pytest.raises(RefusedError, match=r"/opt/here/bwrap cannot be trusted \(/opt/here is"):
        build_plan(report(), SANDBOX, layout, facts=plan_facts(bwrap=untrusted))


def test_the_environment_is_a_fact(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    environ = MappingProxyType({"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"})
    noted = build_plan(report(), SANDBOX, layout, facts=plan_facts(environ=environ))
    plain = build_plan(report(), SANDBOX, layout, facts=plan_facts(environ={}))
    assert [n for n in noted.notes if "port 4000" in n]
    assert not [n for n in plain.notes if "port 4000" in n]


def test_the_clock_and_the_sudo_user_are_facts(layout: Layout) -> None:
    facts = plan_facts(now="2026-01-02T03:04:05+00:00", environ={"SUDO_USER": "alice"})
    unsafe = Answers(Mode.UNSAFE, accept_unsafe_root=True)
    plan = build_plan(report(), unsafe, layout, facts=facts)
    assert plan.answers.accepted_at == "2026-01-02T03:04:05+00:00"
    assert plan.answers.accepted_by is not None and "alice" in plan.answers.accepted_by


def test_the_edge_takes_the_binaries_the_report_recorded(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one function that reads the host: the binaries the probes recorded (a path
    that is not absolute is none), looked up now only where the report has none."""
    # Claude Code's look-up is the edge's too (see below); here it stands in.
    monkeypatch.setattr(host_facts, "look_up_claude", lambda *args: CLAUDE)
    recorded = report()
    recorded.host["binaries"] = {"bwrap": None, "socat": "relative/socat", "rg": None}
    facts = GATHER(recorded, layout, SANDBOX)
    assert facts.bwrap == NO_BWRAP and facts.socat == SandboxBinary("socat", None)
    with pytest.raises(ReadTheHost):
        GATHER(report(), layout, SANDBOX)  # a report made by hand: the edge looks (refused)


def test_claude_is_looked_for_on_the_operators_path_at_the_edge(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's PATH is a fact: where the edge looks for Claude Code (the edge
    itself reads the host: the refusals are lifted)."""
    monkeypatch.undo()
    shipped = layout.real("/usr/local/bin/claude")
    moved = layout.real("/opt/tools/claude")
    moved.parent.mkdir(parents=True)
    moved.write_bytes(shipped.read_bytes())
    moved.chmod(0o755)
    shipped.unlink()
    assert "/opt/tools" not in os.environ.get("PATH", "").split(":")
    answers = Answers(Mode.UNSAFE, accept_unsafe_root=True)
    found = claude_facts(layout, None, {"PATH": "/opt/tools"})
    assert found.binary is not None and found.binary.version == "2.1.332"
    plan = build_plan(report(), answers, layout, facts=plan_facts(claude=found))
    assert plan.answers.claude == PurePosixPath("/opt/tools/claude")
    missing = claude_facts(layout, None, {"PATH": "/opt/other"})
    with pytest.raises(InputError, match=r"looked for 'claude' in /opt/other, ") as err:
        build_plan(report(), answers, layout, facts=plan_facts(claude=missing))
    assert err.value.option is Option.CLAUDE
    monkeypatch.setenv("PATH", "/opt/tools")
    assert GATHER(report(), layout, answers).claude == found  # gather_host_facts: the same


def test_claude_code_is_a_fact_not_a_look_up(layout: Layout) -> None:
    """With every live look-up and program run refused, the plan takes Claude Code, its
    trust, its reach and its version from the facts: a binary that is not even in the
    target makes the plan the facts describe."""
    elsewhere = PurePosixPath("/opt/elsewhere/claude")
    assert not layout.real(elsewhere).exists()
    binary = ClaudeBinary(elsewhere, elsewhere, "2.1.400", private=False, trusted=True)
    facts = plan_facts(claude=ClaudeLookup(None, binary))
    plan = build_plan(report(), SANDBOX, layout, facts=facts)
    assert plan.answers.claude == elsewhere
    assert plan.launcher_config.claude == elsewhere
    assert plan.launcher_config.claude_version == "2.1.400"
    assert "install-claude" not in [a.kind for a in plan.actions]
    # The same answers where the facts say the agent cannot reach it: a root-owned copy.
    private = ClaudeLookup(None, ClaudeBinary(elsewhere, elsewhere, "2.1.400", True, True))
    copied = build_plan(report(), SANDBOX, layout, facts=plan_facts(claude=private))
    assert copied.launcher_config.claude == INSTALLED_CLAUDE
    assert "install-claude" in [a.kind for a in copied.actions]
    # Or that others can change it: refused, its version never read.
    untrusted = ClaudeLookup(None, ClaudeBinary(elsewhere, elsewhere, None, False, False))
    with pytest.raises(RefusedError, match=r"/opt/elsewhere/claude: sandbox mode's launcher"):
        build_plan(report(), SANDBOX, layout, facts=plan_facts(claude=untrusted))


def test_no_claude_is_the_edges_input_error_raised_where_the_plan_needs_it(
    layout: Layout,
) -> None:
    """The edge's "not found" is the plan's input error, byte for byte and typed, at the
    same point of the plan: an agent the answers' rules refuse is still said first."""
    why = message(
        "Claude Code not found (looked for 'claude' in /x); install it or ",
        Ref(Option.CLAUDE, Act.PASS, metavar="PATH"),
    )
    none = plan_facts(claude=ClaudeLookup(None, None, why))
    with pytest.raises(InputError) as err:
        build_plan(report(), SANDBOX, layout, facts=none)
    assert str(err.value) == str(why) and err.value.words == why
    assert err.value.option is Option.CLAUDE
    root_agent = Answers(Mode.SANDBOX, workspaces=WS, agent_user="root")
    with pytest.raises(InputError, match="agent_user root: the agent user must not be root"):
        build_plan(report(), root_agent, layout, facts=none)
    # Facts gathered for other answers (another --claude) are never used for these.
    given = Answers(Mode.SANDBOX, workspaces=WS, claude=PurePosixPath("/usr/local/bin/claude"))
    with pytest.raises(ValueError, match="looked up for None"):
        build_plan(report(), given, layout, facts=plan_facts())


def test_the_sandbox_launch_the_shim_runs_is_a_fact(layout: Layout) -> None:
    """Which sandbox-launch root's claude shim runs, and whether root may run it, is
    this installation's, found and judged at the edge: the plan takes the fact."""
    shimmed = replace(SANDBOX, install_claude_shim=True)
    there = Path("/opt/installed/bin/sandbox-launch")
    plan = build_plan(
        report(), shimmed, layout, facts=plan_facts(sandbox_launch=ShimLauncher(there))
    )
    shim = plan.actions[-1]
    assert shim.kind == SHIM_KIND
    assert shim.desired() == render_shim(str(there), str(layout.launcher_config))
    missing = ShimLauncher(None, missing=message(Ref(Option.INSTALL_CLAUDE_SHIM), ": none"))
    with pytest.raises(InputError) as err:
        build_plan(report(), shimmed, layout, facts=plan_facts(sandbox_launch=missing))
    assert str(err.value) == "--install-claude-shim: none"
    assert err.value.option is Option.INSTALL_CLAUDE_SHIM
    untrusted = ShimLauncher(there, untrusted="/opt/installed is world-writable")
    with pytest.raises(RefusedError, match=r"^/opt/installed is world-writable$"):
        build_plan(report(), shimmed, layout, facts=plan_facts(sandbox_launch=untrusted))
    # Not asked for: neither is judged.
    build_plan(report(), SANDBOX, layout, facts=plan_facts(sandbox_launch=missing))


def test_the_edge_finds_this_installations_sandbox_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the edge itself reads the host
    found = look_up_launcher(0)
    assert found.path == Path(sys.executable).parent / "sandbox-launch"
    assert found.missing is None
