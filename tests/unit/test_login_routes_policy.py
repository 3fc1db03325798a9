"""The pure rules of :mod:`sandbox_setup.policy.login_routes`."""

from __future__ import annotations

from sandbox_setup.policy.login_routes import listed, sshd_reads_dropins, with_name


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
