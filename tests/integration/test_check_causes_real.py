"""Causes of sandbox_setup.checks.causes.KNOWN_ERRORS that this kernel reproduces for real.

Each test makes the condition (a bounding set without CAP_SETFCAP, a user
namespace whose ``user.max_user_namespaces`` is 0, a seccomp profile), checks the
raw experiment really fails there with the exact text, then runs
``sandbox-setup --check --json`` in the same place and asserts the cause key.
Nothing on the host changes: the sysctl is written inside a user namespace of
the test's own (the limit is per namespace), the bounding set is the test
process's, the profile is a runc container's. What cannot be reproduced here is
table-tested in tests/unit/test_check_known_errors.py.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.installed import ProjectInstall
from tests.integration.containers import (
    ContainerConfig,
    RuncContainer,
    base_env,
    parse_sections,
    sectioned_script,
)
from tests.tools import NPM_PREFIX, require_tool

pytestmark = pytest.mark.integration

BWRAP = "bwrap --unshare-user --unshare-pid --ro-bind / / --dev /dev --proc /proc"
NOBODY = "setpriv --reuid 65534 --regid 65534 --clear-groups --"


def run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=base_env(extra_path=[str(NPM_PREFIX / "node_modules/.bin")]),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd="/",
    )


def finding(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    found = [c for c in report["checks"] if c["id"] == check_id]
    assert found, f"no {check_id} in {report['checks']}"
    return found[0]


def cause_key(report: dict[str, Any], check_id: str) -> str:
    detail = finding(report, check_id)["detail"]
    keys = [line[len("cause: ") :] for line in detail.splitlines() if line.startswith("cause: ")]
    assert keys, f"{check_id} names no cause: {detail}"
    return keys[-1]


def check_script(install: ProjectInstall, raw: dict[str, str], ids: list[str]) -> str:
    """Raw experiments, then --check --json ids, in one place (sections)."""
    commands = dict(raw)
    argv = install.wizard("--check", "--json", "--as-user", "root", *ids)
    commands["check"] = f'cd / && {shlex.join(argv)} 2>"$T/err"'
    commands["check_stderr"] = 'cat "$T/err"'
    return sectioned_script(commands)


def test_root_without_cap_setfcap(project_install: ProjectInstall) -> None:
    require_tool("setpriv")
    script = check_script(
        project_install, {"raw": f"{BWRAP} true"}, ["bwrap.sandbox", "bwrap.nested_weak"]
    )
    done = run(["setpriv", "--bounding-set", "-setfcap", "--", "/bin/sh", "-c", script])
    sections = parse_sections(done.stdout)
    assert "check" in sections, done
    raw = sections["raw"]
    assert raw.returncode != 0 and "setting up uid map: Operation not permitted" in raw.output
    report = json.loads(sections["check"].output)
    assert finding(report, "bwrap.sandbox")["status"] == "fail"
    assert cause_key(report, "bwrap.sandbox") == "root-without-setfcap"
    assert "--cap-add SETFCAP" in finding(report, "bwrap.sandbox")["remedy"]


def test_max_user_namespaces_zero(project_install: ProjectInstall) -> None:
    require_tool("unshare")
    script = check_script(
        project_install, {"raw": "unshare -Ur true"}, ["userns.create", "bwrap.sandbox"]
    )
    # The limit is per user namespace: zero it in one of our own, never the host's.
    zero = 'echo 0 > /proc/sys/user/max_user_namespaces && exec /bin/sh -c "$0"'
    done = run(["unshare", "-Ur", "/bin/sh", "-c", zero, script])
    sections = parse_sections(done.stdout)
    assert "check" in sections, done
    raw = sections["raw"]
    assert raw.returncode != 0 and "No space left on device" in raw.output
    report = json.loads(sections["check"].output)
    for check_id in ("userns.create", "bwrap.sandbox"):
        assert finding(report, check_id)["status"] == "fail"
        assert cause_key(report, check_id) == "max-user-namespaces-zero"
    assert "user.max_user_namespaces=15000" in finding(report, "userns.create")["remedy"]
    assert Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"


def test_loopback_refused_text(
    project_install: ProjectInstall, integration_workdir: Path, container_tools: dict[str, str]
) -> None:
    """The exact ``loopback: Failed RTM_NEWADDR`` text, for real: a seccomp profile that
    refuses sendto (bwrap's netlink request) stands in for the AppArmor restriction
    that takes CAP_NET_ADMIN away on Ubuntu 24.04 (not reproducible here)."""
    no_sendto = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [{"names": ["sendto"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
    }
    container = RuncContainer(
        ContainerConfig(seccomp=no_sendto).unmasked(),
        integration_workdir / "bundles",
        runc=container_tools["runc"],
        unshare=container_tools["unshare"],
    )
    raw = {"raw": f"{NOBODY} {BWRAP} --unshare-net true"}
    script = check_script(project_install, raw, ["bwrap.sandbox", "bwrap.nested"])
    script = script.replace("--as-user root", "--as-user nobody")
    env = base_env(extra_path=[str(NPM_PREFIX / "node_modules/.bin")])
    done = container.run(["/bin/sh", "-c", script], env=env, timeout=240)
    sections = parse_sections(done.stdout)
    assert "check" in sections, done
    assert "loopback: Failed RTM_NEWADDR: Operation not permitted" in sections["raw"].output
    report = json.loads(sections["check"].output)
    assert finding(report, "bwrap.sandbox")["status"] == "pass"  # no network namespace there
    assert finding(report, "bwrap.nested")["status"] == "fail"
    assert cause_key(report, "bwrap.nested") == "netns-loopback-refused"


def test_an_empty_bounding_set_alone_does_not_break_claudes_helper_here() -> None:
    """Why the Ubuntu 24.04 bubblewrap 0.9.0 case is canned: on this kernel a new user
    namespace gets a full bounding set again, so Claude's seccomp helper works in a
    bwrap whose caller had none. If this ever fails, the case has become reproducible:
    move it to a real test."""
    require_tool("setpriv")
    claude = require_tool("claude")
    helper = f"env ARGV0=apply-seccomp {shlex.quote(claude)} true"
    inner = f"{BWRAP} --cap-drop ALL -- {helper}"
    done = run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--bounding-set", "-all",
         "--", "/bin/sh", "-c", f"grep CapBnd /proc/self/status && {inner}"]
    )  # fmt: skip
    assert "CapBnd:\t0000000000000000" in done.stdout, done
    assert done.returncode == 0, done


def test_root_without_cap_chown_gets_a_verdict_not_a_crash(
    project_install: ProjectInstall, tmp_path: Path
) -> None:
    """``--cap-drop ALL`` (Docker): root cannot chown the probe user's throwaway HOME
    for ``claude --version``. The check says so in its detail; it used to crash
    (``the check crashed: PermissionError``, status error)."""
    require_tool("setpriv")
    claude = NPM_PREFIX / "node_modules/.bin/claude"
    argv = project_install.wizard(
        "--check", "--json", "--as-user", "nobody", "--claude", str(claude), "claude.root_guard"
    )
    done = run(["setpriv", "--bounding-set", "-chown", "--", *argv])
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    found = finding(json.loads(done.stdout), "claude.root_guard")
    assert found["status"] != "error" and "crashed" not in found["summary"], found
    assert "CAP_CHOWN missing" in found["detail"], found
