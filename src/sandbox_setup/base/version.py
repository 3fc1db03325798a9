"""This package's own version, read from its installed metadata only when asked for
(``importlib.metadata`` costs ~25 ms: never at import time)."""

from __future__ import annotations


def package_version() -> str:
    """``sandbox-setup``'s version as installed, or ``(not installed)``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sandbox-setup")
    except PackageNotFoundError:
        return "(not installed)"
