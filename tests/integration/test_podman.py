"""Containers as operators run them (issue 27): real rootful Podman, ``--rootfs DIR:O``
from a root the test builds (:mod:`tests.integration.podman`), no registry.

In each container, one script: ``sandbox-setup --check --json``, the headless apply of
what it recommends (the container's /etc and /usr are overlays, so nothing reaches the
host), and ``sandbox-launch -- --version`` through the launcher that apply installed.

- Podman's default masks (the bug report's own situation): a fresh /proc cannot be
  mounted, so the launcher's sandbox cannot start; Claude's own sandbox still works in
  its weak form for an unprivileged agent. The recommendation is user mode with the
  weak inner sandbox, never ``sandbox.enabled: false``.
- ``--security-opt unmask=/proc/*`` with default capabilities (the report's fix): what
  ``--check`` recommends must launch.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.installed import ProjectInstall
from tests.integration.containers import Section, parse_sections, sectioned_script
from tests.integration.podman import (
    CAP_SYS_RESOURCE,
    UNMASK,
    PodmanContainer,
    build_rootfs,
    root_has_cap,
    ulimit_options,
)
from tests.live_accounts import LiveAccount, live_account
from tests.tools import NPM_PREFIX, require_root, require_tool

pytestmark = pytest.mark.integration

CLAUDE = NPM_PREFIX / "node_modules/.bin/claude"
WORKSPACE = "/srv/project"
PATH = f"{CLAUDE.parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
SETTINGS = "/etc/claude-code/managed-settings.json"
LAUNCHER_TOML = "/root/.config/sandbox-setup/launcher.toml"


@pytest.fixture(scope="module")
def podman_workdir(integration_workdir: Path) -> Iterator[Path]:
    require_root()
    require_tool("podman")
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE} (tests/run.sh installs it)")
    path = integration_workdir / "podman"
    path.mkdir(mode=0o755, exist_ok=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def scenario(
    workdir: Path,
    install: ProjectInstall,
    options: tuple[str, ...],
    apply_args: str = "",
    rootless: LiveAccount | None = None,
    more: dict[str, str] | None = None,
) -> dict[str, Section]:
    """check, apply what it recommends (plus ``apply_args``), launch, then ``more``
    (name: shell command, ``{launcher}`` replaced): one container."""
    wizard = shlex.join(install.wizard())
    launcher = shlex.join([str(install.python), "-m", "sandbox_setup.launcher"])
    pick = (
        f"{shlex.quote(str(install.python))} -c "
        "\"import json; print(json.load(open('/tmp/check.json'))['recommendation']['mode'])\""
    )
    commands = {
        "check": f"mkdir -p {WORKSPACE}; {wizard} --check --json >/tmp/check.json "
        "2>/tmp/check.err; cat /tmp/check.json",
        "apply": f"{wizard} --headless --mode $({pick}) --workspace {WORKSPACE} "
        f"--claude {CLAUDE} {apply_args} --yes",
        "settings": f"cat {SETTINGS}",
        "config": f"cat {LAUNCHER_TOML}",
        "launch": f"cd {WORKSPACE} && {launcher} -- --version",
    }
    commands.update({k: v.replace("{launcher}", launcher) for k, v in (more or {}).items()})
    container = PodmanContainer(
        workdir, options=options, readonly=(str(install.root),), rootless=rootless
    )
    done = container.run(
        ["sh", "-c", sectioned_script(commands)], env={"PATH": PATH, "HOME": "/root"}
    )
    sections = parse_sections(done.stdout)
    assert set(sections) == set(commands), done.stderr
    return sections


def check_json(sections: dict[str, Section]) -> dict[str, Any]:
    return json.loads(sections["check"].output)


def statuses(data: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in data["checks"]}


def test_rootful_podman_starts_here(podman_workdir: Path) -> None:
    """What a rootful container needs on this host, found out and said."""
    rootfs = build_rootfs(podman_workdir)
    ulimits = ulimit_options(require_tool("podman"), str(rootfs))
    print(f"podman on this host: {ulimits.reason}")
    if not root_has_cap(CAP_SYS_RESOURCE):
        assert ulimits.options, ulimits.reason
    done = PodmanContainer(podman_workdir).run(["/usr/bin/true"])
    assert done.returncode == 0, done.stderr


def test_containers_start_with_the_runtime_the_tests_name(
    podman_workdir: Path, tmp_path: Path
) -> None:
    """A host whose Podman prefers crun (Debian installs crun with ``podman`` alone;
    crun fails here: "cgroups in hybrid mode not supported") still runs every test
    container, with runc, which the tests name (``podman --runtime``). The crun is the
    host's where it is installed (tests/run.sh installs it), else one that is missing."""
    crun = shutil.which("crun") or str(tmp_path / "no-such-crun")
    conf = tmp_path / "containers.conf"
    conf.write_text(f'[engine]\nruntime = "crun"\n[engine.runtimes]\ncrun = ["{crun}"]\n')
    container = PodmanContainer(podman_workdir, containers_conf=str(conf))
    assert container.argv(["/usr/bin/true"], {})[1:3] == ["--runtime", require_tool("runc")]
    print(f"Podman's default runtime here: crun at {crun}")
    done = container.run(["/usr/bin/true"])
    assert done.returncode == 0, done.stderr


def test_default_masks_user_mode_with_the_weak_inner_sandbox(
    podman_workdir: Path, project_install: ProjectInstall
) -> None:
    """The report's situation: user mode, Claude's own sandbox on in its weak form."""
    sections = scenario(podman_workdir, project_install, ())
    data = check_json(sections)
    found = statuses(data)
    assert found["bwrap.sandbox"] == "fail"  # the masks are really there
    assert data["recommendation"]["mode"] == "user"
    # Podman's default capabilities hold no CAP_SYS_ADMIN: no network namespace for
    # user mode, Landlock's ports are its wall (docs/design.md invariant 16).
    assert found["net.user_wall"] == "warn", data["checks"]
    assert sections["apply"].returncode == 0, sections["apply"].output
    settings = json.loads(sections["settings"].output)
    assert settings["sandbox"]["enabled"] is True, settings
    assert settings["sandbox"]["enableWeakerNestedSandbox"] is True, settings
    assert 'inner_sandbox = "weak"' in sections["config"].output
    assert sections["launch"].returncode == 0, sections["launch"].output
    assert "Claude Code" in sections["launch"].output


def test_default_masks_accept_the_weak_inner_sandbox_by_choice(
    podman_workdir: Path, project_install: ProjectInstall
) -> None:
    sections = scenario(podman_workdir, project_install, (), "--inner-sandbox weak")
    assert sections["apply"].returncode == 0, sections["apply"].output
    assert 'inner_sandbox = "weak"' in sections["config"].output


def test_unmasked_default_caps_what_check_recommends_launches(
    podman_workdir: Path, project_install: ProjectInstall
) -> None:
    """The report's fix, default capabilities: the recommendation must launch, and it
    is sandbox mode (the launcher verifies its sandbox and sets up its network as the
    agent where root lacks CAP_SYS_PTRACE, CAP_SYS_ADMIN and CAP_NET_ADMIN)."""
    sections = scenario(podman_workdir, project_install, UNMASK)
    data = check_json(sections)
    found = statuses(data)
    assert found["bwrap.sandbox"] == "pass"  # the unmask really took
    assert found["launch.path"] == "pass", data["checks"]
    assert data["recommendation"]["mode"] == "sandbox", data["recommendation"]
    assert sections["apply"].returncode == 0, sections["apply"].output
    assert 'inner_sandbox = "strong"' in sections["config"].output
    launch = sections["launch"]
    assert launch.returncode == 0, (data["recommendation"], launch.output)
    assert "sandbox-launch: sandbox mode" in launch.output
    assert "Claude Code" in launch.output


SETUID_FLAG = "podman run --cap-add SETUID"


def test_a_missing_setuid_is_named_and_no_mode_a_launch_would_refuse_is_applied(
    podman_workdir: Path, project_install: ProjectInstall
) -> None:
    """``--cap-drop SETUID``: root cannot become another account, so every launch of
    sandbox and user mode is refused (both run the agent, and the egress proxy, as
    accounts of their own). --check fails the launcher's start-up naming the flag, its
    recommendation is not sandbox mode and says first that nothing launches until the
    flag is given; the apply refuses both modes (exit 3) instead of writing a setup
    whose every launch exits 3."""
    sandbox_apply = (
        f"{shlex.join(project_install.wizard())} --headless --mode sandbox --workspace "
        f"{WORKSPACE} --claude {CLAUDE} --yes"
    )
    sections = scenario(
        podman_workdir,
        project_install,
        (*UNMASK, "--cap-drop", "SETUID"),
        more={"apply-sandbox": sandbox_apply},
    )
    data = check_json(sections)
    found = {c["id"]: c for c in data["checks"]}
    assert found["launch.path"]["status"] == "fail", found["launch.path"]
    assert "CAP_SETUID" in found["launch.path"]["summary"]
    assert SETUID_FLAG in found["launch.path"]["remedy"], found["launch.path"]
    assert SETUID_FLAG in found["bwrap.sandbox"]["remedy"], found["bwrap.sandbox"]
    recommendation = data["recommendation"]
    assert recommendation["mode"] != "sandbox"
    assert recommendation["reason"].startswith("Nothing can launch here yet"), recommendation
    assert SETUID_FLAG in recommendation["reason"]
    for name in ("apply", "apply-sandbox"):  # the recommended (user) mode, and sandbox
        assert sections[name].returncode == 3, (name, sections[name].output)
        assert SETUID_FLAG in sections[name].output, (name, sections[name].output)


def test_without_setuid_a_launch_is_refused_indeed(
    podman_workdir: Path, project_install: ProjectInstall
) -> None:
    """What the check above predicts: the sandbox-mode setup applied with default
    capabilities, then launched by a root without CAP_SETUID (dropped from its
    bounding set, as --cap-drop does), is refused (exit 3)."""
    no_setuid = f"cd {WORKSPACE} && setpriv --bounding-set=-setuid -- {{launcher}} -- --version"
    sections = scenario(podman_workdir, project_install, UNMASK, more={"no-setuid": no_setuid})
    assert sections["launch"].returncode == 0, sections["launch"].output
    refused = sections["no-setuid"]
    assert refused.returncode == 3, refused.output
    assert "setresuid failed: Operation not permitted" in refused.output
    assert "(Claude Code)" not in refused.output  # its --version never ran


@pytest.mark.parametrize("capability", ["DAC_OVERRIDE", "FOWNER", "KILL"])
def test_without_a_capability_a_launch_does_not_need_sandbox_mode_is_recommended(
    podman_workdir: Path, project_install: ProjectInstall, capability: str
) -> None:
    """``--cap-drop DAC_OVERRIDE``, ``FOWNER`` or ``KILL``: a sandbox-mode launch with
    the allowlist network works (its proxy's sockets are the launcher's; the proxy,
    another account's process, is stopped by a child with its uid where root may not
    signal it), so net.egress, which starts and stops the same proxy, must pass too and
    the apply must not refuse it."""
    sections = scenario(podman_workdir, project_install, (*UNMASK, "--cap-drop", capability))
    data = check_json(sections)
    found = statuses(data)
    assert found["net.egress"] == "pass", data["checks"]
    assert data["recommendation"]["mode"] == "sandbox", data["recommendation"]
    assert sections["apply"].returncode == 0, sections["apply"].output
    launch = sections["launch"]
    assert launch.returncode == 0, launch.output
    assert "sandbox-launch: sandbox mode" in launch.output
    assert "network allowlist" in launch.output


ROOTLESS = "ac-f-podman"


@pytest.fixture(scope="module")
def rootless(podman_workdir: Path) -> Iterator[LiveAccount]:
    """A live account for rootless Podman: useradd gives it subordinate ids (from
    login.defs' SUB_UID_* range, into /etc/subuid and /etc/subgid), removed afterwards."""
    require_tool("newuidmap")
    home = podman_workdir / "rootless-home"
    with live_account(ROOTLESS, home=home) as account:
        subuid = Path("/etc/subuid")
        ranges = subuid.read_text().splitlines() if subuid.exists() else []
        if not any(line.startswith(f"{ROOTLESS}:") for line in ranges):
            pytest.fail(f"useradd gave {ROOTLESS} no subordinate uids (/etc/subuid)")
        yield account


def rootless_check(
    workdir: Path, install: ProjectInstall, options: tuple[str, ...], account: LiveAccount
) -> dict[str, Any]:
    """``--check --json`` in a rootless container (whose /usr, project and Claude are
    copies the account owns: :mod:`tests.integration.podman`)."""
    wizard = shlex.join(install.wizard())
    container = PodmanContainer(
        workdir, options=options, readonly=(str(install.root),), rootless=account
    )
    done = container.run(
        ["sh", "-c", f"{wizard} --check --json 2>/dev/null"], env={"PATH": PATH, "HOME": "/root"}
    )
    assert done.stdout, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_rootless_default_masks_recommend_user_mode_with_the_weak_inner_sandbox(
    podman_workdir: Path, project_install: ProjectInstall, rootless: LiveAccount
) -> None:
    data = rootless_check(podman_workdir, project_install, (), rootless)
    found = statuses(data)
    assert data["host"]["container"] == "podman"
    assert found["bwrap.sandbox"] == "fail"
    assert found["bwrap.direct"] == "fail"
    assert found["bwrap.direct_weak"] == "pass", data["checks"]
    assert data["recommendation"]["mode"] == "user"
    assert "--inner-sandbox weak" in data["recommendation"]["reason"]
    # Rootless: the container's root holds the default capabilities of its own user
    # namespace, CAP_SYS_ADMIN not among them: Landlock's ports are user mode's wall.
    assert found["net.user_wall"] == "warn", data["checks"]


def test_rootless_unmasked_recommends_a_sandbox_mode_that_launches(
    podman_workdir: Path, project_install: ProjectInstall, rootless: LiveAccount
) -> None:
    data = rootless_check(podman_workdir, project_install, UNMASK, rootless)
    found = statuses(data)
    assert found["bwrap.sandbox"] == "pass"
    assert found["launch.path"] == "pass", data["checks"]
    assert data["recommendation"]["mode"] == "sandbox", data["recommendation"]


def turn_harness(workdir: Path) -> Path:
    """The driver and the stdlib-only test modules it imports, readable in a container."""
    base = workdir / "harness"
    if not base.is_dir():
        tests = Path(__file__).resolve().parents[1]
        ignore = shutil.ignore_patterns("__pycache__")
        (base / "tests").mkdir(parents=True)
        shutil.copy2(tests / "__init__.py", base / "tests" / "__init__.py")
        shutil.copy2(tests / "bash_evidence.py", base / "tests" / "bash_evidence.py")
        shutil.copytree(tests / "fake_api", base / "tests" / "fake_api", ignore=ignore)
        shutil.copy2(tests / "integration" / "podman_turn.py", base / "podman_turn.py")
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    return base


def claude_turn(
    workdir: Path,
    install: ProjectInstall,
    options: tuple[str, ...],
    rootless: LiveAccount | None = None,
) -> dict[str, Any]:
    """check, apply, and one real Claude turn through sandbox-launch, in one container."""
    harness = turn_harness(workdir)
    readonly = (str(install.root), str(harness))
    container = PodmanContainer(workdir, options=options, readonly=readonly, rootless=rootless)
    env = {"PATH": PATH, "HOME": "/root", "PYTHONPATH": str(harness)}
    argv = [str(install.python), str(harness / "podman_turn.py"), str(install.python)]
    done = container.run([*argv, str(CLAUDE), WORKSPACE], env=env)
    assert done.returncode == 0 and done.stdout, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.mark.parametrize(
    ("options", "mode"), [((), "user"), (UNMASK, "sandbox")], ids=["default-masks", "unmask"]
)
def test_the_real_claudes_bash_runs_wrapped_in_what_check_recommends(
    podman_workdir: Path, project_install: ProjectInstall, options: tuple[str, ...], mode: str
) -> None:
    """The real Claude Code 2.1.332 through the launcher the apply installed: its Bash
    command runs inside Claude's own sandbox (seccomp filter, namespaces of its own,
    SANDBOX_RUNTIME=1) as the agent, in the mode --check recommended."""
    data = claude_turn(podman_workdir, project_install, options)
    assert data["mode"] == mode, data
    assert data["apply"][0] == 0, data["apply"]
    assert data["launch"][0] == 0, data["launch"]
    evidence = data.get("evidence")
    assert evidence is not None, data
    assert evidence["marker_seen"] and evidence["uid"] != 0, data
    assert evidence["sandboxed"], data["tool_result"]


@pytest.mark.parametrize(
    ("options", "mode"), [((), "user"), (UNMASK, "sandbox")], ids=["default-masks", "unmask"]
)
def test_rootless_the_real_claudes_bash_runs_wrapped_in_what_check_recommends(
    podman_workdir: Path,
    project_install: ProjectInstall,
    rootless: LiveAccount,
    options: tuple[str, ...],
    mode: str,
) -> None:
    """Rootless Podman (the container's root is the account, its ids subordinate
    ones): the apply of what --check recommends, and the real Claude Code through the
    launcher it installed, whose Bash runs inside Claude's own sandbox as the agent."""
    data = claude_turn(podman_workdir, project_install, options, rootless)
    assert data["mode"] == mode, data
    assert data["apply"][0] == 0, data["apply"]
    assert data["launch"][0] == 0, data["launch"]
    evidence = data.get("evidence")
    assert evidence is not None, data
    assert evidence["marker_seen"] and evidence["uid"] != 0, data
    assert evidence["sandboxed"], data["tool_result"]
