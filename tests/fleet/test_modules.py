"""The role's Ansible modules, without a play: the answers they write, the fleet
summary's judgement, and documentation that matches what the modules accept.

The answers renderer is property-tested against :mod:`tomllib` (any string, list or
limit comes back as it went in); ``sandbox-setup`` itself reading those answers is
covered by tests/fleet/test_ansible.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core_fixtures import REPO

pytest.importorskip("ansible", reason="ansible-core is in the [test] extra")

LIBRARY = REPO / "deploy/ansible/roles/sandbox_setup/library"
MODULES = ("sandbox_setup_apply", "sandbox_setup_audit", "sandbox_setup_audit_summary")


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, LIBRARY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


apply = load("sandbox_setup_apply")
summary = load("sandbox_setup_audit_summary")

texts = st.text(max_size=40)
answers = st.fixed_dictionaries(
    {"mode": st.sampled_from(["sandbox", "user", "unsafe"])},
    optional={
        "workspaces": st.lists(texts, max_size=3),
        "agent_user": texts,
        "claude": texts,
        "network": st.sampled_from(["allowlist", "host", "none"]),
        "allowed_domains": st.lists(texts, max_size=3),
        "loopback_ports": st.lists(st.integers(1, 65535), max_size=3),
        "pass_env": st.lists(texts, max_size=3),
        "copy_login": st.booleans(),
        "reuse_account": st.booleans(),
        "limits": st.fixed_dictionaries(
            {},
            optional={"tasks": st.integers(1, 10**6), "memory": texts, "tmpfs": texts},
        ),
    },
)


@given(answers)
def test_the_answers_file_reads_back_as_the_values_it_was_written_from(
    params: dict[str, Any],
) -> None:
    parsed = tomllib.loads(apply.render_answers(params))
    expected = {k: v for k, v in params.items() if k != "limits"}
    limits = params.get("limits") or {}
    if limits:
        expected["limits"] = limits
    assert parsed == {"schema": 1, **expected}


def test_a_key_left_unset_is_not_written() -> None:
    text = apply.render_answers(
        {"mode": "sandbox", "workspaces": ["/srv/a"], "network": None, "limits": {"tasks": None}}
    )
    assert tomllib.loads(text) == {"schema": 1, "mode": "sandbox", "workspaces": ["/srv/a"]}
    assert "network" not in text and "[limits]" not in text


def test_the_plan_and_the_diffs_come_from_the_dry_run_actions() -> None:
    actions = [
        {"description": "create user a", "change": True, "commands": [["useradd", "a"]]},
        {"description": "write f", "change": True, "commands": [], "diff": "--- f\n+++ f\n"},
        {"description": "keep g", "change": False, "commands": [], "diff": ""},
    ]
    assert apply.plan_lines(actions) == [
        "[change] create user a",
        "    $ useradd a",
        "[change] write f",
        "[ok] keep g",
    ]
    assert apply.prepared_diffs(actions) == [{"prepared": "--- f\n+++ f\n"}]


def test_a_failure_message_carries_the_exit_meaning_and_sandbox_setups_words() -> None:
    message = apply.failure_message(3, "sandbox-setup: refused: do X\n")
    assert message == "sandbox-setup exited 3 (refused): refused: do X"
    assert "no message on stderr" in apply.failure_message(70, "")


def audit(*findings: dict[str, Any], mode: str = "sandbox") -> dict[str, Any]:
    return {
        "schema": 1,
        "mode": mode,
        "grade": {"exposure": 1.0, "label": "OK"},
        "clean": not findings,
        "findings": list(findings),
    }


def finding(id: str, severity: str, accepted: bool = False) -> dict[str, Any]:
    return {"id": id, "severity": severity, "summary": f"{id} found", "accepted": accepted,
            "remedy": f"fix {id}"}  # fmt: skip


@pytest.mark.parametrize(
    ("severity", "fail_at", "fails"),
    [
        ("low", "low", True),
        ("medium", "low", True),
        ("low", "medium", False),
        ("critical", "critical", True),
        ("info", "low", False),
        ("info", "info", True),
        ("bogus", "critical", True),  # an unknown severity counts as the worst
    ],
)
def test_a_host_fails_at_or_above_the_threshold(severity: str, fail_at: str, fails: bool) -> None:
    result = summary.summarise(["h"], {"h": {"audit": audit(finding("x.y", severity))}}, fail_at)
    assert result["failing_hosts"] == (["h"] if fails else [])
    assert result["hosts"]["h"]["status"] == ("failing" if fails else "ok")


def test_accepted_risks_count_only_when_asked() -> None:
    results = {"h": audit(finding("audit.unsafe.accepted", "critical", accepted=True))}
    assert summary.summarise(["h"], results, "low")["failing_hosts"] == []
    assert summary.summarise(["h"], results, "low", count_accepted=True)["failing_hosts"] == ["h"]


def test_the_summary_groups_findings_by_id_and_lists_missing_hosts() -> None:
    results = {
        "a": {"audit": audit(finding("audit.drift.settings", "high"))},
        "b": {"audit": audit(finding("audit.drift.settings", "high"), finding("x", "low"))},
        "c": {"audit": audit()},
    }
    result = summary.summarise(["a", "b", "c", "d"], results, "medium")
    assert result["findings"]["audit.drift.settings"]["hosts"] == ["a", "b"]
    assert result["findings"]["x"]["hosts"] == ["b"]
    assert result["failing_hosts"] == ["a", "b"]
    assert result["missing_hosts"] == ["d"]
    assert result["hosts"]["b"]["failing"] == ["audit.drift.settings"]
    assert "fix audit.drift.settings" in result["hosts"]["a"]["reason"]
    lines = summary.summary_lines(result)
    assert "  c: sandbox, grade OK 1.0, clean" in lines
    assert "  d: no audit result (its audit failed or it was unreachable)" in lines
    assert "  audit.drift.settings (high): a, b" in lines


SPEC_KEYS = ("type", "elements", "choices", "default", "required")


def spec_of(options: dict[str, Any]) -> dict[str, Any]:
    """What an option list promises, from DOCUMENTATION or an argument spec alike."""
    return {
        name: {
            **{k: option[k] for k in SPEC_KEYS if option.get(k) not in (None, False)},
            **({"options": spec_of(option["options"])} if option.get("options") else {}),
            **({"options": spec_of(option["suboptions"])} if option.get("suboptions") else {}),
        }
        for name, option in options.items()
    }


@pytest.mark.parametrize("name", MODULES)
def test_the_documentation_matches_what_the_module_accepts(name: str, tmp_path: Path) -> None:
    ansible_doc = Path(sys.executable).parent / "ansible-doc"
    # Ansible's own files go to the test's directory, not to ~/.ansible.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env |= {"ANSIBLE_HOME": str(tmp_path / "ansible"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    proc = subprocess.run(
        [str(ansible_doc), "-t", "module", "-M", str(LIBRARY), "--json", name],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)[name]["doc"]
    assert doc["module"] == name
    assert spec_of(doc["options"]) == spec_of(load(name).ARGUMENT_SPEC)
