"""Where the real Claude Code puts the processes of its tools, inside a session of
``sandbox-launch`` (issue 25, "Track what changed"): both modes, both releases.

* Claude's own memory cgroups (2.1.332; ``CLAUDE_CODE_TOOL_MEMORY_LIMIT``, forced on
  here: it bypasses the server flag). Claude makes ``claude-code-bash`` below its own
  memory cgroup on cgroup v1, *beside* it on cgroup v2 (``dirname`` of its own path),
  writes the limit there and moves each Bash command in. Through the launcher the agent
  cannot: the session's cgroup is root's (``EACCES`` in user mode), and the sandbox has
  no /sys (``ENOENT`` in sandbox mode), so Claude logs ``tool cgroup: disabled (...)``
  and its tools stay in the session's cgroup, under the session's limits. Every
  process of the agent the host saw is checked, and a stray that ignores SIGTERM and
  SIGHUP, ``setsid``-ed away from Claude's tree, outlives Claude and is gone when the
  launcher returns. 2.1.197 has no such code and ignores the variable.
* Claude's inner bwrap: 2.1.332 starts it through a ``/bin/sh`` wrapper, 2.1.197 as a
  direct child, and a shell may exec the command it was given, so the host sees
  either parent: the test asserts what the boundary needs, not how Claude starts it.
  The launcher verifies only its own bwrap (``--json-status-fd`` child, before Claude
  starts) and never looks for Claude's, so the inner sandbox comes up through it in
  strong and weak forms either way: the command runs as the agent with a seccomp
  filter and namespaces other than Claude's, its bwrap is below Claude, and every
  process ran in the session. The command waits (bounded) until the host has seen
  its bwrap, however slow the host's watch is under load.
  (``test_launch_claude_sandbox.py::test_bash_runs_as_the_agent_inside_claudes_inner_sandbox``
  proves the same confinement as the launch tree's agent; this test adds the process tree.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from tests.bash_evidence import evidence_command, new_marker, parse_evidence
from tests.claude_session import (
    AgentProcess,
    AgentTree,
    SessionRun,
    agent_tree,
    ancestors,
    assert_contained,
    changed_since_oldest,
    claude_process,
    launch_session,
    session_cgroup_names,
    session_has_cgroup,
    tell_when_seen,
    wait_until_seen,
)
from tests.fake_api import BashStep, FakeMessagesAPI, Step, TextStep
from tests.tools import ClaudeRelease

pytestmark = pytest.mark.e2e

FINAL = "The scripted turn is complete."
TOOL_LIMIT = "CLAUDE_CODE_TOOL_MEMORY_LIMIT"
TOOL_CGROUP = re.compile(r"tool cgroup: (?:disabled \((?P<why>[^)]*)\)|(?P<dir>/\S+))")
STRAY = ("sleep", "3007")
# Why Claude cannot make its tool cgroup through the launcher, by mode (see above).
CANNOT = {"user": "EACCES", "sandbox": "ENOENT"}


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


def its_bwrap(marker: str) -> Callable[[AgentProcess], bool]:
    """Claude's inner bwrap of the command that holds ``marker``."""
    return lambda p: p.name == "bwrap" and marker in " ".join(p.argv)


def is_the_stray(process: AgentProcess) -> bool:
    return all(word in process.argv for word in STRAY)


def stray_command(marker: str, flag: str) -> str:
    """Print the marker and this shell's cgroups, leave a stray that only SIGKILL ends
    (detached, TERM and HUP ignored), and wait until the host has seen it (``flag``)."""
    return (
        f"echo {marker}; echo cgroups-begin; cat /proc/self/cgroup; echo cgroups-end; "
        f"(trap '' TERM HUP INT; setsid {' '.join(STRAY)} >/dev/null 2>&1 &); "
        + wait_until_seen(flag)
    )


def own_cgroups(text: str) -> dict[str, str]:
    """controller (or ``""`` for the v2 line) -> path, from the printed /proc/self/cgroup."""
    block = text.split("cgroups-begin", 1)[1].split("cgroups-end", 1)[0]
    found = {}
    for line in block.strip().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


@pytest.mark.parametrize("mode", ["user", "sandbox"])
def test_claudes_tool_cgroup_stays_inside_the_session_and_its_limits(
    agent: AgentTree, claude_under_test: ClaudeRelease, mode: str
) -> None:
    """2.1.332 tries to make its tool cgroup (the variable forced on) and cannot; 2.1.197
    never tries. Inner sandbox off: the stray then outlives Claude, so only the launcher
    can end it."""
    marker = new_marker()
    flag = agent.tree.workspace / f".seen-{marker}"
    command = stray_command(marker, flag.name)
    with FakeMessagesAPI([BashStep(command), TextStep(FINAL)]) as api:
        session = launch_session(
            agent, api, mode=mode, inner="off", caller_env={TOOL_LIMIT: "256m"},
            env_pass=[TOOL_LIMIT], while_running=tell_when_seen(flag, is_the_stray),
        )  # fmt: skip
    assert session.run.returncode == 0, session.run
    assert f"passes {TOOL_LIMIT}" in session.run.stderr, session.run.stderr
    api.assert_conversation_done()
    text = api.tool_result(0).text
    assert marker in text, text

    tried = agent.debug_lines("tool cgroup:")
    if not changed_since_oldest(claude_under_test):
        assert tried == [], f"Claude Code {claude_under_test.version} has no tool cgroups: {tried}"
    else:
        assert tried, "Claude never reached its tool cgroup code: was the variable passed?"
        found = TOOL_CGROUP.search(tried[0])
        assert found is not None, tried
        if found["dir"] is not None:  # it made one: it must be the session's, limited
            names = session_cgroup_names(session.launcher_pid, agent.agent.name)
            assert set(found["dir"].split("/")) & names, (found["dir"], names)
        else:
            assert found["why"] == CANNOT[mode], tried

    # The command's own view: the session's cgroup (sandbox mode: the root of the
    # cgroup namespace bwrap made, which is the session's cgroup; never above it).
    seen = own_cgroups(text)
    for controller in ("memory", "pids"):
        path = seen.get(controller, seen.get(""))
        assert path is not None and not path.startswith("/.."), seen
        if mode == "user":
            names = session_cgroup_names(session.launcher_pid, agent.agent.name)
            assert set(path.split("/")) & names or not session_has_cgroup(), seen

    stray = session.watch.matching(*STRAY)
    assert stray and flag.exists(), "the host never saw the stray process"
    claude = claude_process(session)
    assert session.watch.last_seen[stray[0].pid] >= session.watch.last_seen[claude.pid], (
        "the stray did not outlive Claude: the test proves nothing about the launcher"
    )
    assert_contained(session, agent)


MODES = [("sandbox", "strong"), ("sandbox", "weak"), ("user", "strong"), ("user", "weak")]


def inner_bwraps(session: SessionRun, claude: AgentProcess) -> list[AgentProcess]:
    """Claude's own bwrap processes: descendants of Claude whose parent is no bwrap."""
    seen = session.watch.seen
    return [
        p for p in seen.values()
        if p.name == "bwrap" and claude in ancestors(session, p)
        and seen[p.ppid].name != "bwrap"
    ]  # fmt: skip


@pytest.mark.parametrize(("mode", "inner"), MODES, ids=[f"{m}-{i}" for m, i in MODES])
def test_claudes_inner_bwrap_comes_up_whoever_starts_it(
    agent: AgentTree, claude_under_test: ClaudeRelease, mode: str, inner: str
) -> None:
    """The command ran inside Claude's sandbox, as the agent, in the session; its bwrap
    is below Claude (through a ``/bin/sh`` wrapper or not: not what the boundary needs)."""
    marker = new_marker()
    flag = agent.tree.workspace / f".seen-{marker}"
    command = f"{evidence_command(marker)}; {wait_until_seen(flag.name)}"
    script: list[Step] = [BashStep(command), TextStep(FINAL)]
    with FakeMessagesAPI(script) as api:
        seen = tell_when_seen(flag, its_bwrap(marker))
        session = launch_session(agent, api, mode=mode, inner=inner, while_running=seen)
    assert session.run.returncode == 0, session.run
    assert f"sandbox-launch: {mode} mode" in session.run.stderr, session.run.stderr
    api.assert_conversation_done()
    text = api.tool_result(0).text
    evidence = parse_evidence(text, marker)
    claude = claude_process(session)
    assert evidence.marker_seen and evidence.uid == agent.agent.uid, evidence
    assert evidence.seccomp == 2 and evidence.sandbox_runtime == "1", evidence
    assert evidence.user_ns != claude.user_ns and evidence.pid_ns != claude.pid_ns

    assert flag.exists(), f"the host never saw the command's bwrap: {text}"
    bwraps = inner_bwraps(session, claude)
    assert bwraps, f"no inner bwrap below Claude: {sorted(session.watch.seen)}"
    assert_contained(session, agent)
