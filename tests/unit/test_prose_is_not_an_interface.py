"""No behaviour in the launcher or the wizard depends on text written for people
(docs/design.md invariant 19): code there never branches on, replaces in, or splits
product prose, and never splits a built argv to put it together again.

The check reads the code (its syntax tree) and flags, in ``launcher/``, ``commands/``,
``tui/`` and ``cli.py``:

* ``replace``: a ``.replace(...)`` call (``os.replace`` and ``dataclasses.replace`` are
  not text);
* ``regex``: a ``re`` call (``re.sub``, ``re.search``, ...) or a compiled pattern's
  ``sub``/``subn``/``search``/``match``/``fullmatch``/``findall``/``finditer``;
* ``prose-compare``: ``==``, ``!=``, ``in`` or ``not in`` with a prose literal (a string
  constant with a space in it) on either side;
* ``prose-method``: ``startswith``, ``endswith``, ``removeprefix``, ``removesuffix``,
  ``split``, ``partition``, ``rpartition``, ``index``, ``find``, ``count`` given a prose
  literal;
* ``argv-split``: ``"--"`` compared, searched for (``index``, ``find``, ``count``) or
  split at, or a flag looked for in a built command line (``"--unshare-net" in
  launch.argv``);
* ``exc-args``: an assignment to an exception's ``args``.

A use that is not text for people (parsing what the operator typed, a file format) is
listed in ALLOWED with the reason; anything else found fails the test.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "sandbox_setup"
SCANNED = ("launcher", "commands", "tui", "cli.py")

_REGEX_METHODS = {"sub", "subn", "search", "match", "fullmatch", "findall", "finditer"}
_PROSE_METHODS = {
    "startswith",
    "endswith",
    "removeprefix",
    "removesuffix",
    "split",
    "partition",
    "rpartition",
    "index",
    "find",
    "count",
}


@dataclass(frozen=True, order=True)
class Hit:
    path: str
    function: str
    rule: str


# (path under src/sandbox_setup, function, rule): why it is not text for people.
_WIRE = "a wire format parsed to the letter of its RFC, never words for people"
ALLOWED: dict[Hit, str] = {
    Hit("launcher/egress/gateway.py", "Gateway._parse", "prose-method"): _WIRE,
    Hit("launcher/egress/gateway.py", "Gateway._parse", "replace"): (
        "an HTTP head's line ends dropped, and the session's placeholder swapped for the "
        "operator's credential: bytes of a request, not prose"
    ),
    Hit("launcher/egress/gateway.py", "Gateway._relay_answer", "prose-method"): _WIRE,
    Hit("launcher/egress/proxy.py", "parse_fib_trie", "prose-method"): (
        "/proc/net/fib_trie, the kernel's own table format"
    ),
    Hit("launcher/egress/wire.py", "<module>", "regex"): _WIRE,
    Hit("launcher/egress/wire.py", "check_framing", "regex"): _WIRE,
    Hit("launcher/egress/wire.py", "parse_request_head", "prose-method"): _WIRE,
    Hit("launcher/egress/wire.py", "parse_request_head", "regex"): _WIRE,
    Hit("launcher/egress/wire.py", "parse_socks_request", "regex"): _WIRE,
    Hit("launcher/egress/wire.py", "split_authority", "regex"): _WIRE,
    Hit("launcher/user/landlock_exec.py", "_parse", "argv-split"): (
        "the Landlock exec helper reads its own command line, whose ``--`` ends its "
        "options as in any program's"
    ),
    Hit("launcher/command.py", "with_proxy_settings", "argv-split"): (
        "reads the caller's own arguments for Claude Code, whose ``--`` ends Claude's "
        "options; nothing the launcher built"
    ),
    Hit("launcher/user/landlock_plan.py", "substitute", "replace"): (
        "fills placeholder tokens of ours (the session's ports, known once its proxy "
        "listens) into the helper's arguments and the environment: no words for people"
    ),
    Hit("launcher/main.py", "parse_args", "argv-split"): (
        "sandbox-launch reads its own command line: ``--`` ends its options"
    ),
    Hit("commands/interactive.py", "<module>", "regex"): (
        "splits the list the operator typed in a field (names, domains, ports) at commas "
        "and blanks: parsing input, not reading a message"
    ),
    Hit("tui/draft.py", "Draft.accept_unsafe", "replace"): "datetime.replace: a time, not text",
    Hit("tui/findings_view.py", "one_line", "prose-method"): (
        "folds a finding onto one line for a table cell: it renders, it decides nothing"
    ),
    Hit("tui/findings_view.py", "one_line", "replace"): (
        "folds a finding onto one line for a table cell: it renders, it decides nothing"
    ),
    Hit("tui/glyphs.py", "_box", "prose-compare"): "Unicode's own character names",
    Hit("tui/glyphs.py", "locale_is_utf8", "replace"): (
        "a locale's codeset name normalised (UTF-8, utf8), not text for people"
    ),
    Hit("tui/help.py", "screen_name", "regex"): (
        "a screen's class name split into words for its help title: it renders, it decides nothing"
    ),
}


def _is_prose(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value


def _is_dashdash(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "--"


def _is_flag(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value[:1] == "-"


def _names_argv(node: ast.AST) -> bool:
    """A built command line, by the name it goes by (``argv``, ``launch.argv``)."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return "argv" in name


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.hits: list[Hit] = []

    def _hit(self, rule: str) -> None:
        self.hits.append(Hit(self.path, ".".join(self.scope) or "<module>", rule))

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = _scoped
    visit_AsyncFunctionDef = _scoped
    visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else None
            if func.attr == "replace" and owner_name not in {"os", "dataclasses"}:
                self._hit("replace")
            elif owner_name == "re" or (
                func.attr in _REGEX_METHODS and owner_name not in {"os", "shutil"}
            ):
                self._hit("regex")
            if func.attr in _PROSE_METHODS and any(_is_prose(a) for a in node.args):
                self._hit("prose-method")
            if func.attr in {"index", "find", "count", "split", "partition"} and any(
                _is_dashdash(a) for a in node.args
            ):
                self._hit("argv-split")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        text_ops = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
        if any(isinstance(op, text_ops) for op in node.ops):
            if any(_is_prose(s) for s in sides):
                self._hit("prose-compare")
            if any(_is_dashdash(s) for s in sides):
                self._hit("argv-split")
            if any(_is_flag(s) for s in sides) and any(_names_argv(s) for s in sides):
                self._hit("argv-split")
        self.generic_visit(node)

    def _assigned(self, targets: list[ast.expr]) -> None:
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "args":
                self._hit("exc-args")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assigned(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned([node.target])
        self.generic_visit(node)


def hits_in(source: str, path: str = "<test>") -> list[Hit]:
    finder = _Finder(path)
    finder.visit(ast.parse(source))
    return finder.hits


def _scanned_files() -> list[Path]:
    files: list[Path] = []
    for part in SCANNED:
        where = SRC / part
        files.extend(sorted(where.rglob("*.py")) if where.is_dir() else [where])
    return files


def test_the_finder_sees_each_kind_of_text_use() -> None:
    source = """
def notice(text, exc, argv, msg, launch):
    text = text.replace("network none", "network allowlist")
    if "No space left" in msg:
        pass
    if msg.startswith("refused: "):
        pass
    head = argv[: argv.index("--")]
    if "--unshare-net" in launch.argv:
        pass
    exc.args = ("reworded",)
    return re.sub(r"--claude", "the Claude Code field", text)
"""
    rules = {h.rule for h in hits_in(source)}
    assert rules == {"replace", "prose-compare", "prose-method", "argv-split", "exc-args", "regex"}
    assert all(h.function == "notice" for h in hits_in(source))


def test_the_finder_leaves_typed_values_and_file_moves_alone() -> None:
    source = """
def fine(cause, launch, path, tmp):
    if cause is Cause.NO_SPACE or launch.mode == "sandbox":
        os.replace(tmp, path)
    return dataclasses.replace(launch, notes=(*launch.notes, Note.SHIM))
"""
    assert hits_in(source) == []


def test_no_launcher_or_wizard_code_uses_prose_or_a_built_argv_as_an_interface() -> None:
    found: set[Hit] = set()
    for path in _scanned_files():
        rel = str(path.relative_to(SRC))
        found.update(hits_in(path.read_text(encoding="utf-8"), rel))
    unexpected = sorted(found - ALLOWED.keys())
    assert not unexpected, "text used as an interface:\n" + "\n".join(
        f"  {h.path}:{h.function}: {h.rule}" for h in unexpected
    )
    assert all(ALLOWED.values()), "each allowed use says why"
    stale = sorted(ALLOWED.keys() - found)
    assert not stale, f"ALLOWED names uses that are gone: {stale}"
