"""The wizard's tests draw in a UTF-8 locale unless a test says otherwise (the
wizard draws ASCII where the locale is not UTF-8: tests/tui/test_ascii_locale.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _utf8_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_CTYPE", raising=False)
