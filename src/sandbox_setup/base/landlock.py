"""Landlock (Linux >= 5.13): an unprivileged process restricts itself and its future children.

A small binding over the three syscalls, through :mod:`ctypes` and the C library's
``syscall(2)``; the kernel's ``Documentation/userspace-api/landlock.rst`` and
``samples/landlock/sandboxer.c`` are what it follows:

1. ``landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`` gives the ABI
   level (:func:`abi_version`; 0: no Landlock here, the syscall missing or the LSM off);
2. a ruleset *handles* the access rights this ABI knows (best effort: a right the
   kernel does not know is not asked for, and :class:`Applied` says what was);
   everything handled is denied unless a rule allows it;
3. rules: a directory or file and the rights beneath it (``LANDLOCK_RULE_PATH_BENEATH``),
   a TCP port and bind/connect (``LANDLOCK_RULE_NET_PORT``, ABI 4+);
4. ``prctl(PR_SET_NO_NEW_PRIVS)`` then ``landlock_restrict_self``: the calling thread
   (and what it execs and forks from then on) is in the new domain, for good.

What each ABI level adds (:data:`ABI_FEATURES`): 1 files; 2 ``REFER`` (renames and
links across directories); 3 ``TRUNCATE``; 4 TCP bind and connect by port; 5
``IOCTL_DEV`` (ioctl on devices); 6 scoping of abstract unix sockets and signals to the
domain; 7 audit logging flags (nothing this binding uses).

Why ctypes and not a package from PyPI (checked 2026-12): ``landlock`` 1.0.0.dev5
(alpha, filesystem rights only: no TCP ports, no scopes), ``py-landlock`` 0.1.1
(alpha, filesystem only), ``landlockpy`` 0.2.0 (beta, one vendor, network and scopes
too). All three are themselves ctypes wrappers of these same syscalls; taking one
would add a young dependency to the root launch path for some 200 lines that a
reviewer can read here against the kernel's header. The syscall numbers are the
generic ones, the same on x86_64 and aarch64 (444, 445, 446).

A constraint that decides how the launcher uses it: a process whose ruleset handles
filesystem access may not ``mount(2)`` or ``pivot_root(2)``, and nor may its
children, so a filesystem ruleset breaks bubblewrap (``Failed to make / slave``);
network and scope rules do not.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39

RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

# LANDLOCK_ACCESS_FS_* (include/uapi/linux/landlock.h)
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
# LANDLOCK_ACCESS_NET_* (ABI 4)
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
# LANDLOCK_SCOPE_* (ABI 6)
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

FS_ABI1 = (1 << 13) - 1
# The rights that apply to a file (not a directory): a rule for a file may hold only these.
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR

# What each level adds, for the check and the plan.
ABI_FEATURES: dict[int, str] = {
    1: "files: which trees may be read, written, executed",
    2: "files: renames and links across directories (REFER)",
    3: "files: truncation (TRUNCATE)",
    4: "network: TCP bind and connect by port",
    5: "devices: ioctl on device files (IOCTL_DEV)",
    6: "scopes: abstract unix sockets and signals stay inside the domain",
    7: "audit logging of denials",
}
NETWORK_ABI = 4
SCOPE_ABI = 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class LandlockError(OSError):
    """A Landlock syscall failed (errno and what was being done)."""


_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _syscall(number: int, *args: object) -> int:
    result = int(_c().syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, os.strerror(code))
    return result


def supported_arch() -> bool:
    """The syscall numbers here are those of x86_64 and aarch64 (the generic table)."""
    return os.uname().machine in ("x86_64", "aarch64", "arm64")  # platform.machine()'s


def abi_version() -> int:
    """The Landlock ABI level this kernel offers this process; 0 when it has none
    (no syscall: ENOSYS; built but not enabled at boot: EOPNOTSUPP)."""
    if not supported_arch():
        return 0
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(CREATE_RULESET_VERSION))  # fmt: skip
    except LandlockError as exc:
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0
        raise


def fs_rights(abi: int) -> int:
    """Every filesystem right this ABI level knows."""
    if abi < 1:
        return 0
    rights = FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def net_rights(abi: int) -> int:
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= NETWORK_ABI else 0


def scope_flags(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= SCOPE_ABI else 0


def features(abi: int) -> list[str]:
    """What ``abi`` gives, one line per level up to it."""
    return [f"{level}: {text}" for level, text in ABI_FEATURES.items() if level <= abi]


@dataclass(frozen=True, slots=True)
class Rules:
    """What a domain allows. ``files``: handle filesystem access (then only ``read``
    and ``write`` trees are reachable; missing paths are skipped). ``network``: handle
    TCP bind and connect (then only ``connect_tcp`` ports may be connected to, and
    ``bind_tcp`` bound). ``scope``: abstract unix sockets and signals stay in the domain."""

    files: bool = False
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    network: bool = False
    connect_tcp: tuple[int, ...] = ()
    bind_tcp: tuple[int, ...] = ()
    scope: bool = False


@dataclass(frozen=True, slots=True)
class Applied:
    """What :func:`restrict_self` enforced on this kernel (best effort, said aloud)."""

    abi: int
    files: bool
    network: bool
    scope: bool
    skipped: tuple[str, ...] = field(default=())  # paths not there, so no rule

    def describe(self) -> str:
        walls = [name for name, on in (("files", self.files), ("network", self.network),
                                       ("scope", self.scope)) if on]  # fmt: skip
        return f"landlock abi={self.abi} " + ("+".join(walls) if walls else "nothing")


def set_no_new_privs() -> None:
    if _c().prctl(ctypes.c_int(PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:  # fmt: skip
        code = ctypes.get_errno()
        raise LandlockError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(code)}")


def _add_path(ruleset: int, path: str, rights: int, handled: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FS_FILE_RIGHTS  # a file's rule takes only file rights (else EINVAL)
        attr = _PathBeneathAttr(allowed_access=rights & handled, parent_fd=fd)
        try:
            _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                     ctypes.byref(attr), ctypes.c_uint32(0))  # fmt: skip
        except LandlockError as exc:
            raise LandlockError(exc.errno, f"landlock rule for {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return True


def _add_port(ruleset: int, port: int, rights: int) -> None:
    attr = _NetPortAttr(allowed_access=rights, port=port)
    try:
        _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_NET_PORT),
                 ctypes.byref(attr), ctypes.c_uint32(0))  # fmt: skip
    except LandlockError as exc:
        raise LandlockError(exc.errno, f"landlock rule for port {port}: {exc.strerror}") from None


def _ports(rules: Rules) -> Iterable[tuple[int, int]]:
    rights: dict[int, int] = {}
    for port in rules.connect_tcp:
        rights[port] = rights.get(port, 0) | NET_CONNECT_TCP
    for port in rules.bind_tcp:
        rights[port] = rights.get(port, 0) | NET_BIND_TCP
    return rights.items()


def restrict_self(rules: Rules, abi: int | None = None) -> Applied:
    """Put the calling thread in a new domain of ``rules``, as far as this kernel's ABI
    goes (``abi``: a lower level to use, for tests). Sets ``no_new_privs`` first.
    :class:`LandlockError` when Landlock is missing or a step fails: the caller
    decides (the launcher refuses; nothing here falls back silently)."""
    level = abi_version() if abi is None else abi
    if level < 1:
        raise LandlockError(errno.EOPNOTSUPP, "Landlock is not available on this kernel")
    handled_fs = fs_rights(level) if rules.files else 0
    handled_net = net_rights(level) if rules.network else 0
    scoped = scope_flags(level) if rules.scope else 0
    if not (handled_fs or handled_net or scoped):
        return Applied(level, False, False, False)
    attr = _RulesetAttr(handled_access_fs=handled_fs, handled_access_net=handled_net,
                        scoped=scoped)  # fmt: skip
    ruleset = _syscall(SYS_CREATE_RULESET, ctypes.byref(attr),
                       ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))  # fmt: skip
    skipped: list[str] = []
    try:
        if handled_fs:
            for path in rules.read:
                if not _add_path(ruleset, path, FS_READ, handled_fs):
                    skipped.append(path)
            for path in rules.write:
                if not _add_path(ruleset, path, handled_fs, handled_fs):
                    skipped.append(path)
        if handled_net:
            for port, rights in _ports(rules):
                _add_port(ruleset, port, rights)
        set_no_new_privs()
        _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return Applied(level, bool(handled_fs), bool(handled_net), bool(scoped), tuple(skipped))


def no_new_privs() -> bool:
    """Whether this process has ``no_new_privs`` (a domain needs it, unprivileged)."""
    return bool(_c().prctl(ctypes.c_int(PR_GET_NO_NEW_PRIVS), ctypes.c_ulong(0),
                           ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)))  # fmt: skip


__all__: Sequence[str] = (
    "ABI_FEATURES",
    "Applied",
    "LandlockError",
    "Rules",
    "abi_version",
    "features",
    "restrict_self",
)
