"""Names and paths the operator types: the one validation the CLI, the answers file
and the TUI share, so a value refused in one is refused in all."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from sandbox_setup.policy.system_dirs import is_system_dir

# Debian's useradd NAME_REGEX, minus the trailing "$" of machine accounts. "\Z",
# not "$": "$" also matches before a final newline, and useradd refuses "name\n".
USER_NAME_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}\Z")


def user_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a user name (None: it can)."""
    if USER_NAME_RE.match(name):
        return None
    return (
        f"{name!r} is not a valid user name (lowercase letters, digits, '_' and '-', "
        "starting with a letter or '_', at most 32 characters)"
    )


def agent_name_problem(name: str, *, unsafe: bool) -> str | None:
    """Why ``name`` cannot be the agent user: not a user name, or root outside unsafe."""
    problem = user_name_problem(name)
    if problem is not None:
        return problem
    if name == "root" and not unsafe:
        return "the agent user must not be root"
    return None


def workspace_path_problem(path: PurePosixPath, *, unsafe: bool = False) -> str | None:
    """Why ``path`` cannot be a workspace, judged from the path alone: relative,
    ``..`` in it, or a system directory (which would get recursive ACLs and setgid
    bits). Unsafe mode grants nothing, so it only needs an absolute path."""
    if not path.is_absolute():
        return f"workspace {str(path)!r} is not an absolute path"
    if unsafe:
        return None
    if ".." in path.parts:
        return f"workspace {path} must not contain '..'"
    if is_system_dir(path):
        return (
            f"workspace {path} is a system directory; choose a project directory (e.g. /srv/NAME)"
        )
    return None


PATH_MAX = 4096  # bytes, with the terminating NUL (linux/limits.h)
NAME_MAX = 255  # bytes of one path component


def path_text_problem(text: str) -> str | None:
    """Why ``text`` cannot name a file at all (a NUL, or longer than the kernel takes),
    so it is an input error before any system call fails on it."""
    if "\x00" in text:
        return "contains a NUL character"
    size = len(text.encode("utf-8", errors="surrogateescape"))
    if size >= PATH_MAX:
        return f"is {size} bytes long; a path has at most {PATH_MAX - 1}"
    longest = max(
        (len(p.encode("utf-8", errors="surrogateescape")) for p in text.split("/")), default=0
    )
    if longest > NAME_MAX:
        return f"has a name of {longest} bytes; a file name has at most {NAME_MAX}"
    return None


def shown(text: str, limit: int = 60) -> str:
    """``text`` for a message: cut to ``limit`` characters (a 10,000-character path
    would bury the message)."""
    return (
        repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"
    )
