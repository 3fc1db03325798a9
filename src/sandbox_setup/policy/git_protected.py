"""Root's protected git settings: what root's git must refuse, whatever a workspace says
(docs/design.md invariant 8 (a)).

git reads ``safe.*`` only from *protected* configuration (system, global, command line),
never from a repository's own config, so a setting here holds against anything an agent
writes into a workspace. The rule is structural, not a list of dangerous names:

- ``safe.bareRepository = explicit``: git uses a bare repository only when it is named
  (``git --git-dir=DIR``, ``GIT_DIR=DIR``), never one it finds by walking up from the
  current directory. A directory that merely looks like one (``HEAD``, ``objects``,
  ``refs`` of any file type, a ``config`` with ``core.worktree`` and ``core.fsmonitor``)
  planted in a root-owned workspace directory is then refused with ``fatal: cannot use
  bare repository`` before its config is obeyed. Ordinary clones (a ``.git`` directory
  or a ``gitdir:`` file), linked worktrees and submodules are unaffected.

The settings live in a file the apply owns (:data:`PROTECTED_FILE`, root's, 0644) that
root's global config includes (:func:`with_include`). It sits under ``/etc`` rather than
in the operator's state directory because another account's global config (a workspace
owner's) includes it too and must be able to read it, and ``/root`` is private. It is not
``/etc/gitconfig``: every account reads the system file, and a git server's account
works in bare repositories by discovery.

Pure functions over config text; the plan writes (:mod:`sandbox_setup.configure.git_protect`)
and the audit judges (:mod:`sandbox_setup.audit.git`) with them.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from sandbox_setup.base.errors import InputError
from sandbox_setup.policy.gitconfig import parse_git_config

PROTECTED_FILE = PurePosixPath("/etc/sandbox-setup/git-protected.gitconfig")
# (section, key, value): what the protected file sets.
PROTECTED_SETTINGS = (("safe", "bareRepository", "explicit"),)

_PROTECTED_TEXT = """\
# Root's protected git settings, installed by sandbox-setup. Do not edit:
# `sandbox-setup --audit` reports a change (audit.git.protected) and
# `sandbox-setup --undo` removes this file with the apply that wrote it.
#
# git reads safe.* only from system, global or command-line configuration, never
# from a repository, so nothing written into a workspace can turn this off.
#
# safe.bareRepository = explicit: a bare repository is used only when it is named,
# `git --git-dir=DIR ...` or `GIT_DIR=DIR git ...`; a directory that merely looks
# like one (HEAD, objects, refs) is refused with "cannot use bare repository"
# before its config (core.fsmonitor, core.pager, ...) is obeyed.
{settings}"""

INCLUDE_COMMENT = (
    "# sandbox-setup: root's protected git settings (`sandbox-setup --undo` removes this)"
)


def render_protected_file() -> bytes:
    """The owned file's bytes."""
    settings = "".join(
        f"[{section}]\n\t{key} = {value}\n" for section, key, value in PROTECTED_SETTINGS
    )
    return _PROTECTED_TEXT.format(settings=settings).encode("utf-8")


def include_in_force(text: str, path: PurePosixPath = PROTECTED_FILE) -> bool:
    """Whether ``text`` (a global config) includes ``path`` with nothing after it that
    could override it: no ``safe.*`` entry and no other include follows the last
    ``include.path = PATH``. git applies config in file order, last one wins."""
    entries = parse_git_config(text).entries
    last = None
    for index, entry in enumerate(entries):
        if _is_include_of(entry.section, entry.subsection, entry.name, entry.value, path):
            last = index
    if last is None:
        return False
    return not any(e.section in ("safe", "include", "includeif") for e in entries[last + 1 :])


def _is_include_of(
    section: str, subsection: str | None, name: str, value: str | None, path: PurePosixPath
) -> bool:
    return section == "include" and subsection is None and name == "path" and value == str(path)


def with_include(text: str, source: str, path: PurePosixPath = PROTECTED_FILE) -> str:
    """``text`` with an ``[include] path = PATH`` at its end, unless one is already in
    force; every byte the user had is kept. A file git would refuse is an
    :class:`~sandbox_setup.base.errors.InputError` naming ``source`` and the line."""
    parsed = parse_git_config(text)
    if parsed.error is not None:
        raise InputError(f"{source}: {parsed.error}; fix or remove it (left untouched)")
    if include_in_force(text, path):
        return text
    ending = "\r\n" if text.endswith("\r\n") else "\n"
    joined = text if not text or text.endswith("\n") else text + ending
    merged = f"{joined}{INCLUDE_COMMENT}{ending}[include]{ending}\tpath = {path}{ending}"
    # A last line that git reads on into the next (a backslash continuation) would
    # swallow what was added: checked on the result, as git will read it.
    if parse_git_config(merged).error is not None or not include_in_force(merged, path):
        raise InputError(
            f"{source}: its last line runs on into the next (a trailing backslash?), so an "
            f"include appended after it would not be read; fix it (left untouched)"
        )
    return merged
