"""The opt-in ``claude`` shim (``--install-claude-shim``): text, checks, plan action.

Launchers such as the proxy launcher of the first bug report start ``claude`` from
PATH, as root, with ``--dangerously-skip-permissions``; Claude Code's root guard
stops them. The shim is an executable at :data:`~sandbox_setup.policy.claude_shim.SHIM_PATH`
(before the real binary on root's PATH) that

* for root, execs ``sandbox-launch --config CONFIG -- ARGS``: the session starts
  in the sandbox (or as the agent user) this setup configured, so the guard is
  satisfied by a real sandbox, not by a claim. ``exec``, so argv, stdin, stdout,
  stderr, the exit status and signals are the launcher's, which passes Claude's on;
* for root with ``IS_SANDBOX=0`` exported (the opt-out of the bug report's
  matrix), steps aside: it runs the real ``claude`` as if it were not installed,
  and Claude Code's root guard applies as it always did. It says so on stderr;
* for every other user, execs the next ``claude`` on PATH with the environment
  exactly as it was given, so nothing changes for them.

Before it runs sandbox-launch as root, the shim applies the launcher's trust rule
(:mod:`sandbox_setup.policy.trust`, root the only owner) to it: a standalone script
cannot import the rule, so it carries a copy, and a unit test holds the copy to
the rule over the same paths.

It is Python (``/usr/bin/python3 -IS``: no ``PYTHON*`` variables, no site
packages) rather than sh because a shell rewrites the environment it passes on
(dash sets ``PWD`` and resets ``IFS``; Python's locale coercion sets
``LC_CTYPE``): the shim passes ``/proc/self/environ``, the environment its caller
really gave it. Loops are impossible by construction: the launcher refuses a
Claude binary that carries the shim's marker, and the shim never execs a file
that carries it (nor itself) when it looks for the real one.

Which ``sandbox-launch`` the shim runs, and whether root may run it, is this
installation's: :func:`look_up_launcher` finds and judges it at the edge (a host fact,
:mod:`sandbox_setup.configure.host_facts`); :func:`shim_actions` only judges that value.

The action is a :class:`~sandbox_setup.configure.actions.WriteFile` (root, 0755,
enforced), so the journal records it, a file that was at its path is backed up
and ``--undo`` puts it back byte for byte (or removes the shim).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sandbox_setup.base import remedies
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.pathfacts import resolved_chain
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops
from sandbox_setup.configure.actions import Action, RemoveFile, WriteFile
from sandbox_setup.configure.claude_binary import ClaudeBinary
from sandbox_setup.policy.claude_shim import (
    MARKER_WINDOW,
    OPT_OUT_VALUE,
    OPT_OUT_VARIABLE,
    SHIM_MARKER,
    SHIM_PATH,
    is_claude_shim,
)
from sandbox_setup.policy.trust import chain_problems, trusted_owners

SHIM_KIND = "claude-shim"
# The shim's interpreter (its first line): the system's, never a venv's or pyenv's.
SHIM_PYTHON = PurePosixPath("/usr/bin/python3")

SHIM_TEMPLATE = """#!{python} -IS
# {marker}: installed by `sandbox-setup --install-claude-shim`;
# `sandbox-setup --undo` removes it. Do not edit: `sandbox-setup --audit` reports changes.
#
# root:   `claude ARGS` is `{launcher} --config {config} -- ARGS`, exec'd (argv,
#         stdio, exit status and signals are the launcher's, which passes Claude's on).
#         With {opt_out}={opt_out_value} exported, root keeps Claude Code's own root
#         guard: the shim steps aside and runs the real claude as if it were not here.
# others: the next `claude` on PATH, with the environment exactly as given.
import os
import stat
import sys

LAUNCHER = {launcher!r}
CONFIG = {config!r}
MARKER = {marker_bytes!r}


def given_environment():
    # What the caller passed, byte for byte: Python may already have changed its own
    # copy (PEP 538 locale coercion sets LC_CTYPE).
    try:
        with open("/proc/self/environ", "rb") as handle:
            entries = handle.read().split(b"\\0")
    except OSError:
        return dict(os.environb)
    env = {{}}
    for entry in entries:
        name, sep, value = entry.partition(b"=")
        if sep and name and name not in env:  # the first one wins, as for getenv()
            env[name] = value
    return env


def is_shim(path):
    try:
        with open(path, "rb") as handle:
            return MARKER in handle.read({window})
    except OSError:
        return True  # unreadable: nothing to exec


def trusted(path):
    # What root executes must pass the launcher's trust rule (src/sandbox_setup/policy/trust.py,
    # with root the only owner): the file and every directory above it owned by root
    # and not group/world-writable, a root-owned sticky directory (/tmp) excepted.
    try:
        real = os.path.realpath(path)
        st = os.lstat(real)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            return False
        parent = real
        while parent != "/":
            parent = os.path.dirname(parent)
            st = os.lstat(parent)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
                return False
            if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                return False
        return True
    except OSError:
        return False


def exec_real_claude(env):
    # The `claude` that PATH would find without this shim (execvp's search).
    me = os.path.realpath(sys.argv[0])
    path = env.get(b"PATH", b"/bin:/usr/bin")
    problem = None
    for entry in path.split(b":"):
        candidate = os.path.join(entry or b".", b"claude")
        if not os.path.isfile(candidate) or not os.access(candidate, os.X_OK):
            continue
        if os.path.realpath(candidate) == os.fsencode(me) or is_shim(candidate):
            continue
        try:
            os.execve(candidate, [candidate, *map(os.fsencode, sys.argv[1:])], env)
        except OSError as exc:
            problem = exc
    if problem is not None:
        sys.stderr.write(f"claude: {{problem.strerror}}\\n")
        sys.exit(126)
    sys.stderr.write("claude: command not found (the sandbox-setup shim found no other)\\n")
    sys.exit(127)


def main():
    env = given_environment()
    if os.getuid() != 0:
        exec_real_claude(env)
    if env.get({opt_out_bytes!r}) == {opt_out_value_bytes!r}:
        sys.stderr.write(
            "claude: {opt_out}={opt_out_value} is exported, so the sandbox-setup shim steps "
            "aside: the real claude runs as root, unsandboxed, and its root guard applies\\n"
        )
        exec_real_claude(env)
    if not trusted(LAUNCHER):
        sys.stderr.write(
            f"claude: refused: {{LAUNCHER}} (sandbox-launch) or a directory above it is not "
            "root's alone (owned by another user, or group/world-writable); root's claude "
            "was not started. Reinstall sandbox-setup where only root can write\\n"
        )
        sys.exit(3)
    args = [LAUNCHER, "--config", CONFIG, "--", *sys.argv[1:]]
    try:
        os.execve(LAUNCHER, [os.fsencode(a) for a in args], env)
    except OSError as exc:
        sys.stderr.write(f"claude: cannot start {{LAUNCHER}}: {{exc.strerror}}\\n")
        sys.exit(126)


if __name__ == "__main__":
    main()
"""


def render_shim(launcher: str, config: str) -> bytes:
    """The shim's text for ``launcher`` (sandbox-launch) and ``config`` (launcher.toml)."""
    text = SHIM_TEMPLATE.format(
        python=SHIM_PYTHON,
        marker=SHIM_MARKER.decode(),
        marker_bytes=SHIM_MARKER,
        launcher=launcher,
        config=config,
        window=MARKER_WINDOW,
        opt_out=OPT_OUT_VARIABLE,
        opt_out_value=OPT_OUT_VALUE,
        opt_out_bytes=OPT_OUT_VARIABLE.encode(),
        opt_out_value_bytes=OPT_OUT_VALUE.encode(),
    )
    data = text.encode("utf-8")
    assert is_claude_shim(data)
    return data


def find_sandbox_launch() -> Path:
    """The ``sandbox-launch`` of this installation: beside this Python, else on PATH."""
    beside = Path(sys.executable).parent / "sandbox-launch"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which("sandbox-launch")
    if found:
        return Path(found).absolute()
    raise InputError(
        message(
            Ref(Option.INSTALL_CLAUDE_SHIM),
            f": no sandbox-launch command beside {sys.executable} or on PATH; the shim would "
            "have nothing to run. Install sandbox-setup (pipx install, or pip install into a "
            "venv) so that sandbox-launch exists",
        )
    )


def _check_launcher_trusted(launcher: Path, operator_uid: int) -> None:
    """The shim execs it as root: only root (or the operator) may be able to change it."""
    real = Path(os.path.realpath(launcher))
    problems = chain_problems(*resolved_chain(real), trusted_owners(operator_uid))
    if problems:
        raise RefusedError(
            message(
                Ref(Option.INSTALL_CLAUDE_SHIM),
                f": {real} (sandbox-launch) or a directory above it can be changed by a user "
                f"other than root or you ({problems[0].facts.shown}); the shim would run it "
                "as root. Install sandbox-setup where only root can write",
            )
        )


@dataclass(frozen=True)
class ShimLauncher:
    """This installation's ``sandbox-launch`` (what root's claude shim runs) as the edge
    found it: its path, or why there is none (``missing``, an input error), and why
    root must not run it (``untrusted``, a refusal); typed messages keep their parts."""

    path: Path | None
    missing: str | None = None
    untrusted: str | None = None

    def trusted(self) -> Path:
        """The launcher the shim may run; InputError: none, RefusedError: untrusted."""
        if self.path is None:
            raise InputError(self.missing or "no sandbox-launch command found")
        if self.untrusted is not None:
            raise RefusedError(self.untrusted)
        return self.path


def look_up_launcher(operator_uid: int) -> ShimLauncher:
    """:func:`find_sandbox_launch` and the trust rule for ``operator_uid``, as a value."""
    try:
        launcher = find_sandbox_launch()
    except InputError as exc:
        return ShimLauncher(None, missing=exc.words or str(exc))
    try:
        _check_launcher_trusted(launcher, operator_uid)
    except RefusedError as exc:
        return ShimLauncher(launcher, untrusted=exc.words or str(exc))
    return ShimLauncher(launcher)


def _path_notes(environ: Mapping[str, str], shim: PurePosixPath) -> list[str]:
    """Whether this PATH (root's, now) reaches the shim before any other ``claude``."""
    entries = [e for e in environ.get("PATH", "").split(":") if e.startswith("/")]
    if str(shim.parent) not in entries:
        return [
            f"{shim.parent} is not on your PATH ({environ.get('PATH', '')}), so your shell "
            "will not find the shim; put it first (Debian's root PATH has it first)"
        ]
    for entry in entries[: entries.index(str(shim.parent))]:
        candidate = Path(entry) / "claude"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [
                f"your PATH finds {candidate} before the shim at {shim}: programs started "
                f"with this PATH run that claude unsandboxed; put {shim.parent} before {entry}"
            ]
    return []


def shim_actions(
    layout: Layout,
    claude: ClaudeBinary,
    mode: str,
    notes: list[str],
    environ: Mapping[str, str],
    sandbox_launch: ShimLauncher,
) -> list[Action]:
    """The shim's install action, after the checks that rule it out (appends plan notes).
    ``environ`` (the operator's: whether root's PATH reaches the shim) and
    ``sandbox_launch`` are host facts (:func:`look_up_launcher`)."""
    if layout.operator.uid != 0:
        raise InputError(
            message(
                Ref(Option.INSTALL_CLAUDE_SHIM),
                " routes root's claude through sandbox-launch; it needs a root operator "
                "(installs into /usr/local/sbin)",
            )
        )
    if mode == "unsafe":
        raise InputError(
            message(
                Ref(Option.INSTALL_CLAUDE_SHIM),
                " is for sandbox and user modes: in unsafe mode it would only relax Claude "
                "Code's root guard for every program that runs claude, with no sandbox behind "
                "it. Run sandbox-launch explicitly instead",
            )
        )
    if SHIM_PATH in (claude.path, claude.resolved):
        raise InputError(
            message(
                Ref(Option.INSTALL_CLAUDE_SHIM),
                f": the real Claude Code is at {SHIM_PATH}, where the shim goes; install "
                "Claude Code elsewhere (npm -g puts it in /usr/local/bin) and ",
                Ref(Option.CLAUDE, Act.PASS, metavar="PATH"),
                option=Option.CLAUDE,
            )
        )
    launcher = sandbox_launch.trusted()
    if not os.path.isfile(layout.real(SHIM_PYTHON)):
        if layout.live:
            raise InputError(
                message(
                    Ref(Option.INSTALL_CLAUDE_SHIM),
                    f": the shim runs with {SHIM_PYTHON}, which this host does not have; "
                    "install python3 (Debian: apt-get install python3)",
                )
            )
        notes.append(f"the claude shim runs with {SHIM_PYTHON}: the target system needs it")
    existing = fsops.read_file(layout.root, layout.real(SHIM_PATH))
    if existing is not None and not is_claude_shim(existing.data[:MARKER_WINDOW]):
        notes.append(
            f"{SHIM_PATH} exists and is not sandbox-setup's shim: it is backed up and "
            f"replaced; {remedies.undo_last(str(layout.root), yes=False)} puts it back"
        )
    if layout.live:
        notes += _path_notes(environ, SHIM_PATH)
    else:
        notes.append(
            f"the claude shim runs {launcher} (this host's path): the target system needs "
            "sandbox-setup installed at the same path"
        )
    data = render_shim(str(launcher), str(layout.launcher_config))
    return [
        WriteFile(
            layout,
            SHIM_PATH,
            lambda _current: data,
            owner="root",
            label="claude shim (root's claude runs through sandbox-launch)",
            mode=0o755,
            dir_mode=0o755,
            enforce=True,
            kind=SHIM_KIND,
        )
    ]


def is_setups_shim(layout: Layout, data: bytes) -> bool:
    """Whether ``data`` is a claude shim that runs this setup's launcher config."""
    line = f"CONFIG = {str(layout.launcher_config)!r}\n".encode()
    return is_claude_shim(data[:MARKER_WINDOW]) and line in data


def shim_removal(layout: Layout) -> RemoveFile | None:
    """The shim's removal when an earlier apply of this setup installed it and the
    answers no longer ask for it (``--no-install-claude-shim``, or the box unticked);
    None when there is none of this setup's to remove."""
    action = RemoveFile(
        layout,
        SHIM_PATH,
        "claude shim (root's claude runs through sandbox-launch)",
        lambda data: is_setups_shim(layout, data),
    )
    try:
        return action if action.is_change() else None
    except (InputError, OSError):
        return None  # unreadable: the leftover note (or the audit) names it


def leftover_shim_note(layout: Layout) -> str | None:
    """A note when a shim (another setup's) is still installed but not asked for."""
    try:
        existing = fsops.read_file(layout.root, layout.real(SHIM_PATH))
    except (InputError, OSError):
        return None
    if existing is None or not is_claude_shim(existing.data[:MARKER_WINDOW]):
        return None
    return (
        f"the claude shim from an earlier apply is still at {SHIM_PATH} and keeps routing "
        "root's claude through sandbox-launch (another launcher config's); --undo of that "
        "apply removes it (or delete it)"
    )
