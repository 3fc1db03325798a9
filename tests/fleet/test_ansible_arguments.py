"""The role's arguments through a real ``ansible-playbook --check`` against this machine
(issue 26): what YAML turns into a boolean, and what check mode must not call "changed".

One host, ``localhost`` over the local connection, applying under a fake root
(:func:`tests.core_fixtures.make_target_root`) with this checkout's ``sandbox-setup``
(``sandbox_setup_install: false``), so nothing on the machine changes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.core_fixtures import make_target_root, snapshot
from tests.fleet.test_ansible import DEPLOY, HOST_PYTHON, VENV_BIN, ansible_tool, clean_environ
from tests.tools import require_root

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PLAYBOOK = """\
- name: The role against this machine
  hosts: localhost
  gather_facts: false
  roles:
    - role: sandbox_setup
"""


def play_check(work: Path, variables: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``ansible-playbook --check`` of the role with ``variables`` (YAML, as an operator
    writes them in group_vars) under a fresh fake root in ``work``."""
    root = make_target_root(work / "root")
    (work / "play.yml").write_text(PLAYBOOK)
    (work / "vars.yml").write_text(
        f"sandbox_setup_root: {root}\n"
        "sandbox_setup_install: false\n"
        "sandbox_setup_workspaces: [/srv/project]\n"
        "sandbox_setup_claude: /usr/local/bin/claude\n" + variables
    )
    home = work / "home"
    home.mkdir()
    env = {
        **clean_environ(),
        "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "ANSIBLE_HOME": str(home / "ansible"),
        "ANSIBLE_LOCAL_TEMP": str(home / "local-tmp"),
        "ANSIBLE_REMOTE_TEMP": str(home / "remote-tmp"),
        "ANSIBLE_ROLES_PATH": str(DEPLOY / "roles"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "LANG": "C.UTF-8",
    }
    before = snapshot(root)
    done = subprocess.run(
        [ansible_tool("ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={HOST_PYTHON}", "-e", f"@{work / 'vars.yml'}",
         "--check", *extra, str(work / "play.yml")],
        env=env, capture_output=True, text=True, timeout=500, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert snapshot(root) == before, "check mode changed the root"
    return done


@pytest.fixture
def work(tmp_path: Path) -> Path:
    require_root()
    ansible_tool("ansible-playbook")
    return tmp_path


def test_unquoted_off_fails_instead_of_applying_strong(work: Path) -> None:
    # YAML 1.1 reads `off` as false; `default(omit, true)` then dropped it and the
    # probes' choice (strong) applied without a word.
    done = play_check(
        work,
        f"sandbox_setup_executable: {VENV_BIN / 'sandbox-setup'}\n"
        "sandbox_setup_inner_sandbox: off\n",
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "sandbox_setup_inner_sandbox is the boolean False" in output, output
    assert 'sandbox_setup_inner_sandbox: "off"' in output, output
    assert "failed=1" in output, output


def test_agent_user_no_fails_instead_of_the_default_agent(work: Path) -> None:
    # `agent_user: no` is the boolean False; `default(omit, true)` dropped it and the
    # default agent (claude-agent) was planned without a word.
    done = play_check(
        work,
        f"sandbox_setup_executable: {VENV_BIN / 'sandbox-setup'}\n"
        "sandbox_setup_mode: sandbox\n"
        "sandbox_setup_agent_user: no\n",
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "sandbox_setup_agent_user is the boolean False" in output, output
    assert "failed=1" in output, output


def test_timeout_0_is_refused_not_dropped(work: Path) -> None:
    # `default(omit, true)` dropped a 0 too: the default timeout applied without a word.
    done = play_check(
        work,
        f"sandbox_setup_executable: {VENV_BIN / 'sandbox-setup'}\n"
        "sandbox_setup_mode: sandbox\n"
        "sandbox_setup_timeout: 0\n",
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "--timeout" in output and "above 0" in output, output
    assert "failed=1" in output, output


def test_quoted_off_reaches_the_plan(work: Path) -> None:
    done = play_check(
        work,
        f"sandbox_setup_executable: {VENV_BIN / 'sandbox-setup'}\n"
        'sandbox_setup_inner_sandbox: "off"\n',
        "--diff",
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert '+inner_sandbox = "off"' in output, output


def test_check_mode_fails_on_a_wrong_executable(work: Path) -> None:
    # The real run fails (not found); check mode used to say "changed".
    done = play_check(work, "sandbox_setup_executable: /nonexistent/bin/sandbox-setup\n")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "failed=1" in output and "/nonexistent/bin/sandbox-setup" in output, output
