#!/usr/bin/python
"""Ansible module ``sandbox_setup_audit_summary``: one summary of a fleet's audits.

Runs on the controller (``delegate_to: localhost``, ``run_once``) over the results
``sandbox_setup_audit`` registered on every host: per host the mode, the grade and
the findings; per finding ID the hosts that have it; and the hosts with a finding at
or above the ``fail_at`` severity, which the role then fails. A host of the play
without a result (its audit failed, or it was unreachable) is listed as missing.

:func:`summarise` is the whole judgement, a pure function over the reports.
"""

from __future__ import annotations

from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: sandbox_setup_audit_summary
short_description: Summarise sandbox-setup audits of many hosts and judge them against a threshold
description:
  - Takes the results of sandbox_setup_audit for every host and returns one summary
    (hosts, grade, findings by ID) and the hosts with a finding at or above O(fail_at).
  - Never fails because of findings and never changes anything; the caller decides
    what to do with RV(failing_hosts).
author:
  - sandbox-setup contributors
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  hosts:
    description: Every host of the play (a host without a result is reported as missing).
    type: list
    elements: str
    required: true
  results:
    description: Host name to the result sandbox_setup_audit registered (or the bare report).
    type: dict
    required: true
  fail_at:
    description: A host fails when it has a finding of this severity or worse.
    type: str
    choices: [info, low, medium, high, critical]
    default: low
  count_accepted:
    description: Count accepted findings (unsafe mode accepted by the operator) against O(fail_at).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Summarise the audits on the controller
  sandbox_setup_audit_summary:
    hosts: "{{ ansible_play_hosts_all }}"
    results: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts
      | map('extract', hostvars, 'sandbox_setup_audit_result'))) }}
    fail_at: medium
  delegate_to: localhost
  run_once: true
  register: sandbox_setup_audit_summary
"""

RETURN = r"""
summary:
  description:
    - Per host (status, mode, grade, worst severity, findings, the failing IDs and the reason
      with each remedy) and per finding ID (severity, summary, hosts).
  type: dict
  returned: always
failing_hosts:
  description: Hosts with a counted finding at or above O(fail_at).
  type: list
  elements: str
  returned: always
missing_hosts:
  description: Hosts of the play without an audit result.
  type: list
  elements: str
  returned: always
lines:
  description: The summary as text, one line per host and per finding ID.
  type: list
  elements: str
  returned: always
"""

SEVERITIES = ("info", "low", "medium", "high", "critical")
# The options of DOCUMENTATION, as AnsibleModule checks them.
ARGUMENT_SPEC: dict[str, Any] = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "results": {"type": "dict", "required": True},
    "fail_at": {"type": "str", "choices": list(SEVERITIES), "default": "low"},
    "count_accepted": {"type": "bool", "default": False},
}


def rank(severity: object) -> int:
    """The order of a severity; an unknown one ranks as critical (fail closed)."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES) - 1


def report_of(result: object) -> dict[str, Any] | None:
    """The audit report inside a registered result, or the report itself."""
    if not isinstance(result, dict):
        return None
    report = result.get("audit", result)
    return report if isinstance(report, dict) and "findings" in report else None


def judge_host(report: dict[str, Any], fail_at: str, count_accepted: bool) -> dict[str, Any]:
    findings = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    counted = [f for f in findings if count_accepted or not f.get("accepted")]
    worst = max((rank(f.get("severity")) for f in counted), default=None)
    failing = [f for f in counted if rank(f.get("severity")) >= rank(fail_at)]
    return {
        "status": "failing" if failing else "ok",
        "mode": report.get("mode"),
        "grade": report.get("grade") or {},
        "clean": bool(report.get("clean")),
        "worst": None if worst is None else SEVERITIES[worst],
        "findings": [
            {"id": f.get("id"), "severity": f.get("severity"), "accepted": bool(f.get("accepted"))}
            for f in findings
        ],
        "failing": sorted({str(f.get("id")) for f in failing}),
        "reason": "; ".join(
            f"{f.get('id')} ({f.get('severity')}): {f.get('summary')}"
            + (f" - fix: {f['remedy']}" if f.get("remedy") else "")
            for f in failing
        ),
    }


def summarise(
    hosts: list[str], results: dict[str, Any], fail_at: str = "low", count_accepted: bool = False
) -> dict[str, Any]:
    """The fleet summary: per host, per finding ID, and who fails the threshold."""
    per_host: dict[str, dict[str, Any]] = {}
    by_id: dict[str, dict[str, Any]] = {}
    for host in hosts:
        report = report_of(results.get(host))
        if report is None:
            per_host[host] = {"status": "missing"}
            continue
        per_host[host] = judge_host(report, fail_at, count_accepted)
        for finding in report.get("findings") or []:
            entry = by_id.setdefault(
                str(finding.get("id")),
                {
                    "severity": finding.get("severity"),
                    "summary": finding.get("summary"),
                    "hosts": [],
                },
            )
            if rank(finding.get("severity")) > rank(entry["severity"]):
                entry["severity"] = finding.get("severity")
            if host not in entry["hosts"]:
                entry["hosts"].append(host)
    return {
        "fail_at": fail_at,
        "hosts": per_host,
        "findings": dict(sorted(by_id.items())),
        "failing_hosts": [h for h, v in per_host.items() if v["status"] == "failing"],
        "missing_hosts": [h for h, v in per_host.items() if v["status"] == "missing"],
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary for people: one line per host, then one per finding ID."""
    lines = [
        f"sandbox-setup audit of {len(summary['hosts'])} host(s), fail at {summary['fail_at']}"
    ]
    for host, entry in summary["hosts"].items():
        if entry["status"] == "missing":
            lines.append(f"  {host}: no audit result (its audit failed or it was unreachable)")
            continue
        grade = entry["grade"]
        head = f"  {host}: {entry['mode']}, grade {grade.get('label')} {grade.get('exposure')}"
        if entry["status"] == "failing":
            lines.append(f"{head}, FAILING: {', '.join(entry['failing'])}")
        elif entry["findings"]:
            lines.append(f"{head}, below the threshold: {len(entry['findings'])} finding(s)")
        else:
            lines.append(f"{head}, clean")
    for finding_id, entry in summary["findings"].items():
        lines.append(f"  {finding_id} ({entry['severity']}): {', '.join(entry['hosts'])}")
    return lines


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params: dict[str, Any] = module.params
    summary = summarise(
        params["hosts"], params["results"], params["fail_at"], params["count_accepted"]
    )
    module.exit_json(
        changed=False,
        summary=summary,
        failing_hosts=summary["failing_hosts"],
        missing_hosts=summary["missing_hosts"],
        lines=summary_lines(summary),
    )


if __name__ == "__main__":
    main()
