"""``Answers``: everything the operator decides, from the TUI or an answers file.

Both paths fill this one value and hand it to :func:`wizard.configure.plan.build_plan`.

Public API (the TUI and the audit build on it):

- :func:`load_answers` ``(path) -> Answers``: reads ``answers.toml``; every
  problem is an :class:`~wizard.base.errors.InputError` naming the file, the key and
  what is wrong.
- :func:`parse_answers` ``(text, source) -> Answers``: the same from text.
- :func:`dump_answers` ``(answers) -> str``: the TOML text; ``parse_answers`` of
  it gives back an equal value (keys left at ``None`` are omitted).
- :func:`validate_answers` ``(answers, layout)``: checks against the target
  system (workspaces exist under the root, names are valid, unsafe acceptance).

Format (``schema = 1``)::

    schema = 1
    mode = "sandbox"                 # sandbox | user | unsafe
    workspaces = ["/srv/project"]
    agent_user = "claude-agent"
    claude = "/usr/local/bin/claude" # optional: default, `claude` on PATH
    settings_scope = "managed"       # optional: user | managed
    inner_sandbox = "weak"           # optional: strong | weak | off
    network = "host"                 # host | none
    copy_login = false
    accept_unsafe_root = false
    accepted_by = "root (uid 0)"     # optional, unsafe mode: recorded acceptance
    accepted_at = "2026-11-30T04:00:00+00:00"
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from wizard.base.choices import Mode
from wizard.base.errors import InputError, RefusedError
from wizard.base.launcher_config import absolute_path, load_toml
from wizard.base.regular_files import read_regular_text
from wizard.policy.system_dirs import is_system_dir

if TYPE_CHECKING:
    from wizard.base.paths import Layout

DEFAULT_AGENT_USER = "claude-agent"
SCHEMA = 1
SETTINGS_SCOPES = ("user", "managed")
INNER_SANDBOX = ("strong", "weak", "off")
NETWORK = ("host", "none")
# Workspaces get recursive ACLs and setgid bits: never on a system directory.
# The list lives in wizard.policy.system_dirs, shared with the launcher and the TUI.
# Debian's useradd NAME_REGEX, minus the trailing "$" of machine accounts. "\Z",
# not "$": "$" also matches before a final newline, and useradd refuses "name\n".
USER_NAME_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}\Z")


@dataclass(frozen=True)
class Answers:
    """The operator's decisions. ``None`` means "derive from the report/defaults"."""

    mode: Mode
    workspaces: tuple[PurePosixPath, ...] = ()
    agent_user: str = DEFAULT_AGENT_USER
    claude: PurePosixPath | None = None  # None: find `claude` on PATH
    settings_scope: str | None = None  # "user" | "managed"; None: default for the mode
    inner_sandbox: str | None = None  # "strong" | "weak" | "off"; None: from the nested probes
    network: str = "host"  # "host" | "none"
    copy_login: bool = False
    accept_unsafe_root: bool = False
    # Set when acceptance is recorded (who and when); written to launcher.toml [unsafe].
    accepted_by: str | None = None
    accepted_at: str | None = None
    extra: dict[str, object] = field(default_factory=dict, compare=False)


_KEYS = (
    "schema",
    "mode",
    "workspaces",
    "agent_user",
    "claude",
    "settings_scope",
    "inner_sandbox",
    "network",
    "copy_login",
    "accept_unsafe_root",
    "accepted_by",
    "accepted_at",
)


def _typed(data: dict[str, Any], key: str, kind: type, source: str) -> Any:
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(
            f"{source}: key '{key}' must be a {kind.__name__}, not {type(value).__name__}"
        )
    return value


def _choice(data: dict[str, Any], key: str, choices: tuple[str, ...], source: str) -> str | None:
    if key not in data:
        return None
    value = _typed(data, key, str, source)
    if value not in choices:
        raise InputError(
            f"{source}: key '{key}' is {value!r}; expected one of {', '.join(choices)}"
        )
    return str(value)


def parse_answers(text: str, source: str = "answers.toml") -> Answers:
    """Parse answers TOML; errors name ``source``, the key (or line) and the problem."""
    data = load_toml(text, source)
    unknown = [k for k in data if k not in _KEYS]
    if unknown:
        raise InputError(f"{source}: unknown key '{unknown[0]}' (known keys: {', '.join(_KEYS)})")
    if "schema" in data and _typed(data, "schema", int, source) != SCHEMA:
        raise InputError(f"{source}: unsupported schema {data['schema']} (this version reads 1)")
    if "mode" not in data:
        raise InputError(f"{source}: missing key 'mode' (sandbox, user or unsafe)")
    mode = _choice(data, "mode", tuple(m.value for m in Mode), source)
    workspaces: tuple[PurePosixPath, ...] = ()
    if "workspaces" in data:
        raw = data["workspaces"]
        if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw):
            raise InputError(f"{source}: key 'workspaces' must be a list of absolute paths")
        workspaces = tuple(absolute_path(w, "workspaces", source) for w in raw)
    claude = None
    if "claude" in data:
        claude = absolute_path(_typed(data, "claude", str, source), "claude", source)
    agent_user = DEFAULT_AGENT_USER
    if "agent_user" in data:
        agent_user = _typed(data, "agent_user", str, source)
    flags = {
        k: _typed(data, k, bool, source) for k in ("copy_login", "accept_unsafe_root") if k in data
    }
    texts = {k: _typed(data, k, str, source) for k in ("accepted_by", "accepted_at") if k in data}
    answers = Answers(
        mode=Mode(str(mode)),
        workspaces=workspaces,
        agent_user=agent_user,
        claude=claude,
        settings_scope=_choice(data, "settings_scope", SETTINGS_SCOPES, source),
        inner_sandbox=_choice(data, "inner_sandbox", INNER_SANDBOX, source),
        network=_choice(data, "network", NETWORK, source) or "host",
        copy_login=flags.get("copy_login", False),
        accept_unsafe_root=flags.get("accept_unsafe_root", False),
        accepted_by=texts.get("accepted_by"),
        accepted_at=texts.get("accepted_at"),
    )
    check_names(answers, source)
    return answers


def load_answers(path: Path) -> Answers:
    """Read and parse an answers file; a missing or unreadable file is an InputError."""
    try:
        text = read_regular_text(Path(path))  # never blocks on a FIFO
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read answers file: {exc}") from None
    return parse_answers(text, str(path))


def dump_answers(a: Answers) -> str:
    """The answers as TOML (deterministic: same value, same bytes)."""
    import tomlkit  # only the writer needs it

    doc = tomlkit.document()
    doc.add(tomlkit.comment("sandbox-setup answers: replay with"))
    doc.add(tomlkit.comment("  sandbox-setup --headless --answers THIS_FILE --yes"))
    doc["schema"] = SCHEMA
    doc["mode"] = str(a.mode)
    doc["workspaces"] = [str(w) for w in a.workspaces]
    doc["agent_user"] = a.agent_user
    if a.claude is not None:
        doc["claude"] = str(a.claude)
    if a.settings_scope is not None:
        doc["settings_scope"] = a.settings_scope
    if a.inner_sandbox is not None:
        doc["inner_sandbox"] = a.inner_sandbox
    doc["network"] = a.network
    doc["copy_login"] = a.copy_login
    doc["accept_unsafe_root"] = a.accept_unsafe_root
    if a.accepted_by is not None:
        doc["accepted_by"] = a.accepted_by
    if a.accepted_at is not None:
        doc["accepted_at"] = a.accepted_at
    return tomlkit.dumps(doc)


def check_names(a: Answers, source: str = "answers") -> None:
    """Checks that need no system: names and enumerations."""
    if not USER_NAME_RE.match(a.agent_user):
        raise InputError(
            f"{source}: agent_user {a.agent_user!r} is not a valid user name "
            "(lowercase letters, digits, '_' and '-', starting with a letter or '_', "
            "at most 32 characters)"
        )
    for key, value, choices in (
        ("settings_scope", a.settings_scope, SETTINGS_SCOPES),
        ("inner_sandbox", a.inner_sandbox, INNER_SANDBOX),
        ("network", a.network, NETWORK),
    ):
        if value is not None and value not in choices:
            raise InputError(f"{source}: {key} is {value!r}; expected one of {', '.join(choices)}")
    for ws in a.workspaces:
        if not ws.is_absolute():
            raise InputError(f"{source}: workspace {str(ws)!r} must be an absolute path")


def validate_answers(a: Answers, layout: Layout, source: str = "answers") -> None:
    """Validate ``a`` against the target system of ``layout``.

    Raises :class:`InputError` (exit 2) for bad values and :class:`RefusedError`
    (exit 3) for unsafe mode without the explicit acceptance.
    """
    check_names(a, source)
    if a.mode is Mode.UNSAFE and not a.accept_unsafe_root:
        raise RefusedError(
            "unsafe mode runs Claude Code as root with no OS sandbox; it needs the explicit "
            "acceptance: add --accept-unsafe-root (or accept_unsafe_root = true in answers)"
        )
    if a.mode is not Mode.UNSAFE and a.agent_user == "root":
        raise InputError(f"{source}: agent_user must not be root in {a.mode} mode")
    if a.mode is Mode.SANDBOX and not a.workspaces:
        raise InputError(f"{source}: sandbox mode needs at least one workspace (--workspace DIR)")
    if a.mode is Mode.UNSAFE and a.copy_login:
        raise InputError(f"{source}: copy_login only applies to sandbox and user modes")
    separate = a.mode is not Mode.UNSAFE and a.agent_user != layout.operator.name
    home = PurePosixPath(layout.operator.home)
    for ws in a.workspaces:
        _check_not_a_link(ws, layout, source)
        system = is_system_dir(ws)
        if a.mode is not Mode.UNSAFE and (system or ".." in ws.parts):
            raise InputError(
                f"{source}: workspace {ws} is a system directory; choose a project directory "
                "(e.g. /srv/NAME)"
            )
        if separate and (ws == home or ws in home.parents):
            raise InputError(
                f"{source}: workspace {ws} would give the agent user your home {home}; "
                "choose a project directory"
            )
        real = layout.real(ws)
        if not real.is_dir():
            where = "" if layout.live else f" (looked at {real})"
            raise InputError(
                f"{source}: workspace {ws} does not exist or is not a directory{where}"
            )
    if a.claude is not None and not layout.real(a.claude).is_file():
        raise InputError(f"{source}: claude {a.claude} is not a file under {layout.root}")


def _check_not_a_link(ws: PurePosixPath, layout: Layout, source: str) -> None:
    """The workspace must be the directory it names. A symlink on the way (to
    /etc, or out of the root) would carry the ACLs and setgid bits to wherever it
    points, past the system-directory check above, which sees only the name."""
    from wizard.audit.safety import resolve_in_root  # the audit's resolver, same rules

    try:
        resolved = resolve_in_root(layout, ws)
    except OSError as exc:
        raise InputError(f"{source}: workspace {ws}: cannot resolve it: {exc}") from None
    if resolved != PurePosixPath(os.path.normpath(ws)):
        raise InputError(
            f"{source}: workspace {ws} is or passes through a symlink (it leads to "
            f"{resolved}); pass the real directory, not a link to it"
        )
