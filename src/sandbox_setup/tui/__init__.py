"""Textual screens of the wizard. They collect answers and show findings; they
never write files or run probes themselves."""

from pathlib import Path

# The one stylesheet of the wizard, shipped in the wheel beside these modules.
STYLESHEET = Path(__file__).resolve().with_name("wizard.tcss")
