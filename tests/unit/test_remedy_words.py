"""A remedy for a name with control characters pastes as printed: each operand is a
``$'...'`` word (``base/printable.py``: ``pasted_word``) that the message's printing
(``printable_lines``) turns into escapes bash reads back as the very name; the printed
command holds no terminal control (a line break at most, inside the quotes)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from sandbox_setup.base import remedies
from sandbox_setup.base.printable import printable_lines
from tests.tools import require_tool

NAMES = ["/srv/a\x1b[31mred", "/srv/new\nline", "/srv/tab\there", "/srv/back\\slash 'q'"]


def _words(command: str) -> list[str]:
    bash = require_tool("bash")
    done = subprocess.run(
        [bash, "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "bash", command],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.split("\0")[:-1]


@pytest.mark.parametrize("name", NAMES, ids=["escape", "newline", "tab", "backslash"])
@pytest.mark.parametrize(
    ("build", "flag"),
    [
        (lambda n: remedies.change_setup("--no-workspace", n), "--no-workspace"),
        (lambda n: remedies.allow_domain(n), "--allow-domain"),
        (lambda n: remedies.replay_answers(n), "--answers"),
        (lambda n: remedies.undo_all(n), "--root"),
        (lambda n: remedies.rerun_checks("bwrap.installed", as_user=n), "--as-user"),
    ],
    ids=["change_setup", "allow_domain", "replay_answers", "root", "as_user"],
)
def test_a_remedy_with_control_characters_pastes_as_printed(
    build: Callable[[str], str], flag: str, name: str
) -> None:
    printed = printable_lines(f"sandbox-setup: refused; run: {build(name)}")
    assert all(c == "\n" or c.isprintable() for c in printed), printed
    words = _words(printed.split("run: ", 1)[1])
    assert words[words.index(flag) + 1] == name, (printed, words)


def test_a_command_never_has_doubled_spaces() -> None:
    from sandbox_setup.base import remedies

    assert remedies.change_setup() == "sandbox-setup --headless --yes"
    assert remedies.change_setup(root="/t") == "sandbox-setup --headless --root /t --yes"
    assert remedies.change_setup("--allow-domain", "a.example") == (
        "sandbox-setup --headless --allow-domain a.example --yes"
    )
    for name, example in remedies.EXAMPLES.items():
        assert "  " not in example("/t"), name
