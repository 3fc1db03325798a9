"""``sandbox-launch`` with test seams: ``python launch_with_seams.py [--seam-...] ARGS``.

Tests only. The leading ``--seam-...`` options build a
:class:`~sandbox_setup.launcher.seams.LaunchSeams`; the remaining arguments go to the
real launcher exactly as ``sandbox-launch ARGS`` would get them:

``--seam-resolve=FILE``
    the egress proxy resolves names from FILE, ``{"name": ["address", ...]}``, read
    here, before the launch (as the launcher: the file may be 0600). A name it lacks
    does not resolve; every address it gives still passes the proxy's address rules.
``--seam-break-proxy``
    the proxy exits right after its privilege drop: a proxy that cannot start.
``--seam-corrupt-verify``
    verification compares the sandbox with itself instead of with the launcher, so
    it must fail.
``--seam-landlock-abi=N``
    the launcher plans user mode's Landlock as if the kernel offered ABI N (0: no
    Landlock at all, so no helper runs): how a host with a lower ABI (Debian 12's 6.1:
    ABI 3, no TCP rules) is launched on this one.
``--seam-no-netns``
    the launcher finds that root cannot create a network namespace (as in a container
    without CAP_SYS_ADMIN), as :func:`~sandbox_setup.launcher.egress.netns.namespace_possible`
    would say there.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from sandbox_setup.launcher import main
from sandbox_setup.launcher.egress.netns import NamespaceVerdict
from sandbox_setup.launcher.seams import LaunchSeams
from sandbox_setup.launcher.session.supervise import read_namespaces
from sandbox_setup.policy.addresses import parse_address
from sandbox_setup.policy.domains import normalize_host


def load_resolve_map(path: str | Path) -> dict[str, tuple[str, ...]]:
    """``{"name": ["address", ...]}`` from ``path``; ValueError unless it is exactly that."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(name, str)
        and isinstance(addresses, list)
        and all(isinstance(a, str) and parse_address(a) is not None for a in addresses)
        for name, addresses in data.items()
    ):
        raise ValueError(f"{path}: expected {{name: [address, ...]}}")
    return {normalize_host(name): tuple(addresses) for name, addresses in data.items()}


def map_resolver(names: dict[str, tuple[str, ...]]) -> Callable[[str, int], Iterable[str]]:
    """A proxy resolver answering from ``names`` only (the name arrives normalized)."""

    def resolve(name: str, port: int) -> Iterable[str]:
        return names.get(name, ())

    return resolve


def exit_at_once() -> None:
    os._exit(70)


def launcher_module() -> Any:
    """:mod:`sandbox_setup.launcher.main` (the package's ``main`` is the function)."""
    return importlib.import_module("sandbox_setup.launcher.main")


def no_netns(timeout: float = 0) -> NamespaceVerdict:
    return NamespaceVerdict(False, "root cannot create a network namespace here (test seam)")


def sandbox_itself(sandbox_pid: int, kinds: Sequence[str]) -> dict[str, str]:
    return read_namespaces(sandbox_pid, kinds)


def parse_seams(argv: Sequence[str]) -> tuple[LaunchSeams, list[str]]:
    """The seams the leading ``--seam-...`` options ask for, and the other arguments."""
    resolver = after_proxy_drop = host_namespaces = None
    args = list(argv)
    while args and args[0].startswith("--seam-"):
        option, _, value = args.pop(0).partition("=")
        if option == "--seam-resolve" and value:
            resolver = map_resolver(load_resolve_map(value))
        elif option == "--seam-break-proxy":
            after_proxy_drop = exit_at_once
        elif option == "--seam-corrupt-verify":
            host_namespaces = sandbox_itself
        elif option == "--seam-landlock-abi" and value.isdigit():
            abi = int(value)
            launcher_module().abi_version = lambda abi=abi: abi
        elif option == "--seam-no-netns":
            # The launcher imports it where user mode plans (not for every launch).
            netns = importlib.import_module("sandbox_setup.launcher.egress.netns")
            netns.namespace_possible = no_netns
        else:
            raise SystemExit(f"launch_with_seams: unknown seam {option!r}")
    seams = LaunchSeams(
        resolver=resolver, after_proxy_drop=after_proxy_drop, host_namespaces=host_namespaces
    )
    return seams, args


if __name__ == "__main__":
    chosen, rest = parse_seams(sys.argv[1:])
    sys.argv[1:] = rest  # the launcher reads its arguments as the console script does
    sys.exit(main(seams=chosen))
