"""``sandbox-setup --status [--json] [--root DIR]``: every setup on this host, and its sessions.

What is in place and what runs (docs/status.md has the JSON format, ``schema`` 1):

- the setups: those the host-wide record lists
  (:data:`~sandbox_setup.configure.ledger.HOST_RECORD`), this operator's own (its
  launcher config) and any a recorded session ran with; for
  each, whose it is, its agent, mode, workspaces, the host changes it made (the journal's
  ledger) and relies on (the host record's shared files), the ``claude`` shim, the network
  and its wall (docs/design.md invariant 16), the allowed domains, exposed loopback ports and
  passed variables;
- its sessions: those running now (the workspaces' trusted state,
  :mod:`sandbox_setup.boundary.trust_record`) and the recent ones (the history of
  sessions, :mod:`sandbox_setup.boundary.session_history`), each with the egress
  proxy's refusals by destination from its log (by the typed ``rule`` and ``launcher``
  fields of its records). A refused destination is what the agent asked for: escaped
  where it is printed, labelled so, and given the command that allows it only where
  :func:`~sandbox_setup.policy.network.refusal_remedy` gives one.

Reads only; probes nothing but whether root may make a network namespace and the
Landlock ABI (for user mode's wall). No Textual on this path.
"""

from __future__ import annotations

import argparse
import calendar
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox_setup.audit.left import LeftView, left_views
from sandbox_setup.audit.network import read_log_tail
from sandbox_setup.base import landlock
from sandbox_setup.base.claude_shim import MARKER_WINDOW, SHIM_PATH, is_claude_shim
from sandbox_setup.base.errors import InputError, SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular_text
from sandbox_setup.base.styled import Line, emit, output_width, wrapped
from sandbox_setup.boundary.session_history import PastSession, read_history
from sandbox_setup.boundary.trust_record import HostRecord as TrustRecord
from sandbox_setup.boundary.trust_record import trust_dir
from sandbox_setup.configure import fsops
from sandbox_setup.configure.ledger import (
    LEDGER_NAME,
    SetupRecord,
    parse_ledger,
    read_host_record,
    read_ledger,
)
from sandbox_setup.policy.network import refusal_remedy
from sandbox_setup.policy.network_words import (
    describe_network,
    describe_user_network,
    refusal_words,
)

SCHEMA = 1
EGRESS_LOG = "egress.log"
SLACK = 2.0  # seconds around a session's start and end for its log records
TOP_REFUSALS = 20  # destinations listed per session, most refused first


@dataclass
class SetupView:
    config: str
    state_dir: str | None = None
    operator: str | None = None
    in_host_record: bool = False
    applies: int = 0
    relies_on: list[str] = field(default_factory=list)
    made: list[dict[str, Any]] = field(default_factory=list)
    launcher: LauncherConfig | None = None
    problem: str | None = None
    agent: str | None = None
    mode: str | None = None
    workspaces: list[str] = field(default_factory=list)


def _read_config(layout: Layout, path: str) -> tuple[LauncherConfig | None, str | None]:
    real = layout.real(path) if not layout.live else Path(path)
    try:
        return parse_launcher_config(read_regular_text(real), source=str(real)), None
    except FileNotFoundError:
        return None, f"no launcher config at {real}"
    except (InputError, SetupError, OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read the launcher config {real}: {exc}"


def _shim(layout: Layout) -> dict[str, Any]:
    """Is the ``claude`` shim installed (root's ``claude`` goes through sandbox-launch)?"""
    try:
        found = fsops.read_file(layout.root, layout.real(SHIM_PATH))
    except (InputError, OSError):
        found = None
    installed = found is not None and is_claude_shim(found.data[:MARKER_WINDOW])
    return {"path": str(SHIM_PATH), "installed": installed}


def _network(config: LauncherConfig, probe: bool) -> dict[str, Any]:
    """The network and its wall, in the policy's words (docs/design.md invariant 16)."""
    mode = str(config.mode)
    if mode == "user":
        namespace: bool | None = None
        abi: int | None = None
        if probe:
            # why: the launcher's own probe of a network namespace (commands may use it)
            from sandbox_setup.launcher.egress.netns import namespace_possible

            namespace = namespace_possible().possible
            try:
                abi = landlock.abi_version()
            except OSError:
                abi = None
        wall = describe_user_network(
            abi, config.user_landlock, config.allowed_domains, config.loopback_ports, namespace
        )
        network = "host"
    elif mode == "sandbox":
        network = str(config.network)
        wall = describe_network(network, config.allowed_domains, config.loopback_ports)
    else:
        network = "host"
        wall = [f"{mode} mode: the agent shares the host's network; nothing filters it"]
    return {
        "network": network,
        "wall": wall,
        "allowed_domains": list(config.allowed_domains),
        "loopback_ports": list(config.loopback_ports),
    }


def _log_time(entry: dict[str, object]) -> float | None:
    stamp = entry.get("time")
    if not isinstance(stamp, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def refusals(
    entries: list[dict[str, object]], pid: int, start: float, end: float | None, root: str = "/"
) -> list[dict[str, Any]]:
    """The proxy's refusals in one session (records of launcher ``pid`` between
    ``start`` and ``end``), by destination, most first; the launcher's own start-up
    probe (``0.0.0.0``) not counted."""
    counts: Counter[tuple[str, int, str]] = Counter()
    for entry in entries:
        if entry.get("event") != "decision" or entry.get("allowed") is not False:
            continue
        if entry.get("launcher") != pid or entry.get("host") == "0.0.0.0":
            continue
        when = _log_time(entry)
        if when is None or when < start - SLACK or (end is not None and when > end + SLACK):
            continue
        host, port, rule = entry.get("host"), entry.get("port"), entry.get("rule")
        if not isinstance(host, str) or not isinstance(port, int) or not isinstance(rule, str):
            continue
        counts[(host, port, rule)] += 1
    return [
        {
            "asked_for": {"host": host, "port": port},
            "count": count,
            "rule": rule,
            "reason": refusal_words(rule),
            "allow_command": refusal_remedy(host, port, rule, root),
        }
        for (host, port, rule), count in counts.most_common(TOP_REFUSALS)
    ]


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _past(
    session: PastSession, logs: dict[str, list[dict[str, object]]], root: str
) -> dict[str, Any]:
    entries = logs.setdefault(
        session.state, read_log_tail(Path(session.state) / EGRESS_LOG) if session.state else []
    )
    check = session.end_check
    return {
        "session": session.session,
        "pid": session.pid,
        "agent": session.agent,
        "mode": session.mode,
        "workspaces": list(session.workspaces),
        "start": _iso(session.started),
        "duration_seconds": round(max(0.0, session.ended - session.started), 1),
        "exit_code": session.exit_code,
        "end_check": None
        if check is None
        else {
            "complete": check.complete,
            "moved_aside": check.moved_aside,
            "quarantine": check.quarantine,
        },
        "refused": refusals(entries, session.pid, session.started, session.ended, root),
    }


def status(layout: Layout, *, probe: bool = True) -> dict[str, Any]:
    """The ``--status`` document (``schema`` 1; docs/status.md)."""
    root = str(layout.root)
    problems: list[str] = []
    setups: dict[str, SetupView] = {}
    left: list[dict[str, Any]] = []
    try:
        host = read_host_record(layout)
        for state, known in host.setups.items():
            view = setups.setdefault(known.config, SetupView(known.config))
            view.state_dir, view.operator, view.in_host_record = state, known.operator, True
            view.applies, view.relies_on = len(known.applies), sorted(known.relies)
        left = [_left(view) for view in left_views(layout)]  # every setup's
    except (SetupError, OSError) as exc:
        problems.append(f"the host-wide record of setups: {exc}")
    own = str(layout.launcher_config)
    if layout.real(layout.launcher_config).exists() and own not in setups:
        setups[own] = SetupView(own, str(layout.state_dir), layout.operator.name)
    directory = trust_dir(Path(str(layout.state_dir)), layout.root)
    history: list[PastSession] = []
    try:
        history = read_history(directory)
    except ValueError as exc:
        problems.append(f"the history of sessions: {exc}")
    live: list[dict[str, Any]] = []
    try:
        record = TrustRecord.load(directory) if directory.is_dir() else None
    except (SetupError, OSError) as exc:
        problems.append(f"the workspaces' trusted state: {exc}")
        record = None
    for entry in record.sessions.values() if record is not None else ():
        if entry.alive:
            live.append(
                {
                    "session": entry.session,
                    "pid": entry.pid,
                    "since": entry.since,
                    "workspaces": list(entry.workspaces),
                }
            )
    for past in history:
        if past.config and past.config not in setups:
            setups[past.config] = SetupView(past.config, past.state)
    logs: dict[str, list[dict[str, object]]] = {}
    docs = []
    for key, view in sorted(setups.items()):
        config, view.problem = _read_config(layout, key)
        made: list[dict[str, Any]] = []
        ledger = _ledger(layout, view.state_dir) if view.state_dir else {}
        for agent, rec in ledger.items():
            made.append(
                {
                    "agent": agent,
                    "created_user": rec.created_user,
                    "group": rec.group,
                    "created_group": rec.created_group,
                }
            )
        mine = [p for p in history if p.config == key]
        workspaces = [str(w) for w in config.workspaces] if config else []
        running = [s for s in live if set(s["workspaces"]) & set(workspaces)]
        doc: dict[str, Any] = {
            "config": key,
            "state_dir": view.state_dir,
            "operator": view.operator,
            "in_host_record": view.in_host_record,
            "applies": view.applies,
            "problem": view.problem,
            "agent": config.agent_user if config else (mine[-1].agent if mine else None),
            "mode": str(config.mode) if config else (mine[-1].mode if mine else None),
            "workspaces": workspaces or (list(mine[-1].workspaces) if mine else []),
            "claude": str(config.claude) if config else None,
            "inner_sandbox": str(config.inner_sandbox) if config else None,
            "network": _network(config, probe) if config else None,
            "passed_variables": list(config.env_pass) if config else [],
            "host_changes": {"made": made, "relies_on": view.relies_on},
            "sessions": {
                "running": running,
                "recent": [_past(p, logs, root) for p in reversed(mine)],
            },
        }
        docs.append(doc)
    listed = set(setups)
    return {
        "schema": SCHEMA,
        "host": {"root": root, "shim": _shim(layout)},
        "setups": docs,
        "other_sessions": {
            "running": [s for s in live if not any(s in d["sessions"]["running"] for d in docs)],
            "recent": [_past(p, logs, root) for p in reversed(history) if p.config not in listed],
        },
        "left": left,
        "problems": problems,
    }


def _left(view: LeftView) -> dict[str, Any]:
    """A file an undo left as it is (the host record's ``left``; docs/status.md)."""
    return {
        "path": view.where,
        "setup_state_dir": view.setup,
        "apply": view.txn,
        "why": view.why.value,
        "copy": view.copy,
        "reason": view.reason,
        "todo": view.todo,
    }


def _ledger(layout: Layout, state_dir: str) -> dict[str, SetupRecord]:
    """The ledger of the setup whose state directory is ``state_dir`` ({} unreadable)."""
    try:
        if state_dir == str(layout.state_dir):
            return read_ledger(layout)
        real = layout.real(PurePosixPath(state_dir) / LEDGER_NAME)
        return parse_ledger(read_regular_text(real).encode(), str(real))
    except (SetupError, OSError, UnicodeDecodeError):
        return {}


# --- text ------------------------------------------------------------------------------


def _asked(refusal: dict[str, Any]) -> str:
    where = refusal["asked_for"]
    return f"{where['host']}:{where['port']}"  # escaped where it is printed (wrapped)


def render_lines(doc: dict[str, Any], width: int, part: str = "all") -> list[Line]:
    """The status for people: one block per setup; commands whole on one line.
    ``part``: ``setup`` (what is installed), ``sessions`` (what ran), or ``all``."""
    lines: list[Line] = []
    setup_part, sessions_part = part in ("all", "setup"), part in ("all", "sessions")

    def say(head: str, text: str, style: str = "") -> None:
        # breaks=False: a path or a name the agent asked for may hold a newline (shown)
        lines.extend(wrapped([(head, "head")], text, width, len(head), style, breaks=False))

    def command(head: str, text: str) -> None:
        lines.extend(
            wrapped([(head, "dim")], text, width, len(head), "remedy", breaks=False, wrap=False)
        )

    shim = doc["host"]["shim"]
    if setup_part:
        say(
            "claude shim: ",
            f"installed at {shim['path']}: root's claude goes through sandbox-launch"
            if shim["installed"]
            else f"not installed ({shim['path']})",
        )
    if not doc["setups"]:
        say("setups: ", "none on this host")
    for setup in doc["setups"]:
        if lines:
            lines.append(Line())
        say("setup: ", f"{setup['config']} (state {setup['state_dir'] or 'unknown'})")
        if not setup_part:
            _sessions(setup["sessions"], say, command)
            continue
        if setup["problem"]:
            say("  problem: ", setup["problem"])
        say("  operator: ", str(setup["operator"] or "unknown"))
        say("  agent: ", f"{setup['agent']}, {setup['mode']} mode")
        say("  workspaces: ", ", ".join(setup["workspaces"]) or "none")
        net = setup["network"]
        if net is not None:
            say("  network: ", "; ".join(net["wall"]))
        if setup["passed_variables"]:
            say("  passed variables: ", ", ".join(setup["passed_variables"]))
        changes = setup["host_changes"]
        for made in changes["made"]:
            what = [f"agent account {made['agent']}" if made["created_user"] else ""]
            what.append(f"group {made['group']}" if made["created_group"] else "")
            say("  made: ", ", ".join(w for w in what if w) or f"uses {made['agent']}")
        if changes["relies_on"]:
            say("  relies on (shared): ", ", ".join(changes["relies_on"]))
        if sessions_part:
            _sessions(setup["sessions"], say, command)
    other = doc["other_sessions"]
    if sessions_part and (other["running"] or other["recent"]):
        lines.append(Line())
        say("sessions of no setup listed: ", "")
        _sessions(other, say, command)
    left = doc.get("left", [])  # (a document of an older schema 1 has none)
    if setup_part and left:
        lines.append(Line())
    for item in left if setup_part else ():
        say("left by an undo: ", f"{item['path']} (setup {item['setup_state_dir']})")
        say("  why: ", item["reason"])
        say("  to do: ", item["todo"])
    for problem in doc["problems"]:
        say("problem: ", problem)
    return lines


def _sessions(sessions: dict[str, Any], say: Any, command: Any) -> None:
    for run in sessions["running"]:
        say("  running: ", f"pid {run['pid']} since {run['since']}: {', '.join(run['workspaces'])}")
    for past in sessions["recent"]:
        _past_lines(past, say, command)
    if not sessions["running"] and not sessions["recent"]:
        say("  sessions: ", "none recorded")


def _past_lines(past: dict[str, Any], say: Any, command: Any) -> None:
    code = past["exit_code"]
    check = past["end_check"]
    ended = "did not run" if code is None else f"exit {code}"
    checked = (
        "end check failed"
        if check is None
        else f"end check {'complete' if check['complete'] else 'incomplete'}, "
        f"{check['moved_aside']} moved aside"
        + (f" to {check['quarantine']}" if check["quarantine"] else "")
    )
    say(
        "  session: ",
        f"{past['start']} for {past['duration_seconds']}s, {ended}, {checked}: "
        + ", ".join(past["workspaces"]),
    )
    for refusal in past["refused"]:
        say(
            "    refused: ",
            f"{refusal['count']}x the agent asked for {_asked(refusal)}: {refusal['reason']}",
        )
        if refusal["allow_command"]:
            command("      to allow it: ", refusal["allow_command"])


def status_text(layout: Layout, width: int) -> tuple[str, str]:
    """The TUI's two tabs (Setup, Sessions): the same lines as the text output."""
    doc = status(layout, probe=layout.live)
    setup, sessions = (
        "\n".join(line.plain.rstrip() for line in render_lines(doc, width, part))
        for part in ("setup", "sessions")
    )
    return setup, sessions


def run_status(args: argparse.Namespace) -> int:
    """The ``--status`` entry point."""
    layout = Layout.for_root(args.root)
    doc = status(layout, probe=layout.live)
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        emit(render_lines(doc, output_width(sys.stdout)), sys.stdout)
    return int(ExitCode.OK)


__all__ = ["SCHEMA", "refusals", "render_lines", "run_status", "status"]
