"""Real Podman containers for the tests, from a root filesystem the test builds.

No image registry: the container's root is a skeleton directory (the usual top-level
directories, ``bin``/``lib``/... as links into ``usr``) run as ``--rootfs DIR:O``
(an overlay: what the container writes goes to a throw-away upper layer) with a copy
of the host's /etc in it (``useradd`` inside writes the copy), the host's ``/usr``
read-only with a tmpfs on ``/usr/local``, and the Claude Code prefixes and the project's
install read-only. Each :meth:`PodmanContainer.run` is
a new container (``--rm``), with no network (``--network none``).

Rootless (``rootless=`` a live account, which useradd gives subordinate ids): the root
is the account's. What root owns on the host is nobody's (the overflow uid) inside a
rootless container, and the trust rule rightly refuses a bwrap, a Python or a Claude
that nobody owns. So a rootless container gets no host directory at all: its root
holds a copy of the host's /usr (less the large trees nothing here runs:
:data:`USR_SKIPPED`) and of every path it would have bound, all owned by the account
(the container's root), as an image would have them. Rootless Podman starts with its
default rlimits here.

Rootful Podman on a host where root lacks ``CAP_SYS_RESOURCE`` (this CI machine is
one: containers started by a sandboxing runtime often are) cannot start a container
with its default rlimits (``error setting rlimit type 7``: RLIMIT_NOFILE above the
hard limit); :func:`ulimit_options` finds that out once, by trying, and then adds
``--ulimit nofile=20000:20000 --ulimit nproc=32768:32768`` (lowered to the host's hard
limits where those are lower).

Every container starts with a runtime the tests name, runc (:func:`podman_argv`:
``podman --runtime /usr/sbin/runc``), never the one Podman prefers: Debian installs crun
with ``podman`` alone, Podman then picks crun, and crun cannot start a container on a
host such as this one ("crun: cgroups in hybrid mode not supported" under cgroup v1,
"setrlimit `RLIMIT_NOFILE`: Operation not permitted"). With runc named the suite
passes where crun is installed beside it (tests/run.sh installs both).
"""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.integration.containers import Result, base_env
from tests.live_accounts import LiveAccount
from tests.tools import NPM_PREFIX, require_tool

CAP_SYS_RESOURCE = 24
UNMASK = ("--security-opt", "unmask=/proc/*")
RLIMIT_ERROR = "error setting rlimit"
NOFILE, NPROC = 20000, 32768
SKELETON_DIRS = ("usr", "etc", "proc", "sys", "dev", "tmp", "run", "var/tmp", "root", "home", "srv")
SKELETON_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}


# Trees of /usr that nothing a test runs in a container uses (the rootless copy skips
# them: together some 3 GB here). /usr/local is a tmpfs in every container.
USR_SKIPPED = (
    "usr/local", "usr/lib/google-cloud-sdk", "usr/lib/jvm", "usr/lib/llvm-14",
    "usr/lib/gcc", "usr/lib/postgresql", "usr/lib/debug", "usr/share/doc", "usr/share/man",
)  # fmt: skip


def copy_owned(rootfs: Path, path: str, owner: LiveAccount, skip: Sequence[str] = ()) -> None:
    """Copy the host's ``path`` to the same place under ``rootfs``, owned by ``owner``
    (tar writes the owner into the stream; root extracting it keeps it). Idempotent."""
    relative = path.strip("/")
    if (rootfs / relative).exists() and (rootfs / relative).stat().st_uid == owner.uid:
        return
    (rootfs / relative).parent.mkdir(parents=True, exist_ok=True)
    excludes = [f"--exclude=./{s}" for s in skip]
    pack = subprocess.Popen(
        ["tar", "-C", "/", "-c", "--numeric-owner", f"--owner={owner.uid}",
         f"--group={owner.gid}", *excludes, f"./{relative}"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    unpack = subprocess.run(
        ["tar", "-C", str(rootfs), "-x", "--numeric-owner", "--same-owner", "-p"],
        stdin=pack.stdout,
        check=False,
        capture_output=True,
    )
    assert pack.stdout is not None
    pack.stdout.close()
    # (tar's own exit may be 1 for a file other tests change while it is read)
    if pack.wait() > 1 or unpack.returncode > 1:
        raise RuntimeError(f"copying {path} into {rootfs} failed: {unpack.stderr!r}")
    for directory in (rootfs / relative).parents:
        if directory == rootfs:
            break
        os.chown(directory, owner.uid, owner.gid)


def build_rootfs(base: Path, owner: LiveAccount | None = None) -> Path:
    """The skeleton root (0755, under ``base``) with a copy of the host's /etc (taken
    once: an overlay over the live /etc would break when other tests add accounts to
    it meanwhile); /usr comes in as a volume. For a rootless container (``owner``) all
    of it is the owner's: what root owns on the host is nobody's inside, which no one
    may write."""
    final = base / ("rootfs" if owner is None else f"rootfs-{owner.name}")
    if final.is_dir():
        return final
    rootfs = base / f"{final.name}.building"
    shutil.rmtree(rootfs, ignore_errors=True)
    rootfs.mkdir(mode=0o755, parents=True)
    for name in SKELETON_DIRS:
        (rootfs / name).mkdir(mode=0o755, parents=True, exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    (rootfs / "var/tmp").chmod(0o1777)
    for name, target in SKELETON_LINKS.items():
        (rootfs / name).symlink_to(target)
    (rootfs / "etc").rmdir()
    # (not checked: a file other tests add or remove meanwhile may vanish mid-copy)
    subprocess.run(["cp", "-a", "/etc", str(rootfs / "etc")], check=False)
    if not (rootfs / "etc/mtab").is_symlink():
        (rootfs / "etc/mtab").symlink_to("../proc/self/mounts")
    if owner is not None:
        subprocess.run(["chown", "-R", "-h", f"{owner.uid}:{owner.gid}", str(rootfs)], check=True)
        (rootfs / "usr").rmdir()
        copy_owned(rootfs, "/usr", owner, USR_SKIPPED)
        (rootfs / "usr/local").mkdir(mode=0o755, exist_ok=True)
        os.chown(rootfs / "usr/local", owner.uid, owner.gid)
    rootfs.rename(final)
    return final


OCI_RUNTIME = "runc"


def podman_argv(podman: str) -> list[str]:
    """``podman --runtime RUNC``: the OCI runtime every test container starts with,
    named by its path (Podman's own choice would be crun wherever crun is installed)."""
    return [podman, "--runtime", require_tool(OCI_RUNTIME)]


def as_account(account: LiveAccount | None) -> list[str]:
    """The argv prefix that runs podman as ``account`` (rootless), or nothing."""
    if account is None:
        return []
    return [
        "setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--init-groups", "--"
    ]  # fmt: skip


def account_env(account: LiveAccount | None, conf: str | None = None) -> dict[str, str]:
    """Podman's environment; ``conf``: a ``containers.conf`` of the test's own
    (``CONTAINERS_CONF``), else the host's."""
    extra = {} if conf is None else {"CONTAINERS_CONF": conf}
    if account is None:
        return base_env() | extra
    return (
        base_env(home=str(account.home)) | {"USER": account.name, "LOGNAME": account.name} | extra
    )


def root_has_cap(cap: int) -> bool:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> cap & 1)
    return False


@dataclass(frozen=True)
class Ulimits:
    """What starting a rootful container needs here, and why (for the test's output)."""

    options: tuple[str, ...]
    reason: str


def _hard(which: int) -> int:
    hard = resource.getrlimit(which)[1]
    return hard if hard != resource.RLIM_INFINITY else 1 << 20


@cache
def ulimit_options(
    podman: str, rootfs: str, account: LiveAccount | None = None, conf: str | None = None
) -> Ulimits:
    """Try a container with Podman's default rlimits; where that fails on RLIMIT_*,
    the host's own hard limits (which root, without CAP_SYS_RESOURCE, cannot raise)."""
    plain = subprocess.run(
        [*as_account(account), *podman_argv(podman), "run", "--rm", "--network", "none",
         "-v", "/usr:/usr:ro", "--rootfs", f"{rootfs}:O", "/usr/bin/true"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        env=account_env(account, conf),
        cwd="/",
    )  # fmt: skip
    if plain.returncode == 0:
        return Ulimits((), "Podman's default rlimits work here")
    if RLIMIT_ERROR not in plain.stderr:
        raise RuntimeError(f"podman cannot start a container here: {plain.stderr.strip()}")
    # The values, lowered to the host's hard limits where those are lower.
    nofile = min(NOFILE, _hard(resource.RLIMIT_NOFILE))
    nproc = min(NPROC, _hard(resource.RLIMIT_NPROC))
    cap = "lacks" if not root_has_cap(CAP_SYS_RESOURCE) else "has"
    who = "root" if account is None else account.name
    return Ulimits(
        ("--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"),
        f"{who}: root {cap} CAP_SYS_RESOURCE; Podman's default rlimits fail "
        f"({plain.stderr.strip().splitlines()[-1]}), so --ulimit nofile={nofile}:{nofile} "
        f"--ulimit nproc={nproc}:{nproc} is added",
    )


@dataclass
class PodmanContainer:
    """A rootful Podman container as an operator runs one (default capabilities and
    masks unless ``options`` say otherwise)."""

    workdir: Path
    options: tuple[str, ...] = ()
    name: str = "podman"
    readonly: tuple[str, ...] = ()  # host paths bound read-only at the same place
    rootless: LiveAccount | None = None  # run podman as this account (subordinate ids)
    containers_conf: str | None = None  # CONTAINERS_CONF for podman, else the host's

    def with_options(self, *options: str) -> PodmanContainer:
        return dataclasses.replace(self, options=(*self.options, *options))

    def argv(self, inner: Sequence[str], env: Mapping[str, str]) -> list[str]:
        podman = require_tool("podman")
        rootfs = build_rootfs(self.workdir, self.rootless)
        ulimits = ulimit_options(podman, str(rootfs), self.rootless, self.containers_conf)
        # /usr read-only (never an overlay of a tree other tests may install into
        # meanwhile); /usr/local, where an apply installs its copy of Claude, a tmpfs
        # of the container's root.
        volumes = ["--tmpfs", "/usr/local:mode=0755"]
        # (rootless: only the Claude Code the tests run, copied; rootful: both, bound)
        claude = NPM_PREFIX if self.rootless is not None else NPM_PREFIX.parent
        for path in (str(claude), *self.readonly):
            if not Path(path).exists():
                continue
            if self.rootless is not None:
                copy_owned(rootfs, path, self.rootless)  # the account's, as in an image
            else:
                volumes += ["-v", f"{path}:{path}:ro"]
        if self.rootless is None:
            volumes = ["-v", "/usr:/usr:ro", *volumes]
        envs = [f"--env={key}={value}" for key, value in env.items()]
        return [
            *as_account(self.rootless), *podman_argv(podman), "run", "--rm", "--network", "none",
            *ulimits.options, *self.options, *volumes, *envs, "--workdir", "/",
            "--rootfs", f"{rootfs}:O", *inner,
        ]  # fmt: skip

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 300
    ) -> Result:
        proc = subprocess.run(
            self.argv(argv, env if env is not None else base_env(home="/root")),
            env=account_env(self.rootless, self.containers_conf),
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)
