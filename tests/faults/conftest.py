"""The fault-injection suite's table: fault | expected | observed | pass/fail.

Each test in ``tests/faults/`` takes the :func:`fault` fixture, names its fault
and the outcome the design promises (``fault.expect(name, expected)``), and
records what it saw as it goes (``fault.saw(text)``). A ``pytest_runtest_makereport``
hook adds the test's own verdict, and at the end of the session the table is
printed in the terminal summary and written to a file: ``$SANDBOX_SETUP_FAULT_TABLE``
when set, else ``.pytest_cache/d/sandbox-setup-faults/table.md`` (or, without
the cache plugin, ``sandbox-setup-fault-table.md`` in the temp dir).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROWS_KEY = pytest.StashKey[dict[str, "FaultRow"]]()


@dataclass
class FaultRow:
    """One row of the table; ``outcome`` is filled in by the report hook."""

    fault: str = ""
    expected: str = ""
    observed: list[str] = field(default_factory=list)
    outcome: str = "not run"

    def expect(self, fault: str, expected: str) -> None:
        self.fault, self.expected = fault, expected

    def saw(self, text: str) -> None:
        self.observed.append(text)


def _rows(config: pytest.Config) -> dict[str, FaultRow]:
    if ROWS_KEY not in config.stash:
        config.stash[ROWS_KEY] = {}
    return config.stash[ROWS_KEY]


@pytest.fixture
def fault(request: pytest.FixtureRequest) -> Iterator[FaultRow]:
    row = FaultRow(fault=request.node.name)
    _rows(request.config)[request.node.nodeid] = row
    yield row


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    row = _rows(item.config).get(item.nodeid)
    if row is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            row.outcome = "skip"
        else:
            row.outcome = "pass" if report.passed else "FAIL"
        if report.failed and call.excinfo is not None:
            first = str(call.excinfo.value).strip().splitlines()
            row.saw("failure: " + (first[0] if first else call.excinfo.typename))


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_table(rows: list[FaultRow]) -> str:
    lines = ["| fault | expected | observed | pass/fail |", "|---|---|---|---|"]
    for row in rows:
        observed = "; ".join(row.observed) or "-"
        lines.append(
            f"| {_cell(row.fault)} | {_cell(row.expected)} | {_cell(observed)} | {row.outcome} |"
        )
    return "\n".join(lines) + "\n"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    rows = list(_rows(config).values())
    if not rows:
        return
    table = render_table(rows)
    destination = os.environ.get("SANDBOX_SETUP_FAULT_TABLE")
    if destination:
        path = Path(destination)
    elif getattr(config, "cache", None) is not None:  # absent with -p no:cacheprovider
        path = config.cache.mkdir("sandbox-setup-faults") / "table.md"
    else:
        path = Path(tempfile.gettempdir()) / "sandbox-setup-fault-table.md"
    path.write_text(table)
    terminalreporter.section("fault injection")
    terminalreporter.write(table)
    terminalreporter.write_line(f"(also written to {path})")
