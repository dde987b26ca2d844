"""The plant's physics constants and the controller's limits, from ``data/plant.yaml``.

Every row carries a ``source``; code asks for values by key and never writes a number in.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from rigwise.errors import CatalogError, InputError, shown_value
from rigwise.validate_input import load_yaml, plain_number, read_user_text


@dataclass(frozen=True)
class Constant:
    key: str
    value: float
    unit: str
    source: str


@dataclass(frozen=True)
class Constants:
    """Keyed constants; ``c["exchange_volume_ml"]`` returns the float."""

    rows: tuple[Constant, ...]
    version: int
    origin: str
    _values: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._values.update({row.key: row.value for row in self.rows})

    def __getitem__(self, key: str) -> float:
        try:
            return self._values[key]
        except KeyError:
            raise CatalogError(f"O.I. constant {key!r} is missing from {self.origin}.") from None

    def keys(self) -> list[str]:
        return [row.key for row in self.rows]

    def with_overrides(self, **values: float) -> Constants:
        """A copy with some values replaced (tests, `simulate` options)."""
        unknown = set(values) - set(self.keys())
        if unknown:
            raise InputError(f"Unknown O.I. constant(s): {', '.join(sorted(unknown))}.")
        rows = tuple(
            Constant(r.key, float(values[r.key]), r.unit, "override") if r.key in values else r
            for r in self.rows
        )
        return Constants(rows, self.version, self.origin + " (overridden)")

    def digest(self) -> str:
        """A short hash of the values: part of every result's provenance."""
        blob = json.dumps({r.key: r.value for r in self.rows}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


# Divisors and rates of the model: zero divides by zero or never moves ('exchange_interval_s: 0'
# was a ZeroDivisionError in the health index).
POSITIVE = ("exchange_interval_s", "thermal_time_constant_s", "pump_flow_ml_per_s")
_FIX = "Fix the row in your copy of plant.yaml: every value is a finite number >= 0."
# Orders the controller and its interlocks rely on, (lower, higher, may they be equal), each
# checked where a file has both keys: a lab's copy breaking one switched an interlock off
# ('temperature_heater_off_c: 1000' never cut the heater; 'ph_band_low' above 'ph_band_high'
# alarmed on every reading).
ORDERED = (
    ("temperature_band_low_c", "temperature_setpoint_c", False),
    ("temperature_setpoint_c", "temperature_band_high_c", False),
    ("temperature_band_high_c", "temperature_heater_off_c", True),  # tier 1 <= tier 2
    ("temperature_heater_off_c", "temperature_safe_state_c", True),  # tier 2 <= tier 3
    ("ph_band_low", "ph_band_high", False),
    ("osmolality_band_low_mosm_kg", "osmolality_band_high_mosm_kg", False),
    ("housing_setpoint_ml", "housing_high_level_ml", False),
    ("housing_high_level_ml", "housing_capacity_ml", True),
    ("reservoir_min_ml", "reservoir_initial_ml", False),
    ("pump_flow_plausible_min_ml_per_s", "pump_flow_ml_per_s", True),
    ("pump_flow_ml_per_s", "pump_flow_plausible_max_ml_per_s", True),
    ("glucose_low_mm", "fresh_glucose_mm", False),
    ("grade_a_max_lactate_mm", "grade_b_max_lactate_mm", True),
)
SHARES = ("under_delivery_ratio", "recycle_max_ratio", "heater_readback_tolerance")  # 0 to 1
# The safe state's own cap: the top of the heat-shock range its row cites (39-42 degC).
SAFE_STATE_MAX_C = 42.0


def _check_orders(values: dict[str, float], origin: str) -> None:
    for low, high, equal in ORDERED:
        if low in values and high in values:
            a, b = values[low], values[high]
            if a > b or (a == b and not equal):
                order = "<=" if equal else "<"
                raise CatalogError(
                    f"{origin}: {low} = {a:g} and {high} = {b:g}: need {low} {order} {high}.",
                    hint="Fix the rows in your copy of plant.yaml (the interlocks rely on it).",
                )
    for key in SHARES:
        if values.get(key, 0.0) > 1:
            raise CatalogError(f"{origin}: {key} = {values[key]:g} is a share: 0 to 1.", hint=_FIX)
    safe = values.get("temperature_safe_state_c", 0.0)
    if safe > SAFE_STATE_MAX_C:
        raise CatalogError(
            f"{origin}: temperature_safe_state_c = {safe:g} degC is past {SAFE_STATE_MAX_C:g}"
            " degC, where heat shock harms the culture.",
            hint=f"Keep the safe state at or below {SAFE_STATE_MAX_C:g} degC.",
        )


def _parse(raw: Any, origin: str) -> Constants:
    if not isinstance(raw, dict) or not isinstance(raw.get("rows"), list):
        raise CatalogError(f"{origin}: expected a mapping with a `rows` list.")
    rows = [_row(item, origin) for item in raw["rows"]]
    seen: set[str] = set()
    for row in rows:
        if row.key in seen:
            raise CatalogError(f"{origin}: key {row.key!r} appears twice.", hint=_FIX)
        seen.add(row.key)
        if row.value < 0 or (row.key in POSITIVE and row.value == 0):
            least = "> 0" if row.key in POSITIVE else ">= 0"
            raise CatalogError(f"{origin}: {row.key} = {row.value:g} must be {least}.", hint=_FIX)
    _check_orders({row.key: row.value for row in rows}, origin)
    version = raw.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int):
        raise CatalogError(
            f"{origin}: version {shown_value(version)} is not a whole number.", hint="Write 1."
        )
    return Constants(tuple(rows), version, origin)


def _row(item: Any, origin: str) -> Constant:
    if not isinstance(item, dict) or not item.get("source"):
        raise CatalogError(f"{origin}: row {item!r} needs key, value, unit and a source.")
    try:
        return Constant(
            str(item["key"]),
            plain_number(item["value"]),  # float() took true, '1_000', '.inf'
            str(item["unit"]),
            str(item["source"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{origin}: bad row {item!r} ({exc}).") from exc


def load_constants(path: str | Path | None = None) -> Constants:
    """The packaged constants, or a lab's own copy of the file."""
    if path is None:
        text = resources.files("rigwise.oi").joinpath("data", "plant.yaml").read_text()
        return _parse(yaml.safe_load(text), "rigwise/oi/data/plant.yaml")
    file = Path(path)
    if not file.exists():  # a device or directory: read_user_text says which
        raise InputError(
            f"Constants file {str(file)!r} not found.",
            hint="Copy src/rigwise/oi/data/plant.yaml and pass its path.",
        )
    return _parse(load_yaml(read_user_text(file, "constants file"), str(file)), str(file))
