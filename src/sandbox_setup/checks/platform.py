"""Which container (if any) we run in, judged from the markers it leaves.

The answer picks the remedy to paste: each runtime unmasks /proc, allows user
namespaces or drops its seccomp profile with its own flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.mounts import proc_covers

PLATFORMS = ("docker", "podman", "lxc", "kubernetes", "wsl", "gvisor", "nspawn", "bwrap", "oci")


@dataclass(frozen=True)
class Platform:
    name: str  # one of PLATFORMS or "none"
    evidence: tuple[str, ...]


def detect_platform(facts: HostFacts) -> Platform:
    """The most specific runtime the markers name (kubernetes over docker, ...)."""
    m = facts.markers
    cgroup = m.get("/proc/1/cgroup", "")
    environ = m.get("/proc/1/environ", "")
    evidence: dict[str, list[str]] = {}

    def saw(name: str, why: str) -> None:
        evidence.setdefault(name, []).append(why)

    if "KUBERNETES_SERVICE_HOST" in facts.env:
        saw("kubernetes", "KUBERNETES_SERVICE_HOST is set")
    if "/var/run/secrets/kubernetes.io/serviceaccount/namespace" in m:
        saw("kubernetes", "a service account is mounted")
    if "kubepods" in cgroup:
        saw("kubernetes", "/proc/1/cgroup names kubepods")
    if "/run/.containerenv" in m:
        saw("podman", "/run/.containerenv exists")
    if "libpod" in cgroup or "container=podman" in environ:
        saw("podman", "libpod in /proc/1/cgroup or container=podman")
    if "/.dockerenv" in m:
        saw("docker", "/.dockerenv exists")
    if "/docker/" in cgroup or "docker-" in cgroup:
        saw("docker", "/proc/1/cgroup names docker")
    run_container = m.get("/run/systemd/container", "").strip()
    env_container = facts.env.get("container", "")
    for value, where in ((run_container, "/run/systemd/container"), (env_container, "$container")):
        if value in ("lxc", "lxc-libvirt"):
            saw("lxc", f"{where} says {value}")
        elif value == "systemd-nspawn":
            saw("nspawn", f"{where} says systemd-nspawn")
        elif value in ("docker", "podman"):
            saw(value, f"{where} says {value}")
    if "container=lxc" in environ or "/lxc/" in cgroup or "/dev/lxd/sock" in m:
        saw("lxc", "lxc in /proc/1/environ, /proc/1/cgroup or /dev/lxd/sock")
    if "container=systemd-nspawn" in environ:
        saw("nspawn", "container=systemd-nspawn in /proc/1/environ")
    version = m.get("/proc/version", "")
    if "microsoft" in version.lower():
        saw("wsl", "/proc/version names Microsoft")
    if "Sun Jan 10 15:06:54 PST 2016" in version:
        saw("gvisor", "/proc/version is gVisor's fixed one")
    if m.get("/proc/1/comm", "").strip() == "bwrap":
        saw("bwrap", "pid 1 of this pid namespace is bwrap")
    if not evidence and any(c.path == "/proc/kcore" for c in proc_covers(facts.mounts)):
        saw("oci", "/proc/kcore is masked (an OCI runtime's default maskedPaths)")
    for name in (
        "kubernetes",
        "podman",
        "lxc",
        "nspawn",
        "gvisor",
        "wsl",
        "bwrap",
        "docker",
        "oci",
    ):
        if name in evidence:
            return Platform(name, tuple(evidence[name]))
    return Platform("none", ())


# How each runtime lets a child user namespace mount its own /proc.
UNMASK_REMEDY = {
    "podman": "podman run --security-opt unmask=/proc/* ...",
    "docker": "docker run --security-opt systempaths=unconfined ...",
    "kubernetes": (
        "in the pod spec: hostUsers: false, and in the container's securityContext: "
        "procMount: Unmasked"
    ),
    "lxc": "lxc config set <container> security.nesting=true && lxc restart <container>",
    "bwrap": (
        "start the outer sandbox as an unprivileged user (e.g. setpriv --reuid=<uid> "
        "--regid=<gid> --init-groups -- bwrap ...): bwrap covers /proc/sys, /proc/irq, "
        "/proc/bus... read-only only for callers that could write them"
    ),
    "oci": (
        "empty the OCI spec's linux.maskedPaths and linux.readonlyPaths (docker: "
        "--security-opt systempaths=unconfined; podman: --security-opt unmask=/proc/*)"
    ),
}

ALL_UNMASK_REMEDIES = "\n".join(
    f"{name}: {UNMASK_REMEDY[name]}" for name in ("docker", "podman", "kubernetes", "lxc")
)


def unmask_remedy(platform: str) -> str:
    return UNMASK_REMEDY.get(platform, ALL_UNMASK_REMEDIES)


# Runtimes whose run command gives a capability with --cap-add NAME.
CAP_ADD_RUNTIMES = ("docker", "podman")


def cap_add_remedy(platform: str, *capabilities: str) -> str | None:
    """The container flag that gives ``capabilities`` (names without ``CAP_``); None
    where the runtime has no such flag (the caller names the capability)."""
    if platform not in CAP_ADD_RUNTIMES:
        return None
    flags = " ".join(f"--cap-add {c}" for c in capabilities)
    return f"{platform} run {flags} ... (restart the container)"


# How each runtime stops its seccomp profile from refusing user namespaces.
SECCOMP_REMEDY = {
    "docker": "docker run --security-opt seccomp=unconfined ... (or a profile allowing "
    "unshare and clone with CLONE_NEWUSER)",
    "podman": "podman run --security-opt seccomp=unconfined ...",
    "kubernetes": "securityContext: seccompProfile: {type: Unconfined} (or a Localhost "
    "profile that allows unshare/clone with CLONE_NEWUSER)",
    "lxc": "lxc config set <container> security.nesting=true && lxc restart <container>",
}


def seccomp_remedy(platform: str) -> str:
    return SECCOMP_REMEDY.get(
        platform,
        "run the container with a seccomp profile that allows unshare and clone with "
        "CLONE_NEWUSER (docker/podman: --security-opt seccomp=unconfined)",
    )
