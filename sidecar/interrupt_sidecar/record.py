"""Immutable records written out by hand, for the value types on the daemon's start-up path.

``@dataclass(frozen=True, slots=True)`` compiles five or six methods for each class when
its module is imported (0.4–0.6 ms a class on a 2-core host: a tenth of the daemon's
way to ``ready`` over the ~40 classes it loads). A :class:`Record` subclass lists its
fields in ``__slots__`` and sets them in its own ``__init__`` through :data:`init_field`
(``object.__setattr__``, as a frozen dataclass's ``__init__`` does, so building one costs
the same); equality, hash and ``repr`` follow ``__slots__``, and setting or deleting a
field afterwards raises, as on a frozen dataclass.
"""

from __future__ import annotations

from typing import Any

#: Sets a field of a record: only the record's own ``__init__`` calls it.
init_field = object.__setattr__


class Record:
    """Fields in ``__slots__``, set once in ``__init__``; compared, hashed and shown by them."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
