"""The git settings that make root's git run a command or go where the agent chose.

Read from ``git help config`` (git 2.39) and ``gitattributes``/``githooks``: every
key whose value git executes (through the shell or as a program), that points
git at hooks, config or a work tree elsewhere, or that sends root's traffic and
credentials somewhere else. Each rule says why in words an operator understands.
Values git-lfs writes for itself (``filter.lfs.*`` with its fixed commands) are
not hits: they run root's own git-lfs with arguments nothing else chose.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from sandbox_setup.policy.config_hit import ConfigHit
from sandbox_setup.policy.gitconfig import ConfigEntry, git_bool, parse_git_config

__all__ = ["ConfigContext", "ConfigHit", "dangerous_git_config", "judge_entries"]


@dataclass(frozen=True, slots=True)
class ConfigContext:
    """Where the config file's repository is, to tell a ``core.worktree`` inside the
    workspace (submodules have one) from one that points out of it."""

    workspace: PurePosixPath
    gitdir: PurePosixPath


def _set(value: str | None) -> bool:
    return value is not None and value.strip() != ""


def _not_bool(value: str | None) -> bool:
    return git_bool(value) is None


def _false(value: str | None) -> bool:
    return git_bool(value) is False


def _shell(value: str | None) -> bool:
    return value is not None and value.lstrip().startswith("!")


def _alias(value: str | None) -> bool:
    if value is None:
        return False
    words = value.split()
    return _shell(value) or any(
        w in ("-c", "--exec-path", "-C") or w.startswith(("--config-env", "--exec-path="))
        for w in words
    )


def _command_url(value: str | None) -> bool:
    return value is not None and value.strip().lower().startswith(("ext::", "fd::"))


def _absolute(value: str | None) -> bool:
    return value is not None and value.strip().startswith(("/", "~"))


def _protocol_allow(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "always"


def _other_protocol_allow(value: str | None) -> bool:
    return value is not None and value.strip().lower() != "never"


# git-lfs writes these into .git/config (`git lfs install --local`): they run
# root's own git-lfs from PATH with fixed arguments, nothing the agent chose.
_LFS_FILTER = {
    "clean": ("git-lfs clean -- %f",),
    "smudge": ("git-lfs smudge -- %f", "git-lfs smudge --skip -- %f"),
    "process": ("git-lfs filter-process", "git-lfs filter-process --skip"),
}


@dataclass(frozen=True, slots=True)
class _Rule:
    section: str
    name: str | None  # None: any key name
    sub: bool | None  # True: needs a subsection, False: none, None: either
    when: Callable[[str | None], bool]
    why: str  # {sub} is the subsection, {name} the key name
    kind: str = "runs"
    subsection: str | None = None  # only this subsection (compared lowercased)
    not_subsections: frozenset[str] = frozenset()  # except these (lowercased)


_RUNS_ON_STATUS = "on `git status`, `git diff`, `git commit` and most other commands"
_RULES: tuple[_Rule, ...] = (
    _Rule("core", "fsmonitor", False, _not_bool, f"git runs this program {_RUNS_ON_STATUS}"),
    _Rule(
        "core",
        "hookspath",
        False,
        _set,
        "git runs its hooks (commit, checkout, merge, push...) from this directory "
        "instead of .git/hooks",
    ),
    _Rule("core", "sshcommand", False, _set, "git runs this command for every ssh fetch and push"),
    _Rule("core", "pager", False, _set, "git pipes `git log`, `git diff`, `git show` through this"),
    _Rule("core", "editor", False, _set, "git runs this editor on `git commit`, `git tag -a`..."),
    _Rule("core", "askpass", False, _set, "git runs this program to ask for a password"),
    _Rule("core", "gitproxy", False, _set, "git runs this command to reach git:// remotes"),
    _Rule(
        "core",
        "alternaterefscommand",
        False,
        _set,
        "git runs this command on fetch and push when the repository has alternates",
    ),
    _Rule(
        "core",
        "worktree",
        False,
        _set,
        "git checks files out into this directory, outside the repository: root's "
        "`git checkout` and `git reset` would write there",
        kind="redirects",
    ),
    _Rule("sequence", "editor", False, _set, "git runs this editor on `git rebase -i`"),
    _Rule("diff", "external", False, _set, "git runs this program for every `git diff`"),
    _Rule(
        "diff",
        "command",
        True,
        _set,
        "git runs this program for `git diff` of files marked diff={sub} in .gitattributes",
    ),
    _Rule(
        "diff",
        "textconv",
        True,
        _set,
        "git runs this program for `git diff`, `git log -p`, `git show` of files marked diff={sub}",
    ),
    _Rule("merge", "driver", True, _set, "git runs this command to merge files marked merge={sub}"),
    *(
        _Rule(
            "filter",
            name,
            True,
            _set,
            f"git runs this command ({name}) on checkout, add and status for files marked "
            "filter={sub} in .gitattributes",
        )
        for name in ("clean", "smudge", "process")
    ),
    *(
        _Rule(tool, name, True, _set, f"`git {tool}` runs this command")
        for tool in ("difftool", "mergetool")
        for name in ("cmd", "path")
    ),
    _Rule("alias", None, False, _alias, "`git {name}` runs this (a shell command or git -c)"),
    _Rule(
        "include",
        "path",
        False,
        _set,
        "git reads more configuration from this file, which the scan does not vouch for",
        kind="includes",
    ),
    _Rule(
        "includeif",
        "path",
        True,
        _set,
        "git reads more configuration from this file ({sub}), which the scan does not vouch for",
        kind="includes",
    ),
    _Rule(
        "credential",
        "helper",
        None,
        _set,
        "git runs this helper and hands it root's passwords and tokens for remotes",
    ),
    _Rule(
        "gpg", "program", None, _set, "git runs this program to sign and verify commits and tags"
    ),
    _Rule(
        "gpg",
        "defaultkeycommand",
        True,
        _set,
        "git runs this command to pick an ssh signing key",
        subsection="ssh",
    ),
    _Rule(
        "uploadpack",
        "packobjectshook",
        False,
        _set,
        "git runs this command when it serves a fetch from this repository",
    ),
    *(
        _Rule(
            "remote",
            name,
            True,
            _set,
            f"git runs this program for fetch and push to remote {{sub}} ({name})",
        )
        for name in ("uploadpack", "receivepack")
    ),
    _Rule("remote", "vcs", True, _set, "git runs the helper git-remote-<this> for remote {sub}"),
    *(
        _Rule(
            "remote",
            name,
            True,
            _command_url,
            "this transport runs a shell command on fetch and push to remote {sub}",
        )
        for name in ("url", "pushurl")
    ),
    *(
        _Rule(
            "url",
            name,
            True,
            _set,
            "rewrites remote URLs to {sub}: root's fetches, pushes and credentials go there",
            kind="redirects",
        )
        for name in ("insteadof", "pushinsteadof")
    ),
    *(
        _Rule(
            section,
            "proxy",
            None,
            _set,
            "root's git traffic (and credentials) goes through this proxy",
            kind="redirects",
        )
        for section in ("http", "remote")
    ),
    _Rule(
        "http",
        "sslverify",
        None,
        _false,
        "turns off certificate checks for root's git traffic",
        kind="redirects",
    ),
    *(
        _Rule(
            "http",
            name,
            None,
            _set,
            "root's git trusts the certificates this names",
            kind="redirects",
        )
        for name in ("sslcainfo", "sslcapath")
    ),
    _Rule(
        "http",
        "cookiefile",
        None,
        _set,
        "git reads (and with http.saveCookies writes, as root) cookies at this path",
        kind="redirects",
    ),
    _Rule("pager", None, False, _not_bool, "git pipes the output of `git {name}` through this"),
    _Rule("interactive", "difffilter", False, _set, "`git add -p` pipes diffs through this"),
    _Rule("hook", None, True, _set, "git runs this configured hook ({sub})"),
    _Rule("submodule", "update", True, _shell, "`git submodule update` runs this shell command"),
    _Rule(
        "protocol",
        "allow",
        False,
        _protocol_allow,
        "allows every transport, including ext::, which runs shell commands",
    ),
    _Rule(
        "protocol",
        "allow",
        True,
        _other_protocol_allow,
        "allows the {sub} transport (ext:: runs shell commands, others run remote helpers)",
        not_subsections=frozenset({"http", "https", "git", "ssh", "file"}),
    ),
    _Rule(
        "init",
        "templatedir",
        False,
        _set,
        "`git init` copies hooks from this directory",
        kind="redirects",
    ),
    _Rule(
        "commit",
        "template",
        False,
        _set,
        "git reads this file into your commit message",
        kind="redirects",
    ),
    *(
        _Rule("sendemail", name, None, _set, "`git send-email` runs this command")
        for name in ("tocmd", "cccmd", "headercmd", "sendmailcmd")
    ),
    _Rule("sendemail", "smtpserver", None, _absolute, "`git send-email` runs this program"),
    *(
        _Rule(section, name, True, _set, f"`git {section}` runs this command")
        for section, name in (
            ("browser", "cmd"),
            ("browser", "path"),
            ("man", "cmd"),
            ("man", "path"),
            ("guitool", "cmd"),
            ("trailer", "command"),
            ("trailer", "cmd"),
            ("tar", "command"),
        )
    ),
    _Rule("imap", "tunnel", False, _set, "`git imap-send` runs this command"),
    _Rule("instaweb", "httpd", False, _set, "`git instaweb` runs this program"),
    _Rule("lfs", "path", True, _set, "git-lfs runs this program (custom transfer {sub})"),
    *(
        _Rule("lfs", name, True, _set, f"git-lfs runs this command ({name}) for extension {{sub}}")
        for name in ("clean", "smudge")
    ),
)


def _lfs_builtin(entry: ConfigEntry) -> bool:
    if entry.section != "filter" or entry.subsection != "lfs" or entry.value is None:
        return False
    return " ".join(entry.value.split()) in _LFS_FILTER.get(entry.name, ())


def _worktree_inside(entry: ConfigEntry, context: ConfigContext | None) -> bool:
    if context is None or entry.value is None:
        return False
    value = entry.value.strip()
    if value.startswith("~"):
        return False
    path = posixpath.normpath(posixpath.join(str(context.gitdir), value))
    workspace = posixpath.normpath(str(context.workspace))
    return path == workspace or path.startswith(workspace.rstrip("/") + "/")


def _matches(rule: _Rule, entry: ConfigEntry) -> bool:
    if rule.section != entry.section or (rule.name is not None and rule.name != entry.name):
        return False
    if rule.sub is True and entry.subsection is None:
        return False
    if rule.sub is False and entry.subsection is not None:
        return False
    sub = (entry.subsection or "").lower()
    if rule.subsection is not None and sub != rule.subsection:
        return False
    if sub in rule.not_subsections:
        return False
    return rule.when(entry.value)


def judge_entries(
    entries: Iterable[ConfigEntry], context: ConfigContext | None = None
) -> list[ConfigHit]:
    """The dangerous settings among ``entries``, each with why in operator's words."""
    hits = []
    for entry in entries:
        if _lfs_builtin(entry):
            continue
        if (
            entry.section == "core"
            and entry.name == "worktree"
            and _worktree_inside(entry, context)
        ):
            continue
        for rule in _RULES:
            if _matches(rule, entry):
                why = rule.why.format(sub=entry.subsection or "", name=entry.name)
                hits.append(
                    ConfigHit(
                        key=entry.key,
                        value=entry.value,
                        why=why,
                        kind=rule.kind,
                        line=entry.line,
                        locator=(entry.start,),
                    )
                )
                break
    return hits


def dangerous_git_config(text: str, context: ConfigContext | None = None) -> list[ConfigHit]:
    """The settings of config text ``text`` that run commands or redirect root's git.

    A file git would refuse adds a hit of its own (``config.syntax``): git stops
    there, but the settings before the error are judged all the same.
    """
    parsed = parse_git_config(text)
    hits = judge_entries(parsed.entries, context)
    if parsed.error is not None:
        hits.append(
            ConfigHit(
                key="config.syntax",
                value=parsed.error,
                why="git refuses this file (a syntax error); the scan cannot vouch for the rest",
                kind="unreadable",
            )
        )
    return hits
