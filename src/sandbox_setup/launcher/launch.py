"""What a launch will do, as one typed value: :class:`Launch`.

The pipeline's stages (:mod:`sandbox_setup.launcher.main`) build it, each adding what
it knows; the launch notice, ``--dry-run`` and the golden tests render it. Its parts
stay typed to the end: the command as its parts (:class:`Command`, never an argv
joined and split again), the notes and warnings as :class:`Note` values (added by the
stage that knows them, never found or removed by their words), the notice as its
facts (:class:`sandbox_setup.launcher.notice.Notice`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox_setup.launcher.notice import Notice
    from sandbox_setup.launcher.user.landlock_plan import LandlockPlan
    from sandbox_setup.policy.credentials import GatewaySpec


class Topic(enum.Enum):
    """What a note or warning is about (the stage that adds it)."""

    ENVIRONMENT = "environment"  # [env] pass, the caller's variables
    GATEWAY = "gateway"  # the session's API gateway, credentials
    SANDBOX = "sandbox"  # bwrap and its gate
    NETWORK = "network"  # the network, the egress proxy, exposed ports
    LANDLOCK = "landlock"  # user mode's walls
    SESSION = "session"  # the session: its terminal, keyring, pid namespace
    LIMITS = "limits"  # the containment's limits (cgroups, RLIMIT_NPROC)
    UNSAFE = "unsafe"  # unsafe mode
    REVIEW = "review"  # --run's review program


@dataclass(frozen=True, slots=True)
class Note:
    """One line ``--dry-run`` shows (``note: TEXT``) or, as a warning, stderr shows."""

    topic: Topic
    text: str

    def __str__(self) -> str:
        return self.text


def notes(topic: Topic, texts: Sequence[str]) -> tuple[Note, ...]:
    """``texts`` as notes about ``topic`` (the empty ones left out)."""
    return tuple(Note(topic, text) for text in texts if text)


@dataclass(frozen=True, slots=True)
class Command:
    """The command, in the parts each stage gives; :attr:`argv` joins them, once, for
    ``exec`` and the printouts. Each part is kept apart, so no stage ever has to find
    another's in a joined argv.

    In the order they run: ``limits`` (the containment's prefix: systemd-run, unshare,
    prlimit, each with its own ``--``), ``drop`` (setpriv and its options; the join adds
    ``--pdeathsig KILL`` where ``die_with_parent``, then ``--``), ``reaper`` (user mode's
    session: setsid and the reaping shell), ``wrapper`` (what runs as the agent before
    the program: bwrap and the gate, or user mode's Landlock helper), ``program``
    (Claude, or ``--run``'s program, and its arguments).
    """

    program: tuple[str, ...]
    drop: tuple[str, ...] = ()
    wrapper: tuple[str, ...] = ()
    limits: tuple[str, ...] = ()
    reaper: tuple[str, ...] = ()
    die_with_parent: bool = False

    @property
    def argv(self) -> tuple[str, ...]:
        drop: tuple[str, ...] = ()
        if self.drop:
            dies = ("--pdeathsig", "KILL") if self.die_with_parent else ()
            drop = (*self.drop, *dies, "--")
        return (*self.limits, *drop, *self.reaper, *self.wrapper, *self.program)

    def each_part(self, change: Callable[[Sequence[str]], Sequence[str]]) -> Command:
        """Every part through ``change`` (the session runner fills the placeholders)."""
        return replace(
            self,
            program=tuple(change(self.program)),
            drop=tuple(change(self.drop)),
            wrapper=tuple(change(self.wrapper)),
            limits=tuple(change(self.limits)),
            reaper=tuple(change(self.reaper)),
        )


@dataclass(frozen=True, slots=True)
class Launch:
    """What to start: exec'd directly (unsafe), or run by the session runner
    (:mod:`sandbox_setup.launcher.session.runner`), ``supervised`` (sandbox) meaning
    verified before Claude is released.

    ``new_session``: dev.tty.legacy_tiocsti is on, so the agent must not hold the
    operator's terminal (user mode: the session runner gives it a pty of its own).
    """

    command: Command
    env: Mapping[str, str]
    cwd: str | None
    supervised: bool
    new_session: bool = False
    warnings: tuple[Note, ...] = ()
    notes: tuple[Note, ...] = ()
    # Names in ``env`` that came from the caller (``[env] pass``): their values are
    # never printed. ``notice``: the launch's one stderr line, as its facts
    # (sandbox_setup.launcher.notice).
    passed: tuple[str, ...] = ()
    notice: Notice | None = None
    # User mode's walls: what the session's Landlock helper applies and the runner
    # verifies before release, and its network namespace and proxy (sandbox_setup.
    # launcher.user.landlock_plan); None: neither Landlock nor a namespace of its own.
    landlock: LandlockPlan | None = None
    # The session's API gateway (docs/design.md invariant 17): served by the egress proxy,
    # holding the credentials ``env`` has placeholders for; None: none this session.
    gateway: GatewaySpec | None = None
    # Sandbox mode: bwrap detaches the sandbox into a session of its own (--new-session,
    # where TIOCSTI is on) and makes it a network namespace (--unshare-net): what the
    # supervisor then expects and verifies.
    bwrap_new_session: bool = False
    bwrap_unshare_net: bool = False

    @property
    def argv(self) -> tuple[str, ...]:
        return self.command.argv

    @property
    def warning(self) -> str | None:
        """The warnings as stderr shows them, one a line; None without any."""
        return "\n".join(w.text for w in self.warnings) or None

    def adding(self, notes: Sequence[Note] = (), warnings: Sequence[Note] = ()) -> Launch:
        """This launch with more notes and warnings (a later stage's)."""
        return replace(self, notes=(*self.notes, *notes), warnings=(*self.warnings, *warnings))
