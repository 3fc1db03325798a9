"""On request, the AppArmor profile that gives the probed bwrap user namespaces back
(Ubuntu's ``kernel.apparmor_restrict_unprivileged_userns = 1``; the text and what it
grants: :mod:`sandbox_setup.base.apparmor`).

One :class:`AppArmorProfile` action, a :class:`~sandbox_setup.configure.actions.WriteFile`
of kind :data:`APPARMOR_KIND`: the journal records the write, a replaced file is backed
up and ``--undo`` restores it byte for byte (or removes what the apply created). After
the write it loads the profile with ``apparmor_parser -r -W FILE`` and journals an
``apparmor-load`` step, which undo reverts (newest first, so while the file still
exists) with ``apparmor_parser -R FILE``.

The parser is a tool root runs, so it is looked up like the others: in ``/usr/sbin``
then ``/sbin`` of the live system, and refused unless the trust rule
(:func:`~sandbox_setup.policy.trust.untrusted_reason`) accepts it. Under ``--root`` the
profile is written but never loaded: the live kernel is not the target's, and the
target's AppArmor loads ``/etc/apparmor.d`` when it boots (the plan says so and shows the
command). A test steps in with a stand-in parser through
:class:`~sandbox_setup.configure.apply.ApplySeams` (``apparmor_parser``), never the
environment.

Offered where the probes found the restriction (a finding whose cause is
``apparmor-userns-restricted``); installed when the operator asks
(``--apparmor-bwrap-profile``, ``apparmor_bwrap_profile = true``), also where the live
probes did not find it (an image built under ``--root`` on another host), with a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base.apparmor import (
    PARSER,
    PARSER_DIRS,
    PROFILE_FILE,
    SYSCTL_REMEDY,
    attach_problem,
    attaches_to,
    load_args,
    render_profile,
)
from sandbox_setup.base.errors import InputError, RefusedError, SetupError
from sandbox_setup.base.message import Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Report, cause_key
from sandbox_setup.configure import fsops
from sandbox_setup.configure.actions import Action, WriteFile
from sandbox_setup.configure.apparmor_load import LOAD_OP, run_parser
from sandbox_setup.configure.host_facts import SandboxBinary
from sandbox_setup.configure.transaction import Transaction
from sandbox_setup.policy.trust import untrusted_reason

APPARMOR_KIND = "apparmor-profile"
RESTRICTED_CAUSE = "apparmor-userns-restricted"
# The option its messages name (each face words it: base/message.py).
PROFILE_OPTION = Ref(Option.APPARMOR_BWRAP_PROFILE)


def restriction_found(report: Report) -> bool:
    """Did a probe name Ubuntu's user-namespace restriction as what stops bwrap?
    ``userns.policy`` and the ``bwrap.*`` probes speak for bwrap; ``userns.create``
    runs ``unshare``, which the restriction stops even where a profile lets bwrap through."""
    return any(
        cause_key(f) == RESTRICTED_CAUSE and (f.id == "userns.policy" or f.id.startswith("bwrap."))
        for f in report.findings
    )


def find_parser(layout: Layout) -> str | None:
    """The live system's trusted ``apparmor_parser``; None under ``--root`` (never
    loaded there). Refuses (exit 3) a parser root must not run, or none at all."""
    if not layout.live:
        return None
    for directory in PARSER_DIRS:
        path = str(Path(directory) / PARSER)
        if not Path(path).is_file():
            continue
        reason = untrusted_reason(path)
        if reason is not None:
            raise RefusedError(
                f"{path} cannot be trusted ({reason}); root would run it to load the AppArmor "
                "profile. Reinstall it (apt-get install --reinstall apparmor)"
            )
        return path
    raise RefusedError(
        message(
            PROFILE_OPTION,
            f": {PARSER} was not found in {' or '.join(PARSER_DIRS)}, so the profile could "
            "not be loaded; apt-get install apparmor, or drop the option",
        )
    )


@dataclass(eq=False)
class AppArmorProfile(WriteFile):
    """Write the profile whole (root, 0644), then load it with the trusted parser
    (``parser``; None: written, not loaded, as under ``--root``)."""

    parser: str | None = None

    def commands(self) -> list[list[str]]:
        return [[self.parser or PARSER, *load_args(str(self.real))]]

    def apply(self, txn: Transaction) -> None:
        super().apply(txn)
        parser = txn.apparmor_parser or self.parser
        if parser is None:
            return
        argv = [parser, *load_args(str(self.real))]
        done = run_parser(argv)
        if done.returncode != 0:
            raise SetupError(
                f"{' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()}"
            )
        # After the load, not before: a load that failed leaves nothing to unload, and
        # the rollback removes the file.
        state = self.state()
        txn.record(
            {
                "op": LOAD_OP,
                "target": str(self.path),
                "real": str(self.real),
                "parser": parser,
                "sha256": fsops.sha256(state.data if state else None),
            }
        )


def probed_bwrap(found: SandboxBinary) -> str:
    """The bwrap the probes ran (``found``, resolved, as Claude's settings name it)."""
    bwrap = found.path
    if bwrap is None:
        raise RefusedError(
            message(
                PROFILE_OPTION,
                ": no bwrap was found on the probes' PATH, so there is nothing to attach the "
                "profile to; apt-get install bubblewrap",
            )
        )
    problem = attach_problem(bwrap)
    if problem is not None:
        raise InputError(message(PROFILE_OPTION, f": {problem}"))
    return bwrap


def other_profiles_for(layout: Layout, bwrap: str) -> list[str]:
    """The profiles in the target's ``/etc/apparmor.d`` other than ours that attach to
    ``bwrap`` (Ubuntu's ``bwrap-userns-restrict``, enabled by default from 25.04): ours
    beside one would make two attachments to one path."""
    directory = layout.real(PROFILE_FILE.parent)
    found = []
    try:
        entries = sorted(p for p in Path(directory).iterdir() if p.name != PROFILE_FILE.name)
    except OSError:
        return []
    for entry in entries:
        try:
            if not entry.is_file() or entry.stat().st_size > 1 << 20:
                continue
            text = entry.read_text("utf-8", "replace")
        except OSError:
            continue
        if attaches_to(text, bwrap):
            found.append(str(PROFILE_FILE.parent / entry.name))
    return found


def profile_action(layout: Layout, bwrap: str, parser: str | None) -> AppArmorProfile:
    data = render_profile(bwrap)
    return AppArmorProfile(
        layout,
        PROFILE_FILE,
        lambda _current: data,
        owner="root",
        label=f"AppArmor profile granting {bwrap} user namespaces (userns)",
        mode=0o644,
        dir_mode=0o755,
        enforce=True,
        kind=APPARMOR_KIND,
        parser=parser,
    )


def apparmor_actions(
    layout: Layout, report: Report, bwrap_found: SandboxBinary, requested: bool, notes: list[str]
) -> list[Action]:
    """The profile action when requested (appends plan notes); where the probes found
    the restriction and it was not requested, a note offering it."""
    found = restriction_found(report)
    if not requested:
        if found:
            notes.append(
                message(
                    "Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1 stops bwrap here: ",
                    PROFILE_OPTION,
                    f" installs and loads {PROFILE_FILE}, which lets the probed bwrap (only it) "
                    "create user namespaces; any user can run bwrap. ",
                    SYSCTL_REMEDY,
                )
            )
        return []
    if layout.operator.uid != 0:
        raise InputError(
            message(
                PROFILE_OPTION,
                f" writes {PROFILE_FILE} and loads it into the kernel: run the apply as root",
            )
        )
    bwrap = probed_bwrap(bwrap_found)
    others = other_profiles_for(layout, bwrap)
    if others:
        raise RefusedError(
            message(
                PROFILE_OPTION,
                f": {', '.join(others)} already attaches to {bwrap}; {PROFILE_FILE} would "
                "attach a second profile to the same path, which AppArmor refuses at exec. "
                "Where that profile grants userns (Ubuntu's bwrap-userns-restrict does), load "
                f"it instead: {PARSER} {' '.join(load_args(others[0]))}; or drop the option",
            )
        )
    parser = find_parser(layout)
    action = profile_action(layout, bwrap, parser)
    if not found:
        notes.append(
            "the live probes did not find kernel.apparmor_restrict_unprivileged_userns=1 "
            f"stopping bwrap; {PROFILE_FILE} is installed as asked and changes nothing until "
            "that restriction applies"
        )
    if parser is None:
        notes.append(
            message(
                "under ",
                Ref(Option.ROOT),
                f" {PROFILE_FILE} is written, not loaded into this kernel (not the target's): "
                "the target's AppArmor loads /etc/apparmor.d at boot, or run there: "
                f"{PARSER} {' '.join(load_args(str(PROFILE_FILE)))}",
            )
        )
    else:
        notes.append(
            f"{PROFILE_FILE}: {bwrap} may create user namespaces (nothing else changes for "
            "it, flags=(unconfined)); any local user can run bwrap, so any user can again get "
            "a user namespace through it. The apply loads it, then re-probes userns.policy "
            "and bwrap.sandbox; where bwrap works now, plan again for sandbox mode or the "
            "inner sandbox"
        )
    return [action]
