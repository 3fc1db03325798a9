"""Where user namespaces are refused, user mode is confined by Landlock (issue 29).

One runc container from the shared harness (:mod:`tests.integration.containers`) with
Docker's defaults (no user namespace, its 14 capabilities, its /proc masks) and a
seccomp profile that refuses ``clone(CLONE_NEWUSER)`` as Docker's default profile does.
Its root is the host's ``/`` read-only; ``/etc`` is a writable copy of the host's, and
``/root``, ``/home``, ``/srv`` and ``/usr/local`` are empty temp directories, all
removed afterwards: nothing the apply writes reaches the host.

In that container, one script: ``sandbox-setup --check --json``, the headless apply of
the mode it recommends, and two sessions through ``sandbox-launch`` (the launcher the
apply configured) whose stand-in Claude (it answers ``--version`` like Claude Code)
tries to read another project in ``/srv``, another account's ``.bashrc``, and to write
in its workspace and its home. The twin session, with ``[user] landlock = false`` added
to a copy of the applied config, reads both: the refusals are Landlock's.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.installed import ProjectInstall
from tests.integration.containers import (
    ContainerConfig,
    RuncContainer,
    Section,
    base_env,
    parse_sections,
    seccomp_blocking_userns,
    sectioned_script,
)
from tests.tools import require_tool

pytestmark = pytest.mark.integration

WORKSPACE = "/srv/project"
OTHER_PROJECT = "/srv/other-project/README"
OTHER_ACCOUNT = "ac-k-other"
OTHER_HOME = f"/home/{OTHER_ACCOUNT}"
AGENT = "ac-k-agent"
CONFIG = "/root/.config/sandbox-setup/launcher.toml"
UNCONFINED = "/root/.config/sandbox-setup/unconfined.toml"

# The stand-in Claude: --version like Claude Code; otherwise the attempts, one JSON line.
STAND_IN = r"""#!/usr/bin/python3
import errno, json, os, sys
if sys.argv[1:] == ["--version"]:
    print("2.1.332 (Claude Code)")
    sys.exit(0)
def attempt(action):
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"
def read(path):
    with open(path) as stream:
        stream.read()
def write(directory):
    path = os.path.join(directory, ".landlock-probe")
    with open(path, "w") as stream:
        stream.write("x")
    os.unlink(path)
print("@@attempts " + json.dumps({
    "uid": os.getuid(),
    "other_project": attempt(lambda: read(%(other_project)r)),
    "other_home": attempt(lambda: read(%(other_home)r)),
    "workspace": attempt(lambda: write(os.getcwd())),
    "home": attempt(lambda: write(os.path.expanduser("~"))),
    "cwd": os.getcwd(),
    "home_dir": os.path.expanduser("~"),
}))
"""


@dataclass(frozen=True)
class Run:
    """The container's sections and the two sessions' attempts."""

    sections: dict[str, Section]
    passwd: str  # the container's /etc/passwd (the copy), after the apply

    def attempts(self, name: str) -> dict[str, Any]:
        section = self.sections[name]
        lines = [line for line in section.output.splitlines() if line.startswith("@@attempts ")]
        assert lines, (
            f"{name}: the stand-in did not run (rc={section.returncode}):\n{section.output}"
        )
        found: dict[str, Any] = json.loads(lines[-1].removeprefix("@@attempts "))
        return found

    def check(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.sections["check"].output)
        return data


def _tree(base: Path) -> dict[str, Path]:
    """The container's writable places (host temp dirs) and the stand-in Claude."""
    base.mkdir(mode=0o755)
    places = {name: base / name for name in ("root", "home", "srv", "usr-local")}
    for path in places.values():
        path.mkdir(mode=0o755)
    places["root"].chmod(0o700)
    for sub in ("bin", "sbin", "lib"):
        (places["usr-local"] / sub).mkdir(mode=0o755)
    # (not checked: a file other tests add or remove meanwhile may vanish mid-copy)
    subprocess.run(["cp", "-a", "/etc", str(base / "etc")], check=False)
    tools = base / "tools"
    tools.mkdir(mode=0o755)
    claude = tools / "claude"
    bashrc = f"{OTHER_HOME}/.bashrc"
    claude.write_text(STAND_IN % {"other_project": OTHER_PROJECT, "other_home": bashrc})
    claude.chmod(0o755)
    return places | {"etc": base / "etc", "claude": claude}


def _script(install: ProjectInstall, claude: Path) -> str:
    wizard = shlex.join(install.wizard())
    launcher = shlex.join([str(install.python), "-m", "sandbox_setup.launcher"])
    pick = (
        f"{shlex.quote(str(install.python))} -c "
        "\"import json; print(json.load(open('/tmp/check.json'))['recommendation']['mode'])\""
    )
    commands = {
        # What the test plants: another project and another account's 0755 home.
        "plant": f"mkdir -p {WORKSPACE} /srv/other-project && echo theirs >{OTHER_PROJECT} && "
        f"chmod 0644 {OTHER_PROJECT} && useradd -m {OTHER_ACCOUNT} && chmod 0755 {OTHER_HOME} && "
        f"echo theirs >{OTHER_HOME}/.bashrc && chmod 0644 {OTHER_HOME}/.bashrc",
        "check": f"{wizard} --check --json >/tmp/check.json 2>/tmp/check.err; "
        "rc=$?; cat /tmp/check.json; exit $rc",
        "check_err": "cat /tmp/check.err",
        "apply": f"{wizard} --headless --mode $({pick}) --workspace {WORKSPACE} "
        f"--agent-user {AGENT} --claude {claude} --yes",
        "config": f"cat {CONFIG}",
        "confined": f"cd {WORKSPACE} && {launcher}",
        "unconfined": f"cp -p {CONFIG} {UNCONFINED} && printf '\\n[user]\\nlandlock = false\\n' "
        f">>{UNCONFINED} && cd {WORKSPACE} && {launcher} --config {UNCONFINED}",
    }
    return sectioned_script(commands)


@pytest.fixture(scope="module")
def run(
    integration_workdir: Path, project_install: ProjectInstall, container_tools: dict[str, str]
) -> Iterator[Run]:
    for tool in ("useradd", "setfacl"):
        require_tool(tool)
    base = integration_workdir / "landlock-container-k"
    shutil.rmtree(base, ignore_errors=True)
    tree = _tree(base)
    binds = tuple(
        (str(tree[name]), inside, True)
        for name, inside in (
            ("etc", "/etc"), ("root", "/root"), ("home", "/home"), ("srv", "/srv"),
            ("usr-local", "/usr/local"),
        )
    )  # fmt: skip
    # Docker's defaults (no user namespace, its capabilities and masks) with a seccomp
    # profile that refuses new user namespaces, as Docker's default profile does.
    config = ContainerConfig(userns=False, seccomp=seccomp_blocking_userns(), binds=binds)
    container = RuncContainer(
        config,
        integration_workdir / "bundles-k",
        name="landlock-no-userns",
        runc=container_tools["runc"],
        unshare=container_tools["unshare"],
    )
    script = _script(project_install, tree["claude"])
    done = container.run(["/bin/sh", "-c", script], env=base_env(home="/root"), timeout=300)
    sections = parse_sections(done.stdout)
    assert "unconfined" in sections, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    try:
        yield Run(sections, (tree["etc"] / "passwd").read_text())
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_check_finds_no_namespaces_and_recommends_user_mode_with_landlock(run: Run) -> None:
    assert run.sections["plant"].returncode == 0, run.sections["plant"].output
    data = run.check()
    statuses = {c["id"]: c["status"] for c in data["checks"]}
    assert statuses["userns.create"] == "fail", data["checks"]
    assert statuses["landlock.abi"] == "pass", data["checks"]
    assert data["recommendation"]["mode"] == "user", data["recommendation"]
    assert "User mode with Landlock" in data["recommendation"]["reason"]


def test_the_apply_writes_user_mode_without_the_inner_sandbox(run: Run) -> None:
    apply = run.sections["apply"]
    assert apply.returncode == 0, apply.output
    config = run.sections["config"].output
    assert 'mode = "user"' in config, config
    assert 'inner_sandbox = "off"' in config, config
    # The accounts went into the container's copy of /etc, not the host's.
    host = Path("/etc/passwd").read_text()
    for name in (AGENT, OTHER_ACCOUNT):
        assert f"\n{name}:" in run.passwd, run.passwd
        assert f"\n{name}:" not in host


def test_the_twin_without_landlock_reads_both(run: Run) -> None:
    report = run.attempts("unconfined")
    assert report["uid"] != 0, report
    assert report["other_project"] == "ok", report
    assert report["other_home"] == "ok", report
    # (the launcher's notice names no Landlock walls: the twin really ran without)
    assert "Landlock ABI" not in run.sections["unconfined"].output


def test_a_user_mode_session_cannot_read_other_projects_or_homes(run: Run) -> None:
    report = run.attempts("confined")
    assert report["uid"] != 0, report
    assert report["cwd"] == WORKSPACE, report
    assert report["other_project"] == "EACCES", report
    assert report["other_home"] == "EACCES", report
    assert report["workspace"] == "ok", report
    assert report["home"] == "ok", report
    assert report["home_dir"] == f"/home/{AGENT}", report
    # The launcher says which walls it put up: files among them (no inner sandbox here).
    notice = run.sections["confined"].output
    assert re.search(r"Landlock ABI \d+: files", notice), notice
