"""Find the Claude Code binary, its version, and whether the agent can run it.

:func:`look_up_claude` is the edge's (:func:`sandbox_setup.configure.host_facts.
gather_host_facts`): it finds the binary and runs its ``--version`` once, and returns a
:class:`ClaudeLookup`, what was found or why nothing was; the plan judges that value and
runs nothing itself.

Claude's native installer puts ``claude`` in ``~/.local/bin``, linked into
``~/.local/share/claude``; under ``/root`` (0700) the agent user cannot reach
it. :func:`find_claude` reports such a binary as ``private``, and the plan then
installs a root-owned 0755 copy at :data:`INSTALLED_CLAUDE`, outside any home,
recording its path and version in launcher.toml.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sandbox_setup.base.claude_version import read_claude_version
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.paths import CLAUDE_INSTALL_DIR, Layout
from sandbox_setup.policy.claude_shim import MARKER_WINDOW, is_claude_shim, shim_refusal
from sandbox_setup.policy.trust import chain_problems, trusted_owners

INSTALLED_CLAUDE = CLAUDE_INSTALL_DIR / "claude"
# Where to look when no --claude is given (target paths; PATH of this process first).
_FALLBACK_DIRS = (
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
)


@dataclass(frozen=True)
class ClaudeBinary:
    """A Claude Code binary in the target system."""

    path: PurePosixPath  # as given or found (may be a symlink)
    resolved: PurePosixPath  # after symlinks, in the target system
    version: str | None
    private: bool  # the agent user cannot traverse to it or read+execute it
    trusted: bool  # only root or the operator can change it (or a directory above it)


@dataclass(frozen=True)
class ClaudeLookup:
    """Claude Code as found for the answers' ``claude`` (``given``; None: looked for on
    the PATH): the binary, or why there is none, the input error (exit 2) the plan
    raises where it needs the binary (a typed message keeps its parts)."""

    given: PurePosixPath | None
    binary: ClaudeBinary | None
    problem: str | None = None

    def found(self, given: PurePosixPath | None) -> ClaudeBinary:
        """The binary for ``given`` (the answers' ``claude``); InputError: none."""
        if given != self.given:
            raise ValueError(f"Claude Code was looked up for {self.given}, not {given}")
        if self.binary is None:
            raise InputError(self.problem or f"{given}: Claude Code not found")
        return self.binary


def _search_dirs(layout: Layout, environ: Mapping[str, str] | None) -> list[PurePosixPath]:
    path = (os.environ if environ is None else environ).get("PATH", "")
    dirs = [d for d in path.split(":") if d.startswith("/")]
    dirs += [str(PurePosixPath(layout.operator.home) / ".local/bin"), *_FALLBACK_DIRS]
    seen: list[PurePosixPath] = []
    for d in dirs:
        if PurePosixPath(d) not in seen:
            seen.append(PurePosixPath(d))
    return seen


def search_description(layout: Layout, environ: Mapping[str, str] | None = None) -> str:
    """Where :func:`find_claude` looks without a given path, in words: the same
    text wherever a lookup is reported (the checks screen, the review, the CLI).
    ``environ``: the operator's environment (its PATH); None: this process's."""
    places = ", ".join(str(d) for d in _search_dirs(layout, environ))
    where = "" if layout.live else f" under the root {layout.root}"
    return f"looked for 'claude' in {places}{where}"


def is_private(layout: Layout, resolved: PurePosixPath) -> bool:
    """True when others (the agent) cannot traverse to ``resolved`` or read and run it."""
    for parent in resolved.parents:
        if str(parent) == "/":
            continue
        if not os.stat(layout.real(parent)).st_mode & stat.S_IXOTH:
            return True
    mode = os.stat(layout.real(resolved)).st_mode
    return (mode & (stat.S_IROTH | stat.S_IXOTH)) != (stat.S_IROTH | stat.S_IXOTH)


def is_trusted(layout: Layout, resolved: PurePosixPath) -> bool:
    """The trust rule (:mod:`sandbox_setup.policy.trust`) for the target path ``resolved``:
    only then may root execute it, and only then will the launcher."""
    owners = trusted_owners(layout.operator.uid)
    return not chain_problems(*layout.chain(resolved), owners)


def _is_shim(real: Path) -> bool:
    """Whether ``real`` is sandbox-setup's claude shim (never "the real Claude")."""
    try:
        with open(real, "rb") as handle:
            return is_claude_shim(handle.read(MARKER_WINDOW))
    except OSError:
        return False


def _shebang_problem(path: Path) -> str | None:
    """Why the kernel could not start the script at ``path``, or None.

    A ``#!`` line saved with Windows line endings names an interpreter ending in a
    carriage return (``/bin/sh\\r``): every launch would end in exit 127.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None  # judged elsewhere (trust, version)
    if not head.startswith((b"#!", b"\x7fELF")):
        # An empty file, text, garbage: execve refuses it (ENOEXEC), every launch fails.
        what = "empty" if not head else "neither a program (ELF) nor a #! script"
        return message(
            f"it is {what}, so the kernel cannot start it and every launch would fail; "
            "Claude Code's claude is npm's or the native binary: ",
            Ref(Option.CLAUDE, Act.PASS, metavar="PATH"),
        )
    if not head.startswith(b"#!"):
        return None
    line = head.split(b"\n", 1)[0]
    if not line.endswith(b"\r"):
        return None
    shown = line[2:-1].decode("utf-8", "backslashreplace").strip()
    # The fix is pasteable as printed: messages escape backslashes, so no \\r in it.
    return (
        f"its #! line ends in a carriage return (Windows line endings), so the kernel "
        f"looks for an interpreter named '{shown}' plus a carriage return and every launch "
        f"would fail (exit 127); convert the file to Unix line endings: "
        f"sed -i 's/[[:cntrl:]]$//' {path}"
    )


def locate_claude(
    layout: Layout,
    given: PurePosixPath | None = None,
    environ: Mapping[str, str] | None = None,
) -> PurePosixPath | None:
    """The target path of the binary :func:`find_claude` would use (``given`` or the
    first ``claude`` on the search path), without running it; None: not found.

    The search skips sandbox-setup's claude shim (it comes first on root's PATH
    once installed); a ``given`` shim is an input error.
    """
    if given is not None:
        candidates = [given]
    else:
        candidates = [d / "claude" for d in _search_dirs(layout, environ)]
    for candidate in candidates:
        try:
            # Symlinks followed inside the root: an absolute link under --root means
            # the target system's path, never the host's (``--root``).
            real = layout.real(layout.resolve(candidate))
            if not real.is_file():
                continue
        except OSError:  # a PATH entry this user cannot search: not ours to use
            continue
        if _is_shim(real):
            if given is not None:
                raise InputError(
                    message(Ref(Option.CLAUDE, value=str(given)), f": {shim_refusal(str(given))}")
                )
            continue
        return candidate
    return None


def find_claude(
    layout: Layout,
    given: PurePosixPath | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClaudeBinary:
    """The binary at ``given`` or the first ``claude`` on the search path (``environ``'s
    PATH; None: this process's), in the target."""
    candidate = locate_claude(layout, given, environ)
    if candidate is None:
        if given is not None:
            raise InputError(
                message(Ref(Option.CLAUDE, value=str(given)), f": no such file under {layout.root}")
            )
        raise InputError(
            message(
                f"Claude Code not found ({search_description(layout, environ)}); install it or ",
                Ref(Option.CLAUDE, Act.PASS, metavar="PATH"),
            )
        )
    resolved = layout.resolve(candidate)
    resolved_real = str(layout.real(resolved))
    if not layout.live and os.path.islink(resolved_real):  # a loop: resolve gave up
        raise InputError(f"{candidate}: too many levels of symlinks under {layout.root}")
    if not os.access(resolved_real, os.X_OK):
        raise InputError(f"{candidate}: not executable")
    problem = _shebang_problem(Path(resolved_real))
    if problem is not None:
        raise InputError(f"{candidate}: {problem}")
    trusted = is_trusted(layout, resolved)
    return ClaudeBinary(
        path=candidate,
        resolved=resolved,
        # Never run, as root, a binary someone else could have replaced.
        version=read_claude_version(Path(resolved_real)) if trusted else None,
        private=is_private(layout, resolved),
        trusted=trusted,
    )


def look_up_claude(
    layout: Layout, given: PurePosixPath | None, environ: Mapping[str, str]
) -> ClaudeLookup:
    """:func:`find_claude` as a value: the binary (its version read now, if root may run
    it), or the input error that says why there is none, for the plan to raise."""
    try:
        return ClaudeLookup(given, find_claude(layout, given, environ))
    except InputError as exc:
        return ClaudeLookup(given, None, exc.words or str(exc))
