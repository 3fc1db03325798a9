"""Which variables of the caller's environment reach Claude Code (issue 16).

The launcher passes nothing of the caller's environment but the variables named
here: by default the ones that say where Claude's API is and how to log in to it
(:data:`DEFAULT_PASS`), plus whatever the operator lists (``--pass-env NAME``,
``[env] pass``). Some names are never taken from the caller: the ones the
launcher sets itself, the ones that claim a sandbox, and the ones that would
make the launcher's own tools (the dynamic loader, socat, bwrap) run other code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wizard.base.choices import Mode
from wizard.base.errors import InputError

# What a launcher or an operator sets to point Claude Code at its API and its
# models (Claude Code's documented environment variables).
DEFAULT_PASS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
# Set by the launcher itself (a caller's value would be replaced anyway).
LAUNCHER_OWNED = frozenset({"HOME", "PATH", "USER", "LOGNAME", "TERM", "LANG"})
# A sandbox claim: only the launcher makes it, and only inside a verified sandbox.
SANDBOX_CLAIMS = frozenset({"IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP"})
# Would change what the launcher's own tools or the proxy settings do.
NEVER_PASSED = frozenset(
    {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "IFS", "SHELLOPTS"}
)
PROXY_VARIABLES = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
    | {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")


def pass_name_problem(name: str, mode: Mode) -> str | None:
    """Why ``name`` may not be passed from the caller to Claude (None: it may)."""
    if not _NAME.match(name):
        return f"{name!r} is not an environment variable name (letters, digits and '_')"
    if name in LAUNCHER_OWNED:
        return f"{name} is set by the launcher itself"
    if name in SANDBOX_CLAIMS and mode is Mode.SANDBOX:
        return f"{name} is a sandbox claim; in sandbox mode only the verified sandbox sets it"
    if name in NEVER_PASSED or name.startswith("LD_"):
        return f"{name} changes how programs are loaded or started; it is never passed"
    if name in PROXY_VARIABLES and mode is Mode.SANDBOX:
        return f"{name} is set by the launcher to its egress proxy in sandbox mode"
    return None


def validate_pass_names(names: Iterable[str], mode: Mode, what: str) -> tuple[str, ...]:
    """``names`` in order, once each; :class:`InputError` naming the first refused."""
    seen: list[str] = []
    for name in names:
        problem = pass_name_problem(name, mode)
        if problem is not None:
            raise InputError(f"{what} {name}: {problem}")
        if name not in seen:
            seen.append(name)
    return tuple(seen)


def passed_names(extra: Iterable[str]) -> tuple[str, ...]:
    """What the launcher passes: the defaults, then the operator's, once each."""
    return tuple(dict.fromkeys((*DEFAULT_PASS, *extra)))
