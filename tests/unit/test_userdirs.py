"""``sandbox_setup.base.userdirs`` answers what ``platformdirs`` (the reference DESIGN.md names
for where the config and the journal live) answers, in every case of the environment."""

from __future__ import annotations

import os
import pwd

import platformdirs
import pytest

from sandbox_setup.base import userdirs

OWN_HOME = pwd.getpwuid(os.getuid()).pw_dir
CASES = {
    "xdg absolute": {"HOME": "/home/op", "XDG_CONFIG_HOME": "/x/conf", "XDG_STATE_HOME": "/x/st/"},
    "xdg relative (ignored)": {"HOME": "/home/op", "XDG_CONFIG_HOME": "c", "XDG_STATE_HOME": "s"},
    "xdg empty": {"HOME": "/home/op", "XDG_CONFIG_HOME": "", "XDG_STATE_HOME": ""},
    "home only": {"HOME": "/home/op"},
    "home with a trailing slash": {"HOME": "/home/op/"},
    "home is /": {"HOME": "/"},
    "home relative (the account's)": {"HOME": "op"},
    "home empty (the account's)": {"HOME": ""},
    "no home (the account's)": {},
}


@pytest.mark.parametrize("environ", CASES.values(), ids=CASES.keys())
def test_the_same_directories_as_platformdirs(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert userdirs.user_config_dir() == str(platformdirs.user_config_path("sandbox-setup"))
    assert userdirs.user_state_dir() == str(platformdirs.user_state_path("sandbox-setup"))
    if "XDG_STATE_HOME" not in environ and not environ.get("HOME", "").startswith("/"):
        assert userdirs.user_state_dir() == os.path.join(OWN_HOME, ".local/state/sandbox-setup")
