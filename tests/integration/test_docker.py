"""Containers as operators run them (issue 27): real Docker (Debian's docker.io 20.10),
from a private daemon the test starts and an image it imports from a root it builds
(:mod:`tests.integration.docker`), no registry, no system service.

In each container, one script: ``sandbox-setup --check --json``; then
:mod:`tests.integration.podman_turn` (check, the headless apply of what it recommends,
one real Claude Code turn through the installed ``sandbox-launch`` against a fake
Messages API on the container's loopback, whose Bash step reports where it ran); then
the settings and launcher config the apply wrote, and ``--audit --json``.

- Docker's defaults: its seccomp profile refuses user namespaces and /proc is masked,
  so no sandbox and no form of Claude Code's own sandbox can start. The recommendation
  is user mode with Landlock; the plan says Claude's Bash runs unsandboxed as the agent
  (and never claims a sandbox); the agent's Bash runs under the launcher's Landlock.
- ``--security-opt systempaths=unconfined --security-opt seccomp=unconfined`` with
  default capabilities (the bug report's Docker fix): what ``--check`` recommends
  (sandbox mode, the strong inner sandbox) launches, and Claude's Bash runs wrapped.
- Half the fix: ``seccomp=unconfined`` alone (/proc still masked) is user mode with
  Claude's weak inner sandbox, Bash wrapped; with either half alone ``--check`` does
  not recommend sandbox mode and the sandbox's finding names the other flag.

The tests skip, printing the daemon's error, only where dockerd cannot start.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base.netwall import PORTS_ONLY
from tests.installed import ProjectInstall
from tests.integration.containers import Section, parse_sections, sectioned_script
from tests.integration.docker import (
    DOCKER_FIX,
    DockerContainer,
    DockerDaemon,
    DockerUnavailable,
    import_image,
    start_daemon,
)
from tests.integration.test_podman import turn_harness
from tests.tools import NPM_PREFIX, require_root, require_tool

pytestmark = pytest.mark.integration

CLAUDE = NPM_PREFIX / "node_modules/.bin/claude"
WORKSPACE = "/srv/project"
PATH = f"{CLAUDE.parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
SETTINGS = "/etc/claude-code/managed-settings.json"
LAUNCHER_TOML = "/root/.config/sandbox-setup/launcher.toml"
# Run by the Bash step after the evidence: /home is 0755 (any account may list it);
# user mode's Landlock file wall leaves it unreadable to the agent.
SECCOMP_ONLY = ("--security-opt", "seccomp=unconfined")
SYSTEMPATHS_ONLY = ("--security-opt", "systempaths=unconfined")
HOME_PROBE = "ls /home >/dev/null 2>&1 && echo home_listing=allowed || echo home_listing=denied"


@pytest.fixture(scope="module")
def docker_workdir(integration_workdir: Path) -> Iterator[Path]:
    require_root()
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE} (tests/run.sh installs it)")
    path = integration_workdir / "docker"
    path.mkdir(mode=0o755, exist_ok=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def docker_daemon(docker_workdir: Path) -> Iterator[DockerDaemon]:
    """A private dockerd for this module; the tests skip (with its error) only if it
    cannot start here."""
    dockerd = require_tool("dockerd")
    require_tool("unshare")
    try:
        daemon = start_daemon(docker_workdir / "daemon", dockerd)
    except DockerUnavailable as exc:
        print(f"dockerd cannot start here: {exc}")
        pytest.skip(f"dockerd cannot start here: {exc}")
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def docker_image(docker_daemon: DockerDaemon, docker_workdir: Path) -> str:
    return import_image(docker_daemon, docker_workdir)


def scenario(
    daemon: DockerDaemon,
    image: str,
    workdir: Path,
    install: ProjectInstall,
    options: tuple[str, ...],
    probe: str = "",
) -> dict[str, Section]:
    """check; check, apply and a real Claude turn (podman_turn.py); what the apply
    wrote; the audit: one container."""
    harness = turn_harness(workdir)
    wizard = shlex.join(install.wizard())
    turn = shlex.join(
        [str(install.python), str(harness / "podman_turn.py"), str(install.python),
         str(CLAUDE), WORKSPACE, *([probe] if probe else [])]
    )  # fmt: skip
    commands = {
        "check": f"mkdir -p {WORKSPACE}; {wizard} --check --json 2>/dev/null",
        # (its stderr only where it failed: the section is then not JSON, and says why)
        "turn": f"{turn} 2>/tmp/turn.err || cat /tmp/turn.err",
        "settings": f"cat {SETTINGS}",
        "config": f"cat {LAUNCHER_TOML}",
        "audit": f"{wizard} --audit --json 2>/dev/null",
    }
    container = DockerContainer(
        daemon, image, options=options, readonly=(str(install.root), str(harness))
    )
    env = {"PATH": PATH, "HOME": "/root", "PYTHONPATH": str(harness)}
    done = container.run(["sh", "-c", sectioned_script(commands)], env=env)
    sections = parse_sections(done.stdout)
    assert set(sections) == set(commands), (done.returncode, done.stderr)
    return sections


def as_json(section: Section) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(section.output)
    except json.JSONDecodeError:
        pytest.fail(f"not JSON (exit {section.returncode}): {section.output[-3000:]}")
    return data


def checks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in data["checks"]}


def test_docker_defaults_user_mode_with_landlock_and_no_claimed_sandbox(
    docker_daemon: DockerDaemon,
    docker_image: str,
    docker_workdir: Path,
    project_install: ProjectInstall,
) -> None:
    """Docker's defaults: no namespaces for the agent, so user mode with Landlock;
    the plan says Claude's Bash runs unsandboxed (it claims no sandbox), and the Bash
    step runs as the agent under the launcher's Landlock, outside any sandbox."""
    sections = scenario(
        docker_daemon, docker_image, docker_workdir, project_install, (), HOME_PROBE
    )
    data = as_json(sections["check"])
    found = checks(data)
    assert data["host"]["container"] == "docker", data["host"]
    # Docker's defaults are really there: the seccomp profile refuses user namespaces
    # and /proc is masked; the remedies name the Docker flags.
    assert found["userns.create"]["status"] == "fail"
    assert "seccomp-blocks-userns" in found["userns.create"]["detail"]
    assert "--security-opt seccomp=unconfined" in found["userns.create"]["remedy"]
    assert found["proc.masks"]["status"] == "fail"
    assert "--security-opt systempaths=unconfined" in found["proc.masks"]["remedy"]
    for form in ("bwrap.sandbox", "bwrap.direct", "bwrap.direct_weak", "launch.path"):
        assert found[form]["status"] == "fail", found[form]
    assert found["landlock.abi"]["status"] == "pass", found["landlock.abi"]
    # Root without CAP_SYS_ADMIN makes no network namespace: Landlock's ports are the
    # wall, said plainly (docs/design.md invariant 16), here and on the launch line below.
    assert found["net.user_wall"]["status"] == "warn", found["net.user_wall"]
    assert PORTS_ONLY in found["net.user_wall"]["summary"], found["net.user_wall"]
    recommendation = data["recommendation"]
    assert recommendation["mode"] == "user", recommendation
    reason = recommendation["reason"]
    assert "User mode with Landlock" in reason, reason
    assert "no form of Claude Code's own sandbox works here" in reason, reason
    assert "its Bash would run unsandboxed" in reason, reason
    # ... and no claim of one (recommend.py's strong and weak phrases).
    assert "Claude Code's own sandbox works for it" not in reason, reason
    assert "--inner-sandbox weak" not in reason, reason

    turn = as_json(sections["turn"])
    assert turn["mode"] == "user", turn
    assert turn["apply"][0] == 0, turn["apply"]
    settings = as_json(sections["settings"])
    assert settings["sandbox"]["enabled"] is False, settings
    assert 'inner_sandbox = "off"' in sections["config"].output
    launch_rc, launch_out = turn["launch"]
    assert launch_rc == 0, launch_out
    assert "sandbox-launch: user mode" in launch_out
    assert "Landlock ABI" in launch_out and "files" in launch_out, launch_out
    assert PORTS_ONLY in launch_out and "a network namespace of its own" not in launch_out
    evidence = turn.get("evidence")
    assert evidence is not None, turn
    assert evidence["marker_seen"] and evidence["uid"] not in (None, 0), turn["tool_result"]
    # Not in Claude's sandbox (none can start here), and nothing says it is.
    assert not evidence["sandboxed"], turn["tool_result"]
    assert "SANDBOX_RUNTIME=\n" in turn["tool_result"] + "\n", turn["tool_result"]
    # The launcher's Landlock: no_new_privs (Docker's defaults leave it 0) and the
    # file wall keeps the agent out of /home, which its account may list.
    assert "NoNewPrivs:\t1" in turn["tool_result"], turn["tool_result"]
    assert "home_listing=denied" in turn["tool_result"], turn["tool_result"]
    audit = as_json(sections["audit"])
    assert audit["mode"] == "user" and audit["clean"], audit["findings"]
    assert audit["grade"]["label"] != "OK", audit["grade"]


def test_docker_fix_what_check_recommends_launches_and_bash_runs_wrapped(
    docker_daemon: DockerDaemon,
    docker_image: str,
    docker_workdir: Path,
    project_install: ProjectInstall,
) -> None:
    """The bug report's Docker fix with default capabilities: sandbox mode with the
    strong inner sandbox is recommended, applies, launches, and the real Claude's Bash
    runs inside its own sandbox as the agent."""
    sections = scenario(docker_daemon, docker_image, docker_workdir, project_install, DOCKER_FIX)
    data = as_json(sections["check"])
    found = checks(data)
    assert data["host"]["container"] == "docker", data["host"]
    for check in ("proc.masks", "userns.create", "bwrap.sandbox", "bwrap.nested", "launch.path"):
        assert found[check]["status"] == "pass", found[check]
    assert data["recommendation"]["mode"] == "sandbox", data["recommendation"]

    turn = as_json(sections["turn"])
    assert turn["mode"] == "sandbox", turn
    assert turn["apply"][0] == 0, turn["apply"]
    settings = as_json(sections["settings"])
    assert settings["sandbox"]["enabled"] is True, settings
    assert not settings["sandbox"].get("enableWeakerNestedSandbox"), settings
    assert 'inner_sandbox = "strong"' in sections["config"].output
    launch_rc, launch_out = turn["launch"]
    assert launch_rc == 0, launch_out
    assert "sandbox-launch: sandbox mode" in launch_out
    evidence = turn.get("evidence")
    assert evidence is not None, turn
    assert evidence["marker_seen"] and evidence["uid"] not in (None, 0), turn["tool_result"]
    assert evidence["sandboxed"], turn["tool_result"]
    audit = as_json(sections["audit"])
    assert audit["mode"] == "sandbox" and audit["clean"], audit["findings"]
    assert audit["grade"]["label"] == "OK", audit["grade"]


def test_docker_seccomp_only_user_mode_with_the_weak_inner_sandbox(
    docker_daemon: DockerDaemon,
    docker_image: str,
    docker_workdir: Path,
    project_install: ProjectInstall,
) -> None:
    """Only the seccomp half of the fix (/proc still masked), Docker's analogue of
    Podman's default masks: no fresh /proc, so no sandbox mode, but Claude Code's own
    sandbox works in its weak form: user mode with it on, and the real Claude's Bash
    runs inside it."""
    sections = scenario(docker_daemon, docker_image, docker_workdir, project_install, SECCOMP_ONLY)
    data = as_json(sections["check"])
    found = checks(data)
    assert found["userns.create"]["status"] == "pass", found["userns.create"]
    assert found["bwrap.sandbox"]["status"] == "fail", found["bwrap.sandbox"]
    assert found["bwrap.direct_weak"]["status"] == "pass", found["bwrap.direct_weak"]
    assert data["recommendation"]["mode"] == "user", data["recommendation"]
    assert "--inner-sandbox weak" in data["recommendation"]["reason"]
    assert found["net.user_wall"]["status"] == "warn", found["net.user_wall"]

    turn = as_json(sections["turn"])
    assert turn["mode"] == "user" and turn["apply"][0] == 0, turn["apply"]
    settings = as_json(sections["settings"])
    assert settings["sandbox"]["enabled"] is True, settings
    assert settings["sandbox"]["enableWeakerNestedSandbox"] is True, settings
    assert 'inner_sandbox = "weak"' in sections["config"].output
    assert turn["launch"][0] == 0, turn["launch"][1]
    evidence = turn.get("evidence")
    assert evidence is not None, turn
    assert evidence["marker_seen"] and evidence["uid"] not in (None, 0), turn["tool_result"]
    assert evidence["sandboxed"], turn["tool_result"]


@pytest.mark.parametrize(
    ("options", "missing"),
    [(SECCOMP_ONLY, "systempaths=unconfined"), (SYSTEMPATHS_ONLY, "seccomp=unconfined")],
    ids=["seccomp-only", "systempaths-only"],
)
def test_half_the_docker_fix_is_not_sandbox_mode_and_names_the_other_flag(
    docker_daemon: DockerDaemon,
    docker_image: str,
    docker_workdir: Path,
    project_install: ProjectInstall,
    options: tuple[str, ...],
    missing: str,
) -> None:
    """Half the fix: sandbox mode would be refused, so it is not recommended, and the
    sandbox's finding names the flag still missing."""
    wizard = shlex.join(project_install.wizard())
    container = DockerContainer(
        docker_daemon, docker_image, options=options, readonly=(str(project_install.root),)
    )
    done = container.run(
        ["sh", "-c", f"mkdir -p {WORKSPACE}; {wizard} --check --json 2>/dev/null"],
        env={"PATH": PATH, "HOME": "/root"},
    )
    data = as_json(Section(done.returncode, done.stdout))
    found = checks(data)
    for check in ("bwrap.sandbox", "launch.path"):
        assert found[check]["status"] == "fail", found[check]
    assert f"--security-opt {missing}" in found["bwrap.sandbox"]["remedy"], found["bwrap.sandbox"]
    assert data["recommendation"]["mode"] == "user", data["recommendation"]


def test_docker_fix_without_setuid_names_the_capability_every_launch_needs(
    docker_daemon: DockerDaemon,
    docker_image: str,
    docker_workdir: Path,
    project_install: ProjectInstall,
) -> None:
    """The fix with ``--cap-drop SETUID``: root cannot switch to the agent, which every
    launch does (a sandbox-mode one first of all). --check does not recommend sandbox
    mode, names the capability and the flag, and says nothing can launch until it is
    given (a user-mode launch is refused too; unsafe is never recommended)."""
    wizard = shlex.join(project_install.wizard())
    options = (*DOCKER_FIX, "--cap-drop", "SETUID")
    container = DockerContainer(
        docker_daemon, docker_image, options=options, readonly=(str(project_install.root),)
    )
    done = container.run(
        ["sh", "-c", f"mkdir -p {WORKSPACE}; {wizard} --check --json 2>/dev/null"],
        env={"PATH": PATH, "HOME": "/root"},
    )
    data = as_json(Section(done.returncode, done.stdout))
    found = checks(data)
    sandbox = found["bwrap.sandbox"]
    assert sandbox["status"] == "fail", sandbox
    assert sandbox["detail"].endswith("cause: root-cannot-switch-user"), sandbox
    assert "CAP_SETUID" in sandbox["summary"], sandbox
    assert sandbox["remedy"].startswith("docker run --cap-add SETUID"), sandbox
    assert found["launch.path"]["status"] == "fail", found["launch.path"]
    recommendation = data["recommendation"]
    assert recommendation["mode"] != "sandbox", recommendation
    assert recommendation["reason"].startswith("Nothing can launch here yet"), recommendation
    assert "--cap-add SETUID" in recommendation["reason"], recommendation


@pytest.mark.parametrize("capability", ["DAC_OVERRIDE", "KILL"])
def test_docker_fix_without_a_capability_no_launch_needs_what_check_recommends_launches(
    docker_daemon: DockerDaemon,
    docker_image: str,
    docker_workdir: Path,
    project_install: ProjectInstall,
    capability: str,
) -> None:
    """The fix with ``--cap-drop DAC_OVERRIDE`` or ``KILL``: a launch needs neither, and
    net.egress, which failed on each (it connected as root to the proxy's 0600 socket
    that the proxy's uid owns; it could not stop the proxy, another uid, and waited for
    it forever), passes; so the apply of the recommended sandbox mode with its default
    allowlist network, which then refused (exit 3), goes through and launches."""
    options = (*DOCKER_FIX, "--cap-drop", capability)
    sections = scenario(docker_daemon, docker_image, docker_workdir, project_install, options)
    data = as_json(sections["check"])
    found = checks(data)
    assert found["net.egress"]["status"] == "pass", found["net.egress"]
    assert data["recommendation"]["mode"] == "sandbox", data["recommendation"]
    turn = as_json(sections["turn"])
    assert turn["mode"] == "sandbox", turn
    assert turn["apply"][0] == 0, turn["apply"]
    assert turn["launch"][0] == 0, turn["launch"][1]
    evidence = turn.get("evidence")
    assert evidence is not None, turn
    assert evidence["marker_seen"] and evidence["uid"] not in (None, 0), turn["tool_result"]
    assert evidence["sandboxed"], turn["tool_result"]
