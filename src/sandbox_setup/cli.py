"""``sandbox-setup``: argument parsing and dispatch.

Each path is imported only when chosen, so ``--check``, ``--audit``,
``--headless`` and ``--undo`` never load Textual; only the interactive wizard
(:mod:`sandbox_setup.tui.app`) does.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base import remedies
from sandbox_setup.base.answer_fields import ANSWER_FIELDS, Value, add_answer_options, flagged
from sandbox_setup.base.console import OutputError, prepare_streams
from sandbox_setup.base.crashlog import report_crash
from sandbox_setup.base.errors import SetupError, unreadable
from sandbox_setup.base.exitcodes import EXIT_CODES_HELP, ExitCode
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import printable_lines
from sandbox_setup.policy.names import path_text_problem, shown

if TYPE_CHECKING:
    from sandbox_setup.configure.apply import ApplySeams

VERSION_HELP = "show program's version number and exit"


class _VersionAction(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"sandbox-setup {_version()}")
        parser.exit()


def _version() -> str:
    # why: importlib.metadata (~25 ms) only for --version (see build_parser)
    from sandbox_setup.base.version import package_version

    return package_version()


# The longest per-probe timeout: a day. subprocess and select wait in milliseconds in a
# C int (about 24.8 days); past that every probe failed with OverflowError.
MAX_TIMEOUT = 86400.0


def _timeout(text: str) -> float:
    """A finite number of seconds above 0, at most :data:`MAX_TIMEOUT` (argparse reports
    the error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"{text!r}: must be a finite number of seconds above 0 and at most {MAX_TIMEOUT:g}"
        )
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _option_looking_value(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The first option that was given an option-looking value, as an error, or None.

    argparse drops a ``--`` value (``--root=--``) and stores an empty list where the
    type conversion and the choices check never see it (``--root=--`` became the live
    system, ``--network=--`` a crash), and it takes ``--workspace=-x`` as a value. Every
    option that takes a value is checked here, once, before anything runs. A negative
    number is left to the option's own range check, which names the range.
    """
    for action in parser._actions:  # every option, so a new one is covered too
        if not action.option_strings or action.nargs == 0:
            continue  # positionals (`--check -- ID` is theirs) and flags without a value
        value = getattr(args, action.dest, None)
        given = value if action.default == [] and isinstance(value, list) else [value]
        for item in given:
            if isinstance(item, list):  # what argparse left of a `--` value
                text = "--"
            elif isinstance(item, str) and item.startswith("-") and not _is_number(item):
                text = shown(item)
            else:
                continue
            flag = action.option_strings[-1]
            path = action.metavar in ("DIR", "FILE", "PATH")
            hint = " (a path that starts with '-' as ./-name)" if path else ""
            return f"{flag} {text}: looks like an option, not a value; give {flag} its value{hint}"
    return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sandbox-setup",
        description=(
            "Find out what this host can do to sandbox Claude Code, choose a sandbox, "
            "a dedicated user or an explicit unsafe opt-in, and set it up. Without "
            "flags, starts the interactive wizard (or its audit view when a launcher "
            "config exists)."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # `--mod` is a typo, not --mode
    )
    # The version is looked up only when asked for: importlib.metadata costs ~25 ms
    # at every start otherwise (measured with -X importtime; bench/report's check row).
    parser.add_argument("--version", action=_VersionAction, nargs=0, help=VERSION_HELP)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="run the host checks")
    action.add_argument("--audit", action="store_true", help="audit an existing setup")
    action.add_argument(
        "--status",
        action="store_true",
        help="what every setup on this host installed, and its sessions (docs/status.md)",
    )
    action.add_argument(
        "--headless",
        action="store_true",
        help=(
            "plan (and with --yes, apply) without the TUI; without --mode or --answers it "
            "starts from the saved setup and changes only the options given"
        ),
    )
    action.add_argument(
        "--undo",
        action="store_true",
        help=(
            "take back the last apply and say how many earlier ones remain; with --all, "
            "every apply (exit 1 when something was left as it is)"
        ),
    )

    check = parser.add_argument_group("check options")
    check.add_argument("ids", nargs="*", metavar="ID", help="check IDs to run (default: all)")
    check.add_argument("--list-checks", action="store_true", help="list check IDs and exit")
    check.add_argument(
        "--as-user", metavar="NAME", help="run live probes as this user (the agent user)"
    )
    check.add_argument(
        "--timeout",
        type=_timeout,
        default=10.0,
        metavar="SECONDS",
        help="per-probe timeout (default 10)",
    )

    headless = parser.add_argument_group("headless options")
    add_answer_options(headless, ANSWER_FIELDS[:1])  # --mode, then the file instead
    headless.add_argument("--answers", metavar="FILE", help="answers.toml to replay")
    add_answer_options(headless, ANSWER_FIELDS[1:])
    headless.add_argument("--yes", action="store_true", help="apply (otherwise only plan)")
    headless.add_argument(
        "--dry-run", action="store_true", help="show the plan with diffs and commands"
    )

    undo = parser.add_argument_group("undo options")
    undo.add_argument(
        "--all",
        action="store_true",
        help=(
            "with --undo: take back every apply, restoring the host as it was before the "
            "first, give the agent's files in the workspaces to their owner and remove the "
            "state directory"
        ),
    )

    common = parser.add_argument_group("common options")
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    common.add_argument(
        "--root",
        default="/",
        metavar="DIR",
        help="apply/audit/undo/status under another root (tests, image builds); default /",
    )
    return parser


def _headless_options_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The answers' options (:mod:`sandbox_setup.base.answer_fields`) given on this
    command line, in the parser's order."""
    declared = {dest for field in flagged(ANSWER_FIELDS) for _flag, dest in field.options()}
    words: list[str] = []
    for action in parser._actions:
        if action.dest not in declared:
            continue
        value = getattr(args, action.dest, None)
        if value in (None, False, []):
            continue
        flag = action.option_strings[-1]
        if value is True:
            words.append(flag)
        else:
            for item in value if isinstance(value, list) else [value]:
                words += [flag, str(item)]
    return words


def _refuse_headless_options_elsewhere(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> None:
    """An answer's option (or ``--mode``/``--answers``) given to ``--check`` (but its
    ``--claude``), ``--audit``, ``--status`` or ``--undo`` is an input error (exit 2): the
    action would ignore it, and
    an operator who typed ``--undo --mode user`` meant something it will not do. So are
    ``--yes`` and ``--dry-run`` where nothing is applied (``--check``, ``--audit``,
    ``--status``)."""
    actions = (
        ("--check", args.check or args.list_checks),
        ("--audit", args.audit),
        ("--status", args.status),
        ("--undo", args.undo),
    )
    action = next((name for name, chosen in actions if chosen), None)
    if action is None:
        return
    given = _headless_options_given(parser, args)
    # --check judges the Claude Code --claude names, as the plan would take it.
    own = {"--claude"} if action == "--check" else set()
    words = [word for word in given if word.startswith("--") and word not in own]
    words += [flag for flag, value in (("--mode", args.mode), ("--answers", args.answers)) if value]
    if action != "--undo":
        words += [
            flag for flag, value in (("--yes", args.yes), ("--dry-run", args.dry_run)) if value
        ]
    if words:
        names = ", ".join(dict.fromkeys(words))
        parser.error(f"{names}: not an option of {action}, which would ignore it")


def _dispatch(
    args: argparse.Namespace, parser: argparse.ArgumentParser, apply_seams: ApplySeams | None
) -> int:
    problem = _option_looking_value(parser, args)
    if problem is not None:
        parser.error(problem)
    if args.root == "":
        # `--root "$UNSET"` in a build script must not mean the live system.
        parser.error(
            "--root '': empty; pass the target root directory (--root / is the live system)"
        )
    paths = [("--root", [args.root]), ("--answers", [args.answers])]
    for field in flagged(ANSWER_FIELDS):
        if field.value in (Value.PATH, Value.PATHS):
            for flag, dest in field.options():
                value = getattr(args, dest)
                paths.append((flag, value if isinstance(value, list) else [value]))
    for flag, given in paths:
        for value in given:
            problem = path_text_problem(value) if value else None
            if problem is not None:
                parser.error(f"{flag} {shown(value)}: {problem}")
    if args.all and not args.undo:
        parser.error(f"--all only applies to --undo ({remedies.undo_all(args.root, yes=False)})")
    _refuse_headless_options_elsewhere(parser, args)
    # why (each command imported here): an action loads only its own layers; --check would
    # otherwise load the configuration core and the audit before its probes start.
    if args.check or args.list_checks:
        from sandbox_setup.commands.check import run_check

        return run_check(args)
    if args.ids:
        parser.error("check IDs are only accepted with --check")
    if args.audit:
        from sandbox_setup.commands.audit import run_audit

        return run_audit(args)
    if args.status:
        from sandbox_setup.commands.status import run_status

        return run_status(args)
    if args.headless:
        from sandbox_setup.commands.headless import run_headless

        return run_headless(args, apply_seams)
    if args.undo:
        if args.json:
            parser.error(
                "--undo has no --json output; run it without --json (its exit code says "
                "whether everything was restored: 0, or 1 when something was left)"
            )
        from sandbox_setup.commands.undo import run_undo

        return run_undo(args)
    if args.mode or args.answers or args.yes or args.dry_run:
        parser.error("--mode/--answers/--yes/--dry-run need --headless")
    given = _headless_options_given(parser, args)
    if given:
        # The wizard would ignore them (it opens on the audit of the saved setup).
        names = ", ".join(dict.fromkeys(word for word in given if word.startswith("--")))
        parser.error(
            f"{names}: options of the headless path; to change only that in the saved setup: "
            + remedies.change_setup(*given, root=args.root)
        )
    from sandbox_setup.tui.app import run_app  # why: the only path that loads Textual

    return run_app(args)


def main(argv: Sequence[str] | None = None, *, apply_seams: ApplySeams | None = None) -> int:
    """Console script entry point. ``apply_seams``: where a test steps into a headless
    apply (:class:`~sandbox_setup.configure.apply.ApplySeams`); the console script
    passes none."""
    try:
        prepare_streams("sandbox-setup")
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
            return int(exc.code or 0)
    except OutputError as exc:  # a closed or full stdout (--help > /dev/full)
        print(f"sandbox-setup: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    try:
        return int(_dispatch(args, parser, apply_seams))
    except SystemExit as exc:
        return int(exc.code or 0)
    except SetupError as exc:
        # A refusal names the file (a workspace's, the state directory's): invariant 15.
        print(f"sandbox-setup: {printable_lines(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except PermissionError as exc:
        # A file or directory of the operator's it may not open, on a path no check
        # above caught: an input error naming it (docs/inputs-and-exit-codes.md), not 70.
        if exc.filename is None or exc.errno != errno.EACCES:
            report_crash("sandbox-setup", exc, _state_dir(args))
            return int(ExitCode.INTERNAL)
        denied = unreadable(exc.filename, exc)
        print(f"sandbox-setup: {printable_lines(str(denied))}", file=sys.stderr)
        return int(denied.exit_code)
    except KeyboardInterrupt as exc:
        # Interrupted (configure/interrupts.py) carries the signal: SIGTERM or SIGHUP
        # before an apply began (the probes) says which, as the apply's own line does.
        signum = getattr(exc, "signum", None)
        by = f" by {signal.Signals(signum).name}" if isinstance(signum, int) else ""
        print(f"sandbox-setup: interrupted{by}", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # Output piped into `head` and the like: not an error of ours. Point stdout
        # at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception as exc:  # a bug: exit 70, never 1 (which means findings)
        report_crash("sandbox-setup", exc, _state_dir(args))
        return int(ExitCode.INTERNAL)


def _state_dir(args: argparse.Namespace) -> Path | None:
    """Where the crash log goes: the state directory of this run's layout."""
    try:
        layout = Layout.for_root(args.root or "/")
        return layout.real(layout.state_dir)
    except Exception:  # the layout itself may be what failed
        return None


if __name__ == "__main__":
    sys.exit(main())
