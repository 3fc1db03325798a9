"""Where user namespaces are refused, user mode is confined by Landlock (issue 29).

Two containers whose seccomp profile refuses ``clone(CLONE_NEWUSER)`` as Docker's
default profile does (:func:`tests.integration.containers.seccomp_blocking_userns`):

- runc from the shared harness (:mod:`tests.integration.containers`) with Docker's
  defaults (no user namespace, its 14 capabilities, its /proc masks). Its root is the
  host's ``/`` read-only; ``/etc`` is a writable copy of the host's, and ``/root``,
  ``/home``, ``/srv`` and ``/usr/local`` are empty temp directories, all removed
  afterwards: nothing the apply writes reaches the host.
- rootful Podman (:mod:`tests.integration.podman`: a root of its own as an overlay,
  with a copy of /etc) given the profile with ``--security-opt seccomp=FILE``.

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

from sandbox_setup.base.netwall import PORTS_ONLY
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
from tests.integration.podman import PodmanContainer
from tests.tools import require_root, require_tool

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


def _stand_in(base: Path) -> Path:
    """The stand-in Claude, root-owned in a 0755 directory of its own."""
    tools = base / "tools"
    tools.mkdir(mode=0o755)
    claude = tools / "claude"
    bashrc = f"{OTHER_HOME}/.bashrc"
    claude.write_text(STAND_IN % {"other_project": OTHER_PROJECT, "other_home": bashrc})
    claude.chmod(0o755)
    return claude


def _tree(base: Path) -> dict[str, Path]:
    """The places a runc container writes (host temp dirs): /etc a copy of the host's."""
    # var-lib: the host-wide record of the workspaces' trusted state
    # (/var/lib/sandbox-setup) is written by every launch as root; a container's
    # /var/lib is writable (the rootfs here is a read-only bind of the host's).
    places = {name: base / name for name in ("root", "home", "srv", "usr-local", "var-lib")}
    for path in places.values():
        path.mkdir(mode=0o755)
    places["root"].chmod(0o700)
    for sub in ("bin", "sbin", "lib"):
        (places["usr-local"] / sub).mkdir(mode=0o755)
    # (not checked: a file other tests add or remove meanwhile may vanish mid-copy)
    subprocess.run(["cp", "-a", "/etc", str(base / "etc")], check=False)
    return places | {"etc": base / "etc"}


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
        "passwd": "cat /etc/passwd",
        "unconfined": f"cp -p {CONFIG} {UNCONFINED} && printf '\\n[user]\\nlandlock = false\\n' "
        f">>{UNCONFINED} && cd {WORKSPACE} && {launcher} --config {UNCONFINED}",
    }
    return sectioned_script(commands)


def _in_runc(
    base: Path, install: ProjectInstall, tools: dict[str, str], claude: Path
) -> dict[str, Section]:
    """The script in a runc container: Docker's defaults (no user namespace, its
    capabilities and masks) with a seccomp profile that refuses new user namespaces, as
    Docker's default profile does; the places the apply writes are temp copies."""
    tree = _tree(base)
    binds = tuple(
        (str(tree[name]), inside, True)
        for name, inside in (
            ("etc", "/etc"), ("root", "/root"), ("home", "/home"), ("srv", "/srv"),
            ("usr-local", "/usr/local"), ("var-lib", "/var/lib"),
        )
    )  # fmt: skip
    config = ContainerConfig(userns=False, seccomp=seccomp_blocking_userns(), binds=binds)
    container = RuncContainer(
        config, base / "bundles", name="landlock-no-userns", runc=tools["runc"],
        unshare=tools["unshare"],
    )  # fmt: skip
    done = container.run(
        ["/bin/sh", "-c", _script(install, claude)], env=base_env(home="/root"), timeout=300
    )
    sections = parse_sections(done.stdout)
    assert "unconfined" in sections, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    return sections


def _in_podman(base: Path, install: ProjectInstall, claude: Path) -> dict[str, Section]:
    """The script in a rootful Podman container (its default capabilities and masks, a
    root of its own with a copy of /etc, :mod:`tests.integration.podman`) given the
    same profile with ``--security-opt seccomp=FILE``."""
    require_root()
    require_tool("podman")
    profile = base / "seccomp-no-userns.json"
    profile.write_text(json.dumps(seccomp_blocking_userns()))
    profile.chmod(0o644)
    workdir = base / "podman"
    workdir.mkdir(mode=0o755)
    container = PodmanContainer(
        workdir,
        options=("--security-opt", f"seccomp={profile}"),
        readonly=(str(install.root), str(claude.parent)),
    )
    done = container.run(
        ["/bin/sh", "-c", _script(install, claude)], env=base_env(home="/root"), timeout=300
    )
    sections = parse_sections(done.stdout)
    assert "unconfined" in sections, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    return sections


@pytest.fixture(scope="module", params=["runc", "podman"])
def run(
    request: pytest.FixtureRequest,
    integration_workdir: Path,
    project_install: ProjectInstall,
    container_tools: dict[str, str],
) -> Iterator[Run]:
    for tool in ("useradd", "setfacl"):
        require_tool(tool)
    base = integration_workdir / f"landlock-container-{request.param}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(mode=0o755)
    try:
        claude = _stand_in(base)
        if request.param == "runc":
            sections = _in_runc(base, project_install, container_tools, claude)
        else:
            sections = _in_podman(base, project_install, claude)
        yield Run(sections)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_check_finds_no_namespaces_and_recommends_user_mode_with_landlock(run: Run) -> None:
    assert run.sections["plant"].returncode == 0, run.sections["plant"].output
    data = run.check()
    statuses = {c["id"]: c["status"] for c in data["checks"]}
    assert statuses["userns.create"] == "fail", data["checks"]
    assert statuses["landlock.abi"] == "pass", data["checks"]
    # The no-userns seccomp case: root without CAP_SYS_ADMIN, so Landlock's ports are
    # user mode's network wall, and the check says so plainly (docs/design.md invariant 16).
    assert statuses["net.user_wall"] == "warn", data["checks"]
    wall = next(c for c in data["checks"] if c["id"] == "net.user_wall")
    assert PORTS_ONLY in wall["summary"], wall
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
        assert f"\n{name}:" in run.sections["passwd"].output, run.sections["passwd"].output
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
    if "network" in notice.rpartition("Landlock ABI")[2]:
        # Never an address wall that is not there: the launch line says ports only.
        assert PORTS_ONLY in notice and "a network namespace of its own" not in notice
