"""User mode's Landlock walls and trees (policy), the [user] table, the settings merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.launcher_config import parse_launcher_config
from sandbox_setup.base.netwall import (
    NAMESPACE_WALL,
    NO_SECOND_WALL,
    NO_WALL,
    PORTS_ONLY,
    UserNetworkWall,
)
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.launcher.command import with_proxy_settings
from sandbox_setup.launcher.user.landlock_exec import _parse
from sandbox_setup.policy.landlock import bridge_ports, claude_install_dirs, user_trees, user_walls

BASE = """schema = 1
mode = "user"
claude = "/usr/local/bin/claude"
[agent]
user = "claude-agent"
home = "/home/claude-agent"
"""


@pytest.mark.parametrize(
    ("abi", "enabled", "inner_on", "walls"),
    [
        (7, True, True, (False, True, True)),  # bwrap must mount: no files rules
        (7, True, False, (True, True, True)),  # no inner sandbox: files too
        (5, True, False, (True, True, False)),
        (3, True, False, (True, False, False)),  # below 4: the host's network
        (3, True, True, (False, False, False)),
        (7, False, False, (False, False, False)),  # [user] landlock = false
        (0, True, False, (False, False, False)),  # no Landlock
    ],
)
def test_walls(abi: int, enabled: bool, inner_on: bool, walls: tuple[bool, ...]) -> None:
    got = user_walls(abi, enabled, inner_on)
    assert (got.files, got.network, got.scope) == walls


def test_the_plan_lines_say_which_wall_confines_what() -> None:
    strong = "\n".join(user_walls(7, True, True).describe(True))
    assert "Claude Code's own bwrap sandbox confines its Bash commands" in strong
    assert "TCP connect only to the ports of the session's egress proxy" in strong
    # Which network wall: said as built (docs/design.md invariant 16).
    walls = user_walls(7, True, True)
    own = "\n".join(walls.describe(True, namespace=True))
    assert NAMESPACE_WALL in own and PORTS_ONLY not in own
    ports = "\n".join(walls.describe(True, namespace=False))
    assert PORTS_ONLY in ports and NAMESPACE_WALL not in ports
    unknown = "\n".join(walls.describe(True))
    assert "where root can create a network namespace" in unknown and PORTS_ONLY in unknown
    # Below ABI 4 the namespace is the wall where root can make one; else none.
    low = "\n".join(user_walls(3, True, False).describe(False, namespace=False))
    assert f"network: {NO_WALL}" in low and "ABI 3 < 4 has no TCP rules" in low
    assert "scope: not limited" in low
    low_own = "\n".join(user_walls(3, True, False).describe(False, namespace=True))
    assert NAMESPACE_WALL in low_own and NO_SECOND_WALL in low_own and NO_WALL not in low_own
    none = user_walls(0, True, False).describe(False, namespace=False)
    assert "not available" in none[0] and NO_WALL in none[1]
    # [user] landlock = false: Landlock off, the namespace stays.
    off = user_walls(7, False, False).describe(False, namespace=True, landlock_on=False)
    assert "[user] landlock = false" in off[0] and NAMESPACE_WALL in off[1]


def test_trees() -> None:
    read, write = user_trees(
        "/home/a", ["/srv/p"], "/usr/local/bin/claude",
        "/usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js", readable=["/opt/x"],
    )  # fmt: skip
    assert {"/usr", "/etc", "/usr/local/lib", "/opt/x"} <= set(read)
    assert not {"/home", "/srv", "/root", "/var/log", "/opt", "/"} & set(read)
    assert {"/srv/p", "/home/a", "/tmp", "/dev/null"} <= set(write)
    assert not {"/home", "/srv", "/"} & set(write)
    assert claude_install_dirs("/opt/npm/node_modules/.bin/claude",
                               "/opt/npm/node_modules/pkg/cli.js")[-1] == "/opt/npm"  # fmt: skip


def test_the_user_table_is_read_and_kept_on_rewrite() -> None:
    config = parse_launcher_config(BASE)
    assert config.user_landlock is True and config.user_readable == ()
    text = BASE + '[user]\nlandlock = false  # mine\nreadable = ["/opt/tools"]\nother = 1\n'
    config = parse_launcher_config(text)
    assert config.user_landlock is False and [str(p) for p in config.user_readable] == [
        "/opt/tools"
    ]
    rewritten = render_launcher_config(config, text)
    assert "landlock = false  # mine" in rewritten and "other = 1" in rewritten
    assert "[user]" not in render_launcher_config(parse_launcher_config(BASE))


@pytest.mark.parametrize(
    ("table", "key"),
    [('landlock = "yes"', "user.landlock"), ('readable = ["rel"]', "user.readable")],
)
def test_a_bad_user_key_is_an_error_naming_it(table: str, key: str) -> None:
    with pytest.raises(InputError, match=key):
        parse_launcher_config(BASE + f"[user]\n{table}\n", "launcher.toml")


def test_proxy_settings_go_first_or_into_the_callers_inline_settings() -> None:
    args, note = with_proxy_settings(["--print", "hi"])
    assert args[0] == "--settings" and args[2:] == ["--print", "hi"]
    assert json.loads(args[1].replace("{proxy-port}", "9")) == {
        "sandbox": {"network": {"httpProxyPort": 9, "socksProxyPort": 9}}
    }
    mine = json.dumps({"env": {"A": "1"}, "sandbox": {"network": {"allowedDomains": ["x"]}}})
    args, note = with_proxy_settings(["--settings", mine, "--", "--settings", "prompt"])
    merged = json.loads(args[1].replace("{proxy-port}", "9"))
    assert merged["env"] == {"A": "1"}
    assert merged["sandbox"]["network"] == {
        "allowedDomains": ["x"], "httpProxyPort": 9, "socksProxyPort": 9,
    }  # fmt: skip
    assert args[2:] == ["--", "--settings", "prompt"] and "merged" in note
    args, note = with_proxy_settings(["--settings=/root/s.json"])
    assert args == ["--settings=/root/s.json"] and "names a file" in note


def test_the_helper_parses_its_options() -> None:
    status, gate, rules, command = _parse(
        ["--status-fd", "5", "--gate-fd", "6", "--files", "--read", "/usr", "--write", "/w",
         "--network", "--connect", "8080", "--scope", "--", "/bin/claude", "--x"]
    )  # fmt: skip
    assert (status, gate, command) == (5, 6, ["/bin/claude", "--x"])
    assert rules.files and rules.network and rules.scope
    assert rules.read == ("/usr",) and rules.write == ("/w",) and rules.connect_tcp == (8080,)
    with pytest.raises(ValueError):
        _parse(["--status-fd", "5", "--", "/bin/claude"])


@pytest.mark.parametrize(
    ("abi", "inner", "expected"),
    [
        (7, "strong", (False, True, True, True)),
        (7, "off", (True, True, True, True)),
        (3, "off", (True, False, False, None)),
        (3, "strong", None),  # no Landlock walls: the namespace's plan only, if any
        (0, "off", None),
    ],
)
def test_the_launchers_plan_per_abi(abi: int, inner: str, expected: object) -> None:
    from pathlib import Path, PurePosixPath

    from sandbox_setup.launcher.command import Agent
    from sandbox_setup.launcher.main import landlock_plan

    config = parse_launcher_config(BASE + f'[sandbox]\ninner_sandbox = "{inner}"\n')
    agent = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
    from sandbox_setup.launcher.egress.netns import namespace_possible

    netns = namespace_possible().possible  # whatever the ABI (docs/design.md invariant 16)
    plan = landlock_plan(config, agent, Path("/usr/bin/true"), abi, frozenset({0}), "/usr/bin")
    if expected is None:
        if not netns:
            assert plan is None
            return
        assert plan is not None and not plan.walls.any
        assert plan.netns and plan.proxy and plan.wall is UserNetworkWall.NAMESPACE
        return
    assert plan is not None
    walls = plan.walls
    assert isinstance(expected, tuple)
    proxy = expected[3] if expected[3] is not None else netns
    assert (walls.files, walls.network, walls.scope, plan.proxy) == (*expected[:3], proxy)
    assert plan.netns is netns
    assert plan.connect[0] == "{proxy-port}" and "python3" in plan.python


def test_landlock_false_keeps_the_namespace() -> None:
    # [user] landlock = false turns off Landlock only: where root may make a network
    # namespace the session still gets one, with its proxy (docs/design.md invariant 16).
    from pathlib import Path, PurePosixPath

    from sandbox_setup.launcher.command import Agent
    from sandbox_setup.launcher.egress.netns import namespace_possible
    from sandbox_setup.launcher.main import landlock_plan

    config = parse_launcher_config(BASE + "[user]\nlandlock = false\n")
    agent = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
    plan = landlock_plan(config, agent, Path("/usr/bin/true"), 7, frozenset({0}), "/usr/bin")
    if not namespace_possible().possible:
        assert plan is None
        return
    assert plan is not None and not plan.walls.any
    assert plan.netns and plan.proxy and plan.wall is UserNetworkWall.NAMESPACE


@pytest.mark.parametrize(
    ("namespace", "inner_on", "ports"),
    [
        (True, True, (3128, 1080)),  # Claude's bridge listens in its own namespace
        (False, True, ()),  # Landlock's ports the only wall: a bind is on the host
        (True, False, ()),  # no inner sandbox: no bridge, nothing to bind
        (False, False, ()),
    ],
)
def test_the_bridge_ports_only_with_a_namespace_and_the_inner_sandbox(
    namespace: bool, inner_on: bool, ports: tuple[int, ...]
) -> None:
    assert bridge_ports(namespace, inner_on) == ports


def test_the_plan_lines_say_which_ports_may_be_bound() -> None:
    walls = user_walls(7, True, True)
    own = "\n".join(walls.describe(True, namespace=True))
    assert "TCP bind and connect also on 3128 and 1080 only" in own and "no TCP bind" not in own
    for namespace in (False, None):  # no namespace, or not known: the fallback binds nothing
        said = "\n".join(walls.describe(True, namespace=namespace))
        assert "no TCP bind" in said and "3128 and 1080" not in said, said
    off = "\n".join(user_walls(7, True, False).describe(False, namespace=True))
    assert "no TCP bind" in off and "3128 and 1080" not in off


def test_the_helper_parses_bind_ports() -> None:
    *_, rules, _command = _parse(
        ["--status-fd", "5", "--gate-fd", "6", "--network", "--connect", "3128",
         "--bind", "3128", "--bind", "1080", "--", "/bin/claude"]
    )  # fmt: skip
    assert rules.bind_tcp == (3128, 1080) and rules.connect_tcp == (3128,)


@pytest.mark.parametrize(
    ("netns", "inner", "bind"),
    [(True, "strong", ("3128", "1080")), (False, "strong", ()), (True, "off", ())],
)
def test_the_launchers_plan_binds_the_bridge_only_in_a_namespace(
    monkeypatch: pytest.MonkeyPatch, netns: bool, inner: str, bind: tuple[str, ...]
) -> None:
    from pathlib import Path, PurePosixPath

    from sandbox_setup.launcher import main
    from sandbox_setup.launcher.command import Agent
    from sandbox_setup.launcher.egress import netns as netns_module
    from sandbox_setup.launcher.egress.netns import NamespaceVerdict
    from sandbox_setup.launcher.user.landlock_plan import helper_argv

    # What root may do here is the launch's live probe; the rule is what is tested.
    monkeypatch.setattr(netns_module, "namespace_possible", lambda: NamespaceVerdict(netns, "test"))
    config = parse_launcher_config(BASE + f'[sandbox]\ninner_sandbox = "{inner}"\n')
    agent = Agent("claude-agent", 1001, 1001, PurePosixPath("/home/claude-agent"))
    plan = main.landlock_plan(config, agent, Path("/usr/bin/true"), 7, frozenset({0}), "/usr/bin")
    assert plan is not None and plan.walls.network
    assert plan.bind == bind and set(bind) <= set(plan.connect)
    argv = helper_argv(plan)
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"] == list(bind)


def test_the_gate_refuses_a_bind_without_a_namespace(tmp_path: Path) -> None:
    from sandbox_setup.base.errors import RefusedError
    from sandbox_setup.launcher.user.landlock_gate import LandlockGate
    from sandbox_setup.launcher.user.landlock_plan import LandlockPlan

    plan = LandlockPlan(user_walls(7, True, True), connect=("3128",), bind=("3128",))
    with pytest.raises(RefusedError, match="without a network namespace"):
        LandlockGate(plan, tmp_path, netns=None)
