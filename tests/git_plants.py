"""Issue 24's generated plants: git's command-running configuration keys, hooks,
attribute drivers and repository layouts, what the agent writes, and root's review.

Shared by ``tests/integration/test_workspace_generated.py`` (the plants written as
the agent on the host, then the scan and quarantine run directly) and
``tests/integration/test_workspace_generated_sessions.py`` (a batch of plants written
by the agent inside one real ``sandbox-launch`` session, both modes).

A :class:`Slot` is one operator-style repository in the workspace: ``TOP/repo``
(root's, with a commit, a root-made ``app/lib``, a local remote outside the
workspace with a newer commit) and its linked worktree ``TOP/wt``. A plant in a
slot is drawn by :data:`plants`:

- a repository layout to plant in: root's ``.git``; a bare layout in ``app/lib``
  with ``objects``/``refs`` as symlinks or as empty files; a ``.git`` file in
  ``app`` naming a git directory the agent made (``TOP/.gd``); a linked worktree's
  ``config.worktree``;
- settings drawn from git's documented command-valued keys (random case), each
  running a command that records ``id -u`` in a marker file;
- hooks (every name ``githooks(5)`` lists), attribute lines naming the drivers,
  an in-progress ``rebase-merge/`` with an ``exec`` line.

:meth:`Slot.writes` turns a plant into a list of writes, which :func:`agent_script`
(the agent's program) carries out; :meth:`Slot.review` is root's ``status``,
``diff``, ``log``, ``commit``, ``checkout``, ``rebase --continue`` and ``pull``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

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


def control_plant(layout: str) -> dict[str, Any]:
    """A fixed plant git 2.39 obeys in ``layout``: ``core.fsmonitor`` (runs on
    ``status``) and a ``pre-commit`` hook (on ``commit``)."""
    return {
        "layout": layout,
        "keys": [(COMMAND_KEYS.index(("core", None, "fsmonitor")), 0)],
        "hooks": ["pre-commit"],
        "attributes": "none",
        "rebase": False,
    }


# The agent's program: carries out a list of writes ``[path, kind, data]`` (kind:
# an octal mode, "symlink" or "append"), each on its own, and prints one JSON line,
# "ok" or the errno name per write (EROFS: a read-only mount of the session).
_AGENT = r"""#!/usr/bin/python3
import errno, json, os
WRITES = json.loads({writes!r})
res = []
for path, kind, data in WRITES:
    try:
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
        res.append("ok")
    except OSError as exc:
        res.append(errno.errorcode.get(exc.errno, str(exc.errno)))
print(json.dumps(res), flush=True)
"""


def agent_script(writes: list[list[str]]) -> str:
    """The text of the agent's program (``/usr/bin/python3``, a test script, not the
    project's code) that makes ``writes``, as the agent would."""
    import json

    return _AGENT.format(writes=json.dumps(writes))


class RootGit:
    """Root's git as the operator runs it: a HOME of its own with ``safe.directory
    = *`` and no protected include of layer 1 (the session and the scan have to
    hold), no system config. Root's editor and pager are the lowest-precedence
    ones (EDITOR, PAGER): an agent's core.editor or core.pager would win."""

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(exist_ok=True)
        (home / ".gitconfig").write_text(
            "[user]\n\tname = Operator\n\temail = op@example.com\n[safe]\n\tdirectory = *\n"
            "[init]\n\tdefaultBranch = main\n[pull]\n\trebase = false\n"
            '[protocol "file"]\n\tallow = always\n'
        )

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "LANG": "C.UTF-8",
            "EDITOR": "true",
            "PAGER": "cat",
        }

    def __call__(
        self, cwd: Path, *args: str, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=self.env(), capture_output=True, text=True,
            timeout=30, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args} in {cwd}: {proc.stderr}")
        return proc


class Slot:
    """One operator-style repository ``TOP/repo`` with its linked worktree ``TOP/wt``
    and a local remote (outside the workspace); markers go to ``markers`` as
    ``TAG-mN`` (``id -u`` appended)."""

    def __init__(self, git: RootGit, top: Path, remote: Path, markers: Path, tag: str) -> None:
        self.git = git
        self.top = top
        self.repo = top / "repo"
        self.wt = top / "wt"
        self.remote = remote
        self.markers = markers
        self.tag = tag
        self.counter = 0

    def setup(self) -> None:
        """What root has before the session (then :func:`grant` the agent)."""
        git, repo = self.git, self.repo
        git(self.remote.parent, "init", "-q", "--bare", str(self.remote), check=True)
        repo.mkdir(parents=True)
        git(repo, "init", "-q", check=True)
        (repo / "README").write_text("hello\n")
        (repo / "app/lib").mkdir(parents=True)
        (repo / "app/lib/x.txt").write_text("x\n")
        git(repo, "add", ".", check=True)
        git(repo, "commit", "-qm", "init", check=True)
        git(repo, "remote", "add", "origin", str(self.remote), check=True)
        git(repo, "push", "-qu", "origin", "main", check=True)
        git(repo, "worktree", "add", "-q", "-b", "wtb", str(self.wt), check=True)
        # The remote moves on: root's pull after its review commit merges README.
        other = self.remote.parent / f"{self.remote.name}.other"
        git(self.remote.parent, "clone", "-q", str(self.remote), str(other), check=True)
        (other / "README").write_text("hello from upstream\n")
        git(other, "commit", "-qam", "upstream", check=True)
        git(other, "push", "-q", "origin", "main", check=True)

    def command(self) -> str:
        self.counter += 1
        marker = self.markers / f"{self.tag}-m{self.counter}"
        return f"id -u >> {shlex.quote(str(marker))}; exit 0 #"

    def script(self) -> str:
        return f"#!/bin/sh\n{self.command()}\n"

    def writes(self, spec: dict[str, Any]) -> tuple[list[list[str]], list[Path]]:
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
            gitdir = self.top / ".gd"
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
            tree = self.wt
            config = gitdir / "config.worktree"
            out.append([str(repo / ".git/config"), "append",
                        "[extensions]\n\tworktreeConfig = true\n"])  # fmt: skip
            where.append(tree)
        text = ""
        for index, mask in spec["keys"]:
            section, sub, name = COMMAND_KEYS[index]
            header = _case(section, mask) + (f' "{sub}"' if sub else "")
            value = self._value(section, name, out)
            text += f"[{header}]\n\t{_case(name, mask >> 3)} = {value}\n"
        if text:
            out.append([str(config), "append", text])
        hooks = gitdir if layout != "worktree" else repo / ".git"
        for hook in spec["hooks"]:
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
            hooks = self.top / f".hooks{self.counter}"
            for hook in ("pre-commit", "post-checkout", "post-merge", "post-commit"):
                out.append([str(hooks / hook), "755", self.script()])
            return str(hooks)
        if section in ("include", "includeIf"):
            extra = self.top / f".extra{self.counter}.cfg"
            out.append([str(extra), "644", f'[core]\n\tfsmonitor = "{self.command()}"\n'])
            return str(extra)
        if section == "alias":
            return f'"!{self.command()}"'
        if name == "gpgSign":
            return "true"
        return f'"{self.command()}"'

    def review(self, where: list[Path]) -> None:
        """Root's ordinary commands after the session, where the layout is."""
        git = self.git
        for cwd in where:
            git(cwd, "status")
            git(cwd, "diff")
            git(cwd, "log", "-p", "-2")
            readme = cwd / "README"
            if readme.exists():
                readme.write_text(f"reviewed {os.urandom(2).hex()}\n")
            git(cwd, "commit", "-qam", "review")
            git(cwd, "checkout", "-q", "-b", f"r-{os.urandom(3).hex()}")
            git(cwd, "checkout", "-q", "-")
            git(cwd, "rebase", "--continue")
            git(cwd, "pull", "-q", "--no-edit", "origin", "main")


def grant(workspace: Path, uid: int = NOBODY) -> None:
    """The agent (``uid``) writes the workspace through ACLs, as the apply grants them."""
    subprocess.run(
        ["setfacl", "-R", "-m", f"u:{uid}:rwX,d:u:{uid}:rwX", str(workspace)],
        check=True,
    )


def ran_as_root(markers: Path) -> dict[str, str]:
    """The markers a command wrote as uid 0 (name: the uids that wrote it)."""
    found = {p.name: p.read_text().split() for p in markers.iterdir()}
    return {name: " ".join(uids) for name, uids in found.items() if "0" in uids}
