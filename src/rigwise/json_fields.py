"""``--fields a,b.c``: only some dotted paths of a plan's JSON (like ``gh --json fields``).

Which paths a plan's JSON can hold is read from its classes, not kept by hand: the fields and
properties ``rigwise.serialize`` writes (their types, from the annotations, say what lies
below them), the keys a class's own ``to_dict`` writes, and what the class's registered
finish adds (the P10-P90 ranges). A mapping (``power``, ``decode.parts``) may hold any key,
unless its class declares them (``json_inline_keys``: the step's parts); a list
(``memory.per_device``) is one value, not entered.

``Selection.of(plan)`` makes only the top-level parts of the plan's JSON that the paths are
in (``serialize.to_jsonable_part``), and runs the finish only where a path can hold what it
adds: each value is the one the whole JSON holds at that path, null where it holds none.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.errors import InputError
from rigwise.serialize import KeyTree, finish_adds, json_layout, to_jsonable, to_jsonable_part

_ANY = ".*"  # a path ending so: that key, and any key below it


@dataclass(frozen=True)
class FieldNames:
    """The dotted paths a class's JSON can hold; below an ``open`` one, any key is a path."""

    paths: frozenset[str]
    open: frozenset[str]

    def holds(self, path: str) -> bool:
        if path in self.paths:
            return True
        keys = path.split(".")
        return any(".".join(keys[:end]) in self.open for end in range(len(keys)))


def field_names(cls: type) -> FieldNames:
    """Every dotted path of the JSON of a ``cls`` instance (a plan class; the module that
    registers its finish imported)."""
    adds = finish_adds(cls)
    return _field_names(cls, tuple(adds))


@functools.cache
def _field_names(cls: type, adds: tuple[str, ...]) -> FieldNames:
    paths: set[str] = set()
    opened: set[str] = set()
    _walk(cls, "", None, paths, opened, (cls,))
    for added in adds:
        path = added.removesuffix(_ANY)
        paths.add(path)
        if added.endswith(_ANY):
            opened.add(path)
    return FieldNames(frozenset(paths), frozenset(opened))


def _walk(
    cls: type,
    prefix: str,
    renames: Mapping[str, str] | None,
    paths: set[str],
    opened: set[str],
    seen: tuple[type, ...],
) -> None:
    """Adds the paths below ``prefix`` of the JSON of a ``cls`` instance (``renames``: the
    JSON_INNER renames of its keys, from the field that holds it)."""
    for key, hint, inner, inlined in _children(cls):
        if inlined:  # a mapping whose items are keys of this object: the ones it declares
            declared = getattr(cls, "json_inline_keys", None)
            if declared is None:
                opened.add(prefix.removesuffix("."))
            paths.update(prefix + name for name in declared or ())
            continue
        path = prefix + (renames or {}).get(key, key)
        paths.add(path)
        inside = _inside(hint)
        if inside == "mapping":
            opened.add(path)
        elif isinstance(inside, type) and inside not in seen:
            _walk(inside, path + ".", inner, paths, opened, (*seen, inside))


def _children(cls: type) -> list[tuple[str, Any, Mapping[str, str] | None, bool]]:
    """(JSON key, its type or None, its JSON_INNER renames, inlined) of each key of a
    ``cls`` instance's JSON."""
    hints = _hints(cls)
    layout = json_layout(cls)
    if layout is None:  # the class writes its own JSON: its keys, from an instance
        keys = to_jsonable(_example(cls, hints))
        return [(key, hints.get(key), None, False) for key in keys]
    fields, properties = layout
    return [(key, hints.get(name), inner, inlined) for name, key, inlined, inner in fields] + [
        (name, None, None, False) for name in properties
    ]


def _hints(cls: type) -> dict[str, Any]:
    """The field types of ``cls``, the names ``rigwise.plans`` imports for type checkers
    only among them (a name missing here fails loudly: NameError)."""
    return typing.get_type_hints(cls, localns=_plans_names())


@functools.cache
def _plans_names() -> dict[str, Any]:
    """The names ``rigwise.plans``'s annotations use that it imports under TYPE_CHECKING (it
    imports nothing of rigwise at run time: the estimators import it)."""
    from rigwise.estimate.inference import Phase
    from rigwise.estimate.inference_memory import MemoryBreakdown
    from rigwise.estimate.serving import ServingEstimate
    from rigwise.estimate.serving_disagg import Role
    from rigwise.estimate.training_layout import Layout

    return {
        "Phase": Phase,
        "InferenceMemory": MemoryBreakdown,
        "ServingEstimate": ServingEstimate,
        "Role": Role,
        "Layout": Layout,
    }


def _inside(hint: Any) -> type | str | None:
    """What a value of type ``hint`` holds below it: a dataclass, "mapping" (any keys), or
    None (a number, a string, a list: a path ends there)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        found = [_inside(arg) for arg in typing.get_args(hint)]
        return next((f for f in found if f is not None), None)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "mapping"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    return None


def _example(cls: type, hints: dict[str, Any]) -> Any:
    """An instance of the dataclass ``cls`` with an empty value of each field's type."""
    values = {
        f.name: _empty(hints[f.name]) for f in dataclasses.fields(cls) if f.init
    }  # fmt: skip
    return cls(**values)


def _empty(hint: Any) -> Any:
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        return None if type(None) in args else _empty(args[0])
    if origin is typing.Literal:
        return typing.get_args(hint)[0]
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return {}
    if origin in (tuple, list, str, int, float, bool):
        return origin()
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _example(hint, _hints(hint))
    return None


@dataclass(frozen=True)
class Selection:
    """Some dotted paths of a plan's JSON: ``of(plan)`` is the object of their values."""

    paths: tuple[tuple[str, tuple[str, ...]], ...]  # (path, its keys)
    tree: KeyTree  # the keys of the plan's JSON to make: the paths', and what they are made of
    finish: bool  # whether a path can hold what the class's finish adds

    def wants(self, key: str) -> bool:
        """Whether a path is in the top-level key ``key``."""
        return key in self.tree

    def of(self, plan: object) -> dict[str, Any]:
        data = to_jsonable_part(plan, self.tree, self.finish)
        out: dict[str, Any] = {}
        for path, keys in self.paths:
            found: Any = data
            for key in keys:
                found = found.get(key) if type(found) is dict else None
            out[path] = found
        return out


def selection(text: str, cls: type, command: str) -> Selection:
    """The ``--fields`` of ``command`` for plans of class ``cls``: comma-separated dotted paths
    of its JSON. A path it cannot hold is bad input, named with the nearest ones."""
    names = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    known = field_names(cls)
    if not names:
        raise InputError(
            "--fields names no field.", hint=f"Give dotted paths, e.g. {_example_paths(cls)}."
        )
    for name in names:
        if not known.holds(name):
            close = difflib.get_close_matches(name, sorted(known.paths), n=5, cutoff=0.6)
            hint = f"Did you mean: {', '.join(close)}?" if close else None
            tops = ", ".join(sorted(p for p in known.paths if "." not in p))
            raise InputError(
                f"Unknown field {name!r} for {command}.",
                hint=hint or f"Fields are dotted paths of the plan's JSON, from: {tops}.",
            )
    adds = finish_adds(cls)
    near = [source for name in names for source in _sources(name, adds)]
    tree: dict[str, Any] = {}
    for name in [*names, *near]:
        _grow(tree, name.split("."))
    return Selection(
        paths=tuple((name, tuple(name.split("."))) for name in names),
        tree=tree,
        finish=bool(near),
    )


def _sources(path: str, adds: Mapping[str, tuple[str, ...]]) -> list[str]:
    """What the finish makes the keys it adds at or below (or above) ``path`` from: empty
    where the value at ``path`` holds none of them (no finish needed for it)."""
    found: list[str] = []
    for added, sources in adds.items():
        base = added.removesuffix(_ANY)
        if path == base or base.startswith(path + ".") or path.startswith(base + "."):
            found.extend(sources)
    return found


def _grow(tree: dict[str, Any], keys: list[str]) -> None:
    """Adds a path (its keys) to a key tree; a path ending at a key wants all of its value."""
    head, rest = keys[0], keys[1:]
    if head in tree and tree[head] is None:
        return  # all of it is wanted already
    if not rest:
        tree[head] = None
        return
    _grow(tree.setdefault(head, {}), rest)


def _example_paths(cls: type) -> str:
    known = sorted(field_names(cls).paths, key=lambda p: (p.count("."), p))
    return ",".join(known[:2] + [p for p in known if p.count(".") == 1][:1])


__all__ = ["FieldNames", "Selection", "field_names", "selection"]
