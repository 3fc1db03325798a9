"""Stylesheets and static templates shipped in the wheel."""

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent
