"""The layers of DESIGN.md, checked over the real import graph: a crossing fails CI.

Every ``import`` in ``wizard/``, ``checks/`` and ``screens/`` is read from the
source (function-local imports included, since they run too); imports under
``if TYPE_CHECKING:`` are only for annotations and are held to the looser
``TYPES`` rule.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tools import REPO

PACKAGES = ("wizard", "checks", "screens")

# Who may import whom at run time (by module prefix; the longest prefix wins).
RULES: dict[str, tuple[str, ...]] = {
    "checks": ("checks", "wizard.base"),
    "wizard.base": ("wizard.base",),
    "wizard.policy": ("wizard.base", "wizard.policy"),
    "wizard.configure": ("wizard.base", "wizard.policy", "wizard.configure", "checks"),
    "wizard.launcher": ("wizard.base", "wizard.policy", "wizard.launcher"),
    "wizard.audit": (
        "wizard.base",
        "wizard.policy",
        "wizard.configure",
        "wizard.launcher",
        "wizard.audit",
        "checks",
    ),
    "wizard.commands": (
        "wizard.base",
        "wizard.policy",
        "wizard.configure",
        "wizard.launcher",
        "wizard.audit",
        "wizard.commands",
        "checks",
    ),
    "wizard.cli": ("wizard.base", "wizard.policy", "wizard.commands", "wizard.app"),
    "wizard.app": ("wizard.base", "wizard.commands", "screens", "assets"),
    "wizard.__main__": ("wizard.cli",),
    "wizard": (),  # the package's own __init__
    # Screens see the core through screens.core (a Protocol) and its value types.
    "screens": ("screens", "checks.model", "wizard.base", "wizard.configure.answers"),
}
# Annotation-only imports may also name the core's result types.
TYPES: dict[str, tuple[str, ...]] = {
    "screens": (
        "wizard.configure.plan",
        "wizard.configure.apply",
        "wizard.configure.actions",
        "wizard.audit.model",
    ),
}
# Only these modules may import Textual.
TEXTUAL_ALLOWED = ("screens", "wizard.app")


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
    parts = list(path.relative_to(REPO).with_suffix("").parts)
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
                # "from wizard.configure import fsops" imports wizard.configure.fsops
                candidate = f"{base}.{alias.name}"
                target = candidate if _is_module(candidate) else base
                edges.append(Edge(module, target, node.lineno, type_only))
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return edges


def _is_module(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
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
        if top not in (*PACKAGES, "assets"):
            continue
        allowed = _rule_for(edge.module, RULES)
        assert allowed is not None, f"no layer rule for {edge.module}"
        if edge.type_only:
            allowed = allowed + (_rule_for(edge.module, TYPES) or ())
        if not _within(edge.imported, allowed):
            kind = "type-only " if edge.type_only else ""
            found.append(f"{edge.module}:{edge.line} {kind}imports {edge.imported}")
    return found


def project_edges() -> list[Edge]:
    edges = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
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


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("checks.claude", "from wizard.policy.trust import untrusted_reason\n", True),
        ("checks.claude", "from wizard.base.errors import InputError\n", False),
        ("wizard.configure.plan", "def f():\n    from wizard.audit.rules import x\n", True),
        ("wizard.launcher.main", "from wizard.configure import fsops\n", True),
        ("wizard.launcher.main", "import textual\n", True),
        ("wizard.base.paths", "from wizard.policy import trust\n", True),
        ("screens.review", "from wizard.configure.plan import build_plan\n", True),
        (
            "screens.review",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from wizard.configure.plan import Plan\n",
            False,
        ),
        ("wizard.audit.runner", "from wizard.launcher.trust import x\n", False),
        ("wizard.configure.answers", "from .plan import build_plan\n", False),
        ("wizard.configure.answers", "from ..audit import rules\n", True),
    ],
)
def test_the_checker_catches_a_crossing(module: str, source: str, expected: bool) -> None:
    """So the test above can fail: each of these is (or is not) a crossing."""
    assert bool(violations(imports_of(module, source))) is expected
