"""What the real Claude Code starts in the background inside a session of
``sandbox-launch`` runs inside it and ends with it (issue 25, "Track what changed";
docs/design.md invariants 10 and 14): both modes, both releases.

* A Bash ``tool_use`` with ``run_in_background: true``: Claude answers with a task id
  at once and, in ``--print`` mode, waits for the task before it exits (the model then
  gets a ``task-notification``). The task runs in Claude's inner
  sandbox (its own namespaces and seccomp filter), in the session's cgroup, and
  nothing of it is left when the launcher returns, not even a process it detached
  with ``setsid`` that ignores SIGTERM and SIGHUP.
* ``claude --bg`` (2.1.197 and 2.1.332): Claude starts its background supervisor
  (``claude daemon run --origin transient``) and a ``bg-pty-host`` worker per session
  as its own children, from its own binary, prints "backgrounded" and exits. They
  run in the session (its cgroup; in sandbox mode the launcher's namespaces) and end
  with it: the background session does not outlive the launch, so through
  ``sandbox-launch`` ``--bg`` is a session that ends at once, never one that escapes.
  ``processWrapper`` / ``CLAUDE_CODE_PROCESS_WRAPPER`` (2.1.208+) would put a prefix in
  front of those children; they already start inside the session, so the project
  needs no such wrapper (docs/claude-code-behaviour.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator

import pytest

from tests.bash_evidence import host_namespaces
from tests.claude_session import (
    AgentProcess,
    AgentTree,
    agent_tree,
    ancestors,
    assert_contained,
    claude_process,
    launch_session,
    tell_when_seen,
    wait_until_seen,
)
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep
from tests.tools import ClaudeRelease

pytestmark = pytest.mark.e2e

FINAL = "The scripted turn is complete."
STRAY = ("sleep", "3011")
TASK = ("sleep", "3013")
MODES = ["user", "sandbox"]


@pytest.fixture
def agent() -> Iterator[AgentTree]:
    with agent_tree() as made:
        yield made


def background_command(marker: str, flag: str) -> str:
    """A task that detaches a stray only SIGKILL ends and runs a child of its own
    (:data:`TASK`) until the host has seen both (``flag``), then ends it."""
    return (
        f"echo {marker}; (trap '' TERM HUP INT; setsid {' '.join(STRAY)} >/dev/null 2>&1 &); "
        f"{' '.join(TASK)} & task=$!; {wait_until_seen(flag)}; kill $task"
    )


def running(argv: tuple[str, ...]) -> Callable[[AgentProcess], bool]:
    return lambda process: all(word in process.argv for word in argv)


@pytest.mark.parametrize("mode", MODES)
def test_a_background_bash_task_runs_in_the_session_and_ends_with_it(
    agent: AgentTree, claude_under_test: ClaudeRelease, mode: str
) -> None:
    marker = "background-task-" + mode
    flag = agent.tree.workspace / f".seen-{marker}"
    command = background_command(marker, flag.name)
    step = BashStep(command, extra_input={"run_in_background": True})
    seen = tell_when_seen(flag, running(TASK), running(STRAY))
    with FakeMessagesAPI([step, TextStep(FINAL)]) as api:
        session = launch_session(agent, api, mode=mode, inner="strong", while_running=seen)
    assert session.run.returncode == 0, session.run
    api.assert_conversation_done()
    result = api.tool_result(0).text
    assert "running in background" in result, result  # a task id, not the command's output

    claude = claude_process(session)
    task = session.watch.matching(*TASK)
    stray = session.watch.matching(*STRAY)
    assert task and stray and flag.exists(), f"the host never saw the task or its stray: {result}"
    for process in (*task, *stray):
        # inside Claude's inner sandbox: below Claude, namespaces of its own
        assert claude in ancestors(session, process), process
        assert process.user_ns != claude.user_ns and process.pid_ns != claude.pid_ns, process
        if mode == "sandbox":  # and inside the launcher's: never the host's
            assert process.user_ns != host_namespaces()["user"], process
    # Claude waited for the task and told the model it ended: a later request of the
    # conversation carries the task's notification.
    task_id = re.search(r"with ID: (\w+)", result)
    assert task_id is not None, result
    told = [r for r in api.main_requests if task_id[1] in json.dumps(r.body.get("messages")[-1:])]
    assert any("task-notification" in json.dumps(r.body) for r in told), (
        f"Claude Code {claude_under_test.version} never reported the task's end:\n" + api.describe()
    )
    assert_contained(session, agent)


def accept_for_background_sessions(agent: AgentTree) -> None:
    """What an interactive first run leaves in the agent's ~/.claude.json: bypass mode's
    disclaimer accepted and the workspace trusted (``--bg`` refuses without either)."""
    state = {
        "hasCompletedOnboarding": True,
        "bypassPermissionsModeAccepted": True,
        "projects": {str(agent.tree.workspace): {"hasTrustDialogAccepted": True}},
    }
    path = agent.tree.home / ".claude.json"
    path.write_text(json.dumps(state))
    os.chown(path, agent.agent.uid, agent.agent.gid)


@pytest.mark.parametrize("mode", MODES)
def test_a_bg_session_and_its_supervisor_run_in_the_session_and_end_with_it(
    agent: AgentTree, claude_under_test: ClaudeRelease, mode: str
) -> None:
    accept_for_background_sessions(agent)
    with FakeMessagesAPI([BashStep("echo background-session"), TextStep(FINAL)]) as api:
        session = launch_session(
            agent, api, mode=mode, inner="strong", print_mode=False, extra_args=["--bg"]
        )
    assert session.run.returncode == 0, session.run
    assert "backgrounded" in session.run.stdout, session.run

    claude = claude_process(session)
    supervisor = session.watch.matching("daemon", "run")
    assert supervisor, f"no background supervisor started: {session.run}"
    # Its workers, where the host saw one before the launch ended (Claude exits at once)
    workers = [p for p in session.watch.seen.values() if "--bg-pty-host" in p.argv]
    for process in (*supervisor, *workers):
        # Claude's own children, from its own binary: inside whatever contains Claude
        assert claude in ancestors(session, process), process
        assert process.exe == claude.exe, process
        assert process.user_ns == claude.user_ns and process.pid_ns == claude.pid_ns, process
        if mode == "sandbox":
            assert process.user_ns != host_namespaces()["user"], process
    assert_contained(session, agent)
