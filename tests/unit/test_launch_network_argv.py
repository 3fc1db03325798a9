"""The sandbox's network in the launcher's argv, and the host side of a session (no sandbox)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.launcher.command import (
    GATE_FD,
    GATE_SCRIPT,
    Agent,
    HostFacts,
    sandbox_launch,
)
from sandbox_setup.launcher.egress import network
from sandbox_setup.launcher.egress.network import (
    build_policy,
    exposed_ports,
    network_env,
    network_notice,
    open_egress_log,
)
from sandbox_setup.launcher.launch import Launch
from sandbox_setup.launcher.session.supervise import NAMESPACES, NETWORK_NAMESPACE, judge_sandbox
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT
from sandbox_setup.policy.network_words import HOST_EXPOSURE

AGENT = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
FACTS = HostFacts(legacy_tiocsti=False)
PROXY = f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"


def config(**changes: object) -> LauncherConfig:
    values: dict[str, object] = {
        "mode": Mode.SANDBOX,
        "claude": PurePosixPath("/opt/claude/bin/claude"),
        "agent_user": "claude-agent",
        "agent_home": PurePosixPath("/home/claude-agent"),
        "workspaces": (PurePosixPath("/srv/a"),),
        "network": Network.ALLOWLIST,
    }
    values.update(changes)
    return LauncherConfig(**values)  # type: ignore[arg-type]


def launch(cfg: LauncherConfig | None = None) -> Launch:
    return sandbox_launch(
        cfg or config(),
        AGENT,
        "/opt/claude/bin/claude",
        "/usr/bin/bwrap",
        "/usr/bin/setpriv",
        FACTS,
        {"TERM": "xterm", "HTTPS_PROXY": "http://operator-proxy:8080"},
        ["--print", "ok"],
        switch_user=True,
    )


def setenv(argv: tuple[str, ...]) -> dict[str, str]:
    return {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}


def test_allowlist_has_its_own_namespace_and_nothing_of_the_host_bound_for_it() -> None:
    """The proxy listens inside the namespace (sandbox_setup.launcher.egress.netns): no socket
    directory of the host is bound into the sandbox for it."""
    argv = launch().argv
    assert "--unshare-net" in argv
    assert "/run/sandbox-launch" not in " ".join(argv)
    assert argv.count("--ro-bind") == launch(config(network=Network.NONE)).argv.count("--ro-bind")


def test_allowlist_environment_points_every_client_at_the_proxy() -> None:
    env = setenv(launch(config(loopback_ports=(8082,))).argv)
    for name in network.PROXY_ENV:
        assert env[name] == PROXY
    assert env["NO_PROXY"] == env["no_proxy"]
    bypass = env["NO_PROXY"].split(",")
    assert bypass == ["localhost", "127.0.0.1", "::1", "localhost:8082", "127.0.0.1:8082"]
    # the operator's own proxy is not inherited: the clean environment has ours only
    assert "operator-proxy" not in " ".join(launch().argv)


def test_the_gate_releases_straight_into_claude() -> None:
    argv = launch(config(loopback_ports=(8082, 8082, 9000))).argv
    gate = argv.index(GATE_SCRIPT)
    assert argv[gate - 2 : gate + 3] == ("/bin/sh", "-c", GATE_SCRIPT, "sandbox-gate", GATE_FD)
    assert argv[gate + 3 :] == ("/opt/claude/bin/claude", "--print", "ok")
    assert "socat" not in " ".join(argv)


def test_none_is_an_empty_namespace_and_says_so() -> None:
    result = launch(config(network=Network.NONE))
    assert "--unshare-net" in result.argv
    assert "HTTPS_PROXY" not in setenv(result.argv)
    assert result.warning == (
        "sandbox-launch: network none: no network at all: Claude cannot reach its API"
    )


def test_host_shares_the_namespace_and_says_what_that_exposes() -> None:
    result = launch(config(network=Network.HOST))
    assert "--unshare-net" not in result.argv
    assert "HTTPS_PROXY" not in setenv(result.argv)
    assert result.warning == f"sandbox-launch: network host: {HOST_EXPOSURE}"
    assert "169.254.169.254" in result.warning and "abstract unix sockets" in result.warning


def test_allowlist_prints_no_notice_and_dry_run_notes_say_what_is_allowed() -> None:
    result = launch(config(allowed_domains=("example.com",), loopback_ports=(8082,)))
    assert result.warning is None
    notes = " ".join(note.text for note in result.notes)
    assert "api.anthropic.com:443" in notes and "example.com" in notes
    assert "127.0.0.1:PORT: 8082" in notes and f"listening at {PROXY} inside" in notes


def test_user_and_unsafe_modes_have_no_network_notice() -> None:
    for mode in (Mode.USER, Mode.UNSAFE):
        assert network_notice(config(mode=mode, network=Network.HOST)) is None
    assert network_env(config(mode=Mode.USER)) == {}


def test_the_proxy_port_cannot_be_an_exposed_port() -> None:
    with pytest.raises(RefusedError, match="egress proxy"):
        exposed_ports(config(loopback_ports=(SANDBOX_PROXY_PORT,)))
    assert exposed_ports(config(loopback_ports=(8082, 8082, 9000))) == (8082, 9000)


def test_a_bad_pattern_in_a_hand_edited_config_refuses_the_launch() -> None:
    with pytest.raises(RefusedError, match=r"sandbox\.allowed_domains: .*https://x"):
        build_policy(config(allowed_domains=("https://x",)))


def test_verification_includes_the_network_namespace_when_asked() -> None:
    kinds = (*NAMESPACES, NETWORK_NAMESPACE)
    own = {k: f"{k}:[1]" for k in kinds}
    child = {**{k: f"{k}:[2]" for k in NAMESPACES}, "net": "net:[1]"}
    status = {"CapEff": "0", "CapPrm": "0", "NoNewPrivs": "1", "Uid": "7 7 7 7"}
    assert judge_sandbox(own, child, status, 7) == []  # not asked: not judged
    assert judge_sandbox(own, child, status, 7, kinds) == [
        "net namespace is the launcher's own (net:[1])"
    ]


# --- the decision log ---------------------------------------------------------------------


def test_the_log_is_created_0600_and_appended(tmp_path: Path) -> None:
    fd = open_egress_log(tmp_path / "state")
    os.write(fd, b"one\n")
    os.close(fd)
    fd = open_egress_log(tmp_path / "state")
    os.write(fd, b"two\n")
    os.close(fd)
    log = tmp_path / "state" / "egress.log"
    assert log.read_text() == "one\ntwo\n"
    assert log.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700


def test_the_log_is_never_opened_through_a_symlink_or_a_hard_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    state = tmp_path / "state"
    state.mkdir()
    (state / "egress.log").symlink_to(target)
    with pytest.raises(RefusedError, match="egress decision log"):
        open_egress_log(state)
    (state / "egress.log").unlink()
    os.link(target, state / "egress.log")
    with pytest.raises(RefusedError, match="one link"):
        open_egress_log(state)
    assert target.read_text() == ""


def test_a_large_log_is_rotated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "LOG_ROTATE_BYTES", 10)
    (tmp_path / "egress.log").write_text("x" * 11)
    os.close(open_egress_log(tmp_path))
    assert (tmp_path / "egress.log.1").read_text() == "x" * 11
    assert (tmp_path / "egress.log").read_text() == ""
