"""The Ansible role in deploy/ansible against this machine: a fleet of local "hosts".

Every host is this machine over the local connection, each with its own fake root
(:func:`tests.core_fixtures.make_target_root`, applied to with ``--root``) and its own
install directory, so the real system never changes: no Debian packages are installed
(``sandbox_setup_install_packages: false``), sandbox-setup goes into a venv under the
test's directory from a wheel built from this checkout, and Ansible's own files
(``ANSIBLE_HOME``, its temp dirs, its config) stay there too.

Hosts: ``an-h1`` and ``an-h2`` set up the sandbox mode; ``an-etc`` names /etc as its
workspace (exit 2) and ``an-unsafe`` asks for the unsafe mode without the acceptance
(exit 3). The two refused hosts use an-h1's install (``sandbox_setup_install: false``).

The plays build on each other as an operator's would, so the :func:`fleet` fixture runs
them once, in order (install, check mode, apply with --diff, apply again, audit, planted
drift, audit, re-apply), and each test asserts on one step.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.core_fixtures import MANAGED, REPO, host_passwd_digest, make_target_root, snapshot
from tests.tools import require_root, require_tool

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

DEPLOY = REPO / "deploy" / "ansible"
SITE = DEPLOY / "site.yml"
AUDIT = DEPLOY / "audit.yml"
HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
GOOD = ("an-h1", "an-h2")
REFUSED = ("an-etc", "an-unsafe")
HOSTS = GOOD + REFUSED
APPLY_TASK = "Apply the answers with sandbox-setup"
HOST_PYTHON = "/usr/bin/python3"  # the managed host's Python: the modules need only it


@dataclass
class Play:
    """One ansible-playbook run: exit status, what the operator saw, and every result."""

    argv: list[str]
    rc: int
    output: str
    seconds: float
    records: list[dict[str, Any]]
    stats: dict[str, dict[str, int]] = field(default_factory=dict)

    def results(self, task: str) -> dict[str, dict[str, Any]]:
        """Host -> the record of the task whose name ends with ``task``."""
        return {r["host"]: r for r in self.records if "task" in r and r["task"].endswith(task)}

    def explain(self) -> str:
        return f"$ {' '.join(self.argv)}\n(exit {self.rc})\n{self.output[-6000:]}"


def tree_state(root: Path) -> dict[str, Any]:
    """Every file's sha256, mode and owner, every link and directory, and the ACLs."""
    acls = subprocess.run(
        ["getfacl", "-R", "--numeric", "--absolute-names", str(root)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return {**snapshot(root), "<acls>": hashlib.sha256(acls.encode()).hexdigest()}


def ansible_tool(name: str) -> str:
    """The tool beside this interpreter (the [test] extra), else on PATH, else skip/fail."""
    path = VENV_BIN / name
    return str(path) if path.exists() else require_tool(name)


def clean_environ() -> dict[str, str]:
    """The caller's environment without its Ansible settings (verbosity, config, ...)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}


def build_wheels(out: Path) -> None:
    """The project's wheel (offline, as tests/integration/test_wheel.py builds it) and
    its dependencies' wheels: the directory an operator hands the role."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run(
        [*pip, "wheel", ".", "--no-deps", "--no-build-isolation", "-w", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("sandbox_setup-*.whl")
    deps = subprocess.run(
        [*pip, "download", "--only-binary=:all:", "-d", str(out), str(wheel)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert deps.returncode == 0, f"pip download of the dependency wheels failed:\n{deps.stderr}"


class Fleet:
    """The work directory: roots, installs, inventory, Ansible's config and homes."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.wheels = work / "wheels"
        self.roots = {host: make_target_root(work / host / "root") for host in HOSTS}
        self.inventory = work / "inventory.yml"
        self.config = work / "ansible.cfg"
        self.record = work / "record.jsonl"
        self.plays: dict[str, Play] = {}
        self.states: dict[str, dict[str, dict[str, Any]]] = {}
        self._write_inventory()
        self._write_config()

    def home(self, host: str) -> Path:
        return self.work / host / "opt"

    def _write_inventory(self) -> None:
        hosts: dict[str, dict[str, Any]] = {
            host: {
                "sandbox_setup_root": str(self.roots[host]),
                "sandbox_setup_home": str(self.home(host)),
            }
            for host in HOSTS
        }
        hosts["an-etc"]["sandbox_setup_workspaces"] = ["/etc"]
        hosts["an-unsafe"]["sandbox_setup_mode"] = "unsafe"
        for host in REFUSED:
            hosts[host]["sandbox_setup_install"] = False
            hosts[host]["sandbox_setup_executable"] = str(
                self.home("an-h1") / "venv/bin/sandbox-setup"
            )
        group = {
            "hosts": hosts,
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": HOST_PYTHON,
                # site.yml says become: true; the test already runs as root.
                "ansible_become": False,
                "sandbox_setup_install_packages": False,
                "sandbox_setup_wheel_dir": str(self.wheels),
                "sandbox_setup_link_dir": "{{ sandbox_setup_home }}",
                "sandbox_setup_workspaces": ["/srv/project"],
                "sandbox_setup_claude": "/usr/local/bin/claude",
            },
        }
        # JSON is YAML: the yaml inventory plugin reads it.
        self.inventory.write_text(json.dumps({"sandbox_setup": group}, indent=2))

    def _write_config(self) -> None:
        ansible = self.work / "ansible"
        self.config.write_text(
            "[defaults]\n"
            f"local_tmp = {ansible}/local-tmp\n"
            f"remote_tmp = {ansible}/remote-tmp\n"
            f"callback_plugins = {HERE}/callback_plugins\n"
            "callbacks_enabled = fleet_record\n"
            "stdout_callback = default\n"
            "nocolor = true\n"
            "retry_files_enabled = false\n"
            "forks = 5\n"
        )

    def env(self) -> dict[str, str]:
        home = self.work / "home"
        home.mkdir(exist_ok=True)
        return {
            **clean_environ(),
            "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "ANSIBLE_CONFIG": str(self.config),
            "ANSIBLE_HOME": str(self.work / "ansible" / "home"),
            "ANSIBLE_LOCAL_TEMP": str(self.work / "ansible" / "local-tmp"),
            "ANSIBLE_REMOTE_TEMP": str(self.work / "ansible" / "remote-tmp"),
            "FLEET_RECORD": str(self.record),
            "LANG": "C.UTF-8",
        }

    def play(self, name: str, playbook: Path, *args: str) -> Play:
        self.record.write_text("")
        argv = [ansible_tool("ansible-playbook"), "-i", str(self.inventory), str(playbook), *args]
        started = time.monotonic()
        proc = subprocess.run(
            argv, env=self.env(), capture_output=True, text=True, timeout=600, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        records = [json.loads(line) for line in self.record.read_text().splitlines() if line]
        stats = next((r["stats"] for r in records if "stats" in r), {})
        play = Play(
            argv, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started,
            records, stats,
        )  # fmt: skip
        self.plays[name] = play
        return play

    def state(self, name: str) -> dict[str, dict[str, Any]]:
        self.states[name] = {host: tree_state(root) for host, root in self.roots.items()}
        return self.states[name]


def plant_drift(root: Path) -> None:
    """Turn the sandbox off in the managed settings, as a hand edit on the host would."""
    path = root / MANAGED
    settings = json.loads(path.read_text())
    settings["sandbox"]["enabled"] = False
    path.write_text(json.dumps(settings, indent=2) + "\n")


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl", "bwrap", HOST_PYTHON):
        require_tool(tool)
    ansible_tool("ansible-playbook")
    passwd_before = host_passwd_digest()
    # World-readable, outside /root: the probes run as nobody.
    work = Path(tempfile.mkdtemp(prefix="an-fleet-", dir="/var/tmp"))
    work.chmod(0o755)
    try:
        fleet = Fleet(work)
        build_wheels(fleet.wheels)
        fleet.state("fresh")
        fleet.play("install", SITE, "--tags", "sandbox_setup_install")
        fleet.state("installed")
        fleet.play("check", SITE, "--check")
        fleet.state("checked")
        fleet.play("apply", SITE, "--diff")
        fleet.state("applied")
        fleet.play("again", SITE)
        fleet.state("again")
        limit = ("--limit", ",".join(GOOD))
        fleet.play("audit", AUDIT, *limit, "-e", f"sandbox_setup_audit_report={work}/clean.json")
        plant_drift(fleet.roots["an-h2"])
        fleet.play("drift", AUDIT, *limit, "-e", f"sandbox_setup_audit_report={work}/drift.json")
        fleet.play("fix", SITE, *limit)
        yield fleet
        for name, play in fleet.plays.items():
            print(f"timing: {name} {play.seconds:.1f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert host_passwd_digest() == passwd_before


def test_install_puts_sandbox_setup_into_a_venv_from_the_wheels(fleet: Fleet) -> None:
    play = fleet.plays["install"]
    assert play.rc == 0, play.explain()
    installed = play.results("Install the wheels into the venv, without an index")
    for host in GOOD:
        assert installed[host]["result"]["changed"] is True, play.explain()
        home = fleet.home(host)
        for script in ("sandbox-setup", "sandbox-launch"):
            assert (home / "venv/bin" / script).is_file()
            assert os.readlink(home / script) == str(home / "venv/bin" / script)
    for host in REFUSED:
        assert not fleet.home(host).exists()  # sandbox_setup_install: false
    assert fleet.states["installed"] == fleet.states["fresh"], "installing touched a root"


def test_check_mode_writes_nothing_and_shows_the_plan(fleet: Fleet) -> None:
    play = fleet.plays["check"]
    assert fleet.states["checked"] == fleet.states["installed"], "check mode wrote a file"
    results = play.results(APPLY_TASK)
    for host in GOOD:
        result = results[host]["result"]
        assert results[host]["status"] == "ok", play.explain()
        assert result["changed"] is True and result["report"]["changed"] is True
        assert result["applied"] is False
        assert "--dry-run" in result["cmd"] and "--yes" not in result["cmd"]
        assert any(line.startswith("[change] create user claude-agent") for line in result["plan"])
    # The operator sees the plan without -v: the role prints it in check mode.
    assert play.output.count("[change] create user claude-agent") == len(GOOD), play.explain()
    assert f"$ useradd --prefix {fleet.roots['an-h1']} --create-home" in play.output
    for host in GOOD:
        assert play.stats[host]["failures"] == 0, play.explain()


def test_first_run_applies_sandbox_mode_to_both_and_shows_the_diff(fleet: Fleet) -> None:
    play = fleet.plays["apply"]
    results = play.results(APPLY_TASK)
    for host in GOOD:
        result = results[host]["result"]
        assert results[host]["status"] == "ok", play.explain()
        assert result["changed"] is True and result["report"]["changed"] is True
        assert result["applied"] is True
        assert play.stats[host]["changed"] >= 1 and play.stats[host]["failures"] == 0
        prepared = "".join(d["prepared"] for d in result["diff"])
        assert "+++ /etc/claude-code/managed-settings.json (planned)" in prepared
        root = fleet.roots[host]
        config = (root / "root/.config/sandbox-setup/launcher.toml").read_text()
        assert 'mode = "sandbox"' in config
        assert "claude-agent:" in (root / "etc/passwd").read_text()
        assert fleet.states["applied"][host] != fleet.states["checked"][host]
    # --diff prints sandbox-setup's unified diffs in the task output.
    assert "+++ /root/.config/sandbox-setup/launcher.toml (planned)" in play.output
    assert '+mode = "sandbox"' in play.output


def test_refused_hosts_fail_with_the_message_and_the_others_go_on(fleet: Fleet) -> None:
    play = fleet.plays["apply"]
    assert play.rc == 2, play.explain()  # ansible-playbook: some host failed
    results = play.results(APPLY_TASK)
    etc = results["an-etc"]
    assert etc["status"] == "failed"
    assert etc["result"]["rc"] == 2
    assert "exited 2 (input error, nothing written)" in etc["result"]["msg"]
    assert "workspace /etc is a system directory" in etc["result"]["msg"]
    assert "choose a project directory" in etc["result"]["msg"]  # the remedy
    unsafe = results["an-unsafe"]
    assert unsafe["status"] == "failed" and unsafe["result"]["rc"] == 3
    assert "exited 3 (refused)" in unsafe["result"]["msg"]
    assert "add --accept-unsafe-root" in unsafe["result"]["msg"]
    for host in REFUSED:
        assert play.stats[host]["failures"] == 1
        assert fleet.states["applied"][host] == fleet.states["fresh"][host], f"{host} changed"
    for host in GOOD:
        assert results[host]["status"] == "ok"
    # What the operator reads in the task output.
    assert "workspace /etc is a system directory" in play.output
    assert "unsafe mode runs Claude Code as root with no OS sandbox" in play.output


def test_second_run_reports_no_change_and_changes_no_byte(fleet: Fleet) -> None:
    play = fleet.plays["again"]
    results = play.results(APPLY_TASK)
    for host in GOOD:
        assert play.stats[host]["changed"] == 0, play.explain()
        assert play.stats[host]["failures"] == 0, play.explain()
        result = results[host]["result"]
        assert result["changed"] is False and result["report"]["changed"] is False
        assert result["applied"] is True
        assert fleet.states["again"][host] == fleet.states["applied"][host]
    assert fleet.states["again"] == fleet.states["applied"]


def test_the_audit_summarises_both_hosts(fleet: Fleet) -> None:
    play = fleet.plays["audit"]
    assert play.rc == 0, play.explain()
    assert "an-h1: sandbox, grade OK 1.0, clean" in play.output, play.explain()
    assert "an-h2: sandbox, grade OK 1.0, clean" in play.output
    summary = json.loads((fleet.work / "clean.json").read_text())
    assert sorted(summary["hosts"]) == list(GOOD)
    assert all(entry["status"] == "ok" for entry in summary["hosts"].values())
    assert summary["failing_hosts"] == [] and summary["findings"] == {}


def test_the_audit_fails_on_a_planted_drift(fleet: Fleet) -> None:
    play = fleet.plays["drift"]
    assert play.rc == 2, play.explain()
    assert play.stats["an-h2"]["failures"] == 1, play.explain()
    assert play.stats["an-h1"]["failures"] == 0, play.explain()
    assert "an-h2: sandbox, grade MEDIUM 3.0, FAILING: audit.drift.settings" in play.output
    assert "audit.drift.settings (high): an-h2" in play.output
    gate = play.results("Fail the hosts with a finding at or above the threshold")
    assert gate["an-h2"]["status"] == "failed"
    assert "audit.drift.settings (high)" in gate["an-h2"]["result"]["msg"]
    assert "fix: sandbox-setup --headless --answers" in gate["an-h2"]["result"]["msg"]
    assert gate["an-h1"]["status"] == "skipped"
    summary = json.loads((fleet.work / "drift.json").read_text())
    assert summary["failing_hosts"] == ["an-h2"]
    assert summary["findings"]["audit.drift.settings"]["hosts"] == ["an-h2"]
    assert summary["hosts"]["an-h1"]["status"] == "ok"


def test_the_play_repairs_the_drift_on_that_host_only(fleet: Fleet) -> None:
    play = fleet.plays["fix"]
    assert play.rc == 0, play.explain()
    results = play.results(APPLY_TASK)
    assert results["an-h2"]["result"]["changed"] is True
    assert results["an-h1"]["result"]["changed"] is False
    assert play.stats["an-h1"]["changed"] == 0
    settings = json.loads((fleet.roots["an-h2"] / MANAGED).read_text())
    assert settings["sandbox"]["enabled"] is True


def lint(path: Path, work: Path) -> subprocess.CompletedProcess[str]:
    home = work / "lint-home"
    home.mkdir(exist_ok=True)
    env = {
        **clean_environ(),
        "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "ANSIBLE_HOME": str(home / ".ansible"),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_CONFIG": str(path / "ansible.cfg"),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [ansible_tool("ansible-lint"), "--offline", "--nocolor"],
        cwd=path, env=env, capture_output=True, text=True, timeout=300, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_ansible_lint_is_clean_on_the_role_and_playbooks(tmp_path: Path) -> None:
    proc = lint(DEPLOY, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr
    # The same lint fails a copy with a careless task, so the pass above means something.
    broken = tmp_path / "broken"
    shutil.copytree(DEPLOY, broken)
    with open(broken / "roles/sandbox_setup/tasks/apply.yml", "a") as tasks:
        tasks.write("\n- ansible.builtin.shell: echo hi\n")
    failed = lint(broken, tmp_path)
    assert failed.returncode != 0, failed.stdout + failed.stderr
    assert "name[missing]" in failed.stdout + failed.stderr
