"""``python -m sandbox_setup.launcher.egress.probe --uid UID --gid GID``: can the egress
proxy run here?

The live check ``net.egress`` runs this (as root, or as the operator for their own
uid): the launcher's own code starts the proxy as ``UID:GID`` exactly as a launch
does (:func:`~sandbox_setup.launcher.egress.proxy.fork_proxy`, privilege drop, parent-death signal),
probes it (:func:`~sandbox_setup.launcher.egress.proxy.probe_proxy`) and asks it for the cloud
metadata address, which every policy refuses. Nothing is ever connected to: every
destination asked for is refused before any connection. It prints one JSON object::

    {"uid": 65534, "proxy": "ok", "refused": {"0.0.0.0:9": "...", "169.254.169.254:80": "..."}}

``proxy`` is ``"ok"`` or why the proxy could not start or answered wrongly.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.egress.proxy import ProxyStart, _probe_exchange, fork_proxy, probe_proxy
from sandbox_setup.launcher.egress.wire import PROXY_HEADER
from sandbox_setup.policy.network import EgressPolicy

METADATA = ("169.254.169.254", 80)
TIMEOUT = 5.0


def _refusal_of(answer: bytes) -> str:
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 403 ") or f"{PROXY_HEADER}: refused".encode() not in head:
        raise RefusedError(f"the egress proxy did not refuse: {answer[:120]!r}")
    return body.decode("utf-8", "replace").strip()


def probe(uid: int, gid: int) -> dict[str, object]:
    """Start, probe and stop the proxy as ``uid:gid``; what happened, as data."""
    result: dict[str, object] = {"uid": uid, "proxy": None, "refused": {}}
    refused: dict[str, str] = {}
    directory = Path(tempfile.mkdtemp(prefix="sandbox-setup-egress-probe-"))
    try:
        directory.chmod(0o711)
        path = directory / "egress.sock"
        # The socket is this process's, which connects to it below (as a launch's are
        # the account's that connects): a root without CAP_DAC_OVERRIDE (docker
        # --cap-drop DAC_OVERRIDE) cannot connect to a 0600 socket the proxy's uid owns,
        # and no launch ever does that.
        me = (os.geteuid(), os.getegid())
        start = ProxyStart(EgressPolicy.build([]), uid, gid, socket_path=path, socket_owner=me)
        proxy = fork_proxy(start)
        try:
            proxy.wait_ready(TIMEOUT)
            probe_proxy(path, TIMEOUT)
            refused["0.0.0.0:9"] = "refused on HTTP and SOCKS5 (unspecified address)"
            host, port = METADATA
            request = f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n"
            refused[f"{host}:{port}"] = _refusal_of(
                _probe_exchange(path, [request.encode()], TIMEOUT)
            )
            result["proxy"] = "ok"
        finally:
            proxy.stop()
    except RefusedError as exc:
        result["proxy"] = str(exc)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    result["refused"] = refused
    return result


def probe_ids(argv: Sequence[str] | None, module: str) -> tuple[int, int] | None:
    """``--uid UID --gid GID`` of a probe's command line (the check runs both probes,
    this one and :mod:`sandbox_setup.launcher.startup_probe`, this way); None, with
    the usage on stderr, when they are missing or not numbers."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return int(args[args.index("--uid") + 1]), int(args[args.index("--gid") + 1])
    except (ValueError, IndexError):
        print(f"usage: python -m {module} --uid UID --gid GID", file=sys.stderr)
        return None


def main(argv: Sequence[str] | None = None) -> int:
    ids = probe_ids(argv, "sandbox_setup.launcher.egress.probe")
    if ids is None:
        return 2
    uid, gid = ids
    if os.geteuid() != 0 and (uid, gid) != (os.getuid(), os.getgid()):
        print(json.dumps({"uid": uid, "proxy": "only root can start the proxy as another "
                          "account", "refused": {}}))  # fmt: skip
        return 0
    print(json.dumps(probe(uid, gid), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
