"""Exit codes: part of the CLI contract (docs/design.md), documented in ``--help``."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    FINDINGS = 1  # a check failed, drift found
    USAGE = 2  # usage or input error, nothing written
    REFUSED = 3  # fail-closed refusal
    INTERNAL = 70  # an unexpected exception: a bug (EX_SOFTWARE), never "findings"
    INTERRUPTED = 130


EXIT_CODES_HELP = """exit codes:
  0    ok
  1    findings (a check failed, drift found)
  2    usage or input error; nothing was written
  3    refused, fail-closed (unsafe without acceptance, sandbox not verified,
       config failed the strict-mode check)
  70   internal error: a bug; one line on stderr, the traceback in the state
       directory's crash.log
  130  interrupted (SIGINT, SIGTERM or SIGHUP); an apply rolls back first"""
