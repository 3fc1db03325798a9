"""The pure rules of :mod:`sandbox_setup.policy.login_routes`."""

from __future__ import annotations

from pathlib import Path

from sandbox_setup.base.accounts import Account
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.journal.check import entry_problem
from sandbox_setup.policy.login_routes import (
    has_login_shell,
    listed,
    sshd_reads_dropins,
    with_name,
)


def test_sshd_reads_the_drop_ins_only_where_its_config_includes_them() -> None:
    assert sshd_reads_dropins("Include /etc/ssh/sshd_config.d/*.conf\nUsePAM yes\n")
    assert sshd_reads_dropins("  include sshd_config.d/*.conf\n"), "relative to /etc/ssh"
    assert sshd_reads_dropins('Include "/etc/ssh/sshd_config.d/*.conf" /x/*.conf\n')
    assert not sshd_reads_dropins("UsePAM yes\n")
    assert not sshd_reads_dropins("#Include /etc/ssh/sshd_config.d/*.conf\n")
    assert not sshd_reads_dropins("Include /etc/ssh/other.d/*.conf\n")


def test_a_name_is_added_as_a_line_of_its_own_and_every_other_byte_kept() -> None:
    assert with_name("", "agent") == "agent\n"
    assert with_name("daemon", "agent") == "daemon\nagent\n"
    assert with_name("daemon\n# note\n", "agent") == "daemon\n# note\nagent\n"
    assert with_name("daemon\n agent \n", "agent") == "daemon\n agent \n", "already listed"
    assert listed("a\nagent\n", "agent") and not listed("agents\n", "agent")


def test_a_login_shell_is_any_but_the_refusing_ones_and_empty_is_bin_sh() -> None:
    assert has_login_shell("/bin/bash") and has_login_shell("/bin/sh")
    assert has_login_shell(""), "an empty passwd shell field is /bin/sh"
    for shell in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false"):
        assert not has_login_shell(shell), shell


def test_the_journal_takes_a_set_shell_step_with_a_passwd_shell_field_only() -> None:
    layout = Layout(Path("/tmp/root"), Account("root", 0, 0, Path("/root"), "/bin/sh"))
    entry = {"txn": "t", "op": "set-shell", "user": "agent", "shell": "/usr/sbin/nologin",
             "old_shell": "/bin/bash", "step": 0, "files": []}  # fmt: skip
    assert entry_problem(entry, layout) is None
    assert entry_problem({**entry, "old_shell": ""}, layout) is None, "empty: /bin/sh"
    for bad in ("bash", "/bin/sh:x", "/bin/sh\n", 7):
        assert entry_problem({**entry, "old_shell": bad}, layout) is not None, bad
