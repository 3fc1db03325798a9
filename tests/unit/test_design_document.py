"""The design lives with the code: every invariant the code cites is in docs/design.md,
and the code cites no project issue number (docs/design.md, its opening paragraph)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "sandbox_setup"
DESIGN = ROOT / "docs" / "design.md"

# "docs/design.md invariant 8", "invariants 5, 9 and 14", "invariant 8 (c)"; a citation
# may wrap onto the next line, so the text is joined before it is searched.
_CITATION = re.compile(r"docs/design\.md,?\s+invariants?\s+((?:\d+[a-z]?(?:,\s*|\s+and\s+)?)+)")
_ISSUE = re.compile(r"\b[Ii]ssues?\s+#?\d+|\(issue\b|\bissue's\b")


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _numbered_invariants() -> set[int]:
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("## Security invariants", 1)[1]
    return {int(m.group(1)) for m in re.finditer(r"^(\d+)\. ", section, re.M)}


def cited_invariants(text: str) -> set[int]:
    joined = re.sub(r"\s*\n\s*(#\s*)?", " ", text)
    found: set[int] = set()
    for m in _CITATION.finditer(joined):
        found.update(int(n) for n in re.findall(r"\d+", m.group(1)))
    return found


def test_the_citation_reader_reads_what_the_code_writes() -> None:
    assert cited_invariants("x (docs/design.md invariants 5, 9 and 14), y") == {5, 9, 14}
    assert cited_invariants("# a (docs/design.md\n# invariant 17): b") == {17}
    assert cited_invariants("(docs/design.md invariant 8 (c))") == {8}
    assert cited_invariants("nothing cited here") == set()


def test_every_invariant_the_code_cites_is_in_the_design_document() -> None:
    numbered = _numbered_invariants()
    assert numbered == set(range(1, max(numbered) + 1)), "invariants are numbered 1..N"
    cited: dict[int, list[str]] = {}
    for path in _sources():
        for n in cited_invariants(path.read_text(encoding="utf-8")):
            cited.setdefault(n, []).append(str(path.relative_to(SRC)))
    assert cited, "the code cites docs/design.md's invariants"
    missing = {n: files for n, files in cited.items() if n not in numbered}
    assert not missing, f"cited but not in docs/design.md: {missing}"


def test_no_design_file_outside_the_repository_is_cited() -> None:
    stale = [
        f"{p.relative_to(SRC)}:{i}"
        for p in _sources()
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"(?<![/\w])DESIGN(\.md)?\b", line)
    ]
    assert not stale, f"cite docs/design.md instead: {stale}"


def test_the_code_cites_no_project_issue_number() -> None:
    cited = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in _sources()
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _ISSUE.search(line)
    ]
    assert not cited, "cite docs/design.md, not an issue:\n" + "\n".join(cited)
