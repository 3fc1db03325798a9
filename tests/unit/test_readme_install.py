"""The README's set-up commands: exactly two, and the install runs on Debian's Python.

A venv made by whatever ``python3`` comes first on root's PATH (pyenv's, under /root)
ties ``sandbox-launch`` and root's ``claude`` shim to it: removing that Python would
break both (issue 28). Debian's ``/usr/bin/python3`` stays with the system.
"""

from __future__ import annotations

import re

from tests.tools import REPO


def _setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_the_readme_has_two_setup_commands_and_the_install_uses_debians_python() -> None:
    commands = _setup_commands()
    assert len(commands) == 2, commands
    install, suite = commands
    assert suite.strip() == "bash tests/run.sh"
    venvs = re.findall(r"(\S+) -m venv", install)
    assert venvs == ["/usr/bin/python3"], f"the install's venv is made by {venvs}"
