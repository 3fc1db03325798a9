"""The welcome screen on a host with other setups (the host-wide record of setups)
does not say "none found"."""

from __future__ import annotations


def test_the_welcome_names_the_other_setups_of_the_host() -> None:
    from sandbox_setup.tui.welcome import welcome_text

    alone = welcome_text("root", 0, None, "/", None).plain
    assert "Existing setup: none found\n" in alone
    shared = welcome_text("root", 0, None, "/", None, others=["/srv/a/state/x"]).plain
    assert "Existing setup: none of yours\n" in shared
    assert "Other setups on this host: /srv/a/state/x" in shared
    assert "none found" not in shared
