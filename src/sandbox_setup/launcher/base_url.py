"""The base URL of a launch: where it comes from, and whether it answers
(docs/design.md: launcher.toml's ``[sandbox] base_url_port``).

Which base URLs count, and which port a launch exposes for one, is the policy's
(:mod:`sandbox_setup.policy.environment`); this module does the reading and the
connecting: the managed settings' ``env`` table (root's file, trust-checked), and a
TCP connect to the URL's host and port before Claude starts. A base URL nothing
answers at is a refusal, in seconds, instead of Claude Code retrying it for minutes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import PurePosixPath

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import MANAGED_SETTINGS
from sandbox_setup.launcher.trust import read_trusted_text
from sandbox_setup.policy.environment import BASE_URL, BaseUrl, base_url_where, url_endpoint

# The whole check (name lookup and connects) ends within this many seconds.
REACH_TIMEOUT = 3.0


def managed_env(path: PurePosixPath | str = MANAGED_SETTINGS) -> Mapping[str, object] | None:
    """The ``env`` table of the managed settings at ``path``, when the file exists, is
    root's and trusted (owned by root, not writable by others, nor any directory on its
    path) and is a JSON object; None otherwise (an untrusted file counts for nothing)."""
    try:
        _, text = read_trusted_text(path, frozenset({0}), "managed settings")
    except (RefusedError, OSError):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    env = data.get("env") if isinstance(data, dict) else None
    return env if isinstance(env, dict) else None


def _resolve(host: str, port: int, deadline: float) -> list[tuple[int, tuple[object, ...]]]:
    """``getaddrinfo`` with a deadline (it has none of its own): in a thread."""
    found: list[tuple[int, tuple[object, ...]]] = []
    failure: list[str] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found.extend((family, address) for family, _, _, _, address in infos)
        except OSError as exc:
            failure.append(str(exc.strerror or exc))

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        raise _Unreachable("its host name did not resolve in time")
    if failure or not found:
        raise _Unreachable("its host name does not resolve")
    return found


class _Unreachable(Exception):
    pass


def unreachable(url: str, timeout: float = REACH_TIMEOUT) -> str | None:
    """Why nothing answers at ``url``'s host and port (None: a TCP connect succeeded).

    The URL's host is resolved as Claude would (numeric hosts need no lookup), and each
    address tried until one accepts, all within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    endpoint = url_endpoint(url)
    if isinstance(endpoint, str):
        return endpoint
    host, port = endpoint
    try:
        addresses = _resolve(host, port, deadline)
    except _Unreachable as exc:
        return str(exc)
    reason = "nothing answers there"
    for family, address in addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            return "a connection did not complete in time"
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(left)
            try:
                sock.connect(address)
                return None
            except TimeoutError:
                reason = "a connection did not complete in time"
            except OSError as exc:
                reason = f"nothing answers there ({exc.strerror or exc})"
    return reason


def refuse_unreachable(base: BaseUrl, timeout: float = REACH_TIMEOUT) -> None:
    """:class:`RefusedError` naming the base URL's host and port when nothing answers."""
    why = unreachable(base.url, timeout)
    if why is None:
        return
    raise RefusedError(
        f"{BASE_URL} (from {base.source}) points at {base_url_where(base.url)}, and {why}; "
        "Claude Code would retry it for minutes. Start the API proxy (or your launcher) "
        f"first, or fix {BASE_URL}. Claude Code was not started"
    )
