"""``answers.toml`` as an apply writes it: the current file checked, then merged.

:func:`render_answers` gives the :class:`~sandbox_setup.configure.actions.WriteFile`
render for the answers file. A current file that this version cannot read as
answers (not UTF-8, invalid TOML, a schema it does not know, an unknown key, a bad
value) is an :class:`~sandbox_setup.base.errors.InputError` naming the file and the line
or key, and nothing is written (docs/design.md invariant 3): it would otherwise be
silently replaced. A readable one is rewritten by merging the answers into the
existing document, as ``launcher.toml`` is, so the operator's comments stay; a file
that already says the same is returned byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox_setup.base.errors import InputError
from sandbox_setup.configure.answers import Answers, dump_answers, parse_answers
from sandbox_setup.configure.launcher_toml import update_array


def _text(current: bytes, source: str) -> str:
    try:
        return current.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = current[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{source}: not UTF-8 (line {line}, byte {exc.start}); fix or remove it (it was "
            "left untouched)"
        ) from None


def merge_answers(existing: str, fresh: str) -> str:
    """``fresh`` (what :func:`dump_answers` writes) merged into ``existing``: keys
    set, changed or removed one by one; comments and layout of the rest kept."""
    import tomlkit  # why: only where a file is written (not the wizard's first paint)

    doc = tomlkit.parse(existing)
    new = tomlkit.parse(fresh)
    for key in [k for k in doc if k not in new]:
        del doc[key]
    plain = doc.unwrap()
    for key, value in new.unwrap().items():
        if key in plain and plain[key] == value and type(plain[key]) is type(value):
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            update_array(doc, key, value)
        else:
            doc[key] = value
    return tomlkit.dumps(doc)


def render_answers(answers: Answers, source: str) -> Callable[[bytes | None], bytes]:
    """The render of ``answers.toml`` for ``answers``; see the module doc."""
    fresh = dump_answers(answers)

    def render(current: bytes | None) -> bytes:
        if current is None:
            return fresh.encode("utf-8")
        text = _text(current, source)
        try:
            parse_answers(text, source)
        except InputError as exc:
            raise InputError(f"{exc}; fix or remove it (it was left untouched)") from None
        merged = merge_answers(text, fresh)
        return current if merged == text else merged.encode("utf-8")

    return render
