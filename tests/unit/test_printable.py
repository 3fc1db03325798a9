"""The one escaping function of invariant 15 (sandbox_setup.base.printable): a table
of each class of character, a plain UTF-8 name kept, bytes that were not UTF-8, and
no two different strings of a sample printed the same."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from sandbox_setup.base.printable import (
    printable,
    printable_diff_line,
    printable_lines,
    shell_word,
)

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
C1 = [chr(c) for c in range(0x80, 0xA0)]
C0 = [chr(c) for c in range(0x20)]


def assert_terminal_safe(text: str) -> None:
    """Nothing a terminal acts on: no C0 control, DEL, C1 control, bidi control, or
    surrogate (a byte that was not UTF-8)."""
    for char in text:
        code = ord(char)
        assert code >= 0x20 and code != 0x7F, repr(text)
        assert not 0x80 <= code <= 0x9F, repr(text)
        assert char not in BIDI, repr(text)
        assert not 0xD800 <= code <= 0xDFFF, repr(text)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC 0: the window title
        ("\x1b]52;c;cHduZWQ=\x07", "\\x1b]52;c;cHduZWQ=\\x07"),  # OSC 52: the clipboard
        ("\x1b[2J", "\\x1b[2J"),  # clear the screen
        ("\x1b[32mnothing to report\x1b[0m", "\\x1b[32mnothing to report\\x1b[0m"),
        ("a\rb", "a\\rb"),
        ("a\nb\tc", "a\\nb\\tc"),
        ("\x08\x00\x7f", "\\x08\\x00\\x7f"),  # backspace, NUL, DEL
        ("\u009b2J", "\\u009b2J"),  # C1 CSI
        ("\u0085", "\\u0085"),  # C1 NEL
        ("gpj.\u202eexe", "gpj.\\u202eexe"),  # right-to-left override
        ("\u2066x\u2069", "\\u2066x\\u2069"),  # isolates
        ("zero\u200bwidth", "zero\\u200bwidth"),  # format character
        ("line\u2028sep", "line\\u2028sep"),
        ("back\\slash", "back\\\\slash"),
        (os.fsdecode(b"bad\xff\xfe"), "bad\\xff\\xfe"),  # not UTF-8: surrogateescape
        ("\U000e0041", "\\U000e0041"),  # a tag character, above the BMP
        ("[red]markup[/red]", "[red]markup[/red]"),  # markup is not this function's
        ("plain-name_1.txt", "plain-name_1.txt"),
        ("café 日本語 Ωmega ✓ →", "café 日本語 Ωmega ✓ →"),  # printable Unicode kept
        ("", ""),
    ],
)
def test_printable_table(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert_terminal_safe(printable(raw))


def test_every_control_is_escaped() -> None:
    for char in [*C0, "\x7f", *C1, *BIDI]:
        out = printable(char)
        assert out.startswith("\\") and len(out) > 1, repr(char)
        assert_terminal_safe(out)


SAMPLE = [
    "",
    "a",
    "\\",
    "\\\\",
    "\\x1b",
    "\x1b",
    "\\u009b",
    "\u009b",
    "\\x9b",
    os.fsdecode(b"\x9b"),
    "\\xff",
    os.fsdecode(b"\xff"),
    "\\n",
    "\n",
    "\\r",
    "\r",
    "\\t",
    "\t",
    "\\u202e",
    "\u202e",
    "\\U000e0041",
    "\U000e0041",
    "\u00a0",
    "\\u00a0",
    "x\\\x1b",
    "x\\\\x1b",
]


def test_different_inputs_print_differently() -> None:
    shown = [printable(s) for s in SAMPLE]
    assert len(set(SAMPLE)) == len(SAMPLE)
    assert len(set(shown)) == len(shown), [
        (a, b) for a, b in zip(SAMPLE, shown, strict=True) if shown.count(b) > 1
    ]


def test_a_diff_line_keeps_its_tabs_and_nothing_else() -> None:
    line = "+\tfsmonitor = /x\x1b]0;t\x07\r"
    assert printable_diff_line(line) == "+\tfsmonitor = /x\\x1b]0;t\\x07\\r"
    assert_terminal_safe(printable_diff_line(line).replace("\t", " "))


def test_printable_lines_keeps_only_line_breaks() -> None:
    assert printable_lines("one\ntwo \x1b[2J\rthree") == "one\ntwo \\x1b[2J\\rthree"


@pytest.mark.parametrize(
    "name",
    [
        "plain",
        "it's",
        "\x1b]0;pwned\x07",
        "a'b\\c\r\n\t",
        "gpj.\u202eexe",
        "\u009b2J",
        os.fsdecode(b"bad\xff\xfe"),
        "caf\u00e9 \u00a0",
    ],
)
def test_shell_word_is_printable_and_bash_reads_it_back(name: str) -> None:
    word = shell_word(name)
    assert_terminal_safe(word)
    if printable(name) == name:
        assert "$'" not in word  # an ordinary name keeps shlex.quote's form
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    done = subprocess.run(
        [bash, "-c", f"printf %s {word}"],
        capture_output=True,
        check=True,
        env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")},
    )
    assert done.stdout == os.fsencode(name)


def test_styled_lines_escape_what_they_quote() -> None:
    from sandbox_setup.base.styled import Line, one_line, wrapped

    lines = wrapped([("  note: ", "")], "ours\nfile \x1b[2J\ra\u202e", 80, 8)
    assert [line.plain for line in lines] == ["  note: ours", "        file \\x1b[2J\\ra\\u202e"]
    one = wrapped([("  network: ", "")], "host\nfake line", 80, 11, breaks=False)
    assert [line.plain for line in one] == ["  network: host\\nfake line"]
    assert Line().add("\x1b]0;t\x07", "id").plain == "\\x1b]0;t\\x07"
    assert one_line("a  b\n c\td\re") == "a b c\td\re"  # tab and CR are left to printable
