"""The workspace boundary's rules: the git config parser (checked against real git),
the dangerous-key table, the Claude project settings judge, hooks, bare layouts,
and the read-only bind plan."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.policy.claude_project import (
    judge_claude_settings,
    judge_mcp_json,
    without_settings,
)
from sandbox_setup.policy.git_danger import ConfigContext, dangerous_git_config
from sandbox_setup.policy.gitconfig import (
    git_bool,
    hooks_path,
    included_files,
    parse_git_config,
    remove_entries,
)
from sandbox_setup.policy.workspace import (
    GitDirFacts,
    TreeFacts,
    WorkspaceLayout,
    is_hook_that_runs,
    looks_like_git_dir,
    plan_ro_binds,
)
from tests.tools import require_tool

# -- the parser -------------------------------------------------------------------

PARSE_CASES = [
    ("[core]\n\tpager = less\n", [("core.pager", "less")]),
    ("[Core]\n\tFSMonitor = x\n", [("core.fsmonitor", "x")]),
    ('[filter "LFS"]\n\tclean = c\n', [("filter.LFS.clean", "c")]),
    ("[Filter.LFS]\n\tclean = c\n", [("filter.lfs.clean", "c")]),
    ("[core] pager = inline\n", [("core.pager", "inline")]),
    ("[core]pager=tight\n", [("core.pager", "tight")]),
    ('[a]\n\tx = "q;u#o"\n', [("a.x", "q;u#o")]),
    ("[a]\n\tx = v ; comment\n", [("a.x", "v")]),
    ("[a]\n\tx = v # comment\n", [("a.x", "v")]),
    ('[a]\n\tx = "t\\tab"\n', [("a.x", "t\tab")]),
    ("[a]\n\tx = one \\\n  two\n", [("a.x", "one   two")]),
    ("[a]\n\tx = a \t b\n", [("a.x", "a   b")]),
    ("[a]\n\tbare\n", [("a.bare", None)]),
    ("[a]\n\tx =\n", [("a.x", "")]),
    ("[a]\r\n\tx = crlf\r\n", [("a.x", "crlf")]),
    ("\ufeff[a]\n\tx = bom\n", [("a.x", "bom")]),
    ("# c\n; c\n[a]  # c\n\tx = 1\n", [("a.x", "1")]),
    ('[a "sub\\"q\\\\"]\n\tx = 1\n', [('a.sub"q\\.x', "1")]),
    ("[a][b] x = 2\n", [("b.x", "2")]),
    ('[a "b"] x = 1\n[a "B"]\n\tx = 2\n', [("a.b.x", "1"), ("a.B.x", "2")]),
    ("[a.b.c]\n\tx = 1\n", [("a.b.c.x", "1")]),
    ("[a]\n\tx = 1\n\ty-z = 2\n", [("a.x", "1"), ("a.y-z", "2")]),
    ('[a]\n\tx = "spaced  "\n', [("a.x", "spaced  ")]),
    ('[a]\n\tx = \\"\n', [("a.x", '"')]),
]

SYNTAX_ERRORS = [
    "[core\n\tx = 1\n",
    '[a "b]\n',
    '[a "b" ]\n',
    '[a]\n\tx = "open\n',
    "[a]\n\tx = bad\\q\n",
    "[a]\n\t1x = 2\n",
    "[a]\n\tx y = 2\n",
    "[a!]\n",
    "[a]\n\tv # no equals\n",
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_parser_reads_keys_and_values_like_git(text: str, expected: list[tuple]) -> None:
    parsed = parse_git_config(text)
    assert parsed.error is None
    assert [(e.key, e.value) for e in parsed.entries] == expected


@pytest.mark.parametrize("text", SYNTAX_ERRORS)
def test_parser_reports_what_git_refuses(text: str) -> None:
    assert parse_git_config(text).error is not None


def _git_list(path: Path) -> tuple[int, list[tuple[str, str | None]]]:
    proc = subprocess.run(
        ["git", "config", "--file", str(path), "--list", "-z"],
        capture_output=True,
        env={"PATH": os.environ["PATH"], "HOME": str(path.parent), "GIT_CONFIG_NOSYSTEM": "1"},
        check=False,
    )
    items: list[tuple[str, str | None]] = []
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]:
        key, newline, value = record.partition("\n")
        items.append((key, value if newline else None))
    return proc.returncode, items


def test_parser_agrees_with_real_git_on_every_case(tmp_path: Path) -> None:
    """The table above is not just this parser's opinion: git itself reads each
    text to the same keys and values, and refuses each broken one."""
    require_tool("git")
    path = tmp_path / "config"
    for text, expected in PARSE_CASES:
        path.write_bytes(text.encode())
        code, items = _git_list(path)
        assert code == 0, text
        assert items == expected, text
        assert [(e.key, e.value) for e in parse_git_config(text).entries] == items, text
    for text in SYNTAX_ERRORS:
        path.write_bytes(text.encode())
        assert _git_list(path)[0] != 0, text


def test_entries_know_their_line_and_inline_position() -> None:
    parsed = parse_git_config("[core]\n\tx = 1\n[core] y = 2\n\tz = a\\\n b\n")
    lines = [(e.key, e.line, e.inline) for e in parsed.entries]
    assert lines == [("core.x", 2, False), ("core.y", 3, True), ("core.z", 4, False)]


def test_remove_entries_keeps_every_other_byte() -> None:
    text = (
        '# my settings\n[core]\n\tbare = false\n\tfsmonitor = "evil \\\n --flag" ; why\n'
        "\teditor = vim\n[core] pager = evil\n[user]\n\tname = me\r\n"
    )
    parsed = parse_git_config(text)
    drop = [e.start for e in parsed.entries if e.name in ("fsmonitor", "pager")]
    cleaned = remove_entries(text, drop)
    assert cleaned == (
        "# my settings\n[core]\n\tbare = false\n\teditor = vim\n[core] \n[user]\n\tname = me\r\n"
    )
    assert [e.key for e in parse_git_config(cleaned).entries] == [
        "core.bare",
        "core.editor",
        "user.name",
    ]


def test_git_bool_follows_git() -> None:
    assert [git_bool(v) for v in (None, "", "yes", "On", "TRUE", "1", "0", "off", "no")] == [
        True,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert git_bool("./hook") is None
    # as git_parse_maybe_bool() reads them: nothing trimmed but strtoimax's
    # leading spaces, octal and units (issue 24: " on" is a command)
    assert [git_bool(v) for v in (" on", "on ", "true ", " 1", "1 ", "010", "0x0", "2k")] == [
        None,
        None,
        None,
        True,
        None,
        True,
        False,
        True,
    ]


def test_includes_and_hooks_path_are_read() -> None:
    text = '[include]\n\tpath = a.cfg\n[includeIf "gitdir:/x/"]\n\tpath = b.cfg\n'
    text += "[core]\n\thooksPath = one\n\thooksPath = two\n"
    assert included_files(text) == ["a.cfg", "b.cfg"]
    assert hooks_path(text) == "two"
    assert hooks_path("[core]\n\thooksPath = x\n\thooksPath =\n") is None


# -- dangerous keys -----------------------------------------------------------------

DANGEROUS = [
    ("[core]\n\tfsmonitor = ./watch\n", "core.fsmonitor"),
    ("[core]\n\thooksPath = .husky\n", "core.hookspath"),
    ("[core]\n\tsshCommand = ssh -o ProxyCommand=x\n", "core.sshcommand"),
    ("[core]\n\tpager = less\n", "core.pager"),
    ("[core]\n\teditor = sh\n", "core.editor"),
    ("[core]\n\taskPass = /tmp/x\n", "core.askpass"),
    ("[core]\n\tgitProxy = p for example.com\n", "core.gitproxy"),
    ("[core]\n\talternateRefsCommand = x\n", "core.alternaterefscommand"),
    ("[core]\n\tworktree = /etc\n", "core.worktree"),
    ("[sequence]\n\teditor = x\n", "sequence.editor"),
    ("[diff]\n\texternal = x\n", "diff.external"),
    ('[diff "pdf"]\n\ttextconv = x\n', "diff.pdf.textconv"),
    ('[diff "pdf"]\n\tcommand = x\n', "diff.pdf.command"),
    ('[merge "ours"]\n\tdriver = x %O\n', "merge.ours.driver"),
    ('[filter "x"]\n\tclean = c\n', "filter.x.clean"),
    ('[filter "x"]\n\tsmudge = c\n', "filter.x.smudge"),
    ('[filter "x"]\n\tprocess = c\n', "filter.x.process"),
    ('[filter "lfs"]\n\tclean = sh -c evil\n', "filter.lfs.clean"),
    ('[difftool "t"]\n\tcmd = x\n', "difftool.t.cmd"),
    ('[mergetool "t"]\n\tpath = x\n', "mergetool.t.path"),
    ("[alias]\n\tst = !sh -c x\n", "alias.st"),
    ("[alias]\n\tlg = -c core.pager=x log\n", "alias.lg"),
    ("[include]\n\tpath = ../x\n", "include.path"),
    ('[includeIf "gitdir:/srv/"]\n\tpath = x\n', "includeif.gitdir:/srv/.path"),
    ("[credential]\n\thelper = store\n", "credential.helper"),
    (
        '[credential "https://example.com"]\n\thelper = !f\n',
        "credential.https://example.com.helper",
    ),
    ("[gpg]\n\tprogram = x\n", "gpg.program"),
    ('[gpg "ssh"]\n\tprogram = x\n', "gpg.ssh.program"),
    ('[gpg "ssh"]\n\tdefaultKeyCommand = x\n', "gpg.ssh.defaultkeycommand"),
    ("[uploadpack]\n\tpackObjectsHook = x\n", "uploadpack.packobjectshook"),
    ('[remote "o"]\n\tuploadpack = x\n', "remote.o.uploadpack"),
    ('[remote "o"]\n\treceivepack = x\n', "remote.o.receivepack"),
    ('[remote "o"]\n\tvcs = ../x\n', "remote.o.vcs"),
    ('[remote "o"]\n\turl = ext::sh -c x\n', "remote.o.url"),
    ('[remote "o"]\n\tproxy = http://evil\n', "remote.o.proxy"),
    (
        '[url "file:///tmp/evil"]\n\tinsteadOf = https://github.com/\n',
        "url.file:///tmp/evil.insteadof",
    ),
    ("[http]\n\tproxy = http://evil\n", "http.proxy"),
    ("[http]\n\tsslVerify = false\n", "http.sslverify"),
    ('[http "https://x"]\n\tsslCAInfo = /tmp/ca\n', "http.https://x.sslcainfo"),
    ("[http]\n\tcookieFile = /root/.bashrc\n", "http.cookiefile"),
    ("[pager]\n\tlog = evil\n", "pager.log"),
    ("[interactive]\n\tdiffFilter = x\n", "interactive.difffilter"),
    ('[hook "lint"]\n\tcommand = x\n', "hook.lint.command"),
    ('[hook "lint"]\n\tevent = pre-commit\n', "hook.lint.event"),
    ('[submodule "s"]\n\tupdate = !sh\n', "submodule.s.update"),
    ("[protocol]\n\tallow = always\n", "protocol.allow"),
    ('[protocol "ext"]\n\tallow = always\n', "protocol.ext.allow"),
    ("[init]\n\ttemplateDir = /tmp/t\n", "init.templatedir"),
    ("[commit]\n\ttemplate = /etc/shadow\n", "commit.template"),
    ("[sendemail]\n\tsmtpServer = /tmp/x\n", "sendemail.smtpserver"),
    ("[sendemail]\n\ttoCmd = x\n", "sendemail.tocmd"),
    ('[browser "b"]\n\tcmd = x\n', "browser.b.cmd"),
    ('[man "m"]\n\tpath = x\n', "man.m.path"),
    ('[guitool "g"]\n\tcmd = x\n', "guitool.g.cmd"),
    ('[trailer "t"]\n\tcommand = x\n', "trailer.t.command"),
    ('[tar "tgz"]\n\tcommand = x\n', "tar.tgz.command"),
    ("[imap]\n\ttunnel = x\n", "imap.tunnel"),
    ("[instaweb]\n\thttpd = x\n", "instaweb.httpd"),
    ('[lfs "customtransfer.t"]\n\tpath = x\n', "lfs.customtransfer.t.path"),
]

HARMLESS = [
    "[core]\n\tfsmonitor = false\n",
    "[core]\n\tfsmonitor = true\n",
    "[core]\n\tfsmonitor = 0\n",
    "[core]\n\thooksPath =\n",
    "[core]\n\tbare = false\n\tlogallrefupdates = true\n",
    '[remote "origin"]\n\turl = https://example.com/r.git\n\tfetch = +refs/heads/*:refs/x/*\n',
    '[branch "main"]\n\tremote = origin\n',
    "[credential]\n\thelper =\n",
    "[pager]\n\tlog = false\n",
    "[alias]\n\tst = status -sb\n",
    '[submodule "s"]\n\tupdate = rebase\n',
    '[protocol "file"]\n\tallow = always\n',
    '[protocol "ext"]\n\tallow = never\n',
    "[http]\n\tsslVerify = true\n",
    '[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n'
    "\tprocess = git-lfs filter-process\n\trequired = true\n",
    "[user]\n\tname = x\n\temail = y\n",
    "[sendemail]\n\tsmtpServer = smtp.example.com\n",
]


@pytest.mark.parametrize(("text", "key"), DANGEROUS)
def test_dangerous_keys_are_found_with_a_reason(text: str, key: str) -> None:
    hits = dangerous_git_config(text)
    assert [h.key for h in hits] == [key]
    assert len(hits[0].why) > 20
    assert hits[0].line >= 1


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_settings_are_not_hits(text: str) -> None:
    assert dangerous_git_config(text) == []


def test_case_and_layout_tricks_do_not_hide_a_key(tmp_path: Path) -> None:
    """Every spelling git reads as core.fsmonitor is a hit; one git does not read
    as core.fsmonitor (an empty subsection) is not."""
    require_tool("git")
    path = tmp_path / "config"
    for text in (
        "[CORE]\n\tFSMONITOR = x\n",
        "[core] fsmonitor = x\n",
        "[core]fsmonitor=x\n",
        '[core ""]\n\tfsmonitor = x\n',
        "[core]\n\tfsmonitor = \\\nx\n",
        '[core]\n\tfsmonitor = "x" ; true\n',
        "[core]\r\n\tfsmonitor = x\r\n",
    ):
        path.write_text(text)
        git = subprocess.run(
            ["git", "config", "--file", str(path), "--get", "core.fsmonitor"],
            capture_output=True,
            text=True,
            check=False,
        )
        found = [h.key for h in dangerous_git_config(text)] == ["core.fsmonitor"]
        assert found == (git.returncode == 0), text


def test_a_worktree_inside_the_workspace_is_a_submodule_not_a_hit() -> None:
    context = ConfigContext(PurePosixPath("/srv/app"), PurePosixPath("/srv/app/.git/modules/lib"))
    inside = "[core]\n\tworktree = ../../../lib\n"
    outside = "[core]\n\tworktree = ../../../../etc\n"
    assert dangerous_git_config(inside, context) == []
    assert [h.key for h in dangerous_git_config(outside, context)] == ["core.worktree"]
    assert [h.key for h in dangerous_git_config(inside)] == ["core.worktree"]  # no context


def test_a_broken_file_is_judged_up_to_the_error_and_flagged() -> None:
    hits = dangerous_git_config("[core]\n\tfsmonitor = x\n[broken\n")
    assert [h.key for h in hits] == ["core.fsmonitor", "config.syntax"]
    assert hits[1].kind == "unreadable"


# -- Claude Code project settings -----------------------------------------------------


def test_claude_settings_hits_name_what_runs() -> None:
    data = {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]
        },
        "statusLine": {"type": "command", "command": "./status.sh"},
        "apiKeyHelper": "/tmp/key.sh",
        "awsCredentialExport": "aws.sh",
        "otelHeadersHelper": "h.sh",
        "fileSuggestion": {"type": "command", "command": "f"},
        "env": {"NODE_OPTIONS": "--require /srv/app/x.js"},
        "enableAllProjectMcpServers": True,
        "permissions": {"allow": ["Bash(*)"], "defaultMode": "bypassPermissions"},
        "model": "opus",
        "includeCoAuthoredBy": False,
    }
    keys = [h.key for h in judge_claude_settings(data)]
    assert keys == [
        "hooks.PreToolUse",
        "apiKeyHelper",
        "awsCredentialExport",
        "otelHeadersHelper",
        "statusLine.command",
        "fileSuggestion.command",
        "env.NODE_OPTIONS",
        "enableAllProjectMcpServers",
        "permissions.defaultMode",
        "permissions.allow",
    ]
    cleaned = without_settings(data, judge_claude_settings(data))
    assert cleaned == {
        "hooks": {},
        "env": {},
        "permissions": {},
        "model": "opus",
        "includeCoAuthoredBy": False,
    }
    assert judge_claude_settings(cleaned) == []


def test_claude_settings_without_commands_are_clean() -> None:
    assert judge_claude_settings({"model": "opus", "permissions": {"deny": ["Read(.env)"]}}) == []
    assert judge_claude_settings({"hooks": {}}) == []
    assert [h.kind for h in judge_claude_settings(["not", "an object"])] == ["unreadable"]


def test_mcp_servers_that_run_commands_are_hits() -> None:
    data = {
        "mcpServers": {
            "local": {"command": "node", "args": ["srv.js"]},
            "remote": {"type": "http", "url": "https://x"},
            "helper": {"type": "http", "url": "https://y", "headersHelper": "h.sh"},
        }
    }
    hits = judge_mcp_json(data)
    assert [(h.key, h.kind) for h in hits] == [
        ("mcpServers.local", "runs"),
        ("mcpServers.remote", "connects"),
        ("mcpServers.helper", "runs"),
    ]
    assert hits[0].value == "node srv.js"
    assert judge_mcp_json({"mcpServers": {}}) == []


# -- hooks, bare layouts, binds --------------------------------------------------------


def test_hook_rule() -> None:
    reg = stat.S_IFREG
    assert is_hook_that_runs("pre-commit", reg | 0o755)
    assert is_hook_that_runs("pre-commit", reg | 0o700)
    assert is_hook_that_runs("pre-commit", reg | 0o644 | 0o001)
    assert not is_hook_that_runs("pre-commit", reg | 0o644)
    assert not is_hook_that_runs("pre-commit.sample", reg | 0o755)
    assert is_hook_that_runs("post-checkout", stat.S_IFLNK | 0o777)
    assert not is_hook_that_runs("pre-commit", stat.S_IFDIR | 0o755)


def test_bare_layout_markers() -> None:
    assert looks_like_git_dir({"HEAD": "file", "objects": "dir", "refs": "dir"})
    assert looks_like_git_dir({"HEAD": "file", "commondir": "file"})
    assert not looks_like_git_dir({"HEAD": "file", "objects": "dir"})
    assert not looks_like_git_dir({"objects": "dir", "refs": "dir", "config": "file"})
    assert not looks_like_git_dir({"HEAD": "dir", "objects": "dir", "refs": "dir"})
    # A FIFO HEAD: git opens it (and waits for ever): a repository to the scan.
    assert looks_like_git_dir({"HEAD": "other", "objects": "dir", "refs": "dir"})
    assert looks_like_git_dir({"HEAD": "other", "commondir": "file"})
    # git's access(X_OK) follows symlinks and passes files with an x bit (issue 24)
    assert looks_like_git_dir({"HEAD": "file", "objects": "link", "refs": "link"})
    assert looks_like_git_dir({"HEAD": "file", "objects": "file", "refs": "file"})
    assert looks_like_git_dir({"HEAD": "link", "objects": "other", "refs": "dir"})
    assert looks_like_git_dir({"HEAD": "file", "commondir": "link"})


def test_bind_plan_covers_git_and_workspace_files() -> None:
    layout = WorkspaceLayout(
        gitdirs=(
            GitDirFacts(".git", "dotgit", {"config": "file", "hooks": "dir", "info": "dir"}),
            GitDirFacts(".git/worktrees/wt", "worktree", {"commondir": "file"}),
            GitDirFacts("sub/.git", "dotgit", {"config": "file", "hooks": "link"}),
        ),
        pointers=("lib/.git",),
        trees=(
            TreeFacts(".", {".vscode": "dir", ".claude": "dir"}, workspace_root=True),
            TreeFacts("sub", {".mcp.json": "file"}),
        ),
    )
    plan = plan_ro_binds(layout)
    binds = {b.rel: b.source for b in plan.binds}
    assert binds[".git/config"] == "self"
    assert binds[".git/hooks"] == "self"
    assert binds[".git/info"] == "self"
    assert binds[".git/commondir"] == "commondir"
    assert binds[".git/config.worktree"] == "empty-file"
    assert binds[".git/worktrees/wt/commondir"] == "self"
    assert binds[".git/worktrees/wt/config.worktree"] == "empty-file"
    assert ".git/worktrees/wt/hooks" not in binds  # git takes hooks from the commondir
    assert binds["lib/.git"] == "self"
    assert binds[".vscode"] == "self"
    assert binds[".claude/hooks"] == "empty-dir"
    assert binds[".bashrc"] == "empty-dir"  # the runtime's dotfiles, at the workspace top
    # Claude Code inside reads these itself: a missing one is left to the scan.
    assert ".claude/settings.json" not in binds
    assert ".mcp.json" not in binds
    assert binds["sub/.mcp.json"] == "self"
    assert "sub/.claude" not in binds  # deeper trees: existing files only
    assert "sub/.bashrc" not in binds
    assert dict(plan.not_bound)["sub/.git/hooks"].startswith("a symlink")
    # git keeps writing everything else in its directory: objects, refs, index...
    assert not any(b.rel in (".git", ".git/objects", ".git/refs") for b in plan.binds)


def test_bind_plan_leaves_a_missing_claude_dir_to_the_scan() -> None:
    # Claude's own sandbox creates mount points inside .claude/ (settings.json): an
    # empty read-only placeholder there made every sandboxed command fail.
    plan = plan_ro_binds(WorkspaceLayout(trees=(TreeFacts(".", {}, workspace_root=True),)))
    assert not [b for b in plan.binds if b.rel.startswith(".claude")]
    # ...while the editors' folders, which nothing binds below, still get one
    assert (".vscode", "empty-dir") in [(b.rel, b.source) for b in plan.binds]


def test_bind_plan_is_capped_and_says_what_it_left_to_the_scan() -> None:
    gitdirs = tuple(GitDirFacts(f"r{i}/.git", "dotgit", {"config": "file"}) for i in range(20))
    plan = plan_ro_binds(WorkspaceLayout(gitdirs=gitdirs), max_binds=10)
    assert len(plan.binds) == 10
    assert any("more than 10" in reason for _rel, reason in plan.not_bound)


def test_only_the_inert_keys_pass_the_allowlist() -> None:
    """Issue 24, layer 3: what git init/clone/remote/branch -u/submodule add write
    passes; anything else, and inert keys with a value of the wrong shape, do not."""
    from pathlib import PurePosixPath

    from sandbox_setup.policy.git_danger import ConfigContext
    from sandbox_setup.policy.git_inert import unlisted_entries

    text = (
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
        "\tlogallrefupdates = always\n\tworktree = ../../../lib\n"
        '[remote "origin"]\n\turl = https://example.com/r.git\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
        '[submodule "lib"]\n\turl = ../lib.git\n\tactive = true\n'
        "[user]\n\tname = A\n\temail = a@example.com\n"
        # not inert:
        '[core]\n\tbare = true\n\tfilemode = " on"\n\tworktree = /etc\n\tpager = less\n'
        '[remote "x"]\n\turl = ext::sh -c id\n\tuploadpack = evil\n'
        '[branch "b"]\n\tremote = fd::3\n'
        "[alias]\n\tlg = log --graph\n[pull]\n\trebase = true\n[gc]\n\tauto = 0\n"
        "[include]\n\tpath = x.cfg\n[core]\n\trepositoryformatversion = 0 x\n"
    )
    context = ConfigContext(PurePosixPath("/ws"), PurePosixPath("/ws/repo/.git/modules/lib"))
    entries = parse_git_config(text).entries
    assert [h.key for h in unlisted_entries(entries, context)] == [
        "core.bare",
        "core.filemode",
        "core.worktree",
        "core.pager",
        "remote.x.url",
        "remote.x.uploadpack",
        "branch.b.remote",
        "alias.lg",
        "pull.rebase",
        "gc.auto",
        "include.path",
        "core.repositoryformatversion",
    ]


def test_inert_keys_with_terminal_controls_are_not_inert() -> None:
    """An allowlisted value root's git prints raw (git log, git config, git remote -v)
    passes only as printable text: an escape sequence, a DEL, a C1 control, a bidi
    override or a byte that is not UTF-8 make it unlisted."""
    from sandbox_setup.policy.git_inert import unlisted_entries

    text = (
        '[user]\n\tname = "Ann Example"\n\temail = ann@example.com\n'
        '[user]\n\tname = "Ann\x1b]0;pwned\x07"\n\temail = "a\x7f@example.com"\n'
        '[user]\n\tname = "x\\by"\n\tname = "A\u202eB"\n\tname = "C\x9b2J"\n'
        '[remote "o"]\n\turl = "https://e.com/\x1b[2J"\n'
        "[user]\n\tname = \udc9b\n"
    )
    entries = parse_git_config(text).entries
    assert [(h.key, h.line) for h in unlisted_entries(entries)] == [
        ("user.name", 5),
        ("user.email", 6),
        ("user.name", 8),
        ("user.name", 9),
        ("user.name", 10),
        ("remote.o.url", 12),
        ("user.name", 14),
    ]
