"""Issue 24: a generator of plants (hypothesis) against the end-of-session scan.

Each example builds a fresh workspace the way an operator has it (a repository
of root's with a commit, a linked worktree, a root-made ``app/lib``, a local
remote outside the workspace with a newer commit), grants the agent (``nobody``)
write access by ACL as the apply does, takes the session-start snapshot, and
then, as ``nobody``, writes a random plant:

- a repository layout to plant in: root's ``.git``; a bare layout in ``app/lib``
  with ``objects``/``refs`` as symlinks or as empty files; a ``.git`` file in
  ``app`` naming a git directory the agent made; a linked worktree's
  ``config.worktree``;
- settings drawn from git's documented command-valued keys (random case), each
  running a command that records ``id -u`` in a marker file;
- hooks (every name ``githooks(5)`` lists), attribute lines naming the drivers,
  an in-progress ``rebase-merge/`` with an ``exec`` line.

Then the scan and the quarantine run as the launcher's end does, and root runs
``status``, ``diff``, ``log``, ``commit``, ``checkout``, ``rebase --continue`` and
``pull`` from the local remote in every directory the layout concerns. No marker
may appear. Root's git has a clean HOME (no protected include of layer 1, but
``safe.directory = *``): the scan alone has to hold.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox_setup.boundary import quarantine
from sandbox_setup.boundary import scan as workspace_scan
from tests.integration.containers import make_workdir
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

NOBODY = 65534

# (section, subsection or None, name): keys whose value git runs as a command
# (git-config(1), 2.39 and later), or that pull in more config / hooks.
COMMAND_KEYS = [
    ("core", None, "fsmonitor"),
    ("core", None, "sshCommand"),
    ("core", None, "pager"),
    ("core", None, "editor"),
    ("core", None, "askPass"),
    ("core", None, "gitProxy"),
    ("core", None, "alternateRefsCommand"),
    ("core", None, "hooksPath"),
    ("diff", None, "external"),
    ("diff", "d", "textconv"),
    ("diff", "d", "command"),
    ("filter", "f", "clean"),
    ("filter", "f", "smudge"),
    ("filter", "f", "process"),
    ("merge", "m", "driver"),
    ("credential", None, "helper"),
    ("gpg", None, "program"),
    ("sequence", None, "editor"),
    ("uploadpack", None, "packObjectsHook"),
    ("remote", "origin", "uploadpack"),
    ("alias", None, "st"),
    ("include", None, "path"),
    ("includeIf", "gitdir:/", "path"),
    ("pager", None, "status"),
    ("pager", None, "log"),
    ("interactive", None, "diffFilter"),
    ("hook", "h", "command"),
    ("commit", None, "gpgSign"),  # true: gpg.program runs on commit
]
HOOKS = [
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit",
    "pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit",
    "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction",
    "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
    "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
]  # fmt: skip
LAYOUTS = ["dotgit", "bare-links", "bare-files", "gitdir-file", "worktree"]


def _case(text: str, mask: int) -> str:
    return "".join(c.upper() if mask >> (i % 16) & 1 else c.lower() for i, c in enumerate(text))


plants = st.fixed_dictionaries(
    {
        "layout": st.sampled_from(LAYOUTS),
        "keys": st.lists(
            st.tuples(st.sampled_from(range(len(COMMAND_KEYS))), st.integers(0, 0xFFFF)),
            max_size=5,
        ),
        "hooks": st.lists(st.sampled_from(HOOKS), max_size=4, unique=True),
        "attributes": st.sampled_from(["none", "worktree", "info"]),
        "rebase": st.booleans(),
    }
)

# Run as nobody by /usr/bin/python3 (a test script, not the project's code): writes
# what the spec says, as the agent would.
PLANT = r"""
import json, os, sys
spec = json.load(open(sys.argv[1]))
for path, kind, data in spec["writes"]:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if kind == "symlink":
        os.symlink(data, path)
    elif kind == "append":
        with open(path, "a") as f:
            f.write(data)
    else:
        with open(path, "w") as f:
            f.write(data)
        os.chmod(path, int(kind, 8))
"""


class Example:
    """One fresh workspace, root's git environment and the marker directory."""

    def __init__(self, base: Path, made: bool = False) -> None:
        self.base = base
        self.home = base / "root-home"
        self.ws = base / "ws"
        self.repo = self.ws / "repo"
        self.markers = base / "markers"
        self.remote = base / "remote.git"
        self.counter = 0
        if made:
            return
        for d in (self.home, self.markers, self.ws):
            d.mkdir()
        self.markers.chmod(0o777)
        (self.home / ".gitconfig").write_text(
            "[user]\n\tname = Operator\n\temail = op@example.com\n[safe]\n\tdirectory = *\n"
            "[init]\n\tdefaultBranch = main\n[pull]\n\trebase = false\n"
            '[protocol "file"]\n\tallow = always\n'
        )

    def env(self) -> dict[str, str]:
        # Root's editor and pager are the lowest-precedence ones (EDITOR, PAGER):
        # an agent's core.editor or core.pager would win over them.
        return {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "LANG": "C.UTF-8",
            "EDITOR": "true",
            "PAGER": "cat",
        }

    def git(self, cwd: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=self.env(), capture_output=True, text=True,
            timeout=30, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args} in {cwd}: {proc.stderr}")
        return proc

    def setup(self) -> None:
        """What root has before the session."""
        self.git(self.base, "init", "-q", "--bare", str(self.remote), check=True)
        repo = self.repo
        repo.mkdir()
        self.git(repo, "init", "-q", check=True)
        (repo / "README").write_text("hello\n")
        (repo / "app/lib").mkdir(parents=True)
        (repo / "app/lib/x.txt").write_text("x\n")
        self.git(repo, "add", ".", check=True)
        self.git(repo, "commit", "-qm", "init", check=True)
        self.git(repo, "remote", "add", "origin", str(self.remote), check=True)
        self.git(repo, "push", "-qu", "origin", "main", check=True)
        self.git(repo, "worktree", "add", "-q", "-b", "wtb", str(self.ws / "wt"), check=True)
        # The remote moves on: root's pull after its review commit merges README.
        other = self.base / "other"
        self.git(self.base, "clone", "-q", str(self.remote), str(other), check=True)
        (other / "README").write_text("hello from upstream\n")
        self.git(other, "commit", "-qam", "upstream", check=True)
        self.git(other, "push", "-q", "origin", "main", check=True)
        # The agent writes the workspace through ACLs, as the apply grants them.
        subprocess.run(
            ["setfacl", "-R", "-m", f"u:{NOBODY}:rwX,d:u:{NOBODY}:rwX", str(self.ws)],
            check=True,
        )

    def command(self) -> str:
        self.counter += 1
        marker = self.markers / f"m{self.counter}"
        return f"id -u > {shlex.quote(str(marker))}; exit 0 #"

    def script(self) -> str:
        return f"#!/bin/sh\n{self.command()}\n"

    # -- the plant -------------------------------------------------------------

    def writes(self, spec: dict[str, object]) -> tuple[list[list[str]], list[Path]]:
        """The files the agent writes, and the directories root's git runs in."""
        layout = spec["layout"]
        repo = self.repo
        out: list[list[str]] = []
        where = [repo]
        if layout == "dotgit":
            gitdir, config, tree = repo / ".git", repo / ".git/config", repo
        elif layout in ("bare-links", "bare-files"):
            gitdir = tree = repo / "app/lib"
            config = gitdir / "config"
            out.append([str(gitdir / "HEAD"), "644", "ref: refs/heads/main\n"])
            for name in ("objects", "refs"):
                if layout == "bare-links":
                    out.append([str(gitdir / name), "symlink", f"../../.git/{name}"])
                else:
                    out.append([str(gitdir / name), "755", ""])
            out.append(
                [str(config), "644", "[core]\n\trepositoryformatversion = 0\n"
                 "\tbare = false\n\tworktree = ..\n"]
            )  # fmt: skip
            where.append(gitdir)
        elif layout == "gitdir-file":
            gitdir = self.ws / ".gd"
            tree = repo / "app"
            config = gitdir / "config"
            out.append([str(gitdir / "HEAD"), "644", "ref: refs/heads/main\n"])
            for name in ("objects", "refs"):
                out.append([str(gitdir / name), "symlink", f"../repo/.git/{name}"])
            out.append([str(config), "644", "[core]\n\trepositoryformatversion = 0\n"])
            out.append([str(tree / ".git"), "644", "gitdir: ../../.gd\n"])
            where.append(tree / "lib")
        else:  # a linked worktree's own config
            gitdir = repo / ".git/worktrees/wt"
            tree = self.ws / "wt"
            config = gitdir / "config.worktree"
            out.append([str(repo / ".git/config"), "append",
                        "[extensions]\n\tworktreeConfig = true\n"])  # fmt: skip
            where.append(tree)
        text = ""
        for index, mask in spec["keys"]:  # type: ignore[attr-defined]
            section, sub, name = COMMAND_KEYS[index]
            header = _case(section, mask) + (f' "{sub}"' if sub else "")
            value = self._value(section, name, out)
            text += f"[{header}]\n\t{_case(name, mask >> 3)} = {value}\n"
        if text:
            out.append([str(config), "append", text])
        hooks = gitdir if layout != "worktree" else repo / ".git"
        for hook in spec["hooks"]:  # type: ignore[attr-defined]
            out.append([str(hooks / "hooks" / hook), "755", self.script()])
        if spec["attributes"] == "worktree":
            out.append([str(tree / ".gitattributes"), "644", "* diff=d filter=f merge=m\n"])
        elif spec["attributes"] == "info":
            out.append([str(gitdir / "info/attributes"), "644", "* diff=d filter=f merge=m\n"])
        if spec["rebase"]:
            head = self.git(repo, "rev-parse", "HEAD", check=True).stdout.strip()
            state = gitdir / "rebase-merge"
            for name, data in (
                ("git-rebase-todo", f"exec {self.command()}\n"),
                ("head-name", "refs/heads/main\n"),
                ("onto", f"{head}\n"),
                ("orig-head", f"{head}\n"),
                ("interactive", ""),
                ("end", "1\n"),
                ("msgnum", "0\n"),
            ):
                out.append([str(state / name), "644", data])
        return out, where

    def _value(self, section: str, name: str, out: list[list[str]]) -> str:
        if name == "hooksPath":
            hooks = self.ws / f".hooks{self.counter}"
            for hook in ("pre-commit", "post-checkout", "post-merge", "post-commit"):
                out.append([str(hooks / hook), "755", self.script()])
            return str(hooks)
        if section in ("include", "includeIf"):
            extra = self.ws / f".extra{self.counter}.cfg"
            out.append([str(extra), "644", f'[core]\n\tfsmonitor = "{self.command()}"\n'])
            return str(extra)
        if section == "alias":
            return f'"!{self.command()}"'
        if name == "gpgSign":
            return "true"
        return f'"{self.command()}"'

    def plant(self, spec: dict[str, object]) -> list[Path]:
        writes, where = self.writes(spec)
        spec_file = self.base / "spec.json"
        spec_file.write_text(json.dumps({"writes": writes}))
        spec_file.chmod(0o644)
        proc = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "/usr/bin/python3", "-c", PLANT, str(spec_file)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return where

    def review(self, where: list[Path]) -> None:
        """Root's ordinary commands after the session, where the layout is."""
        for cwd in where:
            self.git(cwd, "status")
            self.git(cwd, "diff")
            self.git(cwd, "log", "-p", "-2")
            readme = cwd / "README"
            if readme.exists():
                readme.write_text(f"reviewed {os.urandom(2).hex()}\n")
            self.git(cwd, "commit", "-qam", "review")
            self.git(cwd, "checkout", "-q", "-b", f"r-{os.urandom(3).hex()}")
            self.git(cwd, "checkout", "-q", "-")
            self.git(cwd, "rebase", "--continue")
            self.git(cwd, "pull", "-q", "--no-edit", "origin", "main")


@pytest.fixture(scope="module")
def fresh() -> Iterator[Callable[[], Example]]:
    """A factory of fresh examples: the workspace is built once, then copied back
    (``cp -a``: modes, owners, ACLs) to the same path before each example, so the
    absolute paths git wrote (the linked worktree's) stay right."""
    require_root()
    for tool in ("git", "setfacl", "setpriv", "cp"):
        require_tool(tool)
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no /usr/bin/python3 to write the plants as nobody")
    top = make_workdir("ws-gen-")
    live, template = top / "live", top / "template"
    live.mkdir()
    Example(live).setup()
    subprocess.run(["cp", "-a", str(live), str(template)], check=True)

    def make() -> Example:
        shutil.rmtree(live)
        subprocess.run(["cp", "-a", str(template), str(live)], check=True)
        return Example(live, made=True)

    try:
        yield make
    finally:
        shutil.rmtree(top, ignore_errors=True)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
@given(spec=plants)
def test_no_generated_plant_runs_as_root_after_the_end_scan(
    fresh: Callable[[], Example], spec: dict[str, object]
) -> None:
    example = fresh()
    before = workspace_scan.Snapshot.from_json(workspace_scan.snapshot([str(example.ws)]).to_json())
    where = example.plant(spec)
    result = workspace_scan.scan([str(example.ws)], before)
    assert result.truncated == []
    done = quarantine.neutralize_all(result.hits, str(example.base / "state/q"))
    assert all(n.done for n in done), [n.line for n in done if not n.done]
    example.review(where)
    fired = {p.name: p.read_text().strip() for p in example.markers.iterdir()}
    assert fired == {}, f"ran as root after the scan: {fired}; plant: {spec}"


def test_the_generator_plants_do_run_without_the_scan(fresh: Callable[[], Example]) -> None:
    """The control: the same kinds of plant, without the scan, run as root (so the
    generator above could fail). One fixed plant per layout: core.fsmonitor and a
    pre-commit hook, which git 2.39 runs on status and commit."""
    fsmonitor = COMMAND_KEYS.index(("core", None, "fsmonitor"))
    for layout in LAYOUTS:
        example = fresh()
        spec = {
            "layout": layout,
            "keys": [(fsmonitor, 0)],
            "hooks": ["pre-commit"],
            "attributes": "none",
            "rebase": False,
        }
        example.review(example.plant(spec))
        owners = {p.stat().st_uid for p in example.markers.iterdir()}
        assert owners == {0}, f"{layout}: nothing ran as root ({owners})"
