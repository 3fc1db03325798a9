"""The operator's own config and state directories, as the XDG base directory spec says.

``$XDG_CONFIG_HOME/sandbox-setup`` and ``$XDG_STATE_HOME/sandbox-setup`` when the
variable holds an absolute path (the spec ignores a relative one), else
``~/.config/sandbox-setup`` and ``~/.local/state/sandbox-setup``, ``~`` being ``$HOME``
when it is absolute, else the account's home directory. That is what
``platformdirs.user_config_path`` and ``user_state_path`` answer on Linux (a unit test
compares them), without their import: ``platformdirs`` brings ``tempfile``, ``shutil``,
``bz2``, ``lzma`` and ``random``, some 7 ms of every launch.
"""

from __future__ import annotations

import os

APP = "sandbox-setup"


def user_config_dir(app: str = APP) -> str:
    return os.path.join(_base("XDG_CONFIG_HOME", ".config"), app)


def user_state_dir(app: str = APP) -> str:
    return os.path.join(_base("XDG_STATE_HOME", os.path.join(".local", "state")), app)


def _base(variable: str, below_home: str) -> str:
    value = os.environ.get(variable, "")
    if os.path.isabs(value):
        return value
    return os.path.join(_home(), below_home)


def _home() -> str:
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return home.rstrip("/") or "/"
    import pwd

    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = ""
    if not os.path.isabs(home):
        raise RuntimeError(
            "cannot find your home directory: set HOME (or XDG_CONFIG_HOME and XDG_STATE_HOME) "
            "to an absolute path"
        )
    return home.rstrip("/") or "/"
