"""The headless path: ``sandbox-setup --headless``.

``run_headless(args)``: answers from flags (``--mode ...``) or a file
(``--answers FILE``), live probes (as the agent user when it exists on the live
system), then :func:`sandbox_setup.configure.plan.build_plan`. Without ``--yes`` it prints the
plan and writes nothing; ``--dry-run`` adds every unified diff and command (and
never writes, even with ``--yes``); ``--json`` prints the actions and whether
anything changed (or would change), for configuration-management tools.

Data goes to stdout, diagnostics to stderr. ``--mode unsafe`` without
``--accept-unsafe-root`` is refused with exit 3 (docs/design.md: "refused: unsafe
without acceptance"), before any probe runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from sandbox_setup.base import remedies
from sandbox_setup.base.answer_fields import ANSWER_FIELDS, AnswerField, Kind, Value, flagged
from sandbox_setup.base.apparmor import PROFILE_FILE
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.console import OutputError
from sandbox_setup.base.errors import InputError, access_denied
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.launcher_config import normal_path
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import printable, printable_diff_line, printable_lines
from sandbox_setup.base.remedies import undo_commands
from sandbox_setup.checks.model import Report
from sandbox_setup.configure import interrupts
from sandbox_setup.configure.answers import Answers, load_answers, validate_answers
from sandbox_setup.configure.apparmor import APPARMOR_KIND
from sandbox_setup.configure.apply import apply_plan
from sandbox_setup.configure.claude_binary import locate_claude
from sandbox_setup.configure.history import open_applies
from sandbox_setup.configure.host_facts import gather_host_facts
from sandbox_setup.configure.plan import build_plan

if TYPE_CHECKING:
    from sandbox_setup.configure.actions import Action
    from sandbox_setup.configure.apply import ApplyResult, ApplySeams
    from sandbox_setup.configure.plan import Plan
from sandbox_setup.configure.probes import choose_probe_user, run_live_checks
from sandbox_setup.configure.state_trust import trusted_answers_path
from sandbox_setup.policy.domains import parse_port
from sandbox_setup.policy.limits import LIST_MAXIMA, over_maximum
from sandbox_setup.policy.names import shown
from sandbox_setup.policy.new_workspace import parse_mode

T = TypeVar("T")


def root_flag(layout: Layout) -> str:
    """`` --root DIR`` for a command to paste, when not the live system."""
    return remedies.root_flag(str(layout.root))


def layout_from_args(args: argparse.Namespace) -> Layout:
    root = Path(args.root or "/")
    if not root.is_dir():
        raise InputError(f"--root {root}: not a directory")
    return Layout.for_root(root)


def _target_path(value: str, flag: str, layout: Layout) -> PurePosixPath:
    if value.startswith("/"):
        return PurePosixPath(normal_path(value))
    if layout.live:
        return PurePosixPath(os.path.abspath(value))
    raise InputError(f"{flag} {value!r}: must be an absolute path with --root")


def answers_from_args(args: argparse.Namespace, layout: Layout) -> Answers:
    """The Answers the flags (or ``--answers FILE``) describe; with neither ``--mode``
    nor ``--answers``, the saved answers of this setup changed by the flags given."""
    if args.answers:
        given = [
            flag
            for field in flagged(ANSWER_FIELDS)
            for flag, dest in field.options()
            if getattr(args, dest, None)
        ]
        if given:
            raise InputError(
                f"--answers {args.answers} cannot be combined with {', '.join(given)}; "
                "edit the answers file instead"
            )
        # Root replays it: it must pass the trust rule first (exit 3 otherwise).
        return load_answers(trusted_answers_path(layout, Path(args.answers)))
    if not args.mode:
        return _changed(saved_answers(layout), args, layout)
    try:
        mode = Mode(args.mode)
    except ValueError:
        raise InputError(f"--mode {args.mode!r}: expected sandbox, user or unsafe") from None
    if args.accept_unsafe_root and mode is not Mode.UNSAFE:
        raise InputError(
            f"--accept-unsafe-root only applies to --mode unsafe (this is --mode {mode}); drop it"
        )
    return _changed(Answers(mode=mode), args, layout)


def saved_answers(layout: Layout) -> Answers:
    """The answers the last apply of this setup saved (``answers.toml`` beside the
    launcher config); none is an input error naming what is missing."""
    path = layout.real(layout.answers)
    try:
        exists = path.exists()
    except PermissionError as exc:  # its directory at mode 0000 or another owner's
        raise access_denied(path.parent, exc, "rwx") from None
    if not exists:
        raise InputError(
            f"--headless needs --mode sandbox|user|unsafe or --answers FILE: there is no saved "
            f"setup to start from ({layout.answers} does not exist"
            + ("" if layout.live else f" under {layout.root}")
            + ")"
        )
    # Root replays it: it must pass the trust rule first (exit 3 otherwise).
    return load_answers(trusted_answers_path(layout, path))


def _edited(items: tuple[T, ...], added: list[T], removed: list[T]) -> tuple[T, ...]:
    """``items`` plus ``added``, minus ``removed``, in order, each once."""
    gone = set(removed)
    return tuple(item for item in dict.fromkeys((*items, *added)) if item not in gone)


def _not_held(flag: str, removed: Sequence[object], held: Sequence[object]) -> None:
    """Exit 2 for a value ``flag`` would take out that the setup does not hold."""
    for value in removed:
        if value not in held:
            have = ", ".join(shown(str(v)) for v in held[:10]) or "none"
            raise InputError(
                f"{flag} {shown(str(value))}: the setup does not have it (it has: {have}); "
                "check the spelling"
            )


def _changed(base: Answers, args: argparse.Namespace, layout: Layout) -> Answers:
    """``base`` with what the flags say: a value given replaces it, a list option adds
    to the list and its ``--no-...`` pair takes out of it, a tick box given turns on
    (and its ``--no-...`` pair, where it has one, off). Each answer's flag and kind
    come from its declaration (:mod:`sandbox_setup.base.answer_fields`)."""
    fields = flagged(ANSWER_FIELDS)
    for field in fields:
        if field.kind is Kind.LIST and field.key in LIST_MAXIMA:
            problem = over_maximum(field.key, getattr(args, field.dest))
            if problem is not None:
                raise InputError(f"{field.flag} (repeated): {problem}")
    if args.accept_unsafe_root and base.mode is not Mode.UNSAFE:
        raise InputError(
            f"--accept-unsafe-root only applies to --mode unsafe (the saved setup is "
            f"{base.mode}); drop it"
        )
    changes: dict[str, Any] = {}
    for field in fields:
        if field.key == "mode":
            continue  # --mode starts the answers afresh (answers_from_args)
        given = getattr(args, field.dest)
        held = getattr(base, field.key)
        off = field.off_flag
        if field.kind is Kind.TOGGLE:
            unset = bool(getattr(args, field.off_dest or "")) if off else False
            if given and unset:
                raise InputError(f"{field.flag} and {off}: choose one")
            changes[field.key] = (held or bool(given)) and not unset
        elif field.kind is Kind.LIST:
            assert off is not None
            added = [_flag_value(field, v, field.flag or "", layout) for v in given]
            removed = [
                _flag_value(field, v, off, layout) for v in getattr(args, field.off_dest or "")
            ]
            # A --no-... value the setup does not hold is a typo, never a silent no-op.
            _not_held(off, removed, (*held, *added))
            changes[field.key] = _edited(held, added, removed)
        elif given is not None:  # an explicit empty value is invalid input, not the default
            changes[field.key] = _flag_value(field, given, field.flag or "", layout)
    if (args.workspace_owner is not None or args.workspace_mode is not None) and not (
        args.create_workspace or base.create_workspaces
    ):
        raise InputError(
            "--workspace-owner and --workspace-mode say how --create-workspace makes a "
            "missing workspace; add --create-workspace"
        )
    return replace(base, **changes)


def _flag_value(field: AnswerField, text: str, flag: str, layout: Layout) -> object:
    """The answer one flag's ``text`` gives ``field`` (exit 2 naming ``flag`` if none)."""
    if field.value in (Value.PATH, Value.PATHS):
        return _target_path(text, flag, layout)
    if field.value is Value.PORTS:
        return parse_port(text, flag)
    if field.value is Value.CHOICE:
        assert field.choice is not None
        return field.choice(text)
    if field.value is Value.OCTAL:
        parsed = parse_mode(text)
        if isinstance(parsed, str):
            raise InputError(f"{flag}: {parsed}")
        return parsed
    return text


def probe_user(answers: Answers, layout: Layout) -> str | None:
    """The agent when it exists on the live system, else an unprivileged stand-in
    (see :mod:`sandbox_setup.configure.probes`); the operator in unsafe mode."""
    return choose_probe_user(answers.mode, answers.agent_user, layout)[0]


def _probe_claude(answers: Answers, layout: Layout) -> str | None:
    """The Claude binary the probes run: the target's, resolved inside the root (an
    absolute symlink there is the target system's path). Under ``--root`` never the
    host's: with none given, the one the plan will find in the root, or a path there
    that does not exist (the probes then say "not found", as the plan will)."""
    target = answers.claude
    if target is None:
        if layout.live:
            return None  # the checks search this host, which is the target
        target = locate_claude(layout) or PurePosixPath("/usr/local/bin/claude")
    return str(layout.real(layout.resolve(target)))


def gather_report(answers: Answers, layout: Layout, timeout: float) -> Report:
    claude = _probe_claude(answers, layout)
    return run_live_checks(
        as_user=probe_user(answers, layout),
        root=layout.root,
        timeout=timeout,
        claude=claude,
        agent_user=answers.agent_user or None,
    )


def _print_plan(plan: Plan, *, dry_run: bool) -> None:
    # A diff shows what a file holds now (the agent's own settings files among them),
    # an action names paths: each line printable (invariant 15).
    out = sys.stdout
    root = printable(str(plan.layout.root))
    print(f"Plan for mode {plan.answers.mode} (root {root}):", file=out)
    for action in plan.actions:
        mark = "change" if action.is_change() else "ok    "
        print(f"  [{mark}] {printable_lines(action.describe())}", file=out)
        if dry_run and action.is_change():
            for argv in action.commands():
                print(f"      $ {printable(' '.join(argv))}", file=out)
            diff = action.diff()
            if diff:
                for line in diff.rstrip("\n").split("\n"):
                    print(f"      {printable_diff_line(line)}", file=out)
    for line in plan.network:
        print(f"  network: {printable_lines(line)}", file=out)
    for note in plan.notes:
        print(f"note: {printable_lines(note)}", file=sys.stderr)
    _print_warnings(plan)


def _print_warnings(plan: Plan) -> None:
    for warning in plan.warnings:
        print(f"warning: {printable_lines(warning)}", file=sys.stderr)


REPROBED = ("userns.policy", "bwrap.sandbox")


def reprobe_after_load(
    plan: Plan, changed: list[Action], seams: ApplySeams | None, timeout: float
) -> list[str]:
    """Once the apply loaded the AppArmor profile for bwrap, what bwrap can do now
    (``userns.policy``, ``bwrap.sandbox`` re-run live, as the plan's probes ran): a line
    each. [] when nothing was loaded (not changed, or written under ``--root``)."""
    loaded = plan.layout.live or (seams is not None and seams.apparmor_parser is not None)
    if not loaded or not any(a.kind == APPARMOR_KIND for a in changed):
        return []
    report = run_live_checks(
        REPROBED,
        as_user=probe_user(plan.answers, plan.layout),
        root=plan.layout.root,
        timeout=timeout,
    )
    return [
        f"re-probed after loading {PROFILE_FILE}: {f.id} {f.status}: {f.summary}"
        + (f" Remedy: {f.remedy}" if f.status != "pass" and f.remedy else "")
        for f in report.findings
    ]


def run_headless(args: argparse.Namespace, seams: ApplySeams | None = None) -> int:
    """``--headless``: plan from the answers, then apply with ``--yes``. ``seams``: see
    :class:`~sandbox_setup.configure.apply.ApplySeams` (a test's; none otherwise).

    SIGINT, SIGTERM and SIGHUP end it with exit 130 and one line from the start (the
    probes included), not only once the apply runs: until the apply is done, where
    the apply itself rolls back first."""
    with interrupts.handled():
        planned = _plan_and_apply(args, seams)
    if isinstance(planned, int):
        return planned
    result, actions, plan, layout = planned
    reprobed = reprobe_after_load(
        plan, result.changed_steps, seams, float(getattr(args, "timeout", 10.0) or 10.0)
    )
    for line in reprobed:
        print(f"sandbox-setup: {printable_lines(line)}", file=sys.stderr)
    try:
        _print_result(result, actions, plan, layout, reprobed, as_json=bool(args.json))
    except OutputError as exc:
        # The apply is done: its exit code says so, and one line says what was lost.
        print(
            f"sandbox-setup: applied; {exc}; to see the setup: {remedies.audit(str(layout.root))}",
            file=sys.stderr,
        )
    return int(ExitCode.OK)


def _plan_and_apply(
    args: argparse.Namespace, seams: ApplySeams | None
) -> int | tuple[ApplyResult, list[dict[str, Any]], Plan, Layout]:
    """The plan (printed, with its exit code, without ``--yes``), or what the apply did."""
    layout = layout_from_args(args)
    answers = answers_from_args(args, layout)
    source = str(args.answers) if args.answers else "command line"
    validate_answers(answers, layout, source)  # fail fast, before the probes
    report = gather_report(answers, layout, float(getattr(args, "timeout", 10.0) or 10.0))
    facts = gather_host_facts(report, layout, answers)  # the live host, read once, here
    plan = build_plan(report, answers, layout, source, facts=facts)
    apply = bool(args.yes) and not args.dry_run
    actions = [
        {**a.to_json(), **({"diff": a.diff()} if args.dry_run else {})} for a in plan.actions
    ]
    if not apply:
        if args.json:
            data = {
                "schema": 1,
                "mode": str(plan.answers.mode),
                "applied": False,
                "changed": any(a["change"] for a in actions),
                "actions": actions,
                "notes": plan.notes,
                "warnings": plan.warnings,
                "network": plan.network,
            }
            print(json.dumps(data, indent=2))
        else:
            _print_plan(plan, dry_run=bool(args.dry_run))
        print("sandbox-setup: nothing written; add --yes to apply", file=sys.stderr)
        return int(ExitCode.OK)

    # A journal that is not whole (docs/design.md invariant 12's record of what root did)
    # is refused (exit 2, naming it) before this apply adds to it.
    open_applies(layout)
    if not args.json:
        _print_warnings(plan)

    def progress(action: Action, status: str, description: str) -> None:
        if status == "running" and not args.json:
            print(f"  {printable_lines(description)}", file=sys.stderr)

    result = apply_plan(plan, progress=progress, seams=seams)
    return result, actions, plan, layout


def _print_result(
    result: ApplyResult,
    actions: list[dict[str, Any]],
    plan: Plan,
    layout: Layout,
    reprobed: list[str],
    *,
    as_json: bool,
) -> None:
    if as_json:
        data = {
            "schema": 1,
            "mode": str(plan.answers.mode),
            "applied": True,
            "changed": bool(result.changed),
            "changed_actions": result.changed,
            "unchanged_actions": result.unchanged,
            "actions": actions,
            "warnings": plan.warnings,
            "transaction": result.transaction,
            "reprobe": reprobed,
        }
        print(json.dumps(data, indent=2))
    elif result.changed:
        for line in result.changed:
            print(f"changed: {printable_lines(line)}")
        print(f"Applied: {len(result.changed)} changed, {len(result.unchanged)} unchanged.")
        for what, command in undo_commands(len(open_applies(layout)), str(layout.root)):
            print(f"{what}: {command}")
    else:
        print("No change: the system already matches the answers.")
