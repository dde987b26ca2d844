"""Resolve the names people type to catalog ids.

``normalize`` folds case, punctuation and vendor words so that ``RTX 4090``, ``rtx4090``,
``NVIDIA GeForce RTX 4090`` and ``rtx-4090`` meet on one key. ``resolve`` looks a name up in an
alias table and raises ``UnknownNameError`` with the three closest ids when it is not there.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from rigwise.errors import UnknownNameError, closest

_NOISE_WORDS = ("nvidia", "geforce", "amd", "radeon", "intel", "apple", "google", "tesla")
_NON_ALNUM = re.compile(r"[^a-z0-9.]+")
# All vendor words in one regex pass: the name tables index thousands of names at start-up.
VENDOR_WORDS = re.compile(r"\b(?:" + "|".join(_NOISE_WORDS) + r")\b")


@functools.lru_cache(maxsize=8192)
def normalize(name: str, *, drop_vendor_words: bool = True) -> str:
    """The one lookup key of every name table (hardware, parts, models, quantisations): lower
    case, alphanumerics only, vendor words dropped."""
    text = name.lower().replace("+", "plus")
    if drop_vendor_words:
        text = VENDOR_WORDS.sub(" ", text)
    return _NON_ALNUM.sub("", text).replace(".", "")


def resolve(name: str, aliases: Mapping[str, str], kind: str, ids: Iterable[str]) -> str:
    """The id that ``name`` stands for; ``aliases`` maps normalized keys to ids."""
    key = normalize(name)
    if key in aliases:
        return aliases[key]
    id_list = list(ids)
    by_key = {normalize(i): i for i in id_list}
    suggestions = closest(key, list(by_key), n=3)
    raise UnknownNameError(kind, name, [by_key[s] for s in suggestions])
