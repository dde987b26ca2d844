"""Name tables: what people type (ids, names, aliases, nvidia-smi names) -> catalog ids.

Three key tiers, most specific first: decimal points kept ('2.5GbE' is not '25GbE'), the shared
normal form of ``catalog.names.normalize``, and a loose form in which '76-Core GPU' and '76c'
meet. An exact id always wins; other keys keep file order (first row first).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rigwise.catalog.names import VENDOR_WORDS, normalize
from rigwise.errors import UnknownNameError, closest

_CORE_WORDS = re.compile(r"(\d+)\s*-?\s*(?:cores?|c)\b")
_FILLER_WORDS = re.compile(r"\b(?:gpu|graphics|edition|generation|unified|memory)\b")


def loose_key(name: str) -> str:
    """'M2 Ultra 76-Core GPU 192GB' and 'm2-ultra-76c-192gb' meet on one key."""
    text = _CORE_WORDS.sub(r"\1c", name.lower())
    return normalize(_FILLER_WORDS.sub(" ", text))


def dotted_key(name: str) -> str:
    """Like ``normalize`` but a decimal point survives: '2.5GbE' is not '25GbE'."""
    return normalize(_DECIMAL.sub(r"\1dot\2", name))


_DECIMAL = re.compile(r"(\d)\.(\d)")
_WORD = re.compile(r"[a-z0-9.]+")


@functools.lru_cache(maxsize=1)
def _rewrites() -> tuple[tuple[re.Pattern[str], str], ...]:
    from rigwise.catalog.loader import read_csv

    return tuple(
        (re.compile(row["pattern"], re.IGNORECASE), row["replacement"])
        for row in read_csv("name_rewrites.csv")
    )


def rewrite(name: str) -> str:
    """The name without the product-line and edition words of name_rewrites.csv."""
    for pattern, replacement in _rewrites():
        name = pattern.sub(replacement, name)
    return " ".join(name.split())


def word_key(name: str) -> str:
    """The name's words in any order: 'A100 80GB SXM' and 'A100 SXM 80GB' meet."""
    text = VENDOR_WORDS.sub(" ", name.lower().replace("+", "plus"))
    return " ".join(sorted(set(_WORD.findall(text.replace("-", " ")))))


# Most specific first: decimal points kept, then the shared normal form, then the loose form.
KEY_TIERS: tuple[Callable[[str], str], ...] = (dotted_key, normalize, loose_key)

T = TypeVar("T")


@dataclass(frozen=True)
class NameTable(Generic[T]):
    """Items by id plus, per key tier, keys -> ids (in precedence order)."""

    kind: str
    items: tuple[T, ...]
    by_id: Mapping[str, T]
    tiers: tuple[Mapping[str, tuple[str, ...]], ...]
    words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # word_key -> ids

    @property
    def keys(self) -> Mapping[str, tuple[str, ...]]:
        """The normal-form keys (``catalog.names.normalize``)."""
        return self.tiers[1]

    def ids_for(self, name: str) -> tuple[str, ...]:
        found = self._exact(name)
        if found:
            return found
        typed = rewrite(name)  # 'MacBook Pro M3 Max 128GB' -> 'M3 Max 128GB'
        if typed != name:
            found = self._exact(typed)
        return found or self.words.get(word_key(typed), ())

    def _exact(self, name: str) -> tuple[str, ...]:
        # A decimal point matters ('2.5GbE' is not '25GbE'): such a name must match with it.
        tiers = zip(KEY_TIERS, self.tiers, strict=True)
        for key_of, keys in list(tiers)[:1] if _DECIMAL.search(name) else tiers:
            key = key_of(name)
            if key in keys:
                return keys[key]
        return ()

    def get(self, name: str) -> T:
        ids = self.ids_for(name)
        if not ids:
            raise self.unknown(name)
        return self.by_id[ids[0]]

    def unknown(self, name: str) -> UnknownNameError:
        by_key = {normalize(i): i for i in self.by_id}
        return UnknownNameError(
            self.kind, name, [by_key[k] for k in closest(normalize(name), by_key)]
        )


def _tier(
    key_of: Callable[[str], str],
    items: tuple[T, ...],
    key_names: Callable[[T], Iterable[str]],
    id_of: Callable[[T], str],
) -> dict[str, tuple[str, ...]]:
    keys: dict[str, list[str]] = {}
    for item in items:
        for name in key_names(item):
            ids = keys.setdefault(key_of(name), [])
            if id_of(item) not in ids:
                ids.append(id_of(item))
    for item in items:  # an exact id names exactly one item
        keys[key_of(id_of(item))] = [id_of(item)]
    return {key: tuple(ids) for key, ids in keys.items() if key}


def build_table(
    kind: str,
    items: Iterable[T],
    key_names: Callable[[T], Iterable[str]],
    id_of: Callable[[T], str],
) -> NameTable[T]:
    """Exact ids win over every other key; other keys keep file order (first row first)."""
    item_tuple = tuple(items)
    return NameTable(
        kind=kind,
        items=item_tuple,
        by_id={id_of(item): item for item in item_tuple},
        tiers=tuple(_tier(key_of, item_tuple, key_names, id_of) for key_of in KEY_TIERS),
        words=_tier(lambda n: word_key(rewrite(n)), item_tuple, key_names, id_of),
    )
