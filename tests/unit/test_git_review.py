"""Which repositories a ``--run`` review's git trusts (policy/git_review.py)."""

from __future__ import annotations

from sandbox_setup.policy.git_review import (
    repository_tops,
    review_git_env,
    review_safe_directories,
)
from sandbox_setup.policy.workspace import GitDirFacts, WorkspaceLayout

LAYOUT = WorkspaceLayout(
    gitdirs=(
        GitDirFacts(".git", "dotgit"),
        GitDirFacts("sub/app/.git", "dotgit"),
        GitDirFacts("mirror.git", "bare"),
        GitDirFacts(".git/modules/lib", "module"),
        GitDirFacts(".git/worktrees/wt", "worktree"),
    ),
    pointers=("lib/.git", "wt/.git"),
)


def test_repository_tops_are_work_trees_and_bare_repositories() -> None:
    assert repository_tops(LAYOUT) == [".", "sub/app", "mirror.git", "lib", "wt"]
    assert repository_tops(WorkspaceLayout()) == []


def test_sandbox_mode_names_the_paths_inside_and_user_mode_the_hosts() -> None:
    pairs = [("/srv/app", "/data/app"), ("/srv/none", "/srv/none")]
    layouts = {"/data/app": WorkspaceLayout(gitdirs=(GitDirFacts("x/.git", "dotgit"),))}
    assert review_safe_directories(pairs, layouts, sandbox=True) == ["/srv/app/x"]
    assert review_safe_directories(pairs, layouts, sandbox=False) == [
        "/data/app/x",
        "/srv/app/x",
    ]


def test_the_environment_is_exact_paths_in_command_line_scope() -> None:
    env = review_git_env(["/srv/app", "*", "", "~/x", "%(prefix)/y", "/srv/app/sub"])
    assert env == {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "/srv/app",
        "GIT_CONFIG_KEY_1": "safe.directory",
        "GIT_CONFIG_VALUE_1": "/srv/app/sub",
    }
    assert review_git_env([]) == {}
