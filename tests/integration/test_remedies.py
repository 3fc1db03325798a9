"""Every remedy the project prints is a command that works when pasted (issue 28).

The commands are built in one place, :mod:`sandbox_setup.base.remedies`; a source scan
holds every other module to it (so a new remedy cannot be spelled by hand), each
builder has a filled-in example, and each example is run through the real parser and
the real CLI (a ``--dry-run`` where the command would write) under a temp root with a
saved setup. Commands printed by real runs (the apply's undo lines, the plan's note
about a loopback ANTHROPIC_BASE_URL, a headless option given without --headless) are
cut out of the output and run the same way."""

from __future__ import annotations

import ast
import inspect
import re
import shlex
from pathlib import Path

import pytest

from sandbox_setup.base import remedies
from sandbox_setup.cli import build_parser
from tests.core_fixtures import SANDBOX, make_target_root, run_cli, snapshot
from tests.tools import REPO, require_root, require_tool

pytestmark = pytest.mark.integration

SRC = REPO / "src/sandbox_setup"
# Modules whose text names a sandbox-setup command without being a remedy of ours.
NOT_REMEDIES = {
    "commands/check_report.py": "the report's title line",
    "commands/wording.py": "patterns that put the remedies in the wizard's words",
    "configure/answers.py": "a comment inside answers.toml",
    "configure/claude_shim.py": "a comment inside the shim script",
    "policy/git_protected.py": "comments inside the protected git config",
    "policy/login_routes.py": "a comment inside the sshd drop-in",
    "base/apparmor.py": "a comment inside the AppArmor profile",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            found.add(id(body[0].value))
    return found


def test_remedy_commands_are_built_only_in_base_remedies() -> None:
    spelled = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel in ("base/remedies.py", *NOT_REMEDIES):
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and re.search(r"sandbox-setup +--", node.value)
            ):
                spelled.append(f"{rel}:{node.lineno}: {node.value[:80]!r}")
    assert spelled == [], "build these commands with sandbox_setup.base.remedies"


def test_every_builder_has_an_example() -> None:
    builders = {
        name
        for name, value in vars(remedies).items()
        if inspect.isfunction(value)
        and value.__module__ == remedies.__name__
        and name not in remedies.HELPERS
    }
    assert builders == set(remedies.EXAMPLES)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp root with one applied sandbox setup (answers.toml saved)."""
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    root = make_target_root(tmp_path_factory.mktemp("remedies") / "root")
    proc = run_cli("--headless", "--yes", *SANDBOX, "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    return root


def paste(root: Path, command: str) -> None:
    """Run ``command`` as pasted: parsed by the real parser, then the real CLI with
    --dry-run where it would write; nothing under ``root`` may change."""
    argv = shlex.split(command)
    assert argv[0] == "sandbox-setup", command
    build_parser().parse_args(argv[1:])  # a usage error raises SystemExit
    writes = "--headless" in argv or "--undo" in argv
    before = snapshot(root)
    proc = run_cli(*argv[1:], *(["--dry-run"] if writes else []), timeout=120)
    # --check and --audit may report findings (1); never a usage error or a crash.
    assert proc.returncode in ((0,) if writes else (0, 1)), (command, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    if "--root" in argv:
        assert snapshot(root) == before, command


@pytest.mark.parametrize("name", sorted(remedies.EXAMPLES))
def test_each_remedy_works_when_pasted(saved: Path, name: str) -> None:
    paste(saved, remedies.EXAMPLES[name](str(saved)))


COMMAND = re.compile(r"sandbox-setup --\S.*$", re.MULTILINE)


def test_the_remedies_real_runs_print_work_when_pasted(saved: Path) -> None:
    root = str(saved)
    printed = []
    # A change applied: its undo lines.
    applied = run_cli("--headless", "--allow-domain", "example.org", "--yes", "--root", root)
    assert applied.returncode == 0, applied.stderr
    printed.append(applied.stdout)
    # The plan's note: ANTHROPIC_BASE_URL on the loopback, its port not allowed (the
    # operator turned the per-launch port off, a key every apply keeps).
    config = next(saved.glob("root/.config/sandbox-setup/launcher.toml"))
    text = config.read_text()
    assert "[sandbox]\n" in text
    config.write_text(text.replace("[sandbox]\n", '[sandbox]\nbase_url_port = "off"\n', 1))
    noted = run_cli(
        "--headless", "--root", root, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:10100"}
    )
    assert noted.returncode == 0, noted.stderr
    assert "to allow it: sandbox-setup --headless --allow-loopback-port 10100" in noted.stderr
    printed.append(noted.stderr)
    config.write_text(text)  # as the apply left it: the undo below restores it
    # A headless option without --headless: the command that does it.
    refused = run_cli("--pass-env", "MY_TOKEN", "--root", root)
    assert refused.returncode == 2
    printed.append(refused.stderr)
    # An undo: how many applies remain and how to remove them all.
    undone = run_cli("--undo", "--yes", "--root", root)
    assert undone.returncode == 0, undone.stderr
    printed.append(undone.stdout)
    commands = [m.group(0) for text in printed for m in COMMAND.finditer(text)]
    assert len(commands) >= 5, commands
    for command in commands:
        paste(saved, command)
