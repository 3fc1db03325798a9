"""``sandbox_setup.base.record``: the same classes as ``@dataclass`` makes, without its cost.

Each behaviour is checked against the real ``dataclasses`` on twin classes, so a
difference shows as a failure here, not as a surprise in the launcher. And the
launcher's modules, imported, load neither ``dataclasses`` nor ``inspect``: that is
what the records are for (about 35 ms of every launch)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base import record as rec

REPO = Path(__file__).resolve().parents[2]


def twins(frozen: bool) -> tuple[Any, Any]:
    """The same declaration, once with ``dataclasses`` and once as a record."""

    def declare(decorate: Any, field: Any) -> Any:
        @decorate(frozen=frozen)
        class Thing:
            """A thing."""

            name: str
            size: int = 0
            tags: list[str] = field(default_factory=list)
            secret: str = field(default="", repr=False)
            note: str = field(default="", compare=False)
            derived: str = field(default="unset", init=False)

            def __post_init__(self) -> None:
                object.__setattr__(self, "derived", f"{self.name}:{self.size}")

        return Thing

    return declare(dataclasses.dataclass, dataclasses.field), declare(rec.record, rec.field)


@pytest.mark.parametrize("frozen", [False, True], ids=["mutable", "frozen"])
def test_a_record_behaves_as_the_same_dataclass(frozen: bool) -> None:
    real, ours = twins(frozen)
    for args, kwargs in [
        (("a",), {}),
        (("a", 2), {"tags": ["x"]}),
        ((), {"name": "b", "note": "n"}),
    ]:
        one, two = real(*args, **kwargs), ours(*args, **kwargs)
        assert repr(one) == repr(two)  # same qualname, fields, repr=False honoured
        assert {f: getattr(one, f) for f in vars(one)} == {f: getattr(two, f) for f in vars(two)}
        assert dataclasses.asdict(one) == rec.asdict(two) == dataclasses.asdict(two)
    a, b = ours("a", 1, note="x"), ours("a", 1, note="y")
    assert a == b and a != ours("a", 2)  # compare=False ignored in ==
    assert ours("a").tags is not ours("a").tags  # a factory per instance
    assert (a == 1) is False
    if frozen:
        for maker in (real, ours):  # hashes its compared fields: here a list, as dataclasses
            with pytest.raises(TypeError, match="unhashable type: 'list'"):
                hash(maker("a"))
        one, two = Pickled("a", (1,)), Pickled("a", (1,))
        assert hash(one) == hash(two) and len({one, two}) == 1
        with pytest.raises(AttributeError, match="cannot assign to field 'size'"):
            a.size = 3
        with pytest.raises(AttributeError):
            del a.name
    else:
        with pytest.raises(TypeError):
            hash(a)  # as a mutable dataclass: equal by value, so not hashable
        a.size = 3
        assert a.size == 3


@pytest.mark.parametrize("frozen", [False, True], ids=["mutable", "frozen"])
def test_the_init_rejects_what_the_dataclass_init_rejects(frozen: bool) -> None:
    real, ours = twins(frozen)
    for args, kwargs in [((), {}), (("a", 1, [], "s", "n", "extra"), {}), (("a",), {"bogus": 1}),
                         (("a",), {"name": "b"}), (("a",), {"derived": "x"})]:  # fmt: skip
        with pytest.raises(TypeError):
            real(*args, **kwargs)
        with pytest.raises(TypeError):
            ours(*args, **kwargs)


def test_replace_and_the_dataclasses_view() -> None:
    _, ours = twins(True)
    thing = ours("a", 1, tags=["t"])
    for replace in (rec.replace, dataclasses.replace):
        other = replace(thing, size=5)
        assert (other.name, other.size, other.tags, other.derived) == ("a", 5, ["t"], "a:5")
        with pytest.raises(ValueError, match="init=False"):
            replace(thing, derived="x")
    assert dataclasses.is_dataclass(thing) and rec.is_record(thing) and rec.is_record(ours)
    assert [f.name for f in dataclasses.fields(thing)] == [f.name for f in rec.fields(thing)]
    assert [f.name for f in rec.fields(ours)] == [
        "name",
        "size",
        "tags",
        "secret",
        "note",
        "derived",
    ]
    assert not rec.is_record(object())
    with pytest.raises(TypeError):
        rec.fields(object())


def test_records_inside_records_lists_and_dicts_become_dicts() -> None:
    @rec.record(frozen=True)
    class Inner:
        x: int

    @rec.record
    class Outer:
        inner: Inner
        many: list[Inner]
        by: dict[str, Inner]
        pair: tuple[Inner, int]

    outer = Outer(Inner(1), [Inner(2)], {"k": Inner(3)}, (Inner(4), 5))
    assert rec.asdict(outer) == {
        "inner": {"x": 1}, "many": [{"x": 2}], "by": {"k": {"x": 3}}, "pair": ({"x": 4}, 5)
    }  # fmt: skip
    assert rec.asdict(outer) == dataclasses.asdict(outer)


def test_pickle_and_copy_keep_a_frozen_record() -> None:
    thing = Pickled("a", (1, 2))
    assert pickle.loads(pickle.dumps(thing)) == thing
    assert copy.deepcopy(thing) == thing and copy.copy(thing) == thing


@rec.record(frozen=True)
class Pickled:
    name: str
    values: tuple[int, ...] = ()


def test_what_dataclasses_refuses_a_record_refuses() -> None:
    with pytest.raises(ValueError, match="mutable default"):

        @rec.record
        class Shared:
            items: list[str] = []

    with pytest.raises(TypeError, match="non-default argument 'b' follows default"):

        @rec.record
        class Order:
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="both default and default_factory"):
        rec.field(default=1, default_factory=int)


def test_a_plain_subclass_of_a_record_is_one_too() -> None:
    """As a plain subclass of a dataclass is a dataclass (``_Discovery`` of the scan)."""
    _, ours = twins(False)

    class Sub(ours):  # type: ignore[misc,valid-type]
        def extra(self) -> str:
            return self.name.upper()

    sub = Sub("a", 2)
    assert sub.extra() == "A" and sub.derived == "a:2"
    assert rec.is_record(sub) and dataclasses.is_dataclass(sub)
    assert [f.name for f in dataclasses.fields(sub)] == [f.name for f in rec.fields(sub)]
    assert rec.asdict(sub) == dataclasses.asdict(sub)
    assert type(rec.replace(sub, size=3)) is Sub and dataclasses.replace(sub, size=3).size == 3


def test_methods_the_class_defines_are_kept() -> None:
    @rec.record(frozen=True)
    class Own:
        a: int

        def __repr__(self) -> str:
            return "mine"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

    assert repr(Own(1)) == "mine" and Own(1) == Own(2) and hash(Own(1)) == 7


def test_the_launchers_modules_import_neither_dataclasses_nor_inspect() -> None:
    modules = [
        "sandbox_setup.launcher.main",
        "sandbox_setup.launcher.session.supervise",
        "sandbox_setup.launcher.session.runner",
        "sandbox_setup.boundary.session",
        "sandbox_setup.launcher.egress.network",
        "sandbox_setup.launcher.egress.netns",
        "sandbox_setup.launcher.egress.proxy",
        "sandbox_setup.launcher.egress.server",
        "sandbox_setup.boundary.quarantine",
        "sandbox_setup.policy.network",
    ]
    code = (
        f"import sys, {', '.join(modules)}; "
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
