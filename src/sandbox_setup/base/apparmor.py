"""The AppArmor profile that gives the probed bwrap user namespaces back (Ubuntu 23.10+).

Ubuntu's ``kernel.apparmor_restrict_unprivileged_userns = 1`` lets an unprivileged
program create a user namespace only when an AppArmor profile grants it ``userns``;
unconfined programs get one without capabilities, so bwrap fails (``setting up uid map:
Permission denied``, ``loopback: Failed RTM_NEWADDR``). Ubuntu's documented fix is a
profile for the program, in this form (ubuntu.com/blog/ubuntu-23-10-restricted-
unprivileged-user-namespaces; Ubuntu 24.04 ships the same shape for Chrome and others)::

    abi <abi/4.0>,
    include <tunables/global>
    profile NAME /usr/bin/bwrap flags=(unconfined) {
      userns,
      include if exists <local/NAME>
    }

What it grants: bwrap (the one path it attaches to) may create user namespaces, and
bwrap is an unprivileged program anyone can run, so every local user can again get a
user namespace by way of bwrap. It grants nothing else (``flags=(unconfined)``: bwrap
is otherwise as unconfined as before). The sysctl alternative
(:data:`SYSCTL_REMEDY`) gives user namespaces back to every program instead.

The file and profile are named :data:`PROFILE_NAME`, which no distribution ships, so
loading it never replaces a distribution's ``bwrap`` profile. ``abi <abi/4.0>`` and
``userns,`` need AppArmor 4 (Ubuntu 24.04's parser); the restriction exists only
where the kernel and AppArmor 4 mediate user namespaces, so the text is not made
conditional. Pure, in base: the checks (remedies), the plan and the audit render the
same bytes from here.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from sandbox_setup.base import remedies

PROFILE_NAME = "sandbox-setup-bwrap"
PROFILE_FILE = PurePosixPath("/etc/apparmor.d") / PROFILE_NAME
# Where the parser is looked for on the target (Debian and Ubuntu: /usr/sbin, /sbin).
PARSER_DIRS = ("/usr/sbin", "/sbin")
PARSER = "apparmor_parser"
# What AppArmor 4 needs and older parsers (Debian 12's 3.0) refuse: the text's only
# lines that are not AppArmor 3 syntax (tests check the rest with Debian's parser).
APPARMOR4_LINES = ("abi <abi/4.0>,", "  userns,")

# A path AppArmor's attachment accepts unquoted and that holds no glob characters.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9._+/-]*")

SYSCTL_REMEDY = (
    "or, host-wide: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (and "
    "kernel.apparmor_restrict_unprivileged_userns=0 in /etc/sysctl.d/ to keep it): this "
    "weakens every program, not just bwrap: any process of any user gets unprivileged "
    "user namespaces back, the kernel attack surface Ubuntu's restriction closes"
)


# A profile's attachment: ``profile NAME /path ...{`` or ``/path ...{`` (the name is the path).
_ATTACHMENT = re.compile(r"^\s*(?:profile\s+\S+\s+)?(/\S*)\s+(?:flags=\([^)]*\)\s*)?\{", re.M)


def attaches_to(text: str, path: str) -> bool:
    """Does the profile ``text`` attach to exactly ``path``? (Two profiles attaching to
    the same path conflict: the kernel then refuses to exec it.)"""
    return any(match.group(1) == path for match in _ATTACHMENT.finditer(text))


def attach_problem(bwrap: str) -> str | None:
    """Why the profile cannot attach to ``bwrap`` as written, or None."""
    if not _PLAIN_PATH.fullmatch(bwrap) or "//" in bwrap or "/../" in bwrap + "/":
        return (
            f"{bwrap!r}: the AppArmor profile attaches to a plain absolute path (letters, "
            "digits, / . _ + -); install bubblewrap where its path is one (apt-get install "
            "bubblewrap puts it at /usr/bin/bwrap)"
        )
    return None


def render_profile(bwrap: str) -> bytes:
    """The profile's bytes for the bwrap at ``bwrap`` (an absolute, plain path)."""
    problem = attach_problem(bwrap)
    if problem is not None:
        raise ValueError(problem)
    return (
        f"# Written by sandbox-setup (--apparmor-bwrap-profile): lets {bwrap} create\n"
        "# user namespaces under kernel.apparmor_restrict_unprivileged_userns=1.\n"
        "# Undo with sandbox-setup --undo; see docs/ubuntu-userns.md.\n"
        f"{APPARMOR4_LINES[0]}\n"
        "include <tunables/global>\n"
        f"profile {PROFILE_NAME} {bwrap} flags=(unconfined) {{\n"
        f"{APPARMOR4_LINES[1]}\n"
        f"  include if exists <local/{PROFILE_NAME}>\n"
        "}\n"
    ).encode("ascii")


def load_args(profile: str) -> list[str]:
    """The parser's arguments that load (or replace) ``profile`` and write its cache."""
    return ["-r", "-W", profile]


def unload_args(profile: str) -> list[str]:
    """The parser's arguments that remove the profile ``profile`` defines."""
    return ["-R", profile]


def manual_remedy(bwrap: str = "/usr/bin/bwrap") -> str:
    """The remedy text of the restriction: the flag, the same by hand, the sysctl."""
    text = render_profile(bwrap).decode("ascii")
    return (
        f"{remedies.apparmor_profile()}   (installs and loads "
        f"{PROFILE_FILE} for the probed bwrap; --undo removes it), or by hand:\n"
        f"cat > {PROFILE_FILE} <<'EOF'\n{text}EOF\n"
        f"{PARSER} {' '.join(load_args(str(PROFILE_FILE)))}\n" + SYSCTL_REMEDY
    )
