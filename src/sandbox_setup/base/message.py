"""Messages for people whose references to the operator's options are typed values.

The core's input errors and refusals often tell the operator what to do about an
option: "install it or pass --claude PATH", "drop --copy-login", "choose
--inner-sandbox off". The command line says a flag; the wizard has no flags, only
fields on its details step. So such a message is not one string but a sequence of
parts: prose (``str``) and :class:`Ref` values, each naming an :class:`Option`, what
the operator is asked to do with it (:class:`Act`) and the value, if any. Each face
renders the parts in its own words: :func:`cli_text` here (the flag, spelled by
:data:`CLI_FLAGS`), the wizard's in :mod:`sandbox_setup.commands.wording` (the
field). Nothing reads a rendered message back: the wizard's field at fault is the
message's :attr:`Message.option`, never a match on its text (docs/design.md
invariant 19).

A :class:`Message` is a ``str`` (its command-line text, so ``f"{source}: {problem}"``,
logs and ``--json`` keep working unchanged) that also carries its parts; an error
raised with one (:class:`sandbox_setup.base.errors.SetupError`) keeps them for the
face that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from sandbox_setup.base import remedies


class Option(Enum):
    """An option of the operator's answers a message can name; the value is its name
    on the command line without the dashes (the CLI's spelling is :data:`CLI_FLAGS`)."""

    MODE = "mode"
    WORKSPACE = "workspace"
    CREATE_WORKSPACE = "create-workspace"
    AGENT_USER = "agent-user"
    REUSE_ACCOUNT = "reuse-account"
    CLAUDE = "claude"
    INNER_SANDBOX = "inner-sandbox"
    SETTINGS_SCOPE = "settings-scope"
    NETWORK = "network"
    ALLOW_DOMAIN = "allow-domain"
    ALLOW_LOOPBACK_PORT = "allow-loopback-port"
    PASS_ENV = "pass-env"
    COPY_LOGIN = "copy-login"
    INSTALL_CLAUDE_SHIM = "install-claude-shim"
    APPARMOR_BWRAP_PROFILE = "apparmor-bwrap-profile"
    ACCEPT_UNSAFE_ROOT = "accept-unsafe-root"
    AS_USER = "as-user"
    ROOT = "root"
    TIMEOUT = "timeout"


# How the command line spells each option (the CLI's face; the parser declares them).
CLI_FLAGS: dict[Option, str] = {option: f"--{option.value}" for option in Option}


class Act(Enum):
    """What a message asks the operator to do with an option; the value is the
    command line's verb ("" for an option only named: "--allow-domain needs ...")."""

    NAME = ""
    PASS = "pass"
    ADD = "add"
    USE = "use"
    DROP = "drop"
    CHOOSE = "choose"
    # Another value than the one refused ("choose another --agent-user").
    CHOOSE_ANOTHER = "choose another"
    PICK_NEW = "pick a new"
    # The option as given in the answers ("reused: --reuse-account"): the command line
    # names it (no verb); the wizard says its tick box is ticked.
    GIVEN = "given"


@dataclass(frozen=True)
class Ref:
    """One option named in a message: ``act`` it, with ``value`` (a value the message
    gives: "--agent-user alice") or ``metavar`` (a placeholder: "--claude PATH").
    ``capital``: it starts a sentence. ``cli`` is the command line's verb when it says
    it otherwise than ``act`` ("pass that path as", "run with"): the same act."""

    option: Option
    act: Act = Act.NAME
    value: str | None = None
    metavar: str | None = None
    capital: bool = False
    cli: str | None = None


@dataclass(frozen=True)
class Change:
    """A change of the saved setup the message asks for: the options ``refs`` set (each
    a value or a tick) and applied. The command line says it as a command to paste,
    ``{lead}: sandbox-setup --headless --allow-loopback-port 8080 --yes``
    (:func:`sandbox_setup.base.remedies.change_setup`); the wizard, as the fields to
    set on its details step."""

    lead: str
    refs: tuple[Ref, ...]
    root: str = "/"


@dataclass(frozen=True)
class Recheck:
    """Re-running the checks as the agent user, which ``who`` names ("the agent once
    it exists", "that user"): the command line gives the command to paste (as the
    default agent user, ``as_user``); the wizard re-runs its checks itself."""

    who: str
    as_user: str


@dataclass(frozen=True)
class CliOnly:
    """Words only the command line says: how a headless run spells what the rest of
    the message says ("(--network allowlist of a headless apply)", "(or
    accept_unsafe_root = true in answers)"). The wizard leaves them out."""

    parts: tuple[Part, ...]


Part = str | Ref | Change | Recheck | CliOnly


def cli_change(change: Change) -> str:
    """``change`` as its command to paste, the options spelled by :data:`CLI_FLAGS`."""
    words: list[str] = []
    for ref in change.refs:
        words += [CLI_FLAGS[ref.option], *([ref.value] if ref.value else [])]
    return f"{change.lead}: {remedies.change_setup(*words, root=change.root)}"


def cli_recheck(recheck: Recheck) -> str:
    command = remedies.rerun_checks(as_user=recheck.as_user)
    return f"re-check as {recheck.who} (here with the default name): {command}"


def cli_ref(ref: Ref) -> str:
    """``ref`` on the command line: "pass --claude PATH", "--pass-env LD_PRELOAD"."""
    verb = ("" if ref.act is Act.GIVEN else ref.act.value) if ref.cli is None else ref.cli
    words = [w for w in (verb, CLI_FLAGS[ref.option], ref.value, ref.metavar) if w]
    text = " ".join(words)
    return text[:1].upper() + text[1:] if ref.capital else text


def cli_part(part: Part) -> str:
    """One part on the command line."""
    if isinstance(part, str):
        return part
    if isinstance(part, Ref):
        return cli_ref(part)
    if isinstance(part, Change):
        return cli_change(part)
    if isinstance(part, Recheck):
        return cli_recheck(part)
    return cli_text(part.parts)


def cli_text(parts: tuple[Part, ...]) -> str:
    return "".join(cli_part(part) for part in parts)


class Message(str):
    """Text for people (its ``str`` is the command line's) with typed option parts."""

    parts: tuple[Part, ...]
    given: Option | None

    def __new__(cls, *parts: Part, option: Option | None = None) -> Message:
        made = super().__new__(cls, cli_text(parts))
        made.parts = parts
        made.given = option
        return made

    @property
    def option(self) -> Option | None:
        """The option the message concerns: the one given, else the first it names."""
        if self.given is not None:
            return self.given
        return next((part.option for part in self.parts if isinstance(part, Ref)), None)


def _parts(text: str) -> tuple[Part, ...]:
    return text.parts if isinstance(text, Message) else (text,)


def message(*parts: Part | Message, option: Option | None = None) -> Message:
    """A :class:`Message` of ``parts``; a part that is a message gives its parts."""
    flat: list[Part] = []
    for part in parts:
        flat.extend(_parts(part) if isinstance(part, str) else (part,))
    return Message(*flat, option=option)
