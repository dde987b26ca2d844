"""Values kept per object identity: what a plan derives from its setup's objects (a context,
a stage, a link, a fabric) that is the same for every request of the setup.

``--queries`` plans thousands of requests on a few setups, whose objects are made once
(``api.infer._setup_of``); hashing such a frozen dataclass (nested catalog rows, dicts) costs
more than the lookup it would save, so entries are keyed by the objects' ``id``. An entry holds
its objects, so none of those ids can be reused by another object while the entry is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """``make()`` once per (objects by identity, key); emptied when ``limit`` entries are kept."""

    def __init__(self, limit: int = 4096) -> None:
        self._kept: dict[tuple[Hashable, ...], tuple[tuple[object, ...], T]] = {}
        self._limit = limit

    def get(self, objects: tuple[object, ...], key: Hashable, make: Callable[[], T]) -> T:
        ids = (*map(id, objects), key)
        hit = self._kept.get(ids)
        if hit is not None:
            return hit[1]
        value = make()
        if len(self._kept) >= self._limit:
            self._kept.clear()
        self._kept[ids] = (objects, value)  # the objects: their ids stay theirs while kept
        return value

    def clear(self) -> None:
        self._kept.clear()
