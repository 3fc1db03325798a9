"""The operator's answers, each declared once: :data:`ANSWER_FIELDS`.

One :class:`AnswerField` per answer says its key (the
:class:`~sandbox_setup.configure.answers.Answers` attribute and the ``answers.toml``
key), its kind (a toggle, one value, a list with its ``--no-...`` pair, a choice, or
a record the file holds without a flag), the value the file holds, its flag, metavar
and help, and the wizard's words for it. Everything else is derived from this table:

- the headless options of ``sandbox-setup`` (:func:`add_answer_options`, in
  ``cli.build_parser``), and how the flags given change answers
  (``commands/apply.py``);
- the answers file's keys, its reading, checks and writing (``configure/answers.py``);
- the wizard's answers (``tui/draft.py``: which modes keep which answer);
- the wizard's words for the flags (the tables of ``commands/wording.py``).

A new answer is one entry here and its typed attribute on ``Answers`` (a unit test
holds the two equal). This module is data: standard library and ``base.choices``
only, so the parser, the headless path and the wizard's first paint all read it.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import Iterable
from dataclasses import dataclass

from sandbox_setup.base.choices import (
    SCOPE_REACH,
    Choice,
    InnerSandbox,
    Mode,
    Network,
    SettingsScope,
    values,
)


class Kind(enum.Enum):
    """How the operator gives an answer on the command line."""

    TOGGLE = "toggle"  # --flag: off unless given (an optional --no-flag pair turns it off)
    TEXT = "text"  # --flag VALUE
    LIST = "list"  # --flag VALUE, repeatable, with its --no-flag VALUE pair
    CHOICE = "choice"  # --flag one of its choices
    RECORD = "record"  # no flag: written by the wizard or the apply (the file only)


class Value(enum.Enum):
    """What the answers file holds for it (and what a flag's text becomes)."""

    BOOL = "bool"
    TEXT = "text"
    PATH = "path"  # an absolute path
    PATHS = "paths"  # a list of absolute paths
    STRINGS = "strings"  # a list of strings
    PORTS = "ports"  # a list of port numbers
    CHOICE = "choice"  # one of the field's choices
    OCTAL = "octal"  # a file mode, written "0750"
    TIMESTAMP = "timestamp"  # a date and time with its offset
    LIMITS = "limits"  # the [limits] table


class Control(enum.Enum):
    """What the answer is on the wizard's details step, for its words in messages."""

    TICK = "tick"  # a tick box: "pass --flag" is "tick 'its label'"
    FIELD = "field"  # a text field: "pass --flag VALUE" is "enter VALUE in the field"
    CHOICE = "choice"  # a choice: "--flag none" is "the noun 'none'"
    NAMED = "named"  # elsewhere in the wizard: only named


ALL_MODES = frozenset(Mode)
SEPARATE_AGENT = frozenset((Mode.SANDBOX, Mode.USER))


@dataclass(frozen=True)
class AnswerField:
    """One answer. ``key``: the ``Answers`` attribute and the answers file's key."""

    key: str
    kind: Kind
    value: Value
    flag: str | None = None  # "--workspace"; None for a record
    metavar: str | None = None
    help: str | None = None
    choice: type[Choice] | None = None  # a choice's values
    # The thing one value is, in messages: "--no-workspace DIR: remove this workspace",
    # and the wizard's "workspace /x: ..." for "--workspace /x: ...".
    noun: str | None = None
    # The wizard's words for it (``control`` says which kind of words they are).
    words: str | None = None
    control: Control = Control.NAMED
    # On the wizard's details step, a tick box: its control's id, the field's title and
    # the box's text (the step lays these out by their id; one it does not place by
    # hand is added at the end of the form, in the modes that hold it).
    form_id: str | None = None
    title: str | None = None
    tick: str | None = None
    # A toggle's --no-... pair (the help; None: it has none).
    off_help: str | None = None
    always_written: bool = False  # written to the file even at its default
    # The modes whose setups hold it (the wizard drops it in the others).
    modes: frozenset[Mode] = ALL_MODES
    allowlist: bool = False  # also only with the allowlist network (or user mode's wall)
    needs: str | None = None  # only while this toggle's key is on

    @property
    def dest(self) -> str:
        """The argparse attribute of its flag."""
        assert self.flag is not None
        return _dest(self.flag)

    @property
    def off_flag(self) -> str | None:
        """Its --no-... flag: every list has one, a toggle when it says so."""
        if self.flag is None or (self.kind is not Kind.LIST and self.off_help is None):
            return None
        return "--no-" + self.flag[2:]

    @property
    def off_dest(self) -> str | None:
        """The argparse attribute of its --no-... flag."""
        return None if self.off_flag is None else _dest(self.off_flag)

    def flags(self) -> tuple[str, ...]:
        """Its flags, the --no-... pair included."""
        return tuple(f for f in (self.flag, self.off_flag) if f is not None)

    def options(self) -> tuple[tuple[str, str], ...]:
        """``(flag, argparse attribute)`` of each of its flags."""
        return tuple((flag, _dest(flag)) for flag in self.flags())


def _dest(flag: str) -> str:
    """The attribute argparse stores ``--a-flag`` under (``a_flag``)."""
    return flag.removeprefix("--").replace("-", "_")


ANSWER_FIELDS: tuple[AnswerField, ...] = (
    AnswerField(
        "mode",
        Kind.CHOICE,
        Value.CHOICE,
        "--mode",
        help="sandbox, user or unsafe",
        choice=Mode,
        words="the path (sandbox, user or unsafe)",
        always_written=True,
    ),
    AnswerField(
        "workspaces",
        Kind.LIST,
        Value.PATHS,
        "--workspace",
        "DIR",
        "repeatable",
        noun="workspace",
        words="the workspaces field",
        control=Control.FIELD,
        always_written=True,
    ),
    AnswerField(
        "agent_user",
        Kind.TEXT,
        Value.TEXT,
        "--agent-user",
        "NAME",
        "default: claude-agent",
        noun="agent user",
        words="the agent user field",
        control=Control.FIELD,
        always_written=True,
    ),
    AnswerField(
        "claude",
        Kind.TEXT,
        Value.PATH,
        "--claude",
        "PATH",
        "the Claude Code binary",
        noun="Claude Code",
        words="the Claude Code field",
        control=Control.FIELD,
    ),
    AnswerField(
        "settings_scope",
        Kind.CHOICE,
        Value.CHOICE,
        "--settings-scope",
        help=(
            f"where Claude's settings go: managed ({SCOPE_REACH['managed']}) or user "
            f"({SCOPE_REACH['user']}); default managed in sandbox and user modes"
        ),
        choice=SettingsScope,
        noun="settings scope",
        words="the settings scope",
        control=Control.CHOICE,
    ),
    AnswerField(
        "inner_sandbox",
        Kind.CHOICE,
        Value.CHOICE,
        "--inner-sandbox",
        help="default: from the probes",
        choice=InnerSandbox,
        noun="inner sandbox",
        words="the inner sandbox choice",
        control=Control.CHOICE,
    ),
    AnswerField(
        "network",
        Kind.CHOICE,
        Value.CHOICE,
        "--network",
        help="sandbox mode; default: allowlist",
        choice=Network,
        noun="network",
        words="the network choice",
        control=Control.CHOICE,
        modes=frozenset((Mode.SANDBOX,)),
    ),
    AnswerField(
        "allowed_domains",
        Kind.LIST,
        Value.STRINGS,
        "--allow-domain",
        "PATTERN",
        "with --network allowlist, and in user mode (through its session proxy where "
        "Landlock ABI >= 4 confines the network): also allow example.com, "
        "*.example.com[:PORT] (repeatable)",
        noun="allowed domain",
        words="the allowed domains field",
        control=Control.FIELD,
        modes=SEPARATE_AGENT,
        allowlist=True,
    ),
    AnswerField(
        "loopback_ports",
        Kind.LIST,
        Value.PORTS,
        "--allow-loopback-port",
        "PORT",
        "expose this TCP port of the host's loopback inside the sandbox; in user mode, "
        "let the agent connect to it where Landlock ABI >= 4 confines the network (repeatable)",
        noun="loopback port",
        words="the loopback ports field",
        control=Control.FIELD,
        modes=SEPARATE_AGENT,
        allowlist=True,
    ),
    AnswerField(
        "pass_env",
        Kind.LIST,
        Value.STRINGS,
        "--pass-env",
        "NAME",
        "pass this variable of your environment to Claude, beyond the defaults (repeatable)",
        noun="variable",
        words="the variables to pass field",
        control=Control.FIELD,
    ),
    AnswerField(
        "create_workspaces",
        Kind.TOGGLE,
        Value.BOOL,
        "--create-workspace",
        help="create a --workspace that does not exist, as a step of the plan (owner: you, "
        "mode 0750, unless --workspace-owner/--workspace-mode say otherwise; --undo removes "
        "it while it is empty)",
        words="'Create it' under 'A workspace that does not exist yet'",
        control=Control.TICK,
        modes=SEPARATE_AGENT,
        form_id="create-workspace",
        title="A workspace that does not exist yet",
        tick="Create it (a step of the plan you review)",
    ),
    AnswerField(
        "workspace_owner",
        Kind.TEXT,
        Value.TEXT,
        "--workspace-owner",
        "NAME",
        "with --create-workspace: the account that owns it (never the agent)",
        words="the new workspace's owner field",
        control=Control.FIELD,
        modes=SEPARATE_AGENT,
        needs="create_workspaces",
    ),
    AnswerField(
        "workspace_mode",
        Kind.TEXT,
        Value.OCTAL,
        "--workspace-mode",
        "MODE",
        "with --create-workspace: its mode, e.g. 0750 (default) or 0755",
        words="the new workspace's mode field",
        control=Control.FIELD,
        modes=SEPARATE_AGENT,
        needs="create_workspaces",
    ),
    AnswerField(
        "reuse_account",
        Kind.TOGGLE,
        Value.BOOL,
        "--reuse-account",
        help="let the existing --agent-user account be the agent (every rule still applies)",
        words="'Reuse an existing account'",
        control=Control.TICK,
        modes=SEPARATE_AGENT,
        form_id="reuse-account",
        title="Existing account",
        tick="Reuse an existing account (it must pass every rule)",
    ),
    AnswerField(
        "include_private",
        Kind.TOGGLE,
        Value.BOOL,
        "--include-private",
        help="let workspace ACLs open files that are private to their owner",
        words="'Include private files'",
        control=Control.TICK,
        modes=SEPARATE_AGENT,
        form_id="include-private",
        title="Private files in the workspaces",
        tick="Include private files (workspace ACLs open files private to their owner)",
    ),
    AnswerField(
        "install_claude_shim",
        Kind.TOGGLE,
        Value.BOOL,
        "--install-claude-shim",
        help="route root's `claude` on PATH through sandbox-launch",
        words="'Route root's claude through sandbox-launch'",
        control=Control.TICK,
        off_help="remove the claude shim an earlier apply of this setup installed (--undo puts "
        "it back)",
        modes=SEPARATE_AGENT,
        form_id="install-shim",
        title="root's claude command",
        tick="Route root's claude through sandbox-launch (a shim on root's PATH)",
    ),
    AnswerField(
        "apparmor_bwrap_profile",
        Kind.TOGGLE,
        Value.BOOL,
        "--apparmor-bwrap-profile",
        help="Ubuntu 23.10+: install and load an AppArmor profile that lets the probed bwrap "
        "create user namespaces (/etc/apparmor.d/sandbox-setup-bwrap; --undo removes it)",
        words="the AppArmor profile for bwrap (from saved answers)",
        form_id="apparmor-profile",
        title="AppArmor profile for bwrap (Ubuntu's user-namespace restriction)",
        tick="Install an AppArmor profile that lets bwrap create user namespaces",
    ),
    AnswerField(
        "copy_login",
        Kind.TOGGLE,
        Value.BOOL,
        "--copy-login",
        help="copy your Claude login to the agent user",
        words="'Copy my Claude login'",
        control=Control.TICK,
        always_written=True,
        modes=SEPARATE_AGENT,
        form_id="copy-login",
        title="Claude login",
        tick="Copy my Claude login to the agent user",
    ),
    AnswerField(
        "accept_unsafe_root",
        Kind.TOGGLE,
        Value.BOOL,
        "--accept-unsafe-root",
        help="required with --mode unsafe: run Claude Code as root with no OS sandbox",
        words="the acceptance phrase",
        always_written=True,
        modes=frozenset((Mode.UNSAFE,)),
    ),
    AnswerField("limits", Kind.RECORD, Value.LIMITS, modes=SEPARATE_AGENT),
    AnswerField("accepted_by", Kind.RECORD, Value.TEXT, modes=frozenset((Mode.UNSAFE,))),
    AnswerField("accepted_at", Kind.RECORD, Value.TIMESTAMP, modes=frozenset((Mode.UNSAFE,))),
)


def flagged(fields: Iterable[AnswerField] = ANSWER_FIELDS) -> tuple[AnswerField, ...]:
    """The fields the command line sets (all but the records)."""
    return tuple(f for f in fields if f.flag is not None)


def add_answer_options(
    group: argparse._ArgumentGroup, fields: Iterable[AnswerField] = ANSWER_FIELDS
) -> None:
    """The fields' options, in their order; the lists' --no-... pairs follow the last
    list, a toggle's pair follows it."""
    ordered = flagged(fields)
    lists = [f for f in ordered if f.kind is Kind.LIST]
    for field in ordered:
        _add(group, field)
        if lists and field is lists[-1]:
            for each in lists:
                group.add_argument(
                    each.off_flag or "",
                    action="append",
                    default=[],
                    metavar=each.metavar,
                    help=f"remove this {each.noun} from the saved setup's list (repeatable)",
                )
        elif field.kind is Kind.TOGGLE and field.off_flag is not None:
            group.add_argument(field.off_flag, action="store_true", help=field.off_help)


def _add(group: argparse._ArgumentGroup, field: AnswerField) -> None:
    flag = field.flag or ""
    if field.kind is Kind.TOGGLE:
        group.add_argument(flag, action="store_true", help=field.help)
    elif field.kind is Kind.LIST:
        group.add_argument(
            flag, action="append", default=[], metavar=field.metavar, help=field.help
        )
    elif field.kind is Kind.CHOICE:
        assert field.choice is not None
        group.add_argument(flag, choices=values(field.choice), help=field.help)
    else:
        group.add_argument(flag, metavar=field.metavar, help=field.help)


def option_words(fields: Iterable[AnswerField], control: Control, attribute: str) -> dict[str, str]:
    """``{flag: words}`` of the fields shown as ``control`` on the details step;
    ``attribute``: ``"words"`` (how the wizard names it) or ``"noun"``."""
    return {
        f.flag: getattr(f, attribute)
        for f in flagged(fields)
        if f.flag is not None and f.control is control and getattr(f, attribute) is not None
    }


def value_nouns(fields: Iterable[AnswerField] = ANSWER_FIELDS) -> dict[str, str]:
    """``{flag: noun}`` of the options that take a value the operator types."""
    return {
        f.flag: f.noun
        for f in flagged(fields)
        if f.flag is not None and f.noun is not None and f.kind in (Kind.TEXT, Kind.LIST)
    }
