"""Records: small data classes made in microseconds, not in ``dataclasses``' milliseconds.

Every module the launcher imports declares its data this way. ``@dataclass`` builds each
class by compiling five or six generated methods (about 0.7 ms a class here) and its
import pulls in ``inspect`` (about 8 ms): some 35 ms of a launch that, with the sandbox,
may add only a tenth to Claude's own start. A record is made from closures instead; the
one generated method, ``__init__``, is compiled the first time the class is instantiated.

What a record is, is what ``@dataclass`` (or ``@dataclass(frozen=True)``) makes, for the
options used here: fields from the class's annotations, in order, with defaults or
:func:`field` (``default``, ``default_factory``, ``init``, ``repr``, ``compare``);
``__init__`` (then ``__post_init__``), ``__repr__``, ``__eq__``, and for a frozen record
``__hash__`` and an ``__setattr__`` that refuses. Methods the class defines itself are
kept. ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work on
records too (the ``dataclasses`` view is made the first time one of them asks);
:func:`replace` and :func:`asdict` here do the same without importing ``dataclasses``.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_options: object) -> object:
        return lambda function: function


_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING"})()
_FIELDS = "__record_fields__"


class FrozenRecordError(AttributeError):
    """An assignment to a field of a frozen record (``dataclasses.FrozenInstanceError``'s
    counterpart)."""


class Field:
    """One field of a record: what :func:`field` says of it."""

    __slots__ = ("annotation", "compare", "default", "default_factory", "init", "name", "repr")

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Any = _MISSING,
        init: bool = True,
        repr: bool = True,  # the dataclasses name
        compare: bool = True,
    ) -> None:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.annotation: object = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, init={self.init})"


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | Any = _MISSING,
    init: bool = True,
    repr: bool = True,  # the dataclasses name
    compare: bool = True,
) -> Any:
    """A field's options, as ``dataclasses.field`` takes them."""
    return Field(default, default_factory, init, repr, compare)


@dataclass_transform(field_specifiers=(field,))
def record(cls: Any = None, /, *, frozen: bool = False) -> Any:
    """``@record`` or ``@record(frozen=True)``: see the module's docstring."""

    def wrap(cls: type) -> type:
        return _make(cls, frozen)

    return wrap if cls is None else wrap(cls)


def is_record(obj: object) -> bool:
    """Whether ``obj`` is a record class (or a subclass of one) or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return hasattr(cls, _FIELDS)


def fields(obj: object) -> tuple[Field, ...]:
    cls = obj if isinstance(obj, type) else type(obj)
    found: tuple[Field, ...] | None = getattr(cls, _FIELDS, None)
    if found is None:
        raise TypeError(f"{cls.__name__} is not a record")
    return found


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace``)."""
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} has init=False: it cannot be replaced")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def asdict(obj: object) -> dict[str, Any]:
    """The record's fields as a dict, records inside it (and in lists, tuples and dicts)
    as dicts too, values copied as ``dataclasses.asdict`` copies them."""
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}


def _plain(value: Any) -> Any:
    if hasattr(type(value), _FIELDS):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (str, int, float, bool, bytes, type(None))):
        return value
    import copy

    return copy.deepcopy(value)


# --- making a record ------------------------------------------------------------------


def _make(cls: type, frozen: bool) -> type:
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - no inspect here
    found: list[Field] = []
    for name, annotation in annotations.items():
        if isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name, f.annotation = name, annotation
        if isinstance(f.default, (list, dict, set)):
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        if isinstance(value, Field):  # the class attribute is the default, or nothing
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        found.append(f)
    seen_default = False
    for f in found:
        if not f.init:
            continue
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    all_fields = tuple(found)
    setattr(cls, _FIELDS, all_fields)
    setattr(cls, "__match_args__", tuple(f.name for f in all_fields if f.init))  # noqa: B010
    own = cls.__dict__
    if "__init__" not in own:
        cls.__init__ = _lazy_init(cls, all_fields, frozen)  # type: ignore[misc]
    if "__repr__" not in own:
        cls.__repr__ = _repr_fn([f.name for f in all_fields if f.repr])  # type: ignore[assignment]
    key = _key([f.name for f in all_fields if f.compare])
    if "__eq__" not in own:
        cls.__eq__ = _eq_fn(key)  # type: ignore[assignment]
    if "__hash__" not in own or own["__hash__"] is None:
        # As dataclasses: a frozen record hashes its compared fields; a mutable one,
        # equal by value, is not hashable.
        cls.__hash__ = _hash_fn(key) if frozen else None  # type: ignore[assignment]
    if frozen:
        names = frozenset(f.name for f in all_fields)
        cls.__setattr__ = _frozen_setattr(cls, names)  # type: ignore[assignment]
        cls.__delattr__ = _frozen_delattr(cls, names)  # type: ignore[assignment]
    cls.__dataclass_fields__ = _DataclassView()  # type: ignore[attr-defined]
    return cls


def _key(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _eq_fn(key: Callable[[object], tuple[Any, ...]]) -> Callable[[Any, object], Any]:
    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash_fn(key: Callable[[object], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _repr_fn(names: list[str]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenRecordError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    return __setattr__


def _frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenRecordError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return __delattr__


def _lazy_init(cls: type, all_fields: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """An ``__init__`` that compiles the real one at the first call and puts it in its
    place: a class never instantiated costs no compile."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real = _compile_init(cls, all_fields, frozen)
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = real  # type: ignore[misc]
        real(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _compile_init(cls: type, all_fields: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    names: dict[str, Any] = {"_MISSING": _MISSING, "_setattr": object.__setattr__}
    params, body = ["self"], []
    for f in all_fields:
        if f.init:
            if f.default_factory is not _MISSING:
                names[f"_factory_{f.name}"] = f.default_factory
                params.append(f"{f.name}=_MISSING")
                value = f"_factory_{f.name}() if {f.name} is _MISSING else {f.name}"
            elif f.default is not _MISSING:
                names[f"_default_{f.name}"] = f.default
                params.append(f"{f.name}=_default_{f.name}")
                value = f.name
            else:
                params.append(f.name)
                value = f.name
        elif f.default_factory is not _MISSING:
            names[f"_factory_{f.name}"] = f.default_factory
            value = f"_factory_{f.name}()"
        elif f.default is not _MISSING:
            names[f"_default_{f.name}"] = f.default
            value = f"_default_{f.name}"
        else:
            continue  # init=False and no default: __post_init__ sets it
        if frozen:
            body.append(f"    _setattr(self, {f.name!r}, {value})")
        else:
            body.append(f"    self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, names)  # our own fixed template, as dataclasses does
    init: Callable[..., None] = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class _DataclassView:
    """``__dataclass_fields__``, made on first use: what lets ``dataclasses.fields``,
    ``replace``, ``asdict`` and ``is_dataclass`` take a record (the wizard's code and the
    tests may; the launcher does not, and never imports ``dataclasses``)."""

    def __init__(self) -> None:
        self._views: dict[type, dict[str, Any]] = {}  # per class: a subclass shares this

    def __get__(self, obj: object, owner: type) -> dict[str, Any]:
        view = self._views.get(owner)
        if view is None:
            import dataclasses

            view = {}
            for f in getattr(owner, _FIELDS):
                made = dataclasses.field(
                    default=dataclasses.MISSING if f.default is _MISSING else f.default,
                    default_factory=(
                        dataclasses.MISSING if f.default_factory is _MISSING else f.default_factory
                    ),
                    init=f.init,
                    repr=f.repr,
                    compare=f.compare,
                )
                setattr(made, "name", f.name)  # noqa: B010 - a Field, typed as its default
                setattr(made, "type", f.annotation)  # noqa: B010
                setattr(made, "_field_type", dataclasses._FIELD)  # type: ignore[attr-defined]  # noqa: B010
                view[f.name] = made
            self._views[owner] = view
        return view
