"""What a caller may replace in a launch: passed in as an argument, never read from the environment.

A launch's environment is the operator's (and whatever set it): nothing in it may
change how the launcher checks the sandbox or where the proxy connects. The tests
that need another resolver or a failing step run a small program of their own
(``tests/seams/launch_with_seams.py``) that builds a :class:`LaunchSeams` and calls
:func:`sandbox_setup.launcher.main` with it. The console script always passes the
default: every field ``None``, the real behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from sandbox_setup.launcher.egress.server import Resolver
    from sandbox_setup.launcher.session.supervise import NamespaceReader


@dataclass(frozen=True)
class LaunchSeams:
    """The replaceable parts of a launch; ``None`` is the real one.

    ``resolver``: the egress proxy's DNS, ``(name, port) -> addresses``; every address
    it gives still passes the address rules. ``after_proxy_drop``: runs in the proxy
    process right after its privilege drop, before it serves (exiting there is a proxy
    that did not start). ``host_namespaces``: ``(sandbox_pid, kinds) -> namespaces``,
    what verification requires the sandbox's namespaces to differ from (the
    launcher's own).
    """

    resolver: Resolver | None = None
    after_proxy_drop: Callable[[], None] | None = None
    host_namespaces: NamespaceReader | None = None


REAL = LaunchSeams()
