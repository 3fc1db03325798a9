"""A Ctrl-C while the console scripts load is one line and exit 130, also when Python
hands it on wrapped in another error (a class body being built as a module loads)."""

from __future__ import annotations

import sandbox_setup


def test_a_ctrl_c_wrapped_by_python_is_still_a_ctrl_c() -> None:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__") from exc
    except RuntimeError as wrapped:
        assert sandbox_setup._caused_by_ctrl_c(wrapped)
    assert sandbox_setup._caused_by_ctrl_c(KeyboardInterrupt())
    assert not sandbox_setup._caused_by_ctrl_c(ValueError("a bug"))
    looped = ValueError("loop")
    looped.__context__ = looped
    assert not sandbox_setup._caused_by_ctrl_c(looped)
