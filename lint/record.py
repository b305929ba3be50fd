"""`@record`: the part of `dataclasses` plint uses, without its start-up cost.

`dataclasses.dataclass` compiles generated methods with `exec` for every class (about half a
millisecond each on CPython 3.11); plint defines some forty records on the path of `plint check`,
which alone cost more than Python's own start-up. `@record` builds the same `__init__`, `__repr__`,
`__eq__` (and `__hash__` with `frozen=True`) from closures instead. Supported: annotated fields with
defaults, `field(default=..., default_factory=..., init=..., repr=..., compare=...)`, `frozen=True`
and `__post_init__`.

Measured (benchmarks/bench_check.py, 25 paired runs twice each, on a loaded 2-core machine): `plint check` on
the Megatron fixture took a median 263-280 ms with `record` as a thin wrapper of `dataclasses.dataclass`
against 72-94 ms with this one (bare Python 24-64 ms), far more than the 5 ms a start-up trick must save.
`@dataclass_transform` (PEP 681, type checkers only) lets mypy and pyright read each record as a dataclass:
mypy on the package went from 1,575 errors to 545.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable

    from typing_extensions import dataclass_transform  # PEP 681: type checkers read @record as a dataclass
else:

    def dataclass_transform(**_: object) -> Any:
        return lambda decorator: decorator


_MISSING = object()


class _Field:
    __slots__ = ("default", "default_factory", "init", "repr", "compare")

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Callable[[], Any] | None = None,
        init: bool = True,
        repr: bool = True,
        compare: bool = True,
    ) -> None:  # noqa: A002
        self.default, self.default_factory = default, default_factory
        self.init, self.repr, self.compare = init, repr, compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
) -> Any:  # noqa: A002
    return _Field(default, default_factory, init, repr, compare)


class FrozenInstanceError(AttributeError):
    pass


@dataclass_transform(field_specifiers=(field,))
def record(cls: type | None = None, *, frozen: bool = False) -> Any:
    def wrap(cls: type) -> type:
        names = [n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("__")]
        specs: dict[str, _Field] = {}
        for name in names:
            value = cls.__dict__.get(name, _MISSING)
            if type(value).__name__ == "member_descriptor":  # the field's __slots__ entry, not a default
                value = _MISSING
            spec = value if isinstance(value, _Field) else _Field(default=value)
            specs[name] = spec
            if isinstance(value, _Field):
                if spec.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, spec.default)
        init_names = [n for n in names if specs[n].init]
        shown = [n for n in names if specs[n].repr]
        compared = [n for n in names if specs[n].compare]
        post_init = getattr(cls, "__post_init__", None)
        setter = object.__setattr__
        count = len(init_names)
        # (name, default_factory, default) of each argument
        argument_specs = tuple((n, specs[n].default_factory, specs[n].default) for n in init_names)
        # Fields go straight into the instance __dict__ (what object.__setattr__ does, faster) unless
        # the class keeps them elsewhere: __slots__, or a descriptor of the same name
        direct = not hasattr(cls, "__slots__") and not any(hasattr(getattr(cls, n, None), "__set__") for n in names)

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if len(args) > count:
                raise TypeError(f"{cls.__name__}() takes {count} arguments, {len(args)} given")
            # straight into the instance dict where nothing intercepts attribute writes; else collect
            # the values and set them one by one (__slots__, or a descriptor of the same name)
            values = self.__dict__ if direct else {}
            values.update(zip(init_names, args))
            for name, factory, default in argument_specs[len(args) :]:
                if kwargs and name in kwargs:
                    values[name] = kwargs.pop(name)
                elif factory is not None:
                    values[name] = factory()
                elif default is not _MISSING:
                    values[name] = default
                else:
                    raise TypeError(f"{cls.__name__}() missing argument {name!r}")
            if kwargs:
                raise TypeError(f"{cls.__name__}() got unexpected arguments {sorted(kwargs)}")
            if not direct:
                for name, value in values.items():
                    setter(self, name, value)
            if post_init is not None:
                post_init(self)

        def __repr__(self: Any) -> str:
            inner = ", ".join(f"{n}={getattr(self, n, _MISSING)!r}" for n in shown)
            return f"{cls.__name__}({inner})"

        def __eq__(self: Any, other: Any) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return all(getattr(self, n) == getattr(other, n) for n in compared)

        # setattr: the class is built here, which type checkers read from @dataclass_transform instead
        setattr(cls, "__init__", __init__)
        setattr(cls, "__repr__", __repr__)
        setattr(cls, "__eq__", __eq__)
        setattr(cls, "__record_fields__", tuple(names))
        if frozen:

            def __setattr__(self: Any, name: str, value: Any) -> None:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")

            def __hash__(self: Any) -> int:
                return hash(tuple(getattr(self, n) for n in compared))

            setattr(cls, "__setattr__", __setattr__)
            setattr(cls, "__hash__", __hash__)
        else:
            setattr(cls, "__hash__", None)
        return cls

    return wrap if cls is None else wrap(cls)
