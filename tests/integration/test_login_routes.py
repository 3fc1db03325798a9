"""No way in but the launcher (issue 24, layer 5): the agent account cannot log in over
ssh or schedule a cron/at job, so nothing it starts outlives a session.

- The reproduction, with the real sshd (Debian's ``UsePAM yes``) started by the test on
  a loopback port: a locked account logs in with a key it put in its own
  ``~/.ssh/authorized_keys`` and runs a command (a marker appears) while sshd reads an
  empty drop-in directory; with the drop-in the apply wrote for that agent, the same
  login is refused and no marker appears.
- The apply under ``--root``: the agent's login shell is nologin (a re-apply takes it
  as the setup's own account, not a service's); the drop-in, ``cron.deny`` created and
  ``at.deny`` merged (every other byte kept); the plan says so; ``--undo`` restores
  every byte; the audit reports a removed drop-in or an edited deny file
  (``audit.login.*``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox_setup.policy.login_routes import sshd_dropin
from tests.core_fixtures import host_passwd_digest, make_target_root, run_cli, system_state
from tests.live_accounts import LiveAccount, live_account
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

AGENT = "ac-login-agent"
# Debian 12's sshd_config, its first lines: the drop-in directory comes first.
SSHD_CONFIG = (
    "# This is the sshd server system-wide configuration file.\n"
    "Include /etc/ssh/sshd_config.d/*.conf\n"
    "KbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\n"
)
AT_DENY_BEFORE = b"alias\nbackup\nbin\ndaemon"  # Debian's list, here without a final newline


def prepare(root: Path) -> Path:
    make_target_root(root)
    (root / "etc/ssh/sshd_config.d").mkdir(parents=True)
    (root / "etc/ssh/sshd_config").write_text(SSHD_CONFIG)
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/crontab").write_text("")  # cron is installed; no cron.deny yet
    (root / "etc/at.deny").write_bytes(AT_DENY_BEFORE)
    os.chmod(root / "etc/at.deny", 0o640)
    return root


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    before = host_passwd_digest()
    yield prepare(tmp_path / "root")
    assert host_passwd_digest() == before


def apply(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "--headless", "--root", str(root), "--mode", "user", "--workspace", "/srv/project",
        "--agent-user", AGENT, *extra,
    )  # fmt: skip


def all_ids(root: Path) -> list[str]:
    audit = run_cli("--audit", "--json", "--root", str(root))
    assert audit.returncode in (0, 1), audit.stderr
    return sorted(f["id"] for f in json.loads(audit.stdout)["findings"])


def login_ids(root: Path) -> list[str]:
    audit = run_cli("--audit", "--json", "--root", str(root))
    assert audit.returncode in (0, 1), audit.stderr
    return sorted(f["id"] for f in json.loads(audit.stdout)["findings"] if ".login." in f["id"])


def test_apply_denies_the_agent_logins_and_jobs_and_undo_restores_every_byte(root: Path) -> None:
    before = system_state(root)
    plan = apply(root)
    assert plan.returncode == 0, plan.stderr
    dropin = sshd_dropin(AGENT)
    for shown in (str(dropin), "/etc/cron.deny", "/etc/at.deny", f"DenyUsers {AGENT}"):
        assert shown in plan.stdout + plan.stderr, shown
    assert system_state(root) == before, "the plan writes nothing"

    done = apply(root, "--yes")
    assert done.returncode == 0, done.stderr
    written = root / str(dropin).lstrip("/")
    assert f"\nDenyUsers {AGENT}\n".encode() in written.read_bytes()
    st = written.stat()
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o644)
    assert (root / "etc/cron.deny").read_bytes() == f"{AGENT}\n".encode()
    assert (root / "etc/at.deny").read_bytes() == AT_DENY_BEFORE + f"\n{AGENT}\n".encode()
    assert (root / "etc/at.deny").stat().st_mode & 0o777 == 0o640, "its mode is kept"
    assert login_ids(root) == []
    passwd = (root / "etc/passwd").read_text().splitlines()
    (line,) = [entry for entry in passwd if entry.startswith(f"{AGENT}:")]
    assert line.endswith(":/usr/sbin/nologin"), f"the agent has no login shell: {line}"
    again = apply(root, "--yes")
    assert (again.returncode, "No change" in again.stdout) == (0, True), again.stdout + again.stderr
    # An agent with a login shell (made before agents got nologin) is reported.
    passwd_file = root / "etc/passwd"
    kept = passwd_file.read_bytes()
    passwd_file.write_text(passwd_file.read_text().replace(line, line.replace(
        ":/usr/sbin/nologin", ":/bin/bash")))  # fmt: skip
    assert login_ids(root) == ["audit.login.shell"]
    passwd_file.write_bytes(kept)

    written.unlink()
    (root / "etc/at.deny").write_bytes(AT_DENY_BEFORE)
    assert login_ids(root) == ["audit.login.deny", "audit.login.sshd"]
    again = apply(root, "--yes")
    assert again.returncode == 0, again.stderr
    assert login_ids(root) == []

    while True:  # every apply, newest first
        undone = run_cli("--undo", "--yes", "--root", str(root))
        assert undone.returncode in (0, 1), undone.stdout + undone.stderr
        if system_state(root) == before or "Nothing to undo" in undone.stdout:
            break
    assert system_state(root) == before
    assert (root / "etc/at.deny").read_bytes() == AT_DENY_BEFORE


def test_a_lingering_agent_is_reported(root: Path) -> None:
    """systemd-logind lingering (``loginctl enable-linger``, which ``claude daemon
    install`` suggests) gives the agent a user service manager from boot, outside any
    session: the audit names it."""
    assert apply(root, "--yes").returncode == 0
    assert login_ids(root) == []
    linger = root / "var/lib/systemd/linger" / AGENT
    linger.parent.mkdir(parents=True)
    linger.write_bytes(b"")
    audit = run_cli("--audit", "--json", "--root", str(root))
    found = [f for f in json.loads(audit.stdout)["findings"] if f["id"] == "audit.login.linger"]
    assert len(found) == 1 and AGENT in found[0]["summary"], audit.stdout
    assert found[0]["severity"] == "high" and str(linger) in found[0]["remedy"], found
    linger.unlink()
    assert login_ids(root) == []


def _passwd_line(root: Path) -> str:
    passwd = (root / "etc/passwd").read_text().splitlines()
    (line,) = [entry for entry in passwd if entry.startswith(f"{AGENT}:")]
    return line


def _usermod_shell(root: Path, shell: str) -> None:
    subprocess.run(
        ["usermod", "--prefix", str(root), "--shell", shell, AGENT], check=True, capture_output=True
    )


def test_a_reapply_takes_the_login_shell_of_an_older_agent_and_undo_gives_it_back(
    root: Path,
) -> None:
    """An agent this setup created before agents got nologin (here: the apply's own
    agent, given /bin/bash by usermod as an older version left it) loses its login
    shell on the next apply, which the plan says; undo restores /etc/passwd."""
    done = apply(root, "--yes")
    assert done.returncode == 0, done.stderr
    _usermod_shell(root, "/bin/bash")
    old = {name: (root / "etc" / name).read_bytes() for name in ("passwd", "passwd-", "shadow")}
    assert _passwd_line(root).endswith(":/bin/bash")
    assert login_ids(root) == ["audit.login.shell"]
    assert "audit.drift.set_shell" not in all_ids(root), "one finding, not two"

    plan = apply(root)
    assert plan.returncode == 0, plan.stderr
    assert f"set the shell of user {AGENT} to /usr/sbin/nologin" in plan.stdout, plan.stdout
    assert "/bin/bash" in plan.stdout
    assert (root / "etc/passwd").read_bytes() == old["passwd"], "the plan writes nothing"

    again = apply(root, "--yes")
    assert again.returncode == 0, again.stderr
    assert _passwd_line(root).endswith(":/usr/sbin/nologin"), _passwd_line(root)
    assert login_ids(root) == []
    assert "No change" in apply(root, "--yes").stdout

    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    now = {name: (root / "etc" / name).read_bytes() for name in old}
    assert now == old, "undo puts /etc/passwd (and its backups) back byte for byte"
    assert login_ids(root) == ["audit.login.shell"]


def test_undo_gives_the_shell_back_with_usermod_when_the_accounts_changed_since(
    root: Path,
) -> None:
    """Another account added after the apply: the files cannot go back byte for byte
    (that would remove it), so undo sets the old shell with usermod instead."""
    assert apply(root, "--yes").returncode == 0
    _usermod_shell(root, "/bin/bash")
    assert apply(root, "--yes").returncode == 0
    assert _passwd_line(root).endswith(":/usr/sbin/nologin")
    subprocess.run(
        ["useradd", "--prefix", str(root), "--no-create-home", "ac-j-other"],
        check=True, capture_output=True,
    )  # fmt: skip
    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert f"gave {AGENT} back the shell /bin/bash" in undone.stdout, undone.stdout
    assert _passwd_line(root).endswith(":/bin/bash")
    assert "\nac-j-other:" in (root / "etc/passwd").read_text(), "the other account stays"


def test_an_account_the_setup_did_not_create_keeps_its_shell(root: Path) -> None:
    """A reused account's shell is its owner's: the apply leaves it (no step in the
    plan); the audit names it, since sandbox-launch refuses it, with the owner's fix."""
    (root / "home").mkdir(exist_ok=True)
    subprocess.run(
        ["useradd", "--prefix", str(root), "--create-home", "--user-group",
         "--shell", "/bin/bash", AGENT],
        check=True, capture_output=True,
    )  # fmt: skip
    before = (root / "etc/passwd").read_bytes()
    # The plan says that sandbox-launch refuses it, and how its owner fixes that.
    plan = apply(root, "--reuse-account")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert f"the reused account {AGENT} has the login shell /bin/bash" in plan.stderr
    assert f"usermod --shell /usr/sbin/nologin {AGENT}" in plan.stderr
    done = apply(root, "--reuse-account", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "set the shell" not in done.stdout
    assert _passwd_line(root).endswith(":/bin/bash")
    assert f"{AGENT}:" in before.decode()
    audit = run_cli("--audit", "--json", "--root", str(root))
    shell = [f for f in json.loads(audit.stdout)["findings"] if f["id"] == "audit.login.shell"]
    assert len(shell) == 1 and "sandbox-launch refuses it" in shell[0]["summary"], shell
    assert shell[0]["remedy"].startswith(f"usermod --prefix {root} --shell /usr/sbin/nologin")
    assert "sandbox-setup" not in shell[0]["remedy"], "a re-apply leaves a reused shell"


def test_a_reused_account_its_owner_gave_nologin_stays_the_setups_agent(root: Path) -> None:
    """The fix the launcher and the plan name for a reused account (nologin) does not
    make the next apply or the audit call it a service account: the ledger records it
    as this setup's agent."""
    (root / "home").mkdir(exist_ok=True)
    subprocess.run(
        ["useradd", "--prefix", str(root), "--create-home", "--user-group",
         "--shell", "/bin/bash", AGENT],
        check=True, capture_output=True,
    )  # fmt: skip
    done = apply(root, "--reuse-account", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    subprocess.run(
        ["usermod", "--prefix", str(root), "--shell", "/usr/sbin/nologin", AGENT],
        check=True, capture_output=True,
    )  # fmt: skip
    again = apply(root, "--reuse-account", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "login shell" not in again.stdout + again.stderr
    assert "audit.accounts.service" not in all_ids(root)


def test_an_allow_file_decides_instead_and_the_plan_says_when_it_lists_the_agent(
    root: Path,
) -> None:
    (root / "etc/cron.allow").write_text(f"alice\n{AGENT}\n")
    plan = apply(root)
    assert plan.returncode == 0, plan.stderr
    assert "/etc/cron.allow lists ac-login-agent" in plan.stdout + plan.stderr
    assert "/etc/cron.deny" not in plan.stdout, "with an allow file the deny file is not read"


def test_without_sshd_there_is_no_drop_in(root: Path) -> None:
    for path in (root / "etc/ssh").rglob("*"):
        if path.is_file():
            path.unlink()
    plan = apply(root)
    assert plan.returncode == 0, plan.stderr
    assert "sshd_config.d" not in plan.stdout


# The reproduction: the real sshd on loopback.


@contextmanager
def _removed(path: Path) -> Iterator[None]:
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# sshd needs its privilege-separation directory /run/sshd, which the host's service
# would make: here a private mount namespace gets a /run of its own with it, so the
# host's /run is untouched. `exec` keeps sshd the process the test stops.
_IN_OWN_RUN = (
    "unshare", "--mount", "--propagation", "private", "sh", "-c",
    'mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd && exec /usr/sbin/sshd "$@"',
    "sshd",
)  # fmt: skip


class Sshd:
    """The real sshd, in the foreground on a loopback port, reading the drop-ins of
    ``dropins`` (a directory of a temp root) the way Debian's config reads its own."""

    def __init__(self, work: Path, dropins: Path) -> None:
        self.port = _free_port()
        key = work / "host_ed25519"
        if not key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
            )
        config = work / "sshd_config"
        config.write_text(
            f"Include {dropins}/*.conf\n"
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {key}\n"
            f"PidFile {work}/sshd.pid\nUsePAM yes\nKbdInteractiveAuthentication no\n"
            "PasswordAuthentication no\nPubkeyAuthentication yes\n"
            # The test's homes are under /tmp (world-writable above them).
            "StrictModes no\n"
        )
        check = subprocess.run([*_IN_OWN_RUN, "-t", "-f", str(config)], capture_output=True)
        assert check.returncode == 0, check.stderr
        self.log = work / "sshd.log"
        self.process = subprocess.Popen(
            [*_IN_OWN_RUN, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"),  # noqa: SIM115
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"sshd did not listen: {self.log.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _ssh(port: int, key: Path, user: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-i", str(key), "-p", str(port), "-o", "BatchMode=yes",
         "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10", f"{user}@127.0.0.1", command],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _plant_key(agent: LiveAccount, work: Path) -> Path:
    key = work / "agent_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    ssh = agent.home / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "authorized_keys").write_bytes((work / "agent_key.pub").read_bytes())
    for path in (ssh, ssh / "authorized_keys"):
        os.chown(path, agent.uid, agent.gid)
    return key


def test_the_real_sshd_lets_a_locked_agent_in_without_the_drop_in_and_refuses_it_with(
    root: Path, tmp_path: Path
) -> None:
    for tool in ("ssh", "ssh-keygen"):
        require_tool(tool)
    if not Path("/usr/sbin/sshd").exists():
        pytest.skip("sshd is not installed (Debian's openssh-server; tests/run.sh installs it)")
    work = tmp_path / "sshd"
    work.mkdir()
    dropins = root / "etc/ssh/sshd_config.d"
    # The agent reads its own authorized_keys: its home is where it can reach it (the
    # test's tmp_path is root's 0700).
    homes = Path(tempfile.mkdtemp(prefix="login-routes-", dir="/var/tmp"))
    os.chmod(homes, 0o711)
    home = homes / "agent"
    with live_account(AGENT, home=home) as agent, _removed(homes):
        shadow = subprocess.run(["getent", "shadow", AGENT], capture_output=True, text=True)
        assert shadow.stdout.split(":")[1].startswith("!"), "the account is locked"
        key = _plant_key(agent, work)
        marker = home / "logged-in"

        sshd = Sshd(work, dropins)  # nothing in the drop-in directory yet
        try:
            before = _ssh(sshd.port, key, AGENT, f"id -u >{marker}")
        finally:
            sshd.stop()
        assert before.returncode == 0, before.stderr + sshd.log.read_text()
        assert marker.read_text().strip() == str(agent.uid), "the route is real without it"
        marker.unlink()

        done = apply(root, "--yes")
        assert done.returncode == 0, done.stderr
        assert (root / str(sshd_dropin(AGENT)).lstrip("/")).exists()
        sshd = Sshd(work, dropins)  # a restart reads the drop-in the apply wrote
        try:
            after = _ssh(sshd.port, key, AGENT, f"id -u >{marker}")
        finally:
            sshd.stop()
        assert after.returncode != 0, after.stdout
        assert not marker.exists(), "a denied agent ran nothing"
        assert "not allowed because listed in DenyUsers" in sshd.log.read_text()
