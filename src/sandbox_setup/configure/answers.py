"""``Answers``: everything the operator decides, from the TUI or an answers file.

Both paths fill this one value and hand it to :func:`sandbox_setup.configure.plan.build_plan`.

Public API (the TUI and the audit build on it):

- :func:`load_answers` ``(path) -> Answers``: reads ``answers.toml``; every
  problem is an :class:`~sandbox_setup.base.errors.InputError` naming the file, the key and
  what is wrong.
- :func:`parse_answers` ``(text, source) -> Answers``: the same from text.
- :func:`dump_answers` ``(answers) -> str``: the TOML text; ``parse_answers`` of
  it gives back an equal value (keys left at ``None`` are omitted).
- :func:`validate_answers` ``(answers, layout)``: checks against the target
  system (workspaces exist under the root, names are valid, unsafe acceptance).

The keys, their kinds and their order are the declarations of
:mod:`sandbox_setup.base.answer_fields`; reading, checking and writing are derived
from them. Format (``schema = 1``)::

    schema = 1
    mode = "sandbox"                 # sandbox | user | unsafe
    workspaces = ["/srv/project"]
    agent_user = "claude-agent"
    claude = "/usr/local/bin/claude" # optional: default, `claude` on PATH
    settings_scope = "managed"       # optional: user | managed
    inner_sandbox = "weak"           # optional: strong | weak | off
    network = "allowlist"            # allowlist | host | none (default: allowlist in sandbox)
    allowed_domains = ["example.com"] # optional: destinations beyond Claude's own
    loopback_ports = [8080]          # optional: host loopback ports seen inside
                                     # (both: sandbox allowlist, or user mode)
    pass_env = ["MY_TOKEN"]          # optional: variables passed beyond the defaults
    create_workspaces = false        # make a workspace that does not exist (a plan step;
    workspace_owner = "root"         #   optional: its owner, default you, and its mode,
    workspace_mode = "0750"          #   default 0750; --undo removes it only while empty)
    reuse_account = false            # let an existing account be the agent
    include_private = false          # let workspace ACLs open owner-only files
    install_claude_shim = false      # route root's `claude` through sandbox-launch
    apparmor_bwrap_profile = false   # install an AppArmor profile giving bwrap userns (Ubuntu)
    copy_login = false
    accept_unsafe_root = false
    accepted_by = "root (uid 0)"     # optional, unsafe mode: recorded acceptance
    accepted_at = "2026-11-30T04:00:00+00:00"

    [limits]                         # optional: the session's limits (defaults shown)
    tasks = 1024
    memory = "50%"
    tmpfs = "512M"
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER, lookup_user
from sandbox_setup.base.answer_fields import ANSWER_FIELDS, AnswerField, Value
from sandbox_setup.base.choices import InnerSandbox, Mode, Network, SettingsScope, values
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.launcher_config import absolute_path, load_toml
from sandbox_setup.base.limits import Limits
from sandbox_setup.base.message import Act, CliOnly, Option, Ref, message
from sandbox_setup.base.regular_files import read_regular_text
from sandbox_setup.policy.domains import parse_domain_pattern, parse_port
from sandbox_setup.policy.environment import validate_pass_names
from sandbox_setup.policy.limits import LIST_MAXIMA, over_maximum
from sandbox_setup.policy.names import (
    agent_name_problem,
    path_text_problem,
    shown,
    user_name_problem,
    workspace_path_problem,
)
from sandbox_setup.policy.network_words import (
    allowances_problem,
    network_choice_problem,
    proxy_port_problem,
)
from sandbox_setup.policy.new_workspace import DEFAULT_MODE, mode_problem, owner_problem, parse_mode

if TYPE_CHECKING:
    from sandbox_setup.base.paths import Layout

ChoiceT = TypeVar("ChoiceT", bound=enum.StrEnum)
# The mode of a workspace the apply creates when none is answered (for the wizard's field).
DEFAULT_WORKSPACE_MODE = DEFAULT_MODE
SCHEMA = 1


@dataclass(frozen=True)
class Answers:
    """The operator's decisions. ``None`` means "derive from the report/defaults"."""

    mode: Mode
    workspaces: tuple[PurePosixPath, ...] = ()
    agent_user: str = DEFAULT_AGENT_USER
    claude: PurePosixPath | None = None  # None: find `claude` on PATH
    settings_scope: SettingsScope | None = None  # None: the default for the mode
    inner_sandbox: InnerSandbox | None = None  # None: what the nested probes verified
    network: Network | None = None  # None: allowlist in sandbox mode, else the host's
    allowed_domains: tuple[str, ...] = ()
    loopback_ports: tuple[int, ...] = ()
    pass_env: tuple[str, ...] = ()
    reuse_account: bool = False
    include_private: bool = False
    install_claude_shim: bool = False
    # Install and load /etc/apparmor.d/sandbox-setup-bwrap (base.apparmor): bwrap gets
    # user namespaces under Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1.
    apparmor_bwrap_profile: bool = False
    limits: Limits | None = None  # None: the defaults
    copy_login: bool = False
    accept_unsafe_root: bool = False
    # Set when acceptance is recorded (who and when); written to launcher.toml [unsafe].
    accepted_by: str | None = None
    accepted_at: str | None = None
    # A workspace that does not exist is created (a step of the plan) only when asked;
    # owner None: the operator; mode None: policy.new_workspace.DEFAULT_MODE.
    create_workspaces: bool = False
    workspace_owner: str | None = None
    workspace_mode: int | None = None
    extra: dict[str, object] = field(default_factory=dict, compare=False)


# The file's keys: its schema, then one per answer (base/answer_fields.py).
_KEYS = ("schema", *(f.key for f in ANSWER_FIELDS))


def _typed(data: dict[str, Any], key: str, kind: type, source: str) -> Any:
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(
            f"{source}: key '{key}' must be a {kind.__name__}, not {type(value).__name__}"
        )
    return value


def _choice(data: dict[str, Any], key: str, choice: type[ChoiceT], source: str) -> ChoiceT | None:
    if key not in data:
        return None
    value = _typed(data, key, str, source)
    try:
        return choice(value)
    except ValueError:
        raise InputError(
            f"{source}: key '{key}' is {value!r}; expected one of {', '.join(values(choice))}"
        ) from None


def _strings(data: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{source}: key '{key}' must be a list of strings")
    return tuple(value)


def parse_answers(
    text: str,
    source: str = "answers.toml",
    fields: tuple[AnswerField, ...] = ANSWER_FIELDS,
    model: type[Answers] = Answers,
) -> Answers:
    """Parse answers TOML; errors name ``source``, the key (or line) and the problem.
    ``fields``/``model``: the answers declared (a test declares one more)."""
    data = load_toml(text, source)
    keys = ("schema", *(f.key for f in fields))
    unknown = [k for k in data if k not in keys]
    if unknown:
        raise InputError(f"{source}: unknown key '{unknown[0]}' (known keys: {', '.join(keys)})")
    if "schema" in data and _typed(data, "schema", int, source) != SCHEMA:
        raise InputError(f"{source}: unsupported schema {data['schema']} (this version reads 1)")
    if "mode" not in data:
        raise InputError(f"{source}: missing key 'mode' (sandbox, user or unsafe)")
    given = {f.key: _read(data, f, source) for f in fields if f.key in data}
    answers = model(**given)
    check_names(answers, source, fields)
    return answers


def _read(data: dict[str, Any], f: AnswerField, source: str) -> Any:
    """The value of ``f``'s key as the file holds it, checked for its kind."""
    key = f.key
    if f.value is Value.BOOL:
        return _typed(data, key, bool, source)
    if f.value is Value.CHOICE:
        assert f.choice is not None
        return _choice(data, key, f.choice, source)
    if f.value is Value.PATHS:
        raw = data[key]
        if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw):
            raise InputError(f"{source}: key '{key}' must be a list of absolute paths")
        return tuple(absolute_path(w, key, source) for w in raw)
    if f.value is Value.PATH:
        text = _typed(data, key, str, source)
        problem = path_text_problem(text)
        if problem is not None:  # before a system call fails on it (exit 70)
            raise InputError(f"{source}: key '{key}' {shown(text)} {problem}")
        return absolute_path(text, key, source)
    if f.value is Value.STRINGS:
        return _strings(data, key, source)
    if f.value is Value.PORTS:
        ports = data[key]
        if not isinstance(ports, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in ports
        ):
            raise InputError(f"{source}: key '{key}' must be a list of port numbers")
        return tuple(ports)
    if f.value is Value.OCTAL:
        parsed = parse_mode(_typed(data, key, str, source))
        if isinstance(parsed, str):
            raise InputError(f"{source}: key '{key}': {parsed}")
        return parsed
    if f.value is Value.LIMITS:
        return Limits.from_table(data[key], f"{key}.", source)
    value = _typed(data, key, str, source)
    if f.value is Value.TIMESTAMP:
        _check_timestamp(value, key, source)
    return value


def _check_timestamp(value: str, key: str, source: str) -> None:
    """``value`` is a date and time with its offset, as the apply records it
    (``2026-11-30T04:00:00+00:00``): the record of when unsafe mode was accepted."""
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise InputError(
            f"{source}: key {key!r} is {shown(value)}; expected a date and time with its "
            "offset, e.g. 2026-11-30T04:00:00+00:00 (or leave it out: the apply records now)"
        )


def load_answers(path: Path) -> Answers:
    """Read and parse an answers file; a missing or unreadable file is an InputError."""
    try:
        text = read_regular_text(Path(path))  # never blocks on a FIFO
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read answers file: {exc}") from None
    return parse_answers(text, str(path))


def dump_answers(a: Answers, fields: tuple[AnswerField, ...] = ANSWER_FIELDS) -> str:
    """The answers as TOML (deterministic: same value, same bytes). A key at its
    default is left out unless its field is always written; tables come last."""
    import tomlkit  # why: only where a file is written (the wizard's first paint reads this module)

    doc = tomlkit.document()
    doc.add(tomlkit.comment("sandbox-setup answers: replay with"))
    doc.add(tomlkit.comment("  sandbox-setup --headless --answers THIS_FILE --yes"))
    doc["schema"] = SCHEMA
    defaults = _defaults(type(a))
    written = [f for f in fields if f.always_written or getattr(a, f.key) != defaults[f.key]]
    for f in sorted(written, key=lambda f: f.value is Value.LIMITS):
        value = getattr(a, f.key)
        if f.value is Value.LIMITS:
            table = tomlkit.table()
            for key, item in value.to_table().items():
                table[key] = item
            doc[f.key] = table
        elif f.value is Value.OCTAL:
            doc[f.key] = f"{value:04o}"
        elif f.value in (Value.PATHS, Value.STRINGS, Value.PORTS):
            doc[f.key] = [item if isinstance(item, int) else str(item) for item in value]
        elif f.value is Value.BOOL:
            doc[f.key] = bool(value)
        else:
            doc[f.key] = str(value)
    return tomlkit.dumps(doc)


def _defaults(model: type[Answers]) -> dict[str, object]:
    """Each attribute's default (``mode`` has none: it is always written)."""
    return {
        f.name: f.default if f.default is not dataclasses.MISSING else None
        for f in dataclasses.fields(model)
    }


def check_names(
    a: Answers, source: str = "answers", fields: tuple[AnswerField, ...] = ANSWER_FIELDS
) -> None:
    """Checks that need no system: names, choices, workspace paths as written."""
    problem = user_name_problem(a.agent_user)
    if problem is not None:
        raise InputError(f"{source}: agent_user {problem}")
    for key, value, choice in (
        (f.key, getattr(a, f.key), f.choice) for f in fields if f.choice is not None
    ):
        if value is not None and value not in values(choice):
            raise InputError(
                f"{source}: {key} is {value!r}; expected one of {', '.join(values(choice))}"
            )
    for ws in a.workspaces:
        if not ws.is_absolute():
            raise InputError(f"{source}: workspace {str(ws)!r} must be an absolute path")


def workspace_problem(
    ws: PurePosixPath, layout: Layout, mode: Mode, agent_user: str, create: bool = False
) -> str | None:
    """Why ``ws`` cannot be a workspace of this setup (None: it can): the path as
    written (:func:`sandbox_setup.policy.names.workspace_path_problem`), a symlink on the
    way, the operator's own home given to a separate agent, or no such directory
    (``create``: the apply creates a missing one, so only something in its way that is
    not a directory). The CLI, the answers file and the TUI all ask this one function."""
    unsafe = mode is Mode.UNSAFE
    problem = workspace_path_problem(ws, unsafe=unsafe)
    if problem is not None:
        return problem
    problem = _link_problem(ws, layout)
    if problem is not None:
        return problem
    home = PurePosixPath(layout.operator.home)
    separate = not unsafe and agent_user != layout.operator.name
    if separate and (ws == home or ws in home.parents):
        return (
            f"workspace {ws} would give the agent user your home {home}; choose a project directory"
        )
    real = layout.real(ws)
    if real.is_dir():
        return None
    where = "" if layout.live else f" (looked at {real})"
    if os.path.lexists(real):
        return f"workspace {ws} is not a directory{where}"
    blocked = next(
        (p for p in ws.parents if os.path.lexists(layout.real(p)) and not layout.real(p).is_dir()),
        None,
    )
    if blocked is not None:
        return f"workspace {ws} cannot be created: {blocked} is not a directory{where}"
    if create:
        return None
    return message(
        f"workspace {ws} does not exist{where}; to create it as a step of the plan "
        "(owner you, mode 0750; an undo removes it while it is empty): ",
        Ref(Option.CREATE_WORKSPACE, Act.ADD),
    )


def default_network(mode: Mode) -> Network:
    """Sandbox mode closes the host's network except what is allowed; the other modes
    have no network namespace of their own (the agent shares the host's)."""
    return Network.ALLOWLIST if mode is Mode.SANDBOX else Network.HOST


def check_network(a: Answers, source: str = "answers") -> None:
    """The network choices: only sandbox mode has a network of its own; the allowed
    domains and loopback ports in sandbox mode with the allowlist and in user mode
    (Landlock's network wall), never in unsafe mode; patterns and ports valid
    (:mod:`sandbox_setup.policy.network` decides each)."""
    network = a.network or default_network(a.mode)
    problem = network_choice_problem(a.mode, network)
    if problem is not None:
        raise InputError(message(f"{source}: ", problem))
    if a.allowed_domains or a.loopback_ports:
        what = "allow-domain" if a.allowed_domains else "allow-loopback-port"
        problem = allowances_problem(a.mode, network, what)
        if problem is not None:
            raise InputError(message(f"{source}: ", problem))
    for pattern in a.allowed_domains:
        try:
            parse_domain_pattern(pattern)
        except InputError as exc:
            raise InputError(message(f"{source}: allowed_domains: ", _said(exc))) from None
    for port in a.loopback_ports:
        try:
            parse_port(port, "loopback port")
        except InputError as exc:
            raise InputError(message(f"{source}: loopback_ports: ", _said(exc))) from None
        problem = proxy_port_problem(a.mode, port)
        if problem is not None:
            raise InputError(message(f"{source}: loopback_ports: ", problem))


def _said(exc: InputError) -> str:
    """What ``exc`` says, its typed parts kept (to be wrapped in another message)."""
    return exc.words if exc.words is not None else str(exc)


def check_list_maxima(a: Answers, source: str = "answers") -> None:
    """Workspaces, allowed domains and loopback ports within what the launcher handles
    (:mod:`sandbox_setup.policy.limits`)."""
    for key in (f.key for f in ANSWER_FIELDS if f.key in LIST_MAXIMA):
        problem = over_maximum(key, getattr(a, key))
        if problem is not None:
            raise InputError(f"{source}: {key}: {problem}")


def validate_answers(a: Answers, layout: Layout, source: str = "answers") -> None:
    """Validate ``a`` against the target system of ``layout``.

    Raises :class:`InputError` (exit 2) for bad values and :class:`RefusedError`
    (exit 3) for unsafe mode without the explicit acceptance.
    """
    check_names(a, source)
    check_list_maxima(a, source)
    if a.accept_unsafe_root and a.mode is not Mode.UNSAFE:
        # As the CLI refuses --accept-unsafe-root outside unsafe mode: an acceptance
        # recorded for a mode that is not unsafe would be read as consent it is not.
        raise InputError(
            f'{source}: accept_unsafe_root only applies to mode "unsafe" (this is '
            f'mode "{a.mode}"); remove it'
        )
    if a.mode is Mode.UNSAFE and not a.accept_unsafe_root:
        raise RefusedError(
            message(
                "unsafe mode runs Claude Code as root with no OS sandbox; it needs the explicit "
                "acceptance: ",
                Ref(Option.ACCEPT_UNSAFE_ROOT, Act.ADD),
                CliOnly((" (or accept_unsafe_root = true in answers)",)),
            )
        )
    problem = agent_name_problem(a.agent_user, unsafe=a.mode is Mode.UNSAFE)
    if problem is not None:
        raise InputError(f"{source}: agent_user {a.agent_user}: {problem} in {a.mode} mode")
    if a.mode is Mode.SANDBOX and not a.workspaces:
        raise InputError(
            message(
                f"{source}: sandbox mode needs at least one workspace",
                CliOnly((" (", Ref(Option.WORKSPACE, metavar="DIR"), ")")),
            )
        )
    if a.mode is Mode.UNSAFE and a.copy_login:
        raise InputError(f"{source}: copy_login only applies to sandbox and user modes")
    check_network(a, source)
    validate_pass_names(a.pass_env, a.mode, f"{source}: pass_env")
    for ws in a.workspaces:
        problem = workspace_problem(ws, layout, a.mode, a.agent_user, a.create_workspaces)
        if problem is not None:
            raise InputError(message(f"{source}: ", problem))
    refused = new_workspace_problem(a, layout)
    if refused is not None:
        raise InputError(f"{source}: {refused[0]}: {refused[1]}")
    # An absolute symlink under --root means the target system's path (Layout.resolve).
    if a.claude is not None and not layout.real(layout.resolve(a.claude)).is_file():
        raise InputError(
            message(
                f"{source}: ",
                Ref(Option.CLAUDE, value=str(a.claude)),
                f": no such file under {layout.root}",
            )
        )


def new_workspace_problem(a: Answers, layout: Layout) -> tuple[str, str] | None:
    """``(key, why)``: the answer (``workspace_owner`` or ``workspace_mode``) that a
    workspace the apply would create cannot have, and why (None: nothing to create, or
    both pass :mod:`sandbox_setup.policy.new_workspace`)."""
    if not a.create_workspaces:
        return None
    separate = a.mode is not Mode.UNSAFE and a.agent_user != layout.operator.name
    owner = new_workspace_owner(a, layout)
    exists = lookup_user(owner, layout.root) is not None
    problem = owner_problem(owner, exists, a.agent_user if separate else None)
    if problem is not None:
        return "workspace_owner", problem
    problem = mode_problem(new_workspace_mode(a))
    return None if problem is None else ("workspace_mode", problem)


def new_workspace_owner(a: Answers, layout: Layout) -> str:
    """Who owns a workspace the apply creates: the answer, else the operator."""
    return a.workspace_owner if a.workspace_owner is not None else layout.operator.name


def new_workspace_mode(a: Answers) -> int:
    """The mode of a workspace the apply creates: the answer, else 0750."""
    return a.workspace_mode if a.workspace_mode is not None else DEFAULT_MODE


def _link_problem(ws: PurePosixPath, layout: Layout) -> str | None:
    """The workspace must be the directory it names. A symlink on the way (to
    /etc, or out of the root) would carry the ACLs and setgid bits to wherever it
    points, past the system-directory check, which sees only the name."""
    try:
        resolved = layout.resolve(ws)
    except OSError as exc:
        return f"workspace {ws}: cannot resolve it: {exc}"
    if resolved != PurePosixPath(os.path.normpath(ws)):
        return (
            f"workspace {ws} is or passes through a symlink (it leads to "
            f"{resolved}); pass the real directory, not a link to it"
        )
    return None
