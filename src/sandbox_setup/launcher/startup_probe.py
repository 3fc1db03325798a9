"""``python -m sandbox_setup.launcher.startup_probe --uid UID --gid GID``: would a
sandbox-mode launch get past its own start-up here?

The live check ``launch.path`` runs this as the launcher runs (root, or the operator
for their own uid). It starts a bwrap sandbox as ``UID:GID`` the way a launch starts
one (``setpriv`` to the agent with no_new_privs, new user/pid/net namespaces, held on
``--block-fd`` with its pid from ``--json-status-fd``), then runs the launcher's own
code on it: the verification (:func:`sandbox_setup.launcher.session.supervise.verify`:
the sandbox's ``/proc/PID/ns/*`` read and compared with the launcher's, capabilities,
no_new_privs, uid) and the allowlist network's set-up
(:func:`sandbox_setup.launcher.egress.netns.open_in_sandbox`: the listeners made in the
sandbox's network namespace and checked to be there). The sandbox's command is
``true``; nothing connects anywhere. It prints one JSON object::

    {"uid": 65534, "sandbox": "ok", "verify": "ok", "network": "ok"}

Each value is ``"ok"``, what the launch would have refused with, or null (not reached).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.egress.netns import HELPER_TIMEOUT, held_sandbox, open_in_sandbox
from sandbox_setup.launcher.egress.probe import probe_ids
from sandbox_setup.launcher.session.supervise import (
    NAMESPACES,
    NETWORK_NAMESPACE,
    VERIFY_TIMEOUT,
    _Supervision,
    verify,
)
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT

# The namespaces a launch's bwrap makes beyond held_sandbox's user, pid and net
# (sandbox_setup.launcher.command.bwrap_argv): the verification compares them all.
LAUNCH_NAMESPACES = ("--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")


def _tool(name: str) -> str | None:
    found = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    return os.path.realpath(found) if found else None


def probe(uid: int, gid: int) -> dict[str, object]:
    """Start, verify and set up the network of a held sandbox as ``uid:gid``."""
    result: dict[str, object] = {"uid": uid, "sandbox": None, "verify": None, "network": None}
    bwrap, setpriv = _tool("bwrap"), _tool("setpriv")
    if bwrap is None or setpriv is None:
        result["sandbox"] = "bwrap and setpriv are needed (apt-get install bubblewrap util-linux)"
        return result
    prefix: tuple[str, ...] = (setpriv, "--no-new-privs", "--")
    if (uid, gid) != (os.geteuid(), os.getegid()):
        prefix = (setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *prefix[1:])
    try:
        # a launch waits for bwrap's report as long as for its verification
        with held_sandbox(bwrap, prefix, VERIFY_TIMEOUT, LAUNCH_NAMESPACES) as pid:
            result["sandbox"] = "ok"
            try:
                state = _Supervision(namespaces=(*NAMESPACES, NETWORK_NAMESPACE))
                verify(pid, uid, state)
                result["verify"] = "ok"
            except RefusedError as exc:
                result["verify"] = str(exc)
            try:
                sockets = open_in_sandbox(
                    pid, SANDBOX_PROXY_PORT, (), HELPER_TIMEOUT, agent=(uid, gid)
                )
                sockets.close()
                result["network"] = "ok"
            except RefusedError as exc:
                result["network"] = str(exc)
    except RefusedError as exc:
        if result["sandbox"] is None:
            result["sandbox"] = str(exc)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ids = probe_ids(argv, "sandbox_setup.launcher.startup_probe")
    if ids is None:
        return 2
    uid, gid = ids
    if os.geteuid() != 0 and (uid, gid) != (os.getuid(), os.getgid()):
        print(json.dumps({"uid": uid, "sandbox": "only root can start a sandbox as another "
                          "account", "verify": None, "network": None}))  # fmt: skip
        return 0
    print(json.dumps(probe(uid, gid), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
