#!/usr/bin/python
"""Ansible module ``sandbox_setup_apply``: the headless apply of sandbox-setup.

It writes the answers to a private temporary file and runs
``sandbox-setup --headless --answers FILE --yes --json --root ROOT``. Check mode
runs ``--dry-run`` instead of ``--yes`` (sandbox-setup writes nothing and returns
the plan); diff mode adds a ``--dry-run`` before the apply to collect the unified
diffs sandbox-setup computes. ``changed`` is exactly sandbox-setup's ``changed``.
Exit 2 (input error, nothing written), 3 (refused) and 70 (internal error) fail the
host with sandbox-setup's own message, which names the cause and the remedy.

The module depends only on the CLI contract and the answers and ``--json`` formats,
never on sandbox-setup's Python modules: it runs on the managed host under the
Python Ansible uses there, which is not the venv sandbox-setup lives in.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: sandbox_setup_apply
short_description: Apply sandbox-setup headless from answers, with check and diff mode
description:
  - Writes the answers (the keys of sandbox-setup's C(answers.toml)) to a private
    temporary file and runs C(sandbox-setup --headless --answers FILE --yes --json).
  - Reports C(changed) exactly when sandbox-setup reports a change.
  - In check mode runs C(--dry-run) instead (nothing is written) and returns the plan.
  - In diff mode returns the unified diff of every file sandbox-setup would write.
  - Exit 2 (input error), 3 (refused, for example the probes do not allow the mode)
    and 70 (internal error) fail the host with sandbox-setup's message.
  - An answers key left unset (null) is not written, so sandbox-setup's default applies.
author:
  - sandbox-setup contributors
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  mode:
    description: The path to set up.
    type: str
    required: true
    choices: [sandbox, user, unsafe]
  workspaces:
    description: Project directories the agent may write (absolute, as the target system sees them).
    type: list
    elements: str
    default: []
  agent_user:
    description: The agent account; unset means sandbox-setup's default C(claude-agent).
    type: str
  claude:
    description: Absolute path of the Claude Code binary; unset means C(claude) on PATH.
    type: str
  settings_scope:
    description: Where the Claude settings go.
    type: str
    choices: [user, managed]
  inner_sandbox:
    description:
      - Strength of Claude's own sandbox inside the outer one.
      - Unset means what the probes verified.
    type: str
    choices: [strong, weak, "off"]
  network:
    description: Network of the sandbox.
    type: str
    choices: [allowlist, host, none]
  allowed_domains:
    description:
      - Extra domains the allowlist proxy lets through.
      - C(example.com), C(*.example.com), optional C(:PORT).
    type: list
    elements: str
  loopback_ports:
    description: TCP ports of the host's loopback reachable inside the sandbox.
    type: list
    elements: int
  pass_env:
    description: Variables of the caller's environment the launcher hands to Claude, beyond its own.
    type: list
    elements: str
  copy_login:
    description: Copy the operator's Claude login to the agent user.
    type: bool
  accept_unsafe_root:
    description: The explicit acceptance unsafe mode needs (Claude Code as root, no OS sandbox).
    type: bool
  reuse_account:
    description: Let an existing, operator-made account be the agent once every rule passes.
    type: bool
  include_private:
    description: Let workspace ACLs open files that were private to their owner.
    type: bool
  install_claude_shim:
    description: Route root's C(claude) on PATH through C(sandbox-launch).
    type: bool
  limits:
    description: The session limits (the C([limits]) table).
    type: dict
    suboptions:
      tasks:
        description: Maximum number of tasks (processes and threads).
        type: int
      memory:
        description: Memory limit, for example C(4G).
        type: str
      tmpfs:
        description: Size of the sandbox's tmpfs mounts, for example C(1G).
        type: str
  root:
    description: Apply under this root (C(--root)); C(/) is the live system.
    type: path
    default: /
  executable:
    description: The sandbox-setup command (a path, or a name looked up on PATH).
    type: str
    default: sandbox-setup
  timeout:
    description: Per-probe timeout in seconds (C(--timeout)); unset means sandbox-setup's default.
    type: float
  installing:
    description:
      - An earlier task of this run installs O(executable) (the role's install step).
      - In check mode a missing O(executable) then reports C(changed) with an empty plan;
        otherwise a missing O(executable) fails, in check mode as in the real run.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Set up the sandbox mode for two projects
  sandbox_setup_apply:
    mode: sandbox
    workspaces: [/srv/web, /srv/api]
    network: allowlist
    allowed_domains: [pypi.org, "*.pythonhosted.org"]
    executable: /opt/sandbox-setup/venv/bin/sandbox-setup
  register: sandbox_setup_result
"""

RETURN = r"""
changed:
  description: Whether sandbox-setup changed (in check mode, would change) anything.
  type: bool
  returned: always
applied:
  description: False in check mode (a dry run), true otherwise.
  type: bool
  returned: success
plan:
  description: One line per action, C([change]) or C([ok]), with the commands of each change.
  type: list
  elements: str
  returned: success
actions:
  description: sandbox-setup's C(--json) actions (kind, target, description, change, commands).
  type: list
  elements: dict
  returned: success
changed_actions:
  description: What the apply changed (empty in check mode).
  type: list
  elements: str
  returned: success
report:
  description: sandbox-setup's whole C(--json) output.
  type: dict
  returned: success
answers:
  description: The answers file the module passed to sandbox-setup.
  type: str
  returned: always
cmd:
  description: The command that ran.
  type: list
  elements: str
  returned: always
rc:
  description: sandbox-setup's exit status.
  type: int
  returned: when sandbox-setup ran
stderr:
  description: sandbox-setup's diagnostics (notes; on failure the cause and the remedy).
  type: str
  returned: when sandbox-setup ran
"""

# docs/design.md, "Exit codes".
EXIT_MEANING = {
    1: "findings",
    2: "input error, nothing written",
    3: "refused",
    70: "internal error; the traceback is in sandbox-setup's state directory log",
    130: "interrupted",
}
# Order of the keys in the answers file: sandbox-setup's own dump order, new keys after.
SCALAR_KEYS = (
    "mode",
    "workspaces",
    "agent_user",
    "claude",
    "settings_scope",
    "inner_sandbox",
    "network",
    "allowed_domains",
    "loopback_ports",
    "pass_env",
    "copy_login",
    "accept_unsafe_root",
    "reuse_account",
    "include_private",
    "install_claude_shim",
)
LIMIT_KEYS = ("tasks", "memory", "tmpfs")
ANSWERS_SCHEMA = 1


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (every character TOML forbids raw is escaped)."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def toml_value(value: object) -> str:
    """A TOML value for the types answers use: str, int, bool and lists of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def render_answers(params: dict[str, Any]) -> str:
    """The answers file for ``params``; a key left at None is not written."""
    lines = [
        "# sandbox-setup answers, written by the Ansible module sandbox_setup_apply",
        f"schema = {ANSWERS_SCHEMA}",
    ]
    lines += [
        f"{key} = {toml_value(params[key])}" for key in SCALAR_KEYS if params.get(key) is not None
    ]
    limits = {
        key: value
        for key, value in (params.get("limits") or {}).items()
        if key in LIMIT_KEYS and value is not None
    }
    if limits:
        lines += ["", "[limits]"]
        lines += [f"{key} = {toml_value(limits[key])}" for key in LIMIT_KEYS if key in limits]
    return "\n".join(lines) + "\n"


def plan_lines(actions: list[dict[str, Any]]) -> list[str]:
    """The plan as sandbox-setup prints it: one line per action, the commands of a change."""
    lines = []
    for action in actions:
        change = bool(action.get("change"))
        lines.append(f"[{'change' if change else 'ok'}] {action.get('description', '')}")
        if change:
            lines += ["    $ " + " ".join(argv) for argv in action.get("commands") or []]
    return lines


def prepared_diffs(actions: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Ansible's diff return: sandbox-setup's unified diffs, prepared, one per file."""
    return [
        {"prepared": str(action["diff"])}
        for action in actions
        if action.get("change") and action.get("diff")
    ]


def failure_message(rc: int, stderr: str) -> str:
    """What failed, for the task's ``msg``: the exit status and sandbox-setup's own words."""
    meaning = EXIT_MEANING.get(rc, "unexpected exit status")
    lines = [line.removeprefix("sandbox-setup: ") for line in stderr.strip().splitlines()]
    cause = " ".join(lines) or "(no message on stderr)"
    return f"sandbox-setup exited {rc} ({meaning}): {cause}"


class Runner:
    """Runs one sandbox-setup command and returns its parsed ``--json`` output."""

    def __init__(self, module: Any, executable: str) -> None:
        self.module = module
        self.executable = executable

    def run(self, args: list[str], answers: str) -> tuple[list[str], dict[str, Any], str]:
        argv = [self.executable, *args]
        rc, stdout, stderr = self.module.run_command(argv, check_rc=False)
        if rc != 0:
            self.module.fail_json(
                msg=failure_message(rc, stderr), cmd=argv, rc=rc, stdout=stdout,
                stderr=stderr, answers=answers, changed=False,
            )  # fmt: skip
        try:
            data = json.loads(stdout)
        except ValueError as exc:
            self.module.fail_json(
                msg=f"sandbox-setup printed no JSON: {exc}", cmd=argv, rc=rc, stdout=stdout,
                stderr=stderr, answers=answers, changed=False,
            )  # fmt: skip
        if not isinstance(data, dict) or data.get("schema") != 1:
            self.module.fail_json(
                msg="sandbox-setup printed JSON of an unknown schema (this module reads 1)",
                cmd=argv, stdout=stdout, answers=answers, changed=False,
            )  # fmt: skip
        return argv, data, stderr


def resolve_executable(name: str) -> str | None:
    """The absolute path of an executable ``name`` (a path, or a name on PATH)."""
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    return shutil.which(name)


# The options of DOCUMENTATION, as AnsibleModule checks them.
ARGUMENT_SPEC: dict[str, Any] = {
    "mode": {"type": "str", "required": True, "choices": ["sandbox", "user", "unsafe"]},
    "workspaces": {"type": "list", "elements": "str", "default": []},
    "agent_user": {"type": "str"},
    "claude": {"type": "str"},
    "settings_scope": {"type": "str", "choices": ["user", "managed"]},
    "inner_sandbox": {"type": "str", "choices": ["strong", "weak", "off"]},
    "network": {"type": "str", "choices": ["allowlist", "host", "none"]},
    "allowed_domains": {"type": "list", "elements": "str"},
    "loopback_ports": {"type": "list", "elements": "int"},
    # Names of variables, not secrets (Ansible guesses otherwise from "pass").
    "pass_env": {"type": "list", "elements": "str", "no_log": False},
    "copy_login": {"type": "bool"},
    "accept_unsafe_root": {"type": "bool"},
    "reuse_account": {"type": "bool"},
    "include_private": {"type": "bool"},
    "install_claude_shim": {"type": "bool"},
    "limits": {
        "type": "dict",
        "options": {"tasks": {"type": "int"}, "memory": {"type": "str"}, "tmpfs": {"type": "str"}},
    },
    "root": {"type": "path", "default": "/"},
    "executable": {"type": "str", "default": "sandbox-setup"},
    "timeout": {"type": "float"},
    "installing": {"type": "bool", "default": False},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params: dict[str, Any] = module.params
    answers = render_answers(params)
    executable = resolve_executable(params["executable"])
    if executable is None:
        if module.check_mode and params["installing"]:
            # A first check run: the install tasks before this one only said they would
            # install sandbox-setup, so there is nothing to ask for a plan yet.
            module.exit_json(
                changed=True, applied=False, plan=[], actions=[], answers=answers, cmd=[],
                msg=f"sandbox-setup is not installed at {params['executable']} yet; the plan "
                "shows once it is (install first: --tags sandbox_setup_install)",
            )  # fmt: skip
        module.fail_json(
            msg=f"sandbox-setup not found: {params['executable']} (install it first)",
            answers=answers, cmd=[],
        )  # fmt: skip
    assert executable is not None  # fail_json does not return
    common = ["--json", "--root", params["root"]]
    if params["timeout"] is not None:
        common += ["--timeout", str(params["timeout"])]
    runner = Runner(module, executable)
    with tempfile.TemporaryDirectory(prefix="sandbox-setup-ansible-") as tmp:
        path = os.path.join(tmp, "answers.toml")  # the directory is 0700: private
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(answers)
        headless = ["--headless", "--answers", path]
        planned: dict[str, Any] | None = None
        if module.check_mode or module._diff:
            argv, planned, stderr = runner.run([*headless, "--dry-run", *common], answers)
        if not module.check_mode:
            argv, data, stderr = runner.run([*headless, "--yes", *common], answers)
        else:
            assert planned is not None
            data = planned
    actions: list[dict[str, Any]] = list(data.get("actions") or [])
    planned_actions = list((planned or {}).get("actions") or [])
    result: dict[str, Any] = {
        "changed": bool(data.get("changed")),
        "applied": bool(data.get("applied")),
        "plan": plan_lines(planned_actions or actions),
        "actions": [{k: v for k, v in a.items() if k != "diff"} for a in actions],
        "changed_actions": list(data.get("changed_actions") or []),
        "notes": list(data.get("notes") or []),
        # Ansible shows these as [WARNING] lines (an allowance that opens loopback, ...).
        "warnings": list(data.get("warnings") or (planned or {}).get("warnings") or []),
        "report": data,
        "answers": answers,
        "cmd": argv,
        "rc": 0,
        "stderr": stderr,
    }
    if module._diff and result["changed"]:
        result["diff"] = prepared_diffs(planned_actions)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
