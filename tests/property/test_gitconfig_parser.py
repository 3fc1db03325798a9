"""Property test of the git config parser against real git.

The agent writes ``.git/config``; any text git reads differently from
:func:`sandbox_setup.policy.gitconfig.parse_git_config` is a way to hide a key from the
end-of-session scan. Texts are built from the pieces git's grammar is made of
(headers in all three spellings, keys, quotes, escapes, comments, continuations,
CRLF) plus noise; for each, git's own ``git config --list -z`` and the parser must
agree: both refuse the text, or both read the same keys and values in order.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from hypothesis import event, given
from hypothesis import strategies as st

from sandbox_setup.policy.gitconfig import parse_git_config
from tests.property.conftest import PURE_SETTINGS
from tests.tools import require_tool

PIECES = [
    "[core]",
    "[Core]",
    '[filter "LfS"]',
    '[a "b\\"c"]',
    '[a "x\\\\y"]',
    "[Sec.Sub]",
    "[a.b.c]",
    '[a "b" ]',
    "[]",
    "[x",
    "fsmonitor",
    "FsMonitor",
    "key-2",
    "1bad",
    " = ",
    "=",
    "value",
    "v a l",
    '"quoted ; # value"',
    '"open',
    "\\\n",
    "\\t",
    "\\n",
    "\\q",
    '\\"',
    " ; comment",
    " # comment",
    "\t",
    "  ",
    "\n",
    "\r\n",
    "\r",
    "]",
    '"',
]

texts = st.lists(st.sampled_from(PIECES), max_size=18).map("".join) | st.text(
    alphabet='[]"\\=#; \t\naB.-1\r', max_size=30
)


def git_reads(path: Path) -> list[tuple[str, str | None]] | None:
    proc = subprocess.run(
        ["git", "config", "--file", str(path), "--list", "-z"],
        capture_output=True,
        env={"PATH": os.environ["PATH"], "HOME": str(path.parent), "GIT_CONFIG_NOSYSTEM": "1"},
        check=False,
    )
    if proc.returncode != 0:
        return None
    items: list[tuple[str, str | None]] = []
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]:
        key, newline, value = record.partition("\n")
        items.append((key, value if newline else None))
    return items


@PURE_SETTINGS
@given(texts)
def test_the_parser_reads_what_git_reads(text: str) -> None:
    require_tool("git")
    with tempfile.TemporaryDirectory(prefix="ws-gitconfig-") as tmp:
        path = Path(tmp) / "config"
        path.write_bytes(text.encode("utf-8"))
        expected = git_reads(path)
    parsed = parse_git_config(text)
    if expected is None:
        event("git refuses")
        assert parsed.error is not None, f"git refuses {text!r}, the parser does not"
        return
    event(f"git reads {min(len(expected), 3)}+ keys")
    assert parsed.error is None, f"git reads {text!r}: {parsed.error}"
    assert [(e.key, e.value) for e in parsed.entries] == expected
