"""The network boundary from inside a real bwrap ``--unshare-net`` sandbox, as `nobody`.

The sandbox gets the proxy's unix socket bound in and nothing else of the network;
:func:`tests.integration.egress_world.bridge_argv` (socat) turns it into ``127.0.0.1:3128``
inside. One sandbox run makes every attempt and prints each result under a marker,
with its own network namespace and uid, so a run where the sandbox never started
cannot pass. Each refusal has a twin run from the host, where the same thing works.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration import egress_world
from tests.integration.egress_world import (
    NOBODY,
    WORLD_GREETING,
    Proxy,
    bridge_argv,
    free_port,
    wait_for_tcp,
)
from tests.tools import require_tool

pytestmark = pytest.mark.integration
world = egress_world.world
egress = egress_world.egress
BRIDGE_PORT = 3128  # inside the sandbox's own namespace: no port of the host's
HOST_SECRET = "served-on-the-real-hosts-loopback"
ABSTRACT_SECRET = "answered-on-a-host-abstract-socket"

# Every attempt, one after the other; "=== NAME rc=N" then its output.
INSIDE = r"""
attempt() { name=$1; shift; out=$("$@" 2>&1); printf '=== %s rc=%s\n%s\n' "$name" "$?" "$out"; }
printf '=== whoami rc=0\n%s %s\n' "$(id -u)" "$(readlink /proc/self/ns/net)"
"$SOCAT" -b 262144 TCP-LISTEN:$PORT,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/egress.sock &
i=0; while ! "$SOCAT" -T1 /dev/null TCP:127.0.0.1:$PORT 2>/dev/null; do
  i=$((i+1)); [ $i -gt 100 ] && break; sleep 0.05; done
C="curl -sS --max-time 8"
attempt allowed $C --cacert "$CA" https://allowed.test/hello.txt
attempt denied $C --cacert "$CA" -w '\n%{http_code}' http://denied.test/hello.txt
attempt metadata_via_proxy $C -w '\n%{http_code}' http://169.254.169.254/latest/meta-data/
# Direct attempts only from a namespace of its own: with the host's network (a broken
# sandbox) they would leave this machine through its default route.
if [ "$(readlink /proc/self/ns/net)" != "$HOST_NETNS" ]; then
attempt metadata_direct $C --noproxy '*' http://169.254.169.254/latest/meta-data/
attempt metadata_errno /usr/bin/python3 -c "$CONNECT_ERRNO" 169.254.169.254 80
fi
attempt host_loopback_direct $C --noproxy '*' http://127.0.0.1:$HOST_PORT/secret.txt
attempt abstract_socket "$SOCAT" -T2 - ABSTRACT-CONNECT:$ABSTRACT
attempt localhost_bridge sh -c \
  "printf 'CONNECT 0.0.0.0:9 HTTP/1.1\r\n\r\n' | $SOCAT -T3 - TCP:localhost:$PORT"
attempt routes cat /proc/net/route /proc/net/ipv6_route
attempt git git -c http.sslCAInfo="$CA" ls-remote https://git.allowed.test/repo.git
kill %1
"""


# What connect() says, by errno name (curl only says "Couldn't connect").
CONNECT_ERRNO = """
import errno, socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    print("connected")
except OSError as exc:
    print(errno.errorcode.get(exc.errno, exc))
"""


@dataclass
class HostDecoys:
    """Things on the real host's side that the sandbox must not reach."""

    loopback_port: int
    abstract_name: str


@pytest.fixture(scope="module")
def decoys() -> Iterator[HostDecoys]:
    """A loopback HTTP service and an abstract unix socket in the host's own namespace."""
    for tool in ("bwrap", "setpriv", "socat", "curl"):
        require_tool(tool)
    served = Path(os.environ.get("TMPDIR", "/tmp"), f"np-decoy-{secrets.token_hex(3)}")
    served.mkdir(mode=0o755)
    (served / "secret.txt").write_text(HOST_SECRET)
    port = free_port(avoid=())
    name = f"np-abstract-{secrets.token_hex(4)}"
    service = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory",
         str(served), str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    abstract = subprocess.Popen(
        ["socat", f"ABSTRACT-LISTEN:{name},fork", f"SYSTEM:echo {ABSTRACT_SECRET}"]
    )
    try:
        wait_for_tcp("127.0.0.1", port)
        yield HostDecoys(port, name)
    finally:
        for process in (service, abstract):
            process.kill()
            process.wait()
        (served / "secret.txt").unlink()
        served.rmdir()


def sandbox_argv(egress: Proxy, decoys: HostDecoys) -> list[str]:
    """As the launcher will: drop to the agent, new namespaces incl. the network, socket in."""
    socat = require_tool("socat")
    return [
        require_tool("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
        "--no-new-privs", "--",
        require_tool("bwrap"), "--unshare-user", "--unshare-pid", "--unshare-ipc",
        "--unshare-net",  # its own namespace: loopback only, no route to anything
        "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
        "--tmpfs", "/tmp", "--tmpfs", "/run",
        "--bind", str(egress.stand_in.socket_path), "/run/egress.sock",  # the one way out
        "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
        "--setenv", "GIT_CONFIG_NOSYSTEM", "1", "--setenv", "SOCAT", socat,
        "--setenv", "PORT", str(BRIDGE_PORT), "--setenv", "CA", str(egress.world.ca),
        "--setenv", "HOST_PORT", str(decoys.loopback_port),
        "--setenv", "ABSTRACT", decoys.abstract_name, "--setenv", "CONNECT_ERRNO", CONNECT_ERRNO,
        "--setenv", "HOST_NETNS", os.readlink("/proc/self/ns/net"),
        *(arg for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
          for arg in ("--setenv", name, f"http://127.0.0.1:{BRIDGE_PORT}")),
        "--", "/bin/sh", "-c", INSIDE,
    ]  # fmt: skip


def parse_attempts(output: str) -> dict[str, tuple[int, str]]:
    attempts = {}
    for block in output.split("=== ")[1:]:
        header, _, body = block.partition("\n")
        name, _, rc = header.partition(" rc=")
        attempts[name] = (int(rc), body.rstrip("\n"))
    return attempts


@pytest.fixture(scope="module")
def inside(egress: Proxy, decoys: HostDecoys) -> dict[str, tuple[int, str]]:
    result = subprocess.run(
        sandbox_argv(egress, decoys), capture_output=True, text=True, timeout=120, check=False
    )
    attempts = parse_attempts(result.stdout)
    assert "whoami" in attempts, f"the sandbox did not run: {result.stderr}"
    return attempts


def test_it_ran_inside_as_the_agent_in_its_own_network_namespace(inside) -> None:
    uid, netns = inside["whoami"][1].split()
    assert int(uid) == NOBODY
    assert netns != os.readlink("/proc/self/ns/net")


def test_an_allowed_domain_works_through_the_bridge(inside) -> None:
    assert inside["allowed"] == (0, WORLD_GREETING.rstrip("\n"))


def test_git_over_https_works_through_the_bridge(inside, egress: Proxy) -> None:
    rc, out = inside["git"]
    assert rc == 0, out
    assert f"{egress.world.repo_head}\trefs/heads/main" in out


def test_a_denied_domain_gets_the_403_message(inside) -> None:
    rc, out = inside["denied"]
    assert rc == 0
    assert out.endswith("\n403")
    assert "sandbox-launch egress proxy: refused denied.test:80: not on the allowlist" in out


def test_metadata_is_refused_through_the_proxy_and_unroutable_directly(inside) -> None:
    rc, out = inside["metadata_via_proxy"]
    assert out.endswith("\n403")
    assert "refused 169.254.169.254:80: an IP address the operator did not allow" in out
    assert "metadata_direct" in inside, "the sandbox shared the host's network namespace"
    rc, out = inside["metadata_direct"]
    assert rc == 7, out  # couldn't connect
    assert inside["metadata_errno"] == (0, "ENETUNREACH")  # no route: only loopback in there
    _, routes = inside["routes"]
    # Every route there is (IPv4 table, then IPv6) goes through lo: no way to any address.
    devices = [line.split()[0] if "\t" in line else line.split()[-1]
               for line in routes.splitlines()[1:] if line.strip()]  # fmt: skip
    assert set(devices) <= {"lo"}, routes


def test_the_hosts_loopback_service_is_unreachable(inside, decoys: HostDecoys) -> None:
    rc, out = inside["host_loopback_direct"]
    assert rc == 7, out
    assert HOST_SECRET not in out
    # its twin: the service answers on the host
    answer = subprocess.run(
        ["curl", "-sS", "--noproxy", "*", f"http://127.0.0.1:{decoys.loopback_port}/secret.txt"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert answer.stdout == HOST_SECRET


def test_the_hosts_abstract_unix_sockets_are_unreachable(inside, decoys: HostDecoys) -> None:
    rc, out = inside["abstract_socket"]
    assert rc != 0
    assert ABSTRACT_SECRET not in out
    assert "Connection refused" in out
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # the twin, on the host
        sock.settimeout(5)
        sock.connect("\0" + decoys.abstract_name)
        assert sock.recv(100).decode().strip() == ABSTRACT_SECRET


def test_tcp_localhost_reaches_the_bridge_as_claudes_inner_sandbox_dials_it(inside) -> None:
    # sandbox-runtime's host-side bridge for Claude's inner sandbox is
    # `socat UNIX-LISTEN:... TCP:localhost:<httpProxyPort>`: it must reach ours.
    _, out = inside["localhost_bridge"]
    assert out.startswith("HTTP/1.1 403 Forbidden"), out
    assert "refused 0.0.0.0:9: unspecified address" in out


def test_bridge_argv_is_what_the_sandbox_ran() -> None:
    # The script above spells the bridge out; it must stay the launcher's.
    argv = bridge_argv("$SOCAT", BRIDGE_PORT, "/run/egress.sock")
    expected = '"' + argv[0] + '" ' + " ".join(argv[1:]).replace(str(BRIDGE_PORT), "$PORT")
    assert expected in INSIDE


# Claude Code's inner (Bash) sandbox is sandbox-runtime: run the real one inside ours,
# configured as sandbox-setup will write Claude's managed settings
# (sandbox.network.httpProxyPort = socksProxyPort = the bridge's port).
INNER = r"""
printf '=== inner_env rc=0\n%s %s\n' "$CLAUDE_CODE_HOST_HTTP_PROXY_PORT" \
  "$(readlink /proc/self/ns/net)"
attempt() { name=$1; shift; out=$("$@" 2>&1); printf '=== %s rc=%s\n%s\n' "$name" "$?" "$out"; }
C="curl -sS --max-time 8 --cacert $CA"
attempt inner_connect $C https://allowed.test/hello.txt
attempt inner_socks $C -x socks5h://localhost:1080 https://www.allowed.test/hello.txt
attempt inner_denied $C -w '\n%{http_code}' http://denied.test/hello.txt
attempt inner_metadata $C -w '\n%{http_code}' http://metadata.allowed.test/
"""
OUTER_FOR_SRT = r"""
"$SOCAT" -b 262144 TCP-LISTEN:$PORT,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/egress.sock &
i=0; while ! "$SOCAT" -T1 /dev/null TCP:127.0.0.1:$PORT 2>/dev/null; do
  i=$((i+1)); [ $i -gt 100 ] && break; sleep 0.05; done
printf '=== outer_netns rc=0\n%s\n' "$(readlink /proc/self/ns/net)"
"$SRT" -s "$SETTINGS" -c "$INNER"
kill %1
"""


def test_claudes_sandbox_runtime_inside_goes_through_our_proxy(
    egress: Proxy, decoys: HostDecoys
) -> None:
    srt = require_tool("srt")
    # srt's own domain list is deliberately narrower than ours: with both proxy ports
    # external it starts no proxy of its own, so only our policy decides.
    settings = egress.world.base / "srt-settings.json"
    settings.write_text(json.dumps({
        "network": {"allowedDomains": ["allowed.test"], "deniedDomains": [],
                    "httpProxyPort": BRIDGE_PORT, "socksProxyPort": BRIDGE_PORT},
        "filesystem": {"denyRead": [], "allowWrite": ["/tmp"], "denyWrite": []},
    }))  # fmt: skip
    settings.chmod(0o644)
    argv = sandbox_argv(egress, decoys)
    script_at = argv.index("-c") + 1
    argv[script_at] = OUTER_FOR_SRT
    bwrap_end = len(argv) - 1 - argv[::-1].index("--")  # bwrap's own "--"
    argv[bwrap_end:bwrap_end] = [
        "--setenv", "SRT", srt, "--setenv", "SETTINGS", str(settings), "--setenv", "INNER", INNER,
    ]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    attempts = parse_attempts(result.stdout)
    assert "inner_env" in attempts, f"srt's sandbox did not run: {result.stdout}{result.stderr}"
    host_port, inner_netns = attempts["inner_env"][1].split()
    assert host_port == str(BRIDGE_PORT)  # srt bridged to our port, not to a proxy of its own
    assert inner_netns != attempts["outer_netns"][1]  # a namespace of its own, nested
    assert attempts["inner_connect"] == (0, WORLD_GREETING.rstrip("\n"))
    assert attempts["inner_socks"] == (0, WORLD_GREETING.rstrip("\n"))
    _, out = attempts["inner_denied"]
    assert out.endswith("\n403")
    assert "sandbox-launch egress proxy: refused denied.test:80: not on the allowlist" in out
    _, out = attempts["inner_metadata"]
    assert out.endswith("\n403")
    assert "resolves to 169.254.169.254 (cloud metadata)" in out
    decided = {(e["protocol"], e["host"]) for e in egress.stand_in.decisions()
               if e.get("event") == "decision"}  # fmt: skip
    assert {("connect", "allowed.test"), ("socks5", "www.allowed.test")} <= decided
