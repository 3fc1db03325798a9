#!/usr/bin/python
"""Ansible module ``sandbox_setup_audit``: ``sandbox-setup --audit --json`` on one host.

Exit 0 (clean) and 1 (findings) are both a successful audit: the module returns the
report and never changes anything. Exit 2 (no readable setup) and every other status
fail the host with sandbox-setup's message. Judging the fleet against a threshold is
the job of ``sandbox_setup_audit_summary``, on the controller.

Like ``sandbox_setup_apply``, it depends only on the CLI contract and the ``--json``
format, never on sandbox-setup's Python modules.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: sandbox_setup_audit
short_description: Audit a sandbox-setup installation (sandbox-setup --audit --json)
description:
  - Runs C(sandbox-setup --audit --json) and returns its report, the grade and the findings.
  - Findings (exit 1) are a result, not a failure; sandbox_setup_audit_summary judges them.
  - No setup to audit (exit 2) and errors fail the host with sandbox-setup's message.
  - Never changes anything; runs the same in check mode.
author:
  - sandbox-setup contributors
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  root:
    description: Audit the setup under this root (C(--root)); C(/) is the live system.
    type: path
    default: /
  executable:
    description: The sandbox-setup command (a path, or a name looked up on PATH).
    type: str
    default: sandbox-setup
  timeout:
    description: Per-probe timeout in seconds (C(--timeout)); unset means sandbox-setup's default.
    type: float
"""

EXAMPLES = r"""
- name: Audit the setup
  sandbox_setup_audit:
    executable: /opt/sandbox-setup/venv/bin/sandbox-setup
  register: sandbox_setup_audit_result
"""

RETURN = r"""
audit:
  description: sandbox-setup's whole C(--audit --json) report.
  type: dict
  returned: success
clean:
  description: Whether nothing counts against the setup (sandbox-setup exited 0).
  type: bool
  returned: success
grade:
  description: The posture grade (exposure, label, legend).
  type: dict
  returned: success
findings:
  description: The findings (id, severity, summary, detail, remedy, diff, accepted).
  type: list
  elements: dict
  returned: success
exit_code:
  description:
    - sandbox-setup's exit status, 0 (clean) or 1 (findings).
    - Not C(rc), which Ansible reads as a failure when it is not 0.
  type: int
  returned: success
"""

EXIT_MEANING = {
    2: "no readable setup to audit, or a usage error",
    70: "internal error; the traceback is in sandbox-setup's state directory log",
    130: "interrupted",
}
AUDIT_OK = (0, 1)  # clean, findings
# The options of DOCUMENTATION, as AnsibleModule checks them.
ARGUMENT_SPEC: dict[str, Any] = {
    "root": {"type": "path", "default": "/"},
    "executable": {"type": "str", "default": "sandbox-setup"},
    "timeout": {"type": "float"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params: dict[str, Any] = module.params
    name = params["executable"]
    executable = name if os.path.isabs(name) else shutil.which(name)
    if executable is None or not os.access(executable, os.X_OK):
        module.fail_json(msg=f"sandbox-setup not found: {name} (install it first)")
    argv = [str(executable), "--audit", "--json", "--root", params["root"]]
    if params["timeout"] is not None:
        argv += ["--timeout", str(params["timeout"])]
    rc, stdout, stderr = module.run_command(argv, check_rc=False)
    if rc not in AUDIT_OK:
        meaning = EXIT_MEANING.get(rc, "unexpected exit status")
        lines = [line.removeprefix("sandbox-setup: ") for line in stderr.strip().splitlines()]
        cause = " ".join(lines) or "(no message on stderr)"
        module.fail_json(
            msg=f"sandbox-setup --audit exited {rc} ({meaning}): {cause}",
            cmd=argv, rc=rc, stdout=stdout, stderr=stderr,
        )  # fmt: skip
    try:
        report = json.loads(stdout)
    except ValueError as exc:
        module.fail_json(msg=f"sandbox-setup --audit printed no JSON: {exc}", cmd=argv, rc=rc)
    if not isinstance(report, dict) or report.get("schema") != 1:
        module.fail_json(msg="sandbox-setup --audit printed JSON of an unknown schema", cmd=argv)
    module.exit_json(
        changed=False,
        audit=report,
        clean=bool(report.get("clean")),
        grade=report.get("grade") or {},
        findings=list(report.get("findings") or []),
        cmd=argv,
        exit_code=rc,
        stderr=stderr,
    )


if __name__ == "__main__":
    main()
