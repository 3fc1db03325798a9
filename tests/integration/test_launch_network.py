"""The network boundary of a real sandbox-mode launch: ``sandbox-launch`` with network allowlist.

The launcher runs (as root) inside ``nt-h-TAG``, a network namespace this test made
(:mod:`tests.integration.egress_world`): that is "the host" for it, with its own
loopback services, an abstract unix socket, a route to the "internet" namespace
``nt-w-TAG`` (203.0.113.10, 2001:db8::10, the private 10.77.0.10) and to a cloud
metadata service at 169.254.169.254. The real machine's network is never part of it.

A fake ``claude`` (a shell script the launcher trusts) makes every attempt from inside
the sandbox, as the agent, and prints each result under a marker with its own network
namespace, so a run where the sandbox never started cannot pass. Each refusal has a
twin run straight from ``nt-h`` where the same thing answers: only the sandbox stopped it.
Before any direct attempt at the metadata or a private address, the script (and the
twins) check that they are not in the real host's network namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_setup.launcher.egress.network import SANDBOX_PROXY_PORT
from tests.integration.egress_world import (
    ALLOWED_PATTERNS,
    HOST_LOOPBACK_PORT,
    HOST_SECRET,
    METADATA,
    METADATA_PATH,
    METADATA_SECRET,
    WORLD_GREETING,
    WORLD_PRIVATE,
    World,
    make_world,
)
from tests.launch_fixtures import LaunchTree, launch_tree, launcher_env
from tests.seams import LAUNCH_WITH_SEAMS
from tests.tools import REPO, require_tool

pytestmark = pytest.mark.integration

EXPOSED_PORT = 18341  # in nt-h only: --allow-loopback-port
EXPOSED_SECRET = "answered-on-the-exposed-loopback-port"
V6_PORT = 18342  # a service on nt-h's [::1] only
V6_SECRET = "answered-on-ipv6-loopback"
ABSTRACT_SECRET = "answered-on-an-abstract-socket-of-the-host"
REAL_HOST_NETNS = os.readlink("/proc/self/ns/net")
REFUSED = "sandbox-launch egress proxy: refused"

# The direct attempts run only outside the real host's network namespace (a sandbox
# that shared it would send them out through this machine's default route).
GUARD = (
    'here=$(readlink /proc/self/ns/net); if [ "$here" = "{real}" ]; then '
    'echo "in the real host network namespace: refusing direct attempts" >&2; exit 99; fi'
)

ATTEMPTS = r"""#!/bin/sh
attempt() {{ name=$1; shift; out=$("$@" 2>&1); printf '=== %s rc=%s\n%s\n' "$name" "$?" "$out"; }}
printf '=== whoami rc=0\n%s %s\n' "$(id -u)" "$(readlink /proc/self/ns/net)"
C="curl -sS --max-time 8"
viaproxy() {{ NO_PROXY= no_proxy= curl -sS --max-time 8 -x http://127.0.0.1:3128 "$@"; }}
attempt proxy_env sh -c 'echo "$HTTPS_PROXY $ALL_PROXY $NO_PROXY"'
attempt exposed $C http://127.0.0.1:{exposed}/exposed.txt
attempt exposed_v6 $C "http://[::1]:{exposed}/exposed.txt"
attempt allowed_curl $C --cacert {ca} https://allowed.test/hello.txt
attempt allowed_git git -c http.sslCAInfo={ca} ls-remote https://git.allowed.test/repo.git
attempt allowed_urllib /usr/bin/python3 -c "{urllib}" https://www.allowed.test/hello.txt {ca}
attempt denied $C --cacert {ca} -w '\n%{{http_code}}' http://denied.test/hello.txt
attempt denied_tls $C --cacert {ca} https://denied.test/hello.txt
attempt unresolved $C -w '\n%{{http_code}}' http://nowhere.allowed.test/hello.txt
attempt metadata_proxy $C -w '\n%{{http_code}}' http://{metadata}{metadata_path}
attempt metadata_name $C -w '\n%{{http_code}}' http://metadata.allowed.test{metadata_path}
attempt loopback_name $C -w '\n%{{http_code}}' http://loopback.allowed.test:{hidden}/secret.txt
attempt hidden_proxy viaproxy -w '\n%{{http_code}}' http://127.0.0.1:{hidden}/secret.txt
attempt private_name $C -w '\n%{{http_code}}' http://private.allowed.test/hello.txt
attempt private_proxy $C -w '\n%{{http_code}}' http://{private}/hello.txt
attempt v6loopback_name $C -w '\n%{{http_code}}' "http://v6loopback.allowed.test:{v6}/v6.txt"
attempt v6loopback_proxy viaproxy -w '\n%{{http_code}}' "http://[::1]:{v6}/v6.txt"
{guard}
attempt hidden_direct $C --noproxy '*' http://127.0.0.1:{hidden}/secret.txt
attempt v6loopback_direct $C --noproxy '*' "http://[::1]:{v6}/v6.txt"
attempt abstract socat -T2 - ABSTRACT-CONNECT:{abstract}
attempt metadata_direct $C --noproxy '*' http://{metadata}{metadata_path}
attempt metadata_errno /usr/bin/python3 -c "{errno_probe}" {metadata} 80
attempt private_direct /usr/bin/python3 -c "{errno_probe}" {private} 80
attempt routes cat /proc/net/route /proc/net/ipv6_route
"""

URLLIB = (
    "import ssl, sys, urllib.request; "
    "ctx = ssl.create_default_context(cafile=sys.argv[2]); "
    "print(urllib.request.urlopen(sys.argv[1], context=ctx, timeout=8).read().decode(), end='')"
)
ERRNO_PROBE = (
    "import errno, socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); print('connected')\n"
    "except OSError as exc:\n"
    "    print(errno.errorcode.get(exc.errno, exc))"
)


def parse_attempts(output: str) -> dict[str, tuple[int, str]]:
    attempts = {}
    for block in output.split("=== ")[1:]:
        header, _, body = block.partition("\n")
        name, _, rc = header.partition(" rc=")
        attempts[name] = (int(rc), body.rstrip("\n"))
    return attempts


@dataclass
class HostSide:
    """The launcher's "host" (nt-h) and what it offers that the sandbox must not reach."""

    world: World
    abstract: str

    def run(self, argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.world.host_ns, *argv],
            capture_output=True, text=True, check=False, timeout=60, **kwargs,  # type: ignore[call-overload]
        )  # fmt: skip

    def direct(self, script: str) -> subprocess.CompletedProcess[str]:
        """``script`` in nt-h, after checking it is not the real host's namespace."""
        return self.run(["/bin/sh", "-c", GUARD.format(real=REAL_HOST_NETNS) + "; " + script])


@pytest.fixture(scope="module")
def host() -> Iterator[HostSide]:
    for tool in ("ip", "openssl", "curl", "git", "socat", "bwrap", "setpriv"):
        require_tool(tool)
    with make_world(prefix="nt", metadata=True) as world:
        served = world.base / "host-services"
        served.mkdir()
        (served / "exposed.txt").write_text(EXPOSED_SECRET)
        (served / "v6.txt").write_text(V6_SECRET)
        abstract = f"nt-abstract-{secrets.token_hex(4)}"
        ns = ["ip", "netns", "exec", world.host_ns]
        services = [
            subprocess.Popen([*ns, sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                              "--directory", str(served), str(EXPOSED_PORT)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            subprocess.Popen([*ns, sys.executable, "-m", "http.server", "--bind", "::1",
                              "--directory", str(served), str(V6_PORT)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            subprocess.Popen([*ns, "socat", f"ABSTRACT-LISTEN:{abstract},fork",
                              f"SYSTEM:echo {ABSTRACT_SECRET}"]),
        ]  # fmt: skip
        side = HostSide(world, abstract)
        try:
            for url in (f"http://127.0.0.1:{EXPOSED_PORT}/", f"http://[::1]:{V6_PORT}/"):
                for _ in range(100):
                    if side.run(["curl", "-s", "--noproxy", "*", url]).returncode == 0:
                        break
                    time.sleep(0.05)
            yield side
        finally:
            for service in services:
                service.kill()
                service.wait()


@pytest.fixture(scope="module")
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("socat", "curl")


def launch_env(
    tree: LaunchTree, world: World, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    return launcher_env({"XDG_STATE_HOME": str(tree.base / "state"), **(extra or {})})


def egress_log(tree: LaunchTree) -> list[dict[str, object]]:
    path = tree.base / "state" / "sandbox-setup" / "egress.log"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def start_launcher(
    host: HostSide,
    tree: LaunchTree,
    config: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    seams: Sequence[str] | None = None,
) -> subprocess.Popen[str]:
    """``sandbox-launch --config CONFIG -- ARGS`` as root, in nt-h (exec'd: same pid),
    through :mod:`tests.seams.launch_with_seams` with ``seams`` (default: the proxy
    resolves names from the world's map, its DNS)."""
    if seams is None:
        seams = (f"--seam-resolve={host.world.resolve_map}",)
    return subprocess.Popen(
        ["ip", "netns", "exec", host.world.host_ns, sys.executable, str(LAUNCH_WITH_SEAMS),
         *seams, "--config", str(config), "--", *args],
        env=launch_env(tree, host.world, env), cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.fixture(scope="module")
def inside(host: HostSide, tree: LaunchTree) -> dict[str, tuple[int, str]]:
    ca = tree.bin / "ca.pem"  # the claude directory is bound into the sandbox read-only
    ca.write_bytes(host.world.ca.read_bytes())
    ca.chmod(0o644)
    script = ATTEMPTS.format(
        exposed=EXPOSED_PORT, hidden=HOST_LOOPBACK_PORT, v6=V6_PORT, ca=ca, metadata=METADATA,
        metadata_path=METADATA_PATH, private=WORLD_PRIVATE, abstract=host.abstract,
        urllib=URLLIB, errno_probe=ERRNO_PROBE, guard=GUARD.format(real=REAL_HOST_NETNS),
    )  # fmt: skip
    claude = tree.write_script(script, name="claude-attempts")
    config = tree.write_config(
        claude, network="allowlist", allowed_domains=ALLOWED_PATTERNS,
        loopback_ports=(EXPOSED_PORT,), name="attempts.toml",
    )  # fmt: skip
    launcher = start_launcher(host, tree, config)
    stdout, stderr = launcher.communicate(timeout=180)
    attempts = parse_attempts(stdout)
    assert launcher.returncode == 0, stderr
    assert "whoami" in attempts, f"the sandbox did not run: {stdout}\n{stderr}"
    return attempts


def out(inside: dict[str, tuple[int, str]], name: str) -> str:
    assert name in inside, f"{name} did not run (the guard stopped the script?): {inside}"
    return inside[name][1]


def refused_403(inside: dict[str, tuple[int, str]], name: str, why: str) -> None:
    text = out(inside, name)
    assert text.endswith("\n403"), text
    assert text.startswith(REFUSED), text
    assert why in text, text


# --- it ran where it should ---------------------------------------------------------------


def test_it_ran_as_the_agent_in_a_network_namespace_of_its_own(
    inside: dict[str, tuple[int, str]], host: HostSide, tree: LaunchTree
) -> None:
    uid, netns = out(inside, "whoami").split()
    assert int(uid) == tree.agent.uid
    host_netns = host.run(["readlink", "/proc/self/ns/net"]).stdout.strip()
    assert netns not in (REAL_HOST_NETNS, host_netns)


def test_the_proxy_variables_name_the_proxy_and_bypass_loopback_only(
    inside: dict[str, tuple[int, str]],
) -> None:
    https, all_proxy, no_proxy = out(inside, "proxy_env").split()
    assert https == all_proxy == "http://127.0.0.1:3128"
    assert no_proxy.split(",") == [
        "localhost", "127.0.0.1", "::1", f"localhost:{EXPOSED_PORT}", f"127.0.0.1:{EXPOSED_PORT}",
    ]  # fmt: skip


# --- what is allowed -----------------------------------------------------------------------


def test_the_exposed_loopback_port_answers_at_the_same_address(
    inside: dict[str, tuple[int, str]],
) -> None:
    assert inside["exposed"] == (0, EXPOSED_SECRET)
    assert inside["exposed_v6"] == (0, EXPOSED_SECRET)  # the listener on [::1] too


def test_an_allowed_domain_works_with_curl_git_and_urllib(
    inside: dict[str, tuple[int, str]], host: HostSide
) -> None:
    assert inside["allowed_curl"] == (0, WORLD_GREETING.rstrip("\n"))
    rc, text = inside["allowed_git"]
    assert rc == 0, text
    assert f"{host.world.repo_head}\trefs/heads/main" in text
    assert inside["allowed_urllib"] == (0, WORLD_GREETING.rstrip("\n"))


# --- what is refused ------------------------------------------------------------------------


def test_a_denied_domain_gets_the_403_message(inside: dict[str, tuple[int, str]]) -> None:
    refused_403(inside, "denied", "denied.test:80: not on the allowlist")
    rc, text = inside["denied_tls"]
    assert rc != 0 and "403" in text  # curl: "CONNECT tunnel failed, response 403"


def test_metadata_is_refused_through_the_proxy_and_unroutable_directly(
    inside: dict[str, tuple[int, str]], host: HostSide
) -> None:
    refused_403(inside, "metadata_proxy", f"{METADATA}:80: an IP address the operator did not")
    refused_403(inside, "metadata_name", f"resolves to {METADATA} (cloud metadata)")
    rc, text = inside["metadata_direct"]
    assert rc == 7 and METADATA_SECRET not in text, text  # couldn't connect
    assert out(inside, "metadata_errno") == "ENETUNREACH"
    routes = out(inside, "routes")
    devices = [line.split()[0] if "\t" in line else line.split()[-1]
               for line in routes.splitlines()[1:] if line.strip()]  # fmt: skip
    assert set(devices) <= {"lo"}, routes
    # The twin: from the launcher's own namespace the metadata service answers.
    twin = host.direct(f"curl -sS --noproxy '*' http://{METADATA}{METADATA_PATH}")
    assert twin.stdout == METADATA_SECRET, twin.stderr


def test_a_second_loopback_service_is_refused(
    inside: dict[str, tuple[int, str]], host: HostSide
) -> None:
    rc, text = inside["hidden_direct"]
    assert rc == 7 and HOST_SECRET not in text, text
    refused_403(inside, "hidden_proxy", "an IP address the operator did not allow")
    twin = host.run(["curl", "-sS", "--noproxy", "*",
                     f"http://127.0.0.1:{HOST_LOOPBACK_PORT}/secret.txt"])  # fmt: skip
    assert twin.stdout == HOST_SECRET


def test_a_name_resolving_to_loopback_is_refused(inside: dict[str, tuple[int, str]]) -> None:
    refused_403(inside, "loopback_name", "resolves to 127.0.0.1 (loopback)")


def test_ipv6_loopback_is_refused(inside: dict[str, tuple[int, str]], host: HostSide) -> None:
    rc, text = inside["v6loopback_direct"]
    assert rc == 7 and V6_SECRET not in text, text
    refused_403(inside, "v6loopback_name", "resolves to ::1 (loopback)")
    refused_403(inside, "v6loopback_proxy", "an IP address the operator did not allow")
    twin = host.run(["curl", "-sS", "--noproxy", "*", f"http://[::1]:{V6_PORT}/v6.txt"])
    assert twin.stdout == V6_SECRET


def test_a_private_address_is_refused(inside: dict[str, tuple[int, str]], host: HostSide) -> None:
    refused_403(inside, "private_name", f"resolves to {WORLD_PRIVATE} (private)")
    refused_403(inside, "private_proxy", "an IP address the operator did not allow")
    assert out(inside, "private_direct") == "ENETUNREACH"
    twin = host.direct(f"curl -sS --noproxy '*' http://{WORLD_PRIVATE}/hello.txt")
    assert twin.stdout == WORLD_GREETING, twin.stderr


def test_the_hosts_abstract_unix_sockets_are_unreachable(
    inside: dict[str, tuple[int, str]], host: HostSide
) -> None:
    rc, text = inside["abstract"]
    assert rc != 0 and ABSTRACT_SECRET not in text, text
    assert "Connection refused" in text
    twin = host.run(["socat", "-T2", "-", f"ABSTRACT-CONNECT:{host.abstract}"])
    assert twin.stdout.strip() == ABSTRACT_SECRET


def test_every_decision_is_in_the_egress_log(
    inside: dict[str, tuple[int, str]], tree: LaunchTree
) -> None:
    entries = egress_log(tree)
    events = [e["event"] for e in entries]
    assert events[0] == "session start" and "session end" in events
    decided = {(e["host"], e["allowed"]) for e in entries if e["event"] == "decision"}
    assert {("allowed.test", True), ("git.allowed.test", True), ("www.allowed.test", True),
            ("denied.test", False), (METADATA, False), ("metadata.allowed.test", False),
            ("0.0.0.0", False)} <= decided  # fmt: skip
    assert {"event": "loopback", "port": EXPOSED_PORT, "connected": True}.items() <= next(
        e for e in entries if e["event"] == "loopback"
    ).items()
    log = tree.base / "state" / "sandbox-setup" / "egress.log"
    assert log.stat().st_mode & 0o777 == 0o600 and log.stat().st_uid == 0


# --- what sandbox-setup --status says of that session ------------------------------------


def sandbox_setup(tree: LaunchTree, *args: str) -> subprocess.CompletedProcess[str]:
    env = launcher_env({"XDG_STATE_HOME": str(tree.base / "state")})
    return subprocess.run(
        [sys.executable, "-m", "sandbox_setup", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_status_names_the_session_and_its_refusals_with_the_allowing_command(
    inside: dict[str, tuple[int, str]], tree: LaunchTree
) -> None:
    """After the real session above (the agent asked the proxy for denied.test, off the
    allowlist, and for nowhere.allowed.test, which does not resolve), ``--status --json``
    names the agent, the workspace, the shim, and that session with each refused
    destination, its typed reason, and the command that allows it (names only)."""
    assert "denied" in inside
    result = sandbox_setup(tree, "--status", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == 1
    assert isinstance(doc["host"]["shim"]["installed"], bool)
    setup = next(s for s in doc["setups"] if s["config"] == str(tree.config_dir / "attempts.toml"))
    assert setup["agent"] == tree.agent.name and setup["mode"] == "sandbox"
    assert setup["workspaces"] == [str(tree.workspace)]
    assert setup["network"]["network"] == "allowlist"
    assert setup["network"]["loopback_ports"] == [EXPOSED_PORT]
    [session] = setup["sessions"]["recent"]
    assert session["agent"] == tree.agent.name and session["workspaces"] == [str(tree.workspace)]
    assert session["exit_code"] == 0 and session["end_check"]["complete"] is True
    refused = {(r["asked_for"]["host"], r["asked_for"]["port"]): r for r in session["refused"]}
    denied = refused[("denied.test", 80)]
    assert denied["rule"] == "not allowlisted" and denied["reason"] == "not on the allowlist"
    assert denied["allow_command"] == "sandbox-setup --headless --allow-domain denied.test:80 --yes"
    assert denied["count"] == 1
    assert refused[("denied.test", 443)]["allow_command"] is not None
    nowhere = refused[("nowhere.allowed.test", 80)]
    assert nowhere["rule"] == "unresolved" and nowhere["reason"] == "did not resolve"
    assert nowhere["allow_command"] is None  # it is allowed: no command to allow it
    # Never a command for an address, nor for a name refused for where it resolves.
    metadata = refused[(METADATA, 80)]
    assert metadata["allow_command"] is None
    assert refused[("metadata.allowed.test", 80)]["allow_command"] is None
    assert ("0.0.0.0", 9) not in refused  # the launcher's own start-up probe
    text = sandbox_setup(tree, "--status").stdout
    assert "the agent asked for denied.test:80: not on the allowlist" in text
    assert "to allow it: sandbox-setup --headless --allow-domain denied.test:80 --yes\n" in text


# --- no process outlives the session --------------------------------------------------------

HOLD = r"""#!/bin/sh
readlink /proc/self/ns/pid > {workspace}/pidns.tmp && mv {workspace}/pidns.tmp {workspace}/pidns
while [ ! -e {workspace}/go ]; do sleep 0.05; done
exit 0
"""


def processes_in_pid_namespace(pidns: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == pidns:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def launcher_processes(config: Path) -> list[int]:
    """The launcher and what it forked (the proxy has the launcher's command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if str(config).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def cmdline(pid: int) -> list[str]:
    """The process's argv; [""] for one that exited meanwhile."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except (FileNotFoundError, ProcessLookupError):
        return [""]


@dataclass
class Session:
    launcher: subprocess.Popen[str]
    config: Path
    pidns: str

    def sandbox_pids(self) -> list[int]:
        return processes_in_pid_namespace(self.pidns)


def start_held_session(host: HostSide, tree: LaunchTree, name: str) -> Session:
    for leftover in ("pidns", "go"):
        (tree.workspace / leftover).unlink(missing_ok=True)
    claude = tree.write_script(HOLD.format(workspace=tree.workspace), name=f"claude-{name}")
    config = tree.write_config(
        claude, network="allowlist", loopback_ports=(EXPOSED_PORT,), name=f"{name}.toml"
    )
    launcher = start_launcher(host, tree, config)
    deadline = time.monotonic() + 60
    while not (tree.workspace / "pidns").exists():
        assert launcher.poll() is None, launcher.communicate()
        assert time.monotonic() < deadline, "the sandbox did not start"
        time.sleep(0.05)
    pidns = (tree.workspace / "pidns").read_text().strip()
    session = Session(launcher, config, pidns)
    # Everything is up: the proxy (forked from the launcher, as the agent) and Claude in
    # the sandbox, with no bridge process inside: the proxy outside holds the sandbox's
    # listeners (127.0.0.1 and ::1, for the proxy and the exposed port).
    inside = session.sandbox_pids()
    assert not [p for p in inside if cmdline(p)[0].endswith("socat")], inside
    (proxy,) = [p for p in launcher_processes(config) if p != launcher.pid]
    assert os.stat(f"/proc/{proxy}").st_uid == tree.agent.uid
    listening = listeners(inside[0])
    assert sorted(listening) == sorted(
        (family, port) for family in (4, 6) for port in (SANDBOX_PROXY_PORT, EXPOSED_PORT)
    ), listening
    held = socket_inodes(proxy)
    assert set(listening.values()) <= held, "a listener inside is not the proxy's"
    return session


def listeners(pid: int) -> dict[tuple[int, int], str]:
    """``{(4 or 6, port): socket inode}`` of the TCP listeners in ``pid``'s network
    namespace (on loopback)."""
    found = {}
    for family, name in ((4, "tcp"), (6, "tcp6")):
        for line in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                found[(family, int(fields[1].rsplit(":", 1)[1], 16))] = fields[9]
    return found


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def assert_nothing_left(session: Session) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = session.sandbox_pids() + launcher_processes(session.config)
        if not left:
            break
        time.sleep(0.05)
    assert not session.sandbox_pids(), "a process of the sandbox outlived the session"
    assert not launcher_processes(session.config), "the proxy or the launcher outlived it"


def sandbox_process(session: Session, name: str) -> int:
    return next(p for p in session.sandbox_pids() if name in " ".join(cmdline(p)))


def normal_session(host: HostSide, tree: LaunchTree) -> None:
    session = start_held_session(host, tree, "normal")
    (tree.workspace / "go").write_text("")
    session.launcher.communicate(timeout=60)
    assert session.launcher.returncode == 0
    assert_nothing_left(session)


def test_nothing_is_left_after_a_normal_exit(host: HostSide, tree: LaunchTree) -> None:
    normal_session(host, tree)


def test_nothing_is_left_when_claude_is_killed(host: HostSide, tree: LaunchTree) -> None:
    session = start_held_session(host, tree, "claude-killed")
    os.kill(sandbox_process(session, "claude-claude-killed"), signal.SIGKILL)
    session.launcher.communicate(timeout=60)
    assert session.launcher.returncode == 128 + signal.SIGKILL
    assert_nothing_left(session)


def test_nothing_is_left_when_bwrap_is_killed(host: HostSide, tree: LaunchTree) -> None:
    session = start_held_session(host, tree, "bwrap-killed")
    (bwrap,) = [p for p in processes_children(session.launcher.pid)
                if cmdline(p)[0].endswith("bwrap")]  # fmt: skip
    os.kill(bwrap, signal.SIGKILL)
    session.launcher.communicate(timeout=60)
    assert_nothing_left(session)


def test_nothing_is_left_when_the_launcher_is_killed(host: HostSide, tree: LaunchTree) -> None:
    session = start_held_session(host, tree, "launcher-killed")
    os.kill(session.launcher.pid, signal.SIGKILL)
    session.launcher.communicate(timeout=60)
    assert_nothing_left(session)
    normal_session(host, tree)  # and the next launch works


def processes_children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


# --- fail closed ------------------------------------------------------------------------------


def test_a_proxy_that_cannot_start_refuses_the_launch(host: HostSide, tree: LaunchTree) -> None:
    # The proxy process exits before it serves (after its privilege drop): Claude must
    # not start, on no network.
    marker = tree.workspace / "ran"
    marker.unlink(missing_ok=True)
    claude = tree.write_script(f"#!/bin/sh\ntouch {marker}\n", name="claude-never")
    config = tree.write_config(claude, network="allowlist", name="never.toml")
    launcher = start_launcher(host, tree, config, seams=("--seam-break-proxy",))
    _, stderr = launcher.communicate(timeout=60)
    assert launcher.returncode == 3, stderr
    # (after the launch notice and the session's notes: the refusal is the last word)
    assert stderr.splitlines()[-1].startswith("sandbox-launch: refused: "), stderr
    assert "egress proxy did not start" in stderr
    assert not marker.exists(), "Claude ran without its proxy"
    assert not launcher_processes(config)


DNS_ATTEMPT = """#!/bin/sh
NO_PROXY= no_proxy= curl -sS --max-time 40 -x http://127.0.0.1:{port} -w '\\n%{{http_code}}' \\
    http://allowed.test/hello.txt
"""


def test_the_launch_environment_cannot_replace_the_proxys_dns(
    host: HostSide, tree: LaunchTree
) -> None:
    # The proxy's resolver is an argument of the launcher, never its environment: with
    # the variable the old test hook read set to the world's map, and no seam, the
    # proxy still asks nt-h's real resolver, which knows no allowed.test.
    claude = tree.write_script(DNS_ATTEMPT.format(port=SANDBOX_PROXY_PORT), name="claude-dns")
    config = tree.write_config(
        claude, network="allowlist", allowed_domains=ALLOWED_PATTERNS, name="dns.toml"
    )
    planted = {"SANDBOX_LAUNCH_TEST_RESOLVE": str(host.world.resolve_map),
               "SANDBOX_LAUNCH_TEST_BREAK_PROXY": "1",
               "SANDBOX_LAUNCH_TEST_CORRUPT_VERIFY": "1"}  # fmt: skip
    launcher = start_launcher(host, tree, config, env=planted, seams=())
    stdout, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, stderr
    # (a name that does not resolve is a bad gateway, 502, not a refusal by the rules)
    assert stdout.rstrip().endswith("502") and "does not resolve" in stdout, stdout
    decision = [e for e in egress_log(tree)
                if e["event"] == "decision" and e["host"] == "allowed.test"][-1]  # fmt: skip
    assert (decision["allowed"], decision["rule"], decision["addresses"]) == (
        False,
        "unresolved",
        [],
    ), decision


def test_a_bad_pattern_in_a_hand_edited_config_refuses_the_launch(
    host: HostSide, tree: LaunchTree
) -> None:
    # The policy is built once bwrap has started (its time overlaps the sandbox's
    # set-up): a pattern it refuses must still refuse the launch, kill that sandbox and
    # leave nothing behind, Claude never started.
    marker = tree.workspace / "ran"
    marker.unlink(missing_ok=True)
    claude = tree.write_script(f"#!/bin/sh\ntouch {marker}\n", name="claude-bad-pattern")
    config = tree.write_config(
        claude, network="allowlist", allowed_domains=["https://evil.example"], name="bad.toml"
    )
    launcher = start_launcher(host, tree, config)
    _, stderr = launcher.communicate(timeout=60)
    assert launcher.returncode == 3, stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("sandbox-launch: refused: launcher config: sandbox.allowed_domains: ")
    assert "'https://evil.example'" in last, stderr
    assert not marker.exists(), "Claude ran with a policy that could not be built"
    assert not launcher_processes(config)
    sandbox = [p for p in Path("/proc").iterdir() if p.name.isdigit()
               and "claude-bad-pattern" in " ".join(cmdline(int(p.name)))]  # fmt: skip
    assert not sandbox, "the sandbox outlived the refusal"


@pytest.mark.parametrize(
    ("network", "line"),
    [
        ("host", "sandbox-launch: network host: the agent shares the host's network: loopback "
                 "services, the cloud metadata address 169.254.169.254 and abstract unix "
                 "sockets are reachable"),
        ("none", "sandbox-launch: network none: no network at all: Claude cannot reach its API"),
    ],
)  # fmt: skip
def test_host_and_none_say_so_at_each_launch(
    host: HostSide, tree: LaunchTree, network: str, line: str
) -> None:
    claude = tree.write_script("#!/bin/sh\nreadlink /proc/self/ns/net\n", name="claude-says")
    config = tree.write_config(claude, network=network, name=f"says-{network}.toml")
    launcher = start_launcher(host, tree, config)
    stdout, stderr = launcher.communicate(timeout=60)
    assert launcher.returncode == 0, stderr
    assert stderr.splitlines().count(line) == 1, stderr
    host_netns = host.run(["readlink", "/proc/self/ns/net"]).stdout.strip()
    assert (stdout.strip() == host_netns) is (network == "host")
