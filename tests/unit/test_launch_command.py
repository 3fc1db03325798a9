"""The per-mode commands, built from fixed facts (no host access)."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig, UnsafeAcceptance
from sandbox_setup.base.netwall import PORTS_ONLY, UserNetworkWall
from sandbox_setup.launcher.command import (
    BLOCK_FD,
    GATE_FD,
    GATE_SCRIPT,
    STATUS_FD,
    Agent,
    HostFacts,
    gather_host_facts,
    resolver_dirs,
    sandbox_launch,
    unsafe_launch,
    user_launch,
    with_proxy_settings,
)
from sandbox_setup.launcher.launch import Launch, Topic
from sandbox_setup.launcher.user.landlock_plan import PROXY_PORT, LandlockPlan
from sandbox_setup.policy.landlock import user_walls

AGENT = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
FACTS = HostFacts(
    legacy_tiocsti=True,
    root_links=(("/bin", "usr/bin"), ("/lib64", None)),
    resolver_dirs=("/run/systemd/resolve",),
)
ENV = {"TERM": "xterm", "LANG": "de_DE.UTF-8", "SECRET": "x", "IS_SANDBOX": "1"}
ACCEPTED = UnsafeAcceptance("root (uid 0)", "2026-11-30T04:00:00+00:00", "I accept")


def config(**changes: object) -> LauncherConfig:
    values: dict[str, object] = {
        "mode": Mode.SANDBOX,
        "claude": PurePosixPath("/opt/claude/bin/claude"),
        "agent_user": "claude-agent",
        "agent_home": PurePosixPath("/home/claude-agent"),
        "workspaces": (PurePosixPath("/srv/a"), PurePosixPath("/srv/b")),
    }
    values.update(changes)
    return LauncherConfig(**values)  # type: ignore[arg-type]


def sandbox(
    cfg: LauncherConfig | None = None, facts: HostFacts = FACTS, switch: bool = True
) -> Launch:
    return sandbox_launch(
        cfg or config(),
        AGENT,
        "/opt/claude/bin/claude",
        "/usr/bin/bwrap",
        "/usr/bin/setpriv",
        facts,
        ENV,
        ["--print", "ok"],
        switch_user=switch,
    )


def pairs(argv: tuple[str, ...], flag: str) -> list[tuple[str, ...]]:
    """Each occurrence of ``flag`` with the two arguments after it."""
    return [argv[i + 1 : i + 3] for i, a in enumerate(argv) if a == flag]


def test_sandbox_drops_to_the_agent_before_bwrap() -> None:
    argv = sandbox().argv
    bwrap = argv.index("/usr/bin/bwrap")
    assert argv[:bwrap] == (
        "/usr/bin/setpriv",
        "--reuid=1001",
        "--regid=1001",
        "--init-groups",
        "--no-new-privs",
        "--",
    )


def test_non_root_operator_keeps_its_uid_but_still_sets_no_new_privs() -> None:
    argv = sandbox(switch=False).argv
    assert argv[:3] == ("/usr/bin/setpriv", "--no-new-privs", "--")
    assert not any(a.startswith("--reuid") for a in argv)


def test_sandbox_namespaces_and_privileges() -> None:
    argv = sandbox().argv
    for flag in (
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
    ):
        assert flag in argv
    assert pairs(argv, "--cap-drop")[0][0] == "ALL"
    assert "--disable-userns" not in argv  # Claude's inner sandbox needs user namespaces
    assert "--unshare-net" not in argv  # network shared by default


def test_network_none() -> None:
    assert "--unshare-net" in sandbox(config(network="none")).argv


@pytest.mark.parametrize(("tiocsti", "expected"), [(True, True), (False, False)])
def test_new_session_only_when_tiocsti_is_allowed(tiocsti: bool, expected: bool) -> None:
    facts = HostFacts(legacy_tiocsti=tiocsti)
    assert ("--new-session" in sandbox(facts=facts).argv) is expected


def test_mounts() -> None:
    argv = sandbox().argv
    ro = pairs(argv, "--ro-bind")
    assert ("/usr", "/usr") in ro and ("/etc", "/etc") in ro
    assert ("/lib64", "/lib64") in ro
    assert ("usr/bin", "/bin") in pairs(argv, "--symlink")
    assert ("/run/systemd/resolve", "/run/systemd/resolve") in ro
    assert pairs(argv, "--proc")[0][0] == "/proc"
    assert pairs(argv, "--dev")[0][0] == "/dev"
    assert [p[0] for p in pairs(argv, "--tmpfs")] == ["/dev/shm", "/tmp", "/run"]
    assert [p[0] for p in pairs(argv, "--size")] == [str(512 * 1024**2)] * 3
    # Each size is right before its --tmpfs; /dev itself read-only after /dev/shm.
    assert all(argv[argv.index(p[1]) - 0] == "--tmpfs" for p in pairs(argv, "--size"))
    assert argv.index("--remount-ro") > argv.index("/dev/shm")
    assert argv[argv.index("--remount-ro") + 1] == "/dev"
    # The resolver dir comes back after the /run tmpfs hides it.
    assert argv.index("/run/systemd/resolve") > argv.index("/run")
    writable = [p[0] for p in pairs(argv, "--bind")]
    assert writable == ["/home/claude-agent", "/srv/a", "/srv/b"]
    # The binary's directory, read-only and after the writable binds.
    assert ("/opt/claude/bin", "/opt/claude/bin") in ro
    assert argv.index("/opt/claude/bin") > argv.index("/srv/b")
    # No cover over /proc: only the fresh procfs.
    assert sum(1 for a in argv if a.startswith("/proc")) == 1


def test_binary_under_usr_needs_no_extra_mount() -> None:
    launch = sandbox_launch(
        config(),
        AGENT,
        "/usr/local/lib/sandbox-setup/claude",
        "/usr/bin/bwrap",
        "/usr/bin/setpriv",
        FACTS,
        ENV,
        [],
        switch_user=True,
    )
    assert "/usr/local/lib/sandbox-setup" not in launch.argv


def test_environment_is_clean_and_is_sandbox_only_inside() -> None:
    launch = sandbox()
    argv = launch.argv
    # bwrap's own environment is the sandbox's: exactly the launcher's, plus the claim.
    assert launch.env == {
        "HOME": "/home/claude-agent",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "SHELL": "/bin/bash",  # the account's own is nologin
        "TERM": "xterm",
        "LANG": "de_DE.UTF-8",
    }
    assert "--reset-env" not in argv  # setpriv would rebuild it from passwd
    assert {p[0]: p[1] for p in pairs(argv, "--setenv")} == {"IS_SANDBOX": "1"}
    assert tuple(argv[i + 1] for i, a in enumerate(argv) if a == "--unsetenv") == (
        "CLAUDE_CODE_BUBBLEWRAP",
    )
    # The processes outside bwrap (setpriv, bwrap) never carry IS_SANDBOX or the caller's env.
    assert "IS_SANDBOX" not in launch.env and "SECRET" not in launch.env


PASSING = {
    **ENV,
    "ANTHROPIC_API_KEY": "sk-secret-value",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8317",
    "GITHUB_TOKEN": "ghp-decoy",
    "MY_EXTRA": "extra-value",
    "CLAUDE_CODE_BUBBLEWRAP": "1",
}


@pytest.mark.parametrize("mode", [Mode.SANDBOX, Mode.USER])
def test_exactly_the_pass_list_reaches_claude_and_never_through_argv(mode: Mode) -> None:
    cfg = config(
        mode=mode,
        env_pass=("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "MY_EXTRA"),
    )
    if mode is Mode.SANDBOX:
        launch = sandbox_launch(
            cfg, AGENT, "/c", "/usr/bin/bwrap", "/usr/bin/setpriv", FACTS, PASSING, [],
            switch_user=True,
        )  # fmt: skip
    else:
        launch = user_launch(cfg, AGENT, "/c", "/usr/bin/setpriv", PASSING, [], True)
    assert launch.passed == ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MY_EXTRA")
    for name in launch.passed:
        assert launch.env[name] == PASSING[name]
    assert "GITHUB_TOKEN" not in launch.env and "CLAUDE_CODE_BUBBLEWRAP" not in launch.env
    assert "ANTHROPIC_MODEL" not in launch.env  # listed, but not set here
    assert not any("sk-secret-value" in a for a in launch.argv)


def test_a_hand_edited_pass_list_never_passes_a_sandbox_claim() -> None:
    cfg = config(env_pass=("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP", "LD_PRELOAD", "HOME"))
    env = {**PASSING, "IS_SANDBOX": "0", "LD_PRELOAD": "/x.so", "HOME": "/root"}
    launch = sandbox_launch(
        cfg, AGENT, "/c", "/usr/bin/bwrap", "/usr/bin/setpriv", FACTS, env, [], switch_user=True
    )
    assert launch.passed == ()
    assert launch.env["HOME"] == "/home/claude-agent" and "LD_PRELOAD" not in launch.env
    assert "IS_SANDBOX" not in launch.env
    ignored = [n.text for n in launch.notes if n.topic is Topic.ENVIRONMENT]
    assert len(ignored) == 4 and all(n.startswith("[env] pass lists") for n in ignored)
    assert "sandbox claim" in ignored[0]


def test_workdir_is_the_chdir_and_the_cwd() -> None:
    assert pairs(sandbox_launch(
        config(), AGENT, "/c", "/usr/bin/bwrap", "/usr/bin/setpriv", FACTS, ENV, [],
        switch_user=True, workdir="/srv/b/sub",
    ).argv, "--chdir")[0][0] == "/srv/b/sub"  # fmt: skip
    user = user_launch(
        config(mode=Mode.USER), AGENT, "/c", "/usr/bin/setpriv", ENV, [], True, workdir="/srv/b"
    )
    assert user.cwd == "/srv/b"


def test_chdir_status_block_and_claude_last() -> None:
    argv = sandbox().argv
    assert pairs(argv, "--chdir")[0][0] == "/srv/a"
    assert pairs(argv, "--json-status-fd")[0][0] == STATUS_FD
    assert pairs(argv, "--block-fd")[0][0] == BLOCK_FD
    # The sandbox's command is the release gate, which execs Claude with its arguments.
    assert argv[-9:] == (
        "--",
        "/bin/sh",
        "-c",
        GATE_SCRIPT,
        "sandbox-gate",
        GATE_FD,
        "/opt/claude/bin/claude",
        "--print",
        "ok",
    )
    assert sandbox().supervised


@pytest.mark.parametrize("path", ["/", "/usr", "/usr/local/x", "/etc", "/proc/1", "/dev"])
def test_writable_bind_over_system_directories_is_refused(path: str) -> None:
    with pytest.raises(RefusedError, match="system directory"):
        sandbox(config(workspaces=(PurePosixPath(path),)))


def _wizard_refused_workspaces() -> list[str]:
    from sandbox_setup.policy.system_dirs import (  # the wizard refuses these too
        SYSTEM_DIRS,
        SYSTEM_TREES,
    )

    return sorted({str(p) for p in SYSTEM_DIRS} | {f"{t}/x" for t in SYSTEM_TREES})


@pytest.mark.parametrize("path", _wizard_refused_workspaces())
def test_the_launcher_refuses_every_workspace_the_wizard_refuses(path: str) -> None:
    with pytest.raises(RefusedError, match="system directory"):
        sandbox(config(workspaces=(PurePosixPath(path),)))
    facts = HostFacts(legacy_tiocsti=False, real_paths=(("/srv/b", path),))
    with pytest.raises(RefusedError, match="workspace /srv/b, a symlink to"):
        sandbox(facts=facts)


@pytest.mark.parametrize("path", ["/srv/project", "/home/claude-agent", "/tmp/x/ws", "/var/x"])
def test_project_directories_are_accepted(path: str) -> None:
    binds = pairs(sandbox(config(workspaces=(PurePosixPath(path),))).argv, "--bind")
    assert (path, path) in binds


def test_user_mode() -> None:
    launch = user_launch(
        config(mode=Mode.USER),
        AGENT,
        "/opt/claude/bin/claude",
        "/usr/bin/setpriv",
        ENV,
        ["--print", "ok"],
        switch_user=True,
    )
    assert launch.argv == (
        "/usr/bin/setpriv",
        "--reuid=1001",
        "--regid=1001",
        "--init-groups",
        "--no-new-privs",
        "--",
        "/opt/claude/bin/claude",
        "--print",
        "ok",
    )
    assert dict(launch.env) == {
        "HOME": "/home/claude-agent",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "SHELL": "/bin/bash",
        "TERM": "xterm",
        "LANG": "de_DE.UTF-8",
        "USER": "claude-agent",
        "LOGNAME": "claude-agent",
    }
    assert launch.cwd == "/srv/a"
    assert not launch.supervised and launch.warning is None
    # By default in a session of its own (TIOCSTI): the containment gives it one, the
    # session runner's pty, and says so (contained_launch; the golden files).
    assert launch.new_session


def test_user_mode_execs_in_the_same_session_only_when_asked() -> None:
    launch = user_launch(
        config(mode=Mode.USER), AGENT, "/c", "/usr/bin/setpriv", {}, [], True, new_session=False
    )
    assert not launch.new_session and launch.notes == ()


def test_user_mode_without_workspace_starts_in_the_agent_home() -> None:
    launch = user_launch(
        config(mode=Mode.USER, workspaces=()), AGENT, "/c", "/usr/bin/setpriv", {}, [], True
    )
    assert launch.cwd == "/home/claude-agent"
    assert launch.env["TERM"] == "dumb" and launch.env["LANG"] == "C.UTF-8"


@pytest.mark.parametrize(
    ("args", "uid", "exported", "expected"),
    [
        (["--dangerously-skip-permissions"], 0, None, "1"),
        (["--dangerously-skip-permissions"], 1000, None, None),  # not root: guard never fires
        (["--print", "ok"], 0, None, None),  # no bypass asked for
        (["--dangerously-skip-permissions"], 0, "0", "0"),  # the user's export wins
        (["--print"], 0, "1", "1"),  # and is never removed
    ],
)
def test_unsafe_is_sandbox_rules(
    args: list[str], uid: int, exported: str | None, expected: str | None
) -> None:
    environ = {"PATH": "/usr/bin", "KEEP": "me"}
    if exported is not None:
        environ["IS_SANDBOX"] = exported
    launch = unsafe_launch(
        config(mode=Mode.UNSAFE, unsafe=ACCEPTED), "/c", environ, args, uid, "root (uid 0)"
    )
    assert launch.env.get("IS_SANDBOX") == expected
    assert launch.env["KEEP"] == "me"
    assert launch.argv == ("/c", *args)
    assert launch.warning is not None and "NO OS sandbox" in launch.warning
    assert "sandbox-setup" in launch.warning


@pytest.mark.parametrize("blank", ["accepted_by", "accepted_at", "statement"])
def test_unsafe_with_an_empty_acceptance_field_is_refused(blank: str) -> None:
    fields = {"accepted_by": "root (uid 0)", "accepted_at": "2026-11-30T04:00:00+00:00"}
    fields["statement"] = "I accept"
    fields[blank] = " \t"
    accepted = UnsafeAcceptance(**fields)
    with pytest.raises(RefusedError, match=f"unsafe.{blank} is empty"):
        unsafe_launch(config(mode=Mode.UNSAFE, unsafe=accepted), "/c", {}, [], 0, "root")


def test_unsafe_without_acceptance_is_refused() -> None:
    with pytest.raises(RefusedError, match="no acceptance is recorded"):
        unsafe_launch(config(mode=Mode.UNSAFE), "/c", {}, [], 0, "root")


def test_gather_host_facts_from_a_fake_root(tmp_path: Path) -> None:
    (tmp_path / "proc/sys/dev/tty").mkdir(parents=True)
    (tmp_path / "proc/sys/dev/tty/legacy_tiocsti").write_text("0\n")
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "bin").symlink_to("usr/bin")
    (tmp_path / "lib64").mkdir()
    (tmp_path / "etc").mkdir()
    (tmp_path / "run/systemd/resolve").mkdir(parents=True)
    (tmp_path / "run/systemd/resolve/stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (tmp_path / "etc/resolv.conf").symlink_to("../run/systemd/resolve/stub-resolv.conf")
    facts = gather_host_facts(tmp_path)
    assert facts.legacy_tiocsti is False
    assert facts.root_links == (("/bin", "usr/bin"), ("/lib64", None))
    assert facts.resolver_dirs == ("/run/systemd/resolve",)


def test_resolver_chain_through_two_run_directories(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "run/resolvconf").mkdir(parents=True)
    (tmp_path / "run/other").mkdir(parents=True)
    (tmp_path / "run/other/resolv.conf").write_text("")
    (tmp_path / "run/resolvconf/resolv.conf").symlink_to("/run/other/resolv.conf")
    (tmp_path / "etc/resolv.conf").symlink_to("/run/resolvconf/resolv.conf")
    assert resolver_dirs(tmp_path) == ("/run/resolvconf", "/run/other")


def test_plain_resolv_conf_needs_no_bind(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/resolv.conf").write_text("nameserver 10.0.0.1\n")
    assert resolver_dirs(tmp_path) == ()
    assert gather_host_facts(tmp_path).legacy_tiocsti is True  # no knob: TIOCSTI allowed


def test_binds_use_the_resolved_source_at_the_configured_path() -> None:
    facts = HostFacts(legacy_tiocsti=False, real_paths=(("/srv/a", "/data/a"),))
    binds = pairs(sandbox(facts=facts).argv, "--bind")
    assert ("/data/a", "/srv/a") in binds
    assert ("/srv/b", "/srv/b") in binds


@pytest.mark.parametrize("target", ["/", "/usr", "/proc", "/run"])
def test_a_workspace_symlink_to_a_system_directory_is_refused(target: str) -> None:
    facts = HostFacts(legacy_tiocsti=False, real_paths=(("/srv/b", target),))
    with pytest.raises(RefusedError, match="workspace /srv/b, a symlink to"):
        sandbox(facts=facts)


def test_gather_resolves_the_binds(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    facts = gather_host_facts(binds=(PurePosixPath(tmp_path / "link"),))
    assert facts.real_paths == ((str(tmp_path / "link"), str(tmp_path / "real")),)


@pytest.mark.parametrize(
    ("netns", "ports", "says", "never"),
    [
        (True, (), "listens at 127.0.0.1:3128 inside the session's network namespace", PORTS_ONLY),
        (True, (3128,), "listens at 127.0.0.1:3129 inside", PORTS_ONLY),
        (False, (), PORTS_ONLY, "a network namespace of its own: loopback only"),
    ],
)
def test_user_mode_notes_say_the_network_wall_as_built(
    netns: bool, ports: tuple[int, ...], says: str, never: str
) -> None:
    # docs/design.md invariant 16: --dry-run names the wall this launch gets, never a stronger.
    walls = user_walls(7, True, True)
    why = "" if netns else "root cannot create a network namespace here (EPERM)"
    plan = LandlockPlan(walls, (), (), (PROXY_PORT,), proxy=True, netns=netns, netns_why=why)
    launch = user_launch(config(mode=Mode.USER, loopback_ports=ports), AGENT, "/c",
                         "/usr/bin/setpriv", {}, [], True, landlock=plan)  # fmt: skip
    notes = "\n".join(note.text for note in launch.notes)
    assert says in notes
    assert never not in notes
    assert (why in notes) if why else "no network namespace of its own:" not in notes
    assert plan.wall is (UserNetworkWall.NAMESPACE if netns else UserNetworkWall.PORTS)


def test_the_settings_json_is_json_dumps_with_the_port_bare() -> None:
    # Written as json.dumps writes it (the caller's text, escapes and all), with the
    # session proxy's port a bare placeholder the runner fills with a number; built
    # so, never by replacing text in the dumped JSON.
    given = {"env": {"NAME": "Zoë \"q\"\n"}, "permissions": {"allow": ["Bash(ls:*)", 1.5, None]},
             "sandbox": {"enabled": True, "network": {"allowUnixSockets": []}}}  # fmt: skip
    args, _ = with_proxy_settings(["--settings", json.dumps(given)])
    ports = {"httpProxyPort": PROXY_PORT, "socksProxyPort": PROXY_PORT}
    given["sandbox"]["network"].update(ports)  # type: ignore[index]
    # The oracle: what the launcher used to do, dump then unquote the placeholder.
    assert args[1] == json.dumps(given).replace(f'"{PROXY_PORT}"', PROXY_PORT)
    assert json.loads(args[1].replace(PROXY_PORT, "3128"))["sandbox"]["network"] == {
        "allowUnixSockets": [], "httpProxyPort": 3128, "socksProxyPort": 3128,
    }  # fmt: skip
