"""Where Claude starts (sandbox_setup.launcher.workdir), and the launch notice's one line."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.launcher.notice import launch_notice, network_policy
from sandbox_setup.launcher.workdir import WorkDir, choose_workdir, real_paths

APP, API = PurePosixPath("/srv/app"), PurePosixPath("/srv/api")
HOME = PurePosixPath("/home/agent")


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("/srv/app", WorkDir("/srv/app")),
        ("/srv/app/src/lib", WorkDir("/srv/app/src/lib")),
        ("/srv/api", WorkDir("/srv/api")),
        ("/srv/api/x", WorkDir("/srv/api/x")),
    ],
)
def test_inside_a_workspace_claude_starts_right_there(cwd: str, expected: WorkDir) -> None:
    assert choose_workdir((APP, API), {}, cwd, HOME) == expected


def test_a_sibling_with_a_common_prefix_is_not_inside() -> None:
    assert choose_workdir((APP,), {}, "/srv/application", HOME) == WorkDir(
        "/srv/app", "/srv/application"
    )


def test_one_workspace_and_the_operator_elsewhere_moves_and_says_from_where() -> None:
    assert choose_workdir((APP,), {}, "/root", HOME) == WorkDir("/srv/app", "/root")
    gone = choose_workdir((APP,), {}, None, HOME)
    assert gone.path == "/srv/app" and gone.moved_from is not None


def test_several_workspaces_and_the_operator_in_none_is_refused_listing_them() -> None:
    with pytest.raises(InputError) as caught:
        choose_workdir((APP, API), {}, "/root", HOME)
    assert "/srv/app" in str(caught.value) and "/srv/api" in str(caught.value)
    assert "/root" in str(caught.value)
    with pytest.raises(InputError):
        choose_workdir((APP, API), {}, None, HOME)


def test_no_workspace_starts_in_the_agent_home() -> None:
    assert choose_workdir((), {}, "/home/agent", HOME) == WorkDir("/home/agent")
    assert choose_workdir((), {}, "/tmp", HOME) == WorkDir("/home/agent", "/tmp")


def test_a_symlinked_workspace_is_matched_by_its_target_and_named_by_its_path() -> None:
    # getcwd() is physical; the sandbox mounts the workspace at its configured path.
    real = {"/srv/app": "/data/disk1/app"}
    assert choose_workdir((APP,), real, "/data/disk1/app/src", HOME) == WorkDir("/srv/app/src")


def test_nested_workspaces_pick_the_deepest() -> None:
    inner = PurePosixPath("/srv/app/vendor")
    assert choose_workdir((APP, inner), {}, "/srv/app/vendor/x", HOME).path == "/srv/app/vendor/x"


def test_real_paths_follow_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    link = PurePosixPath(tmp_path / "link")
    assert real_paths((link,)) == {str(link): str(tmp_path / "real")}


def test_the_notice_is_one_line_with_mode_agent_directory_network_and_names_only() -> None:
    network = network_policy(Mode.SANDBOX, Network.ALLOWLIST, ("example.com",), (8317,))
    line = launch_notice(
        Mode.SANDBOX,
        "claude-agent",
        "/srv/app",
        network,
        moved_from="/root",
        passed=("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        notes=("egress proxy on 127.0.0.1:3128",),
    )
    assert "\n" not in line and line.startswith("sandbox-launch: sandbox mode")
    for part in ("agent claude-agent", "in /srv/app", "you are in /root", "allowlist",
                 "example.com", "8317", "ANTHROPIC_API_KEY", "egress proxy"):  # fmt: skip
        assert part in line


@pytest.mark.parametrize(
    ("mode", "network", "words"),
    [
        (Mode.SANDBOX, Network.NONE, "network none"),
        (Mode.SANDBOX, Network.HOST, "network host"),
        (Mode.SANDBOX, Network.ALLOWLIST, "Claude Code's endpoints"),
        (Mode.USER, Network.HOST, "of the host"),
        (Mode.UNSAFE, Network.HOST, "of the host"),
    ],
)
def test_network_policy_in_words(mode: Mode, network: Network, words: str) -> None:
    assert words in network_policy(mode, network)


def test_unsafe_notice_says_the_environment_is_inherited() -> None:
    line = launch_notice(Mode.UNSAFE, "root (uid 0)", "/root", "network of the host")
    assert "environment inherited" in line


def test_quiet_is_the_launchers_option_only_before_claudes_arguments() -> None:
    from sandbox_setup.launcher.main import parse_args

    options = parse_args(["--quiet", "--dry-run", "--", "-p", "hi"])
    assert options is not None and options.quiet and options.claude_args == ("-p", "hi")
    later = parse_args(["-p", "--quiet"])
    assert later is not None and not later.quiet and later.claude_args == ("-p", "--quiet")
