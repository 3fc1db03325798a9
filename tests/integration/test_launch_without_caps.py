"""The launcher's start-up as root without CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_NET_ADMIN
(issue 27: what a container's default capabilities leave root), on this kernel.

The launcher runs in a process whose bounding set lacks the three (``setpriv
--bounding-set``), so root's own reads of the sandbox's ``/proc/PID/ns/*``, its join of
the sandbox's network namespace and ``SIOCGSKNS`` are refused, as in Podman or Docker
with ``unmask=/proc/*``. The launcher does those steps as the agent, which owns the
sandbox's user namespace (:mod:`sandbox_setup.launcher.agent_step`); the comparison
stays the launcher's and still refuses what it must (invariant 1).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

DROP = ("--bounding-set", "-sys_ptrace,-sys_admin,-net_admin")
NOBODY = 65534

# Verification of a held sandbox as the launcher does it, three ways: as is; compared
# with the sandbox's own namespaces (must refuse); expecting another uid (must refuse).
VERIFY_SCRIPT = r"""
import json, os, sys
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.agent_step import as_agent
from sandbox_setup.launcher.egress.netns import held_sandbox
from sandbox_setup.launcher.session.supervise import (
    NAMESPACES, NETWORK_NAMESPACE, _Supervision, read_namespaces, verify)

kinds = (*NAMESPACES, NETWORK_NAMESPACE)
prefix = ("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
          "--no-new-privs", "--")
out = {}
with held_sandbox("/usr/bin/bwrap", prefix, 5.0, ("--unshare-ipc", "--unshare-uts")) as pid:
    try:
        read_namespaces(pid, kinds)
        out["root_reads"] = "yes"
    except OSError as exc:
        out["root_reads"] = str(exc)
    own = as_agent(65534, 65534, lambda: read_namespaces(pid, kinds))

    def run(name, **kw):
        try:
            verify(pid, kw.pop("uid", 65534), _Supervision(namespaces=kinds), **kw)
            out[name] = "ok"
        except RefusedError as exc:
            out[name] = "refused: " + str(exc)

    run("plain")
    run("itself", host_namespaces=lambda _pid, _kinds: own)
    run("other_uid", uid=4242)
    out["helper_ids"] = as_agent(65534, 65534, lambda: [list(os.getresuid()), list(os.getresgid())])
print(json.dumps(out))
"""


def without_caps(*argv: str) -> subprocess.CompletedProcess[str]:
    require_root()
    setpriv = require_tool("setpriv")
    require_tool("bwrap")
    return subprocess.run(
        [setpriv, *DROP, sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_the_launch_path_gets_through_without_the_three_capabilities() -> None:
    done = without_caps(
        "-m", "sandbox_setup.launcher.startup_probe", "--uid", str(NOBODY), "--gid", str(NOBODY)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"uid": NOBODY, "sandbox": "ok", "verify": "ok", "network": "ok"}


def test_verification_as_the_agent_still_refuses_what_it_must() -> None:
    done = without_caps("-c", VERIFY_SCRIPT)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # root itself really could not read them: the agent's path was the one taken
    assert "Permission denied" in out["root_reads"], out
    assert out["plain"] == "ok", out
    assert out["itself"].startswith("refused: sandbox verification failed"), out
    assert "namespace is the launcher's own" in out["itself"]
    assert out["other_uid"].startswith("refused:"), out
    # the helper takes only the agent's effective ids: real and saved stay root's, so
    # no process of the agent may ptrace or signal it
    assert out["helper_ids"] == [[0, NOBODY, 0], [0, NOBODY, 0]], out
