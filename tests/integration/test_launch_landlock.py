"""User mode confined by Landlock: real launches on this kernel (issue 29).

A fake ``claude`` (python3, run by the real launcher as the agent through setpriv, the
session's reaper and the Landlock helper) tries what the walls must stop and prints one
JSON line. Each test has its twin: the same launch with ``[user] landlock = false``,
where the same attempt succeeds, so the refusal is Landlock's and not the host's.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.base.launcher_config import LauncherConfig, parse_launcher_config
from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.policy.network import CLAUDE_ENDPOINTS
from tests.core_fixtures import make_target_root, run_cli
from tests.integration.egress_world import (
    ALLOWED_PATTERNS,
    HOST_LOOPBACK_PORT,
    HOST_SECRET,
    WORLD_GREETING,
    make_world,
)
from tests.launch_fixtures import (
    LaunchTree,
    last_json,
    launch_tree,
    launcher_env,
    make_launch_tree,
    run_launcher,
)
from tests.seams import LAUNCH_WITH_SEAMS
from tests.tools import REPO, require_tool

pytestmark = pytest.mark.integration

ABI = landlock.abi_version()
needs_net = pytest.mark.skipif(ABI < 4, reason=f"TCP rules need Landlock ABI 4 (kernel: {ABI})")
needs_scope = pytest.mark.skipif(ABI < 6, reason=f"scopes need Landlock ABI 6 (kernel: {ABI})")

ATTEMPTS = r"""#!/usr/bin/python3
import errno, json, os, socket, sys
def attempt(action):
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"
def connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        got = b""
        while b"loopback-secret" not in got:  # the reply may come in pieces (HTTP/1.0: to EOF)
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError(errno.EPROTO, "no secret")
            got += chunk
def write(directory):
    path = os.path.join(directory, ".landlock-probe")
    with open(path, "w") as stream:
        stream.write("x")
    os.unlink(path)
def read(path):
    with open(path) as stream:
        stream.read()
report = {{
    "uid": os.getuid(),
    "loopback": attempt(lambda: connect({port})),
    "kill_init": attempt(lambda: os.kill(1, 0)),
    "workspace": attempt(lambda: write({workspace!r})),
    "home": attempt(lambda: write({home!r})),
    "other_project": attempt(lambda: read({other_project!r})),
    "other_home": attempt(lambda: read({other_home!r})),
    "root": attempt(lambda: os.listdir("/root")),
    "proxy_env": os.environ.get("HTTPS_PROXY"),
    "args": sys.argv[1:],
}}
print(json.dumps(report))
"""


class _Secret(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"loopback-secret\n")

    def log_message(self, *args: Any) -> None:
        pass


def serve_secret() -> Iterator[int]:
    """A :class:`_Secret` server on the host's loopback, its port; closed after."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Secret)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def loopback_server() -> Iterator[int]:
    """A service on the host's loopback that the agent's account could reach."""
    yield from serve_secret()


@pytest.fixture(scope="module")
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


@pytest.fixture(scope="module")
def srv_tree() -> Iterator[LaunchTree]:
    """A launch tree under /srv (a temp dir of its own, removed after): its workspace
    is one /srv project; its ``outside`` holds another, and another user's home."""
    with make_launch_tree("/srv") as made:
        yield made


def _plant(tree: LaunchTree) -> tuple[Path, Path]:
    other = tree.outside / "other-project" / "README"
    bashrc = tree.outside / "home" / "ac-g-other" / ".bashrc"
    for path in (other, bashrc):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o755)
        path.write_text("not the agent's\n")
        path.chmod(0o644)
    return other, bashrc


def _launch(tree: LaunchTree, port: int, name: str, **config: Any) -> tuple[dict[str, Any], str]:
    other, bashrc = _plant(tree)
    script = ATTEMPTS.format(
        port=port, workspace=str(tree.workspace), home=str(tree.home),
        other_project=str(other), other_home=str(bashrc),
    )  # fmt: skip
    claude = tree.write_script(script, name=f"claude-{name}")
    path = tree.write_config(claude, mode="user", name=f"{name}.toml", **config)
    result = run_launcher(path, ["--print", "hi"])
    assert result.returncode == 0, result.stderr
    return last_json(result.stdout), result.stderr


@pytest.fixture(scope="module")
def confined(tree: LaunchTree, loopback_server: int) -> tuple[dict[str, Any], str]:
    """The default: Landlock on; Claude's inner sandbox on (network and scope only)."""
    return _launch(tree, loopback_server, "confined")


@pytest.fixture(scope="module")
def unconfined(tree: LaunchTree, loopback_server: int) -> tuple[dict[str, Any], str]:
    """The twin: ``[user] landlock = false``."""
    return _launch(tree, loopback_server, "unconfined", landlock=False)


def test_the_twin_without_landlock_is_walled_by_the_namespace_only(
    unconfined: tuple[dict[str, Any], str],
    tree: LaunchTree,
) -> None:
    # [user] landlock = false turns off Landlock, not the session's own network
    # namespace (where root may make one): the host's loopback service stays out of
    # reach there (nothing listens at its port inside), everything else is the
    # account's. Without a namespace for root, the twin reaches it.
    report, stderr = unconfined
    assert report["uid"] == tree.agent.uid
    assert report["kill_init"] == "ok"
    assert report["other_project"] == report["other_home"] == "ok"
    if namespace_possible().possible:
        assert report["loopback"] == "ECONNREFUSED"
        assert report["proxy_env"].startswith("http://127.0.0.1:")
        assert "a network namespace of its own" in stderr
    else:
        assert report["loopback"] == "ok"
        assert report["proxy_env"] is None
        assert "none: the host's network" in stderr


@needs_net
def test_user_mode_cannot_connect_to_a_loopback_service(
    confined: tuple[dict[str, Any], str], tree: LaunchTree
) -> None:
    report, _ = confined
    assert report["uid"] == tree.agent.uid
    assert report["loopback"] == "EACCES"
    # Its way out is the session's proxy, on a port chosen at start.
    assert report["proxy_env"].startswith("http://127.0.0.1:")
    assert "{proxy-port}" not in report["proxy_env"]


@needs_scope
def test_user_mode_cannot_signal_a_process_outside_its_domain(
    confined: tuple[dict[str, Any], str],
) -> None:
    # pid 1 of the session's pid namespace is its reaper, the agent's own uid, outside
    # the domain (the helper starts below it): kill -0 worked before Landlock.
    assert confined[0]["kill_init"] == "EPERM"


def test_workspace_and_home_stay_writable(
    confined: tuple[dict[str, Any], str], unconfined: tuple[dict[str, Any], str]
) -> None:
    for report, _ in (confined, unconfined):
        assert report["workspace"] == report["home"] == "ok", report


def test_with_the_inner_sandbox_on_files_are_not_landlocked(
    confined: tuple[dict[str, Any], str],
) -> None:
    # A files ruleset would forbid the mounts Claude's own bwrap sandbox needs: with it
    # on, Landlock keeps to network and scope (and Claude's Bash sandbox gets the
    # session's proxy as its own).
    report, _ = confined
    assert report["other_project"] == "ok"
    assert report["args"][:1] == ["--settings"]
    settings = json.loads(report["args"][1])
    port = int(report["proxy_env"].rpartition(":")[2])
    assert settings == {"sandbox": {"network": {"httpProxyPort": port, "socksProxyPort": port}}}
    assert report["args"][2:] == ["--print", "hi"]


@pytest.fixture(scope="module")
def no_userns_shape(srv_tree: LaunchTree, loopback_server: int) -> Iterator[dict[str, Any]]:
    """inner_sandbox "off": what the plan writes where user namespaces are refused."""
    report, _ = _launch(srv_tree, loopback_server, "files", inner_sandbox="off")
    yield report


@pytest.fixture(scope="module")
def no_userns_twin(srv_tree: LaunchTree, loopback_server: int) -> dict[str, Any]:
    return _launch(srv_tree, loopback_server, "files-twin", inner_sandbox="off", landlock=False)[0]


def test_without_the_inner_sandbox_other_projects_and_homes_are_unreadable(
    no_userns_shape: dict[str, Any], no_userns_twin: dict[str, Any]
) -> None:
    assert no_userns_twin["other_project"] == no_userns_twin["other_home"] == "ok"
    assert no_userns_shape["other_project"] == "EACCES"
    assert no_userns_shape["other_home"] == "EACCES"
    assert no_userns_shape["root"] == "EACCES"
    assert no_userns_shape["workspace"] == no_userns_shape["home"] == "ok"
    # No inner sandbox to hand the proxy to: Claude's args are the operator's.
    assert no_userns_shape["args"] == ["--print", "hi"]


def test_the_operator_adds_a_readable_tree(srv_tree: LaunchTree, loopback_server: int) -> None:
    report, _ = _launch(
        srv_tree, loopback_server, "readable", inner_sandbox="off",
        readable=[str(srv_tree.outside / "other-project")],
    )  # fmt: skip
    assert report["other_project"] == "ok"
    assert report["other_home"] == "EACCES"


def test_dry_run_says_which_wall_confines_what(tree: LaunchTree) -> None:
    claude = tree.write_script("#!/bin/sh\nexit 0\n", name="claude-dry")
    for inner, files_line in (("strong", "Claude Code's own bwrap"), ("off", "files: readable")):
        path = tree.write_config(claude, mode="user", name=f"dry-{inner}.toml",
                                 inner_sandbox=inner)  # fmt: skip
        result = run_launcher(path, dry_run=True)
        assert result.returncode == 0, result.stderr
        assert files_line in result.stdout
        if ABI >= 4:
            assert "TCP connect only to the ports of the session's egress proxy" in result.stdout


def test_a_helper_that_cannot_run_refuses_the_launch(tree: LaunchTree) -> None:
    # The agent cannot run the interpreter the helper needs: nothing starts unconfined.
    hidden = tree.base / "hidden-bin"
    hidden.mkdir(mode=0o700, exist_ok=True)
    python = hidden / "python3"
    shutil.copy2(os.path.realpath("/usr/bin/python3"), python)
    claude = tree.write_script("#!/bin/sh\ntouch " + str(tree.workspace / "ran") + "\n",
                               name="claude-never")  # fmt: skip
    path = tree.write_config(claude, mode="user", name="hidden.toml")
    env = {"PATH": f"{hidden}:/usr/bin:/bin"}
    result = run_launcher(path, env=launcher_env(env))
    assert result.returncode == 3, result.stderr
    assert "Landlock" in result.stderr
    assert not (tree.workspace / "ran").exists()


# --- the egress proxy of a user-mode session, in a world of namespaces ---------------

WORLD_ATTEMPTS = r"""#!/bin/sh
attempt() {{ name=$1; shift; out=$("$@" 2>&1); printf '=== %s rc=%s\n%s\n' "$name" "$?" "$out"; }}
here=$(readlink /proc/self/ns/net)
if [ "$here" = "{real}" ]; then echo "in the real host network namespace" >&2; exit 99; fi
attempt allowed curl -sS --max-time 8 --cacert {ca} https://allowed.test/hello.txt
attempt denied curl -sS --max-time 8 --cacert {ca} https://denied.test/hello.txt
attempt hidden_direct curl -sS --max-time 8 --noproxy '*' http://127.0.0.1:{hidden}/secret.txt
"""


def _world_attempts(
    world_tree: LaunchTree,
    world: Any,
    landlock_on: bool,
    allowed: Sequence[str] = ALLOWED_PATTERNS,
    name: str | None = None,
    netns: bool = True,
) -> dict[str, Any]:
    from tests.integration.test_launch_network import REAL_HOST_NETNS, parse_attempts

    ca = world_tree.bin / "ca.pem"
    ca.write_bytes(world.ca.read_bytes())
    ca.chmod(0o644)
    script = WORLD_ATTEMPTS.format(real=REAL_HOST_NETNS, ca=ca, hidden=HOST_LOOPBACK_PORT)
    name = (name or ("world-on" if landlock_on else "world-off")) + ("" if netns else "-ports")
    claude = world_tree.write_script(script, name=f"claude-{name}")
    config = world_tree.write_config(
        claude, mode="user", allowed_domains=allowed, name=f"{name}.toml",
        landlock=None if landlock_on else False,
    )  # fmt: skip
    launcher = subprocess.run(
        ["ip", "netns", "exec", world.host_ns, sys.executable, str(LAUNCH_WITH_SEAMS),
         f"--seam-resolve={world.resolve_map}", *([] if netns else ["--seam-no-netns"]),
         "--config", str(config), "--"],
        env=launcher_env({"XDG_STATE_HOME": str(world_tree.base / "state")}), cwd=REPO,
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert launcher.returncode == 0, launcher.stderr
    attempts = parse_attempts(launcher.stdout)
    assert "allowed" in attempts, launcher.stdout + launcher.stderr
    return attempts


@pytest.fixture(scope="module")
def world() -> Iterator[Any]:
    for tool in ("ip", "openssl", "curl", "setpriv"):
        require_tool(tool)
    with make_world(prefix="lg") as made:
        yield made


@needs_net
def test_the_session_proxy_lets_an_allowed_name_out_and_nothing_else(
    tree: LaunchTree, world: Any
) -> None:
    # Landlock's ports alone (root cannot make a namespace: --seam-no-netns), and the
    # twin without either wall.
    on = _world_attempts(tree, world, landlock_on=True, netns=False)
    off = _world_attempts(tree, world, landlock_on=False, netns=False)
    # Through the session's proxy (HTTPS_PROXY, set by the launcher): the allowlist.
    assert on["allowed"] == (0, WORLD_GREETING.rstrip("\n")), on
    assert on["denied"][0] != 0, on
    # Straight to a loopback service of the host: refused by Landlock, where without
    # it (and without a namespace) the same account reads the secret.
    assert off["hidden_direct"] == (0, HOST_SECRET), off
    assert on["hidden_direct"][0] != 0 and HOST_SECRET not in on["hidden_direct"][1], on
    if namespace_possible().possible:
        # [user] landlock = false with the namespace: the allowlist still, and the
        # host's loopback out of reach (the namespace's wall, not Landlock's).
        walled = _world_attempts(tree, world, landlock_on=False)
        assert walled["allowed"] == (0, WORLD_GREETING.rstrip("\n")), walled
        assert walled["denied"][0] != 0, walled
        assert HOST_SECRET not in walled["hidden_direct"][1], walled
    log = (tree.base / "state" / "sandbox-setup" / "egress.log").read_text()
    assert '"mode": "user"' in log and "allowed.test" in log


@needs_net
def test_a_non_root_operator_is_confined_too(tree: LaunchTree, loopback_server: int) -> None:
    # The operator's own uid is the agent (the tree's, running the installed copy): the
    # helper's canary file is in its state directory, the proxy runs as itself.
    results = {}
    for on in (True, False):
        other, bashrc = _plant(tree)
        script = ATTEMPTS.format(
            port=loopback_server, workspace=str(tree.workspace), home=str(tree.home),
            other_project=str(other), other_home=str(bashrc),
        )  # fmt: skip
        name = f"nonroot-{on}"
        claude = tree.write_script(script, name=f"claude-{name}")
        path = tree.write_config(claude, mode="user", name=f"{name}.toml",
                                 landlock=None if on else False)  # fmt: skip
        os.chown(path, tree.agent.uid, tree.agent.gid)
        result = run_launcher(path, ["--print", "hi"], preexec_user=tree.agent.uid)
        assert result.returncode == 0, result.stderr
        results[on] = last_json(result.stdout)
    assert results[False]["loopback"] == "ok"
    assert results[True]["loopback"] == "EACCES"
    assert results[True]["workspace"] == results[True]["home"] == "ok"


# --- the operator's lists, set by the wizard in user mode -----------------------------

TWO_PORTS = r"""#!/usr/bin/python3
import errno, json, socket
def attempt(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
            got = b""
            while b"loopback-secret" not in got:
                chunk = sock.recv(4096)
                if not chunk:
                    return "no secret"
                got += chunk
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"
print(json.dumps({{"allowed": attempt({allowed}), "other": attempt({other})}}))
"""


@pytest.fixture(scope="module")
def other_loopback_server() -> Iterator[int]:
    """A second loopback service, not allowed."""
    yield from serve_secret()


def wizard_user_config(base: Path, *flags: str) -> LauncherConfig:
    """A real headless apply of user mode under a temp root (agent ac-n-agent created
    with useradd --prefix there), and the launcher.toml it wrote."""
    for tool in ("useradd", "setfacl"):
        require_tool(tool)
    root = make_target_root(base / "root")
    result = run_cli(
        "--headless", "--mode", "user", "--workspace", "/srv/project", "--agent-user",
        "ac-n-agent", "--root", str(root), "--yes", *flags,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = root / "root/.config/sandbox-setup/launcher.toml"
    return parse_launcher_config(written.read_text(), str(written))


@needs_net
def test_a_domain_the_wizard_allows_in_user_mode_goes_through_the_session_proxy(
    tree: LaunchTree, world: Any, tmp_path: Path
) -> None:
    # Before: the wizard refused --allow-domain in user mode ("everything is reachable").
    config = wizard_user_config(tmp_path, "--allow-domain", "allowed.test")
    assert config.allowed_domains == ("allowed.test",)
    on = _world_attempts(tree, world, True, config.allowed_domains, name="wizard-domain")
    assert on["allowed"] == (0, WORLD_GREETING.rstrip("\n")), on
    assert on["denied"][0] != 0, on
    log = (tree.base / "state" / "sandbox-setup" / "egress.log").read_text().splitlines()
    starts = [json.loads(line) for line in log if '"session start"' in line]
    assert {"mode": "user", "allowed": [*CLAUDE_ENDPOINTS, "allowed.test"]}.items() <= (
        starts[-1].items()
    ), starts[-1]


@needs_net
def test_a_loopback_port_the_wizard_allows_in_user_mode_is_connectable(
    tree: LaunchTree, loopback_server: int, other_loopback_server: int, tmp_path: Path
) -> None:
    # Before: the wizard refused --allow-loopback-port in user mode, and Landlock let
    # the agent reach no loopback service at all.
    config = wizard_user_config(tmp_path, "--allow-loopback-port", str(loopback_server))
    assert config.loopback_ports == (loopback_server,)
    script = TWO_PORTS.format(allowed=loopback_server, other=other_loopback_server)
    claude = tree.write_script(script, name="claude-wizard-ports")
    path = tree.write_config(claude, mode="user", name="wizard-ports.toml",
                             loopback_ports=config.loopback_ports)  # fmt: skip
    result = run_launcher(path, ["--print", "hi"])
    assert result.returncode == 0, result.stderr
    assert last_json(result.stdout) == {"allowed": "ok", "other": "EACCES"}
    # The wall as built here: its own network namespace where root may make one.
    wall = "a network namespace of its own" if namespace_possible().possible else "Landlock's"
    assert f"host loopback port {loopback_server}; {wall}" in result.stderr


def test_dry_run_says_the_lists_and_where_they_change_nothing(tree: LaunchTree) -> None:
    claude = tree.write_script("#!/bin/sh\nexit 0\n", name="claude-dry-lists")
    off = tree.write_config(claude, mode="user", name="dry-lists-off.toml", landlock=False,
                            allowed_domains=["pypi.org"], loopback_ports=[4000])  # fmt: skip
    result = run_launcher(off, dry_run=True)
    assert result.returncode == 0, result.stderr
    if namespace_possible().possible:  # Landlock off, the namespace still takes them
        assert "change nothing" not in result.stdout
        assert "a network namespace of its own" in result.stdout
    result = run_launcher(off, dry_run=True, seams=["--seam-no-netns"])
    assert result.returncode == 0, result.stderr
    assert "sandbox.loopback_ports change nothing here" in result.stdout
    assert "none: the host's network" in result.stdout
    on = tree.write_config(claude, mode="user", name="dry-lists-on.toml",
                           allowed_domains=["pypi.org"], loopback_ports=[4000])  # fmt: skip
    result = run_launcher(on, dry_run=True)
    assert result.returncode == 0, result.stderr
    if ABI >= 4:
        assert "platform.claude.com:443, pypi.org) listens" in result.stdout
        assert "may connect to (sandbox.loopback_ports): 4000" in result.stdout
        assert "change nothing" not in result.stdout
    # A bad pattern refuses a user-mode --dry-run too, as the launch would.
    bad = tree.write_config(claude, mode="user", name="dry-lists-bad.toml",
                            allowed_domains=["*"])  # fmt: skip
    result = run_launcher(bad, dry_run=True)
    assert result.returncode == 3, result.stdout
    assert "sandbox.allowed_domains" in result.stderr


# --- Claude's Bash sandbox's bridge ports: bind only in the session's own namespace ----

BINDS = r"""#!/usr/bin/python3
import errno, json, os, socket
def bind(port):
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"
print(json.dumps({"net": os.readlink("/proc/self/ns/net"), "bridge": bind(1080),
                  "any": bind(0)}))
"""


@needs_net
def test_the_bridge_port_binds_only_in_the_sessions_own_namespace(tree: LaunchTree) -> None:
    """Claude's Bash sandbox listens on 3128 and 1080 inside its own network namespace
    (policy.landlock.bridge_ports). Where the session has a namespace of its own, the
    domain lets 1080 be bound (there, not on the host) and nothing else; with Landlock's
    ports the only wall (--seam-no-netns) a bind of 1080 would be on the host's
    network: refused, as every bind. --dry-run says which."""
    claude = tree.write_script(BINDS, name="claude-binds")
    config = tree.write_config(claude, mode="user", name="binds.toml")
    host_net = os.readlink("/proc/self/ns/net")
    alone = run_launcher(config, seams=["--seam-no-netns"])
    assert alone.returncode == 0, alone.stderr
    report = last_json(alone.stdout)
    assert report["net"] == host_net, report
    assert report == {"net": host_net, "bridge": "EACCES", "any": "EACCES"}, report
    dry = run_launcher(config, dry_run=True, seams=["--seam-no-netns"])
    assert "no TCP bind" in dry.stdout and "--bind" not in dry.stdout, dry.stdout
    if not namespace_possible().possible:
        return
    own = run_launcher(config)
    assert own.returncode == 0, own.stderr
    report = last_json(own.stdout)
    assert report["net"] != host_net, report
    assert (report["bridge"], report["any"]) == ("ok", "EACCES"), report
    dry = run_launcher(config, dry_run=True)
    assert "TCP bind and connect also on 3128 and 1080 only" in dry.stdout, dry.stdout
    assert "--bind\n1080" in dry.stdout or "--bind 1080" in dry.stdout, dry.stdout
