"""Framework presets: what torchtune, Unsloth, HF Trainer, ... do by default (from data).

``framework_settings(name, method, gpus)`` returns the options a framework fixes for a run of
``method`` on ``gpus`` GPUs, read from ``catalog/data/training_frameworks.yaml``; explicit
options override them (the API merges the two).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rigwise.catalog.loader import read_yaml
from rigwise.catalog.names import normalize
from rigwise.errors import CatalogError, InputError, closest

FILE = "training_frameworks.yaml"
_SCOPES = ("settings", "single_gpu", "multi_gpu", "methods")


def _table() -> Mapping[str, Any]:
    data = read_yaml(FILE)
    if not isinstance(data, Mapping):
        raise CatalogError(f"{FILE}: expected a mapping of framework names.")
    return data


def frameworks() -> tuple[str, ...]:
    """The framework names the catalog knows."""
    return tuple(_table())


def _entry(name: str) -> Mapping[str, Any]:
    table = _table()
    found_name = {normalize(key): key for key in table}.get(
        normalize(name)
    )  # 'Unsloth', 'HF Trainer'
    if found_name is None:
        hint = ", ".join(closest(name, list(table))) or ", ".join(table)
        raise InputError(f"Unknown framework {name!r}.", hint=f"Use one of: {hint}.")
    entry = table[found_name]
    for key in ("source", "retrieved", "settings"):
        if key not in entry:
            raise CatalogError(f"{FILE}: framework {name!r} has no {key!r}.")
    found: Mapping[str, Any] = entry
    return found


def _layer(block: Mapping[str, Any] | None, gpus: int) -> dict[str, Any]:
    if not block:
        return {}
    out = {k: v for k, v in block.items() if k not in _SCOPES}
    out.update(block.get("settings") or {})
    out.update(block.get("multi_gpu" if gpus > 1 else "single_gpu") or {})
    return out


def framework_settings(name: str, method: str, gpus: int) -> dict[str, Any]:
    """Options ``name`` fixes for ``method`` on ``gpus`` GPUs (later scopes win)."""
    entry = _entry(name)
    settings = _layer({k: entry[k] for k in _SCOPES if k in entry and k != "methods"}, gpus)
    settings.update(_layer((entry.get("methods") or {}).get(method), gpus))
    if "lora_targets" in settings:
        settings["lora_targets"] = tuple(settings["lora_targets"])
    return settings


def framework_source(name: str) -> str:
    """Where the preset's facts come from, with the date they were read."""
    entry = _entry(name)
    return f"{entry['name']}: {entry['source']} (retrieved {entry['retrieved']})"
