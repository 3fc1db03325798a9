"""The layers of docs/design.md, checked over the real import graph: a crossing fails CI, and
so does an import loop; and no folder's own modules grow past a fifth of the product.

Every ``import`` in ``src/sandbox_setup/`` is read from the source (function-local
imports included, since they run too); imports under ``if TYPE_CHECKING:`` are only
for annotations: they are held to the looser ``TYPES`` rule, but count in the loop
check (a loop through an annotation is still a layer inside a layer).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tools import SRC

PACKAGE = "sandbox_setup"
P = PACKAGE + "."

# The layers, lowest first: base < policy < checks, boundary < configure, launcher
# < audit < commands, tui < cli. Who may import whom at run time (by module prefix;
# the longest prefix wins).
BASE = (P + "base",)
POLICY = (*BASE, P + "policy")
CORE = (*POLICY, P + "checks", P + "boundary", P + "configure")
RULES: dict[str, tuple[str, ...]] = {
    P + "base": BASE,
    P + "policy": POLICY,
    # The release floor and the server-managed settings cache are the rules of policy/
    # a check judges by (stdlib only).
    P + "checks": (*BASE, P + "policy.claude_release", P + "policy.claude_remote", P + "checks"),
    P + "boundary": (*POLICY, P + "boundary"),
    P + "configure": CORE,
    P + "launcher": (*POLICY, P + "boundary", P + "launcher"),
    # The audit reads the boundary's records and runs its scan; it never needs the launcher.
    P + "audit": (*CORE, P + "audit"),
    P + "commands": (*CORE, P + "launcher", P + "audit", P + "commands"),
    P + "cli": (*POLICY, P + "commands", P + "tui.app"),
    P + "tui.app": (*BASE, P + "commands", P + "tui"),
    P + "__main__": (P + "cli",),
    PACKAGE: (),  # the package's own __init__
    # Screens see the core through tui.core (a Protocol) and its value types.
    P + "tui": (P + "tui", P + "checks.model", *BASE, P + "configure.answers"),
}
# Annotation-only imports may also name the core's result types (and, for the CLI's
# main, the seams a test passes into an apply).
TYPES: dict[str, tuple[str, ...]] = {
    P + "cli": (P + "configure.apply",),
    P + "tui": (
        P + "configure.plan",
        P + "configure.apply",
        P + "configure.actions",
        P + "audit.model",
    ),
}
# Only these modules may import Textual.
TEXTUAL_ALLOWED = (P + "tui",)
# Only these may import tomlkit (function-local imports counted): the layer that writes
# files; base/ holds the formats and their readers (tomllib), which the launcher loads.
TOMLKIT_ALLOWED = (P + "configure",)


@dataclass(frozen=True)
class Edge:
    module: str
    imported: str
    line: int
    type_only: bool


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(module: str, source: str, is_package: bool = False) -> list[Edge]:
    """Every import in ``source`` of ``module``, resolved to an absolute name."""
    tree = ast.parse(source)
    edges: list[Edge] = []
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import):
            edges.extend(Edge(module, a.name, node.lineno, type_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                # "from sandbox_setup.configure import fsops" imports configure.fsops
                candidate = f"{base}.{alias.name}"
                target = candidate if _is_module(candidate) else base
                edges.append(Edge(module, target, node.lineno, type_only))
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return edges


def _is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _rule_for(module: str, rules: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    keys = [k for k in rules if module == k or module.startswith(k + ".")]
    return rules[max(keys, key=len)] if keys else None


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(edges: list[Edge]) -> list[str]:
    found = []
    for edge in edges:
        top = edge.imported.split(".")[0]
        if top == "textual" and not _within(edge.module, TEXTUAL_ALLOWED):
            found.append(f"{edge.module}:{edge.line} imports textual")
        if top == "tomlkit" and not _within(edge.module, TOMLKIT_ALLOWED):
            found.append(f"{edge.module}:{edge.line} imports tomlkit")
        if top != PACKAGE:
            continue
        allowed = _rule_for(edge.module, RULES)
        assert allowed is not None, f"no layer rule for {edge.module}"
        if edge.type_only:
            allowed = allowed + (_rule_for(edge.module, TYPES) or ())
        if not _within(edge.imported, allowed):
            kind = "type-only " if edge.type_only else ""
            found.append(f"{edge.module}:{edge.line} {kind}imports {edge.imported}")
    return found


def import_loops(edges: Iterable[Edge]) -> list[list[str]]:
    """Every loop of imports between the project's modules, type-only ones included:
    the strongly connected components (Tarjan) of more than one module, or a module
    importing itself."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.imported.split(".")[0] != PACKAGE:
            continue
        graph.setdefault(edge.module, set()).add(edge.imported)
        graph.setdefault(edge.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return loops


def project_edges() -> list[Edge]:
    edges = []
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        edges += imports_of(
            module_name(path), path.read_text(encoding="utf-8"), path.name == "__init__.py"
        )
    return edges


def test_every_module_has_a_layer() -> None:
    modules = {e.module for e in project_edges()}
    assert modules, "no modules found"
    assert [m for m in sorted(modules) if _rule_for(m, RULES) is None] == []


def test_imports_only_go_down_the_layers() -> None:
    assert violations(project_edges()) == []


def test_no_import_loop() -> None:
    """Function-local imports included: a loop is a layer inside a layer that nobody
    drew (it was the journal and the undo, and containment and the session cgroup)."""
    assert import_loops(project_edges()) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (P + "checks.claude", "from sandbox_setup.policy.trust import untrusted_reason\n", True),
        (P + "checks.claude", "from sandbox_setup.base.errors import InputError\n", False),
        (P + "configure.plan", "def f():\n    from sandbox_setup.audit.rules import x\n", True),
        (P + "launcher.main", "from sandbox_setup.configure import fsops\n", True),
        (P + "launcher.main", "import textual\n", True),
        (P + "base.launcher_config", "def f():\n    import tomlkit.items\n", True),
        (P + "configure.launcher_toml", "def f():\n    import tomlkit\n", False),
        (P + "launcher.main", "from sandbox_setup.boundary import scan\n", False),
        (P + "base.paths", "from sandbox_setup.policy import trust\n", True),
        (P + "boundary.scan", "from sandbox_setup.launcher.command import Launch\n", True),
        (P + "tui.review", "from sandbox_setup.configure.plan import build_plan\n", True),
        (
            P + "tui.review",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from sandbox_setup.configure.plan import Plan\n",
            False,
        ),
        (P + "audit.runner", "from sandbox_setup.launcher.trust import x\n", True),
        (P + "audit.runner", "from sandbox_setup.boundary.session import x\n", False),
        (P + "configure.answers", "from .plan import build_plan\n", False),
        (P + "configure.answers", "from ..audit import rules\n", True),
    ],
)
def test_the_checker_catches_a_crossing(module: str, source: str, expected: bool) -> None:
    """So the test above can fail: each of these is (or is not) a crossing."""
    assert bool(violations(imports_of(module, source))) is expected


LOOP = {
    P + "configure.journal": "from sandbox_setup.configure import revert\n",
    P + "configure.revert": "from sandbox_setup.configure.ledger import read_ledger\n",
    P + "configure.ledger": "def f():\n    from sandbox_setup.configure.journal import x\n",
}


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        (LOOP, [sorted(LOOP)]),
        ({**LOOP, P + "configure.ledger": ""}, []),
        (
            {
                P + "launcher.containment": "import sandbox_setup.launcher.session.cgroup\n",
                P + "launcher.session.cgroup": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from sandbox_setup.launcher.containment import C\n",
            },
            [[P + "launcher.containment", P + "launcher.session.cgroup"]],
        ),
        ({P + "base.paths": "import sandbox_setup.base.paths\n"}, [[P + "base.paths"]]),
        (
            {
                P + "policy.network": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from sandbox_setup.policy.network_words import W\n",
                P + "policy.network_words": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from sandbox_setup.policy.network import N\n",
            },
            [[P + "policy.network", P + "policy.network_words"]],
        ),
    ],
)
def test_the_loop_check_finds_a_loop(sources: dict[str, str], expected: list[list[str]]) -> None:
    """So the loop test can fail: a loop through a function-local import is found, and
    so is one through an annotation-only import."""
    edges = [e for module, text in sources.items() for e in imports_of(module, text)]
    assert import_loops(edges) == expected


# --- folder sizes ---------------------------------------------------------------------
# No folder's own modules (its subfolders apart) hold more than a fifth of the product's
# lines: a folder that big is several rooms in one (launcher/ was, before egress/ and
# session/). A folder over it is named here with the share it may not grow past, and
# must leave the list once it is back under the limit.
FOLDER_LIMIT = 0.20
OVER_LIMIT: dict[str, float] = {}


def folder_shares(root: Path) -> dict[str, float]:
    """Each folder under ``root`` (relative, "/"-separated): its own ``*.py`` lines
    over all the ``*.py`` lines under ``root``."""
    lines: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        folder = path.parent.relative_to(root).as_posix()
        count = len(path.read_text(encoding="utf-8").splitlines())
        lines[folder] = lines.get(folder, 0) + count
    total = sum(lines.values()) or 1
    return {folder: count / total for folder, count in lines.items()}


def oversized(
    shares: dict[str, float], limit: float = FOLDER_LIMIT, allowed: dict[str, float] | None = None
) -> list[str]:
    """The folders over ``limit`` (or over their own ceiling in ``allowed``), and the
    entries of ``allowed`` that are back under ``limit`` (the exception must go)."""
    allowed = OVER_LIMIT if allowed is None else allowed
    found = []
    for folder, share in sorted(shares.items()):
        ceiling = allowed.get(folder, limit)
        if share > ceiling:
            found.append(f"{folder}: {share:.1%} of the product (limit {ceiling:.0%})")
    for folder in sorted(allowed):
        if shares.get(folder, 0.0) <= limit:
            found.append(f"{folder}: {shares.get(folder, 0.0):.1%}, under {limit:.0%}: unlist it")
    return found


def test_no_folder_holds_more_than_a_fifth_of_the_product() -> None:
    shares = folder_shares(SRC)
    assert "sandbox_setup/launcher" in shares, sorted(shares)
    assert oversized(shares) == []


def _tree(root: Path, files: dict[str, int]) -> Path:
    for name, count in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * count, encoding="utf-8")
    return root


def test_the_folder_check_counts_own_files_not_subfolders(tmp_path: Path) -> None:
    """So the size test can fail: a folder's subfolders are rooms of their own."""
    root = _tree(
        tmp_path,
        {"p/big/a.py": 30, "p/big/b.py": 10, "p/big/sub/c.py": 20, "p/other/d.py": 40},
    )
    shares = folder_shares(root)
    assert shares == {"p/big": 0.4, "p/big/sub": 0.2, "p/other": 0.4}
    assert oversized(shares, 0.5, {}) == []
    assert oversized(shares, 0.3, {}) == [
        "p/big: 40.0% of the product (limit 30%)",
        "p/other: 40.0% of the product (limit 30%)",
    ]
    assert oversized(shares, 0.3, {"p/big": 0.45, "p/other": 0.45}) == []
    assert oversized(shares, 0.3, {"p/big": 0.35, "p/big/sub": 0.45}) == [
        "p/big: 40.0% of the product (limit 35%)",
        "p/other: 40.0% of the product (limit 30%)",
        "p/big/sub: 20.0%, under 30%: unlist it",
    ]
