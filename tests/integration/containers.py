"""A small harness that runs commands in real, throw-away sandboxes on this kernel.

Places a test can run a command (each is one :class:`Place`, ``place.run(argv)``):

- :class:`HostPlace`: the host as it is.
- :class:`RuncContainer`: a runc container built from a temporary bundle whose
  rootfs is a read-only bind of the host's ``/`` (so installed tools and the
  project run inside), with Docker-like defaults that a :class:`ContainerConfig`
  varies: user namespace or not, masked/read-only /proc paths, capabilities, a
  seccomp profile. The bind is made in a private mount namespace
  (``unshare -m --propagation private``), so the host's mount table never changes.
- :class:`RootBwrap`: inside an outer bubblewrap started by root.

:func:`tests.installed.install_project` builds a venv of Debian's ``/usr/bin/python3`` under a
0755 directory outside ``/root`` with the project copied in, because a
user-namespaced container cannot read ``/root`` (where ``.venv`` lives).

:func:`sectioned_script` and :func:`parse_sections` run several commands in one
place and split their output back apart, so a scenario costs one container start.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[2]

# fmt: off
# Docker's default capability set (moby's oci/caps/defaults.go).
DOCKER_CAPS = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
)
# Docker's default maskedPaths and readonlyPaths (moby's oci/defaults.go).
DOCKER_MASKED_PATHS = (
    "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap",
)
DOCKER_READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
# fmt: on
CLONE_NEWUSER = 0x10000000
PR_SET_SECCOMP = 22
EPERM = 1
ENOSYS = 38
# Host uids the container's 0..65535 map to when it has a user namespace.
USERNS_HOST_BASE = 100000
USERNS_SIZE = 65536
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Result:
    """What a command did in a place."""

    returncode: int
    stdout: str
    stderr: str


class Place(Protocol):
    """Somewhere a command runs: the host, a container, an outer sandbox."""

    name: str

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Result: ...


def _run(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> Result:
    # No stdin, ever: the harness runs in CI without a terminal.
    proc = subprocess.run(
        list(argv),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def base_env(home: str = "/tmp", extra_path: Sequence[str] = ()) -> dict[str, str]:
    """A clean environment for a command in a place (no host variables leak in)."""
    return {
        "PATH": ":".join([*extra_path, DEFAULT_PATH]),
        "HOME": home,
        "LANG": "C.UTF-8",
    }


@dataclass
class HostPlace:
    """The host as it is: the command runs directly."""

    name: str = "host"

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Result:
        return _run(argv, env if env is not None else base_env(), timeout)


@dataclass
class RootBwrap:
    """Inside an outer bubblewrap started by root (like a sandbox launched as root).

    bwrap puts read-only covers over /proc/sys, /proc/sysrq-trigger, /proc/irq and
    /proc/bus when its caller could write them, which is the case for root.
    """

    bwrap: str = "/usr/bin/bwrap"
    name: str = "root-bwrap"

    def argv(self, inner: Sequence[str]) -> list[str]:
        # --die-with-parent: a timed-out run takes the whole sandbox with it
        outer = "--unshare-user --unshare-pid --die-with-parent --ro-bind / / --dev /dev"
        return [self.bwrap, *outer.split(), "--proc", "/proc", "--tmpfs", "/tmp", "--", *inner]

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Result:
        return _run(self.argv(argv), env if env is not None else base_env(), timeout)


@dataclass(frozen=True)
class ContainerConfig:
    """How a runc container differs from Docker's defaults.

    The defaults are Docker's: a user namespace is on (as with userns-remap),
    the masked and read-only /proc paths, the 14 default capabilities, no
    seccomp profile (the tests pass one when a scenario needs it).
    """

    userns: bool = True
    masked_paths: tuple[str, ...] = DOCKER_MASKED_PATHS
    readonly_paths: tuple[str, ...] = DOCKER_READONLY_PATHS
    capabilities: tuple[str, ...] = DOCKER_CAPS
    seccomp: Mapping[str, Any] | None = None
    no_new_privileges: bool = False
    uid: int = 0
    gid: int = 0
    # (host path, path inside, writable): bind mounts over the read-only rootfs,
    # e.g. a workspace the test inspects afterwards. The inside path must exist
    # in the host's / (the same path is simplest) or lie under /tmp.
    binds: tuple[tuple[str, str, bool], ...] = ()

    def unmasked(self) -> ContainerConfig:
        """The same container with the /proc masks removed (the unmask fix)."""
        return dataclasses.replace(self, masked_paths=(), readonly_paths=())


def seccomp_blocking_userns() -> dict[str, Any]:
    """A seccomp profile: allow all, but no new user namespaces.

    ``unshare`` and ``clone`` carrying CLONE_NEWUSER fail with EPERM. ``clone3``
    passes its flags in memory, where seccomp cannot look, so it fails with
    ENOSYS as in Docker's profile; glibc then falls back to ``clone``.
    """
    newuser = {
        "index": 0,
        "value": CLONE_NEWUSER,
        "valueTwo": CLONE_NEWUSER,
        "op": "SCMP_CMP_MASKED_EQ",
    }
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {
                "names": ["unshare", "clone"],
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": EPERM,
                "args": [newuser],
            },
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
        ],
    }


def seccomp_blocking_filters() -> dict[str, Any]:
    """A seccomp profile: allow all, but no new seccomp filters.

    ``seccomp(2)`` and ``prctl(PR_SET_SECCOMP, ...)`` fail with EPERM, so a
    process inside cannot install a filter of its own (as Claude's sandbox does
    with apply-seccomp); everything else, user namespaces included, works.
    """
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {"names": ["seccomp"], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM},
            {
                "names": ["prctl"],
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": EPERM,
                "args": [{"index": 0, "value": PR_SET_SECCOMP, "valueTwo": 0, "op": "SCMP_CMP_EQ"}],
            },
        ],
    }


_NOSUID_NOEXEC_NODEV = ("nosuid", "noexec", "nodev")


def _mount(destination: str, fstype: str, source: str, *options: str) -> dict[str, Any]:
    return {"destination": destination, "type": fstype, "source": source, "options": [*options]}


def oci_spec(config: ContainerConfig, argv: Sequence[str], env: Mapping[str, str]) -> dict:
    """The OCI runtime spec (config.json) for one container run."""
    caps = list(config.capabilities)
    devpts_options = ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]
    if not config.userns:
        devpts_options.append("gid=5")  # the tty group exists only unmapped
    # The cgroup mount of `runc spec` fails on this cgroup v1 hybrid host
    # ("stat /sys/fs/cgroup/cpu/<id>: no such file"), so there is none.
    mounts = [
        _mount("/proc", "proc", "proc"),
        _mount("/dev", "tmpfs", "tmpfs", "nosuid", "strictatime", "mode=755", "size=65536k"),
        _mount("/dev/pts", "devpts", "devpts", *devpts_options),
        _mount("/dev/shm", "tmpfs", "shm", *_NOSUID_NOEXEC_NODEV, "mode=1777", "size=65536k"),
        _mount("/dev/mqueue", "mqueue", "mqueue", *_NOSUID_NOEXEC_NODEV),
        _mount("/sys", "sysfs", "sysfs", *_NOSUID_NOEXEC_NODEV, "ro"),
        _mount("/tmp", "tmpfs", "tmpfs", "nosuid", "nodev", "mode=1777", "size=262144k"),
        *(
            _mount(inside, "bind", host, "rbind", "rw" if writable else "ro")
            for host, inside, writable in config.binds
        ),
    ]
    namespaces = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")]
    linux: dict[str, Any] = {
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
        "namespaces": namespaces,
        "maskedPaths": list(config.masked_paths),
        "readonlyPaths": list(config.readonly_paths),
    }
    if config.userns:
        namespaces.append({"type": "user"})
        mapping = [{"containerID": 0, "hostID": USERNS_HOST_BASE, "size": USERNS_SIZE}]
        linux["uidMappings"] = mapping
        linux["gidMappings"] = mapping
    if config.seccomp is not None:
        linux["seccomp"] = dict(config.seccomp)
    return {
        "ociVersion": "1.0.2-dev",
        "process": {
            "terminal": False,
            "user": {"uid": config.uid, "gid": config.gid},
            "args": list(argv),
            "env": [f"{k}={v}" for k, v in env.items()],
            "cwd": "/",
            "capabilities": {
                "bounding": caps,
                "effective": caps,
                "permitted": caps,
                "inheritable": caps,
            },
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
            "noNewPrivileges": config.no_new_privileges,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "sandbox-setup-it",
        "mounts": mounts,
        "linux": linux,
    }


# Runs as root in a private mount namespace: binds the host's / read-only as the
# rootfs, then runs the container. The namespace dies with it, so no mount leaks.
# Every file system mounted below / (a separate /home, an overlay on /etc or /root)
# is made read-only too: a remount of the top one does not reach them. /proc, /sys,
# /dev and /run are the container's own (the spec mounts over them).
_MOUNT_AND_RUN = (
    'mount --rbind / "$1" && mount -o remount,bind,ro "$1" && '
    'findmnt -rn -o TARGET -R "$1" | while read -r m; do case "$m" in '
    '"$1"|"$1"/proc|"$1"/proc/*|"$1"/sys|"$1"/sys/*|"$1"/dev|"$1"/dev/*|"$1"/run|"$1"/run/*) ;; '
    '*) mount -o remount,bind,ro "$m" 2>/dev/null || :;; esac; done && '
    'exec "$2" --root "$3" run --bundle "$4" "$5"'
)


@dataclass
class RuncContainer:
    """A runc container from a temporary bundle; each :meth:`run` is a new container."""

    config: ContainerConfig
    workdir: Path
    name: str = "runc"
    runc: str = "/usr/sbin/runc"
    unshare: str = "/usr/bin/unshare"

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Result:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # 0755: a user-namespaced runc init (mapped root) must traverse to rootfs.
        bundle = Path(tempfile.mkdtemp(prefix="bundle-", dir=self.workdir))
        bundle.chmod(0o755)
        state = bundle / "state"
        state.mkdir(mode=0o700)
        rootfs = bundle / "rootfs"
        rootfs.mkdir(mode=0o755)
        spec = oci_spec(self.config, argv, env if env is not None else base_env())
        (bundle / "config.json").write_text(json.dumps(spec, indent=1))
        container_id = f"sst-{uuid.uuid4().hex[:12]}"
        outer = [
            self.unshare,
            "-m",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-c",
            _MOUNT_AND_RUN,
            "sh",
            str(rootfs),
            self.runc,
            str(state),
            str(bundle),
            container_id,
        ]
        proc = subprocess.Popen(
            outer,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=base_env(),
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Kill the container before runc: its processes hold our pipes, and
            # a killed `runc run` would leave them running.
            self._delete(state, container_id)
            proc.kill()
            proc.communicate()
            raise
        finally:
            self._delete(state, container_id)
            shutil.rmtree(bundle, ignore_errors=True)
        return Result(proc.returncode, stdout, stderr)

    def _delete(self, state: Path, container_id: str) -> None:
        subprocess.run(
            [self.runc, "--root", str(state), "delete", "-f", container_id],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )


def make_workdir(prefix: str = "sandbox-setup-it-") -> Path:
    """A 0755 temp dir under /var/tmp (not a tmpfs any place mounts, not under /root)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    path.chmod(0o755)
    return path


_BEGIN = "@@sst-begin "
_END = "@@sst-end "


@dataclass(frozen=True)
class Section:
    """One command's combined output and exit status, from :func:`parse_sections`."""

    returncode: int
    output: str


def sectioned_script(commands: Mapping[str, str], scratch: str = "/tmp") -> str:
    """A sh script that runs each named command and marks where its output is.

    Output (stdout and stderr together) goes through a scratch file, so each
    command's text stays whole. Commands may keep files in the scratch
    directory ``$T`` (removed at the end). Names must be plain words.
    """
    lines = [f'T=$(mktemp -d "{scratch}/sst.XXXXXX") || exit 99']
    for name, command in commands.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ValueError(f"bad section name {name!r}")
        lines.append(
            f"printf '%s\\n' {shlex.quote(_BEGIN + name)}; "
            f'( {command} ) >"$T/out" 2>&1 </dev/null; rc=$?; cat "$T/out"; '
            f"printf '\\n%s %s\\n' {shlex.quote(_END + name)} \"$rc\""
        )
    lines.append('rm -rf "$T"')
    return "\n".join(lines) + "\n"


def parse_sections(stdout: str) -> dict[str, Section]:
    """The sections :func:`sectioned_script` printed, by name."""
    pattern = re.compile(
        re.escape(_BEGIN) + r"(\S+)\n(.*?)\n" + re.escape(_END) + r"\1 (-?\d+)\n", re.S
    )
    return {m[1]: Section(int(m[3]), m[2]) for m in pattern.finditer(stdout)}


def mount_table() -> list[str]:
    """The host's mount table (this process's namespace), for before/after checks."""
    return Path("/proc/self/mountinfo").read_text().splitlines()


def proc_overmounts(mountinfo: str) -> list[str]:
    """Mount points strictly below /proc in a mountinfo text (masks and covers)."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5 or not fields[4].startswith("/proc/"):
            continue
        # binfmt_misc sits on an empty directory made for it: it hides nothing,
        # so the kernel does not count it against a fresh /proc.
        if "-" in fields and fields[fields.index("-") + 1 :][:1] == ["binfmt_misc"]:
            continue
        points.append(fields[4])
    return points
