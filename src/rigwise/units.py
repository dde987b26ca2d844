"""SI units inside, parsing and formatting at the edges.

Inside rigwise every quantity is a plain number in SI base units (bytes, seconds, FLOP/s,
bytes/s, watts) and the field name carries the unit. This module turns the strings people type
("24GB", "200ms", "30d", "10GbE") into numbers and numbers back into short strings.
"""

from __future__ import annotations

import math
import re

from rigwise.errors import InputError, shown_value

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40

_BYTE_UNITS = {
    "b": 1.0,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": TiB,
    "k": KB,
    "m": MB,
    "g": GB,
    "t": TB,
}
_TIME_UNITS = {
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "min": 60.0,
    "m": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
    "w": 7 * 86400.0,
    "y": 365 * 86400.0,
}
_COUNT_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}

# an optional "+" as every number option takes it (--nodes +5); a "-" is read and refused
_NUMBER_UNIT = re.compile(r"^\s*\+?([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-zµ]*)\s*$", re.I)


def _split(text: str, what: str, example: str) -> tuple[float, str]:
    match = _NUMBER_UNIT.match(str(text)) if len(str(text)) <= 100 else None
    if not match:
        raise InputError(f"Cannot read {what} {text!r}.", hint=f"Write it like {example!r}.")
    return float(match.group(1)), match.group(2).lower()


def _checked(value: float | int, text: object, what: str, example: str) -> float:
    """A parsed quantity must be a finite number >= 0 (no 1e400, inf, nan or negatives)."""
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:57] + "..."
        raise InputError(
            f"{what.capitalize()} {shown} is not a finite, non-negative number.",
            hint=f"Write it like {example!r}.",
        )
    return number


def parse_bytes(text: str | float | int) -> float:
    """'24GB' -> 24e9, '16GiB' -> 17179869184.0, a bare number is bytes."""
    if isinstance(text, int | float):
        return _checked(text, text, "size", "24GB")
    value, unit = _split(text, "size", "24GB")
    if unit not in _BYTE_UNITS:  # text without a unit said "Unknown size unit ''"
        what = f"Unknown size unit {unit!r} in" if unit else "No size unit in"
        raise InputError(
            f"{what} {shown_value(text)}.", hint="Use B, KB, MB, GB, TB or GiB, e.g. '24GB'."
        )
    return _checked(value * _BYTE_UNITS[unit], text, "size", "24GB")


def parse_seconds(text: str | float | int) -> float:
    """'200ms' -> 0.2, '30d' -> 2592000.0, a bare number is seconds."""
    if isinstance(text, int | float):
        return _checked(text, text, "duration", "200ms")
    value, unit = _split(text, "duration", "200ms")
    if unit == "":
        return _checked(value, text, "duration", "200ms")
    if unit not in _TIME_UNITS:
        raise InputError(f"Unknown time unit {unit!r} in {text!r}.", hint="Use ms, s, min, h or d.")
    return _checked(value * _TIME_UNITS[unit], text, "duration", "200ms")


def parse_count(text: str | float | int) -> float:
    """'2T' -> 2e12, '15k' -> 15000.0 (token counts, parameter counts)."""
    if isinstance(text, int | float):
        return _checked(text, text, "count", "2T")
    value, unit = _split(text, "count", "2T")
    if unit not in _COUNT_SUFFIX:
        raise InputError(f"Unknown count suffix {unit!r} in {text!r}.", hint="Use k, M, B or T.")
    return _checked(value * _COUNT_SUFFIX[unit], text, "count", "2T")


def whole_count(text: str, example: str) -> int:
    """A count option's text as a whole number ('8k' -> 8000, '1.5k' -> 1500). Anything else
    ('max' where it is not allowed, '-3', '1.5') raises ValueError saying what to write, so the
    option's validator names the option and the value."""
    try:
        number = parse_count(text)
    except InputError:
        number = math.nan
    if not math.isfinite(number) or number != int(number):
        raise ValueError(f"must be a whole number, e.g. {example}")
    return int(number)


def _scaled(value: float, steps: list[tuple[float, str]], digits: int) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {steps[0][1]}"
    for index in range(len(steps) - 1, -1, -1):
        scale, label = steps[index]
        if abs(value) >= scale:
            text = f"{value / scale:.{digits}g}"
            if "e" in text and index + 1 < len(steps):  # 999.9 rounds to 1e+03: next unit up
                next_scale, next_label = steps[index + 1]
                return f"{value / next_scale:.{digits}g} {next_label}"
            return f"{text} {label}"
    scale, label = steps[0]
    return f"{value / scale:.{digits}g} {label}"


def format_bytes(value: float, digits: int = 3) -> str:
    """Decimal units, as GPU vendors quote memory: 24e9 -> '24 GB'."""
    return _scaled(value, [(1.0, "B"), (KB, "KB"), (MB, "MB"), (GB, "GB"), (TB, "TB")], digits)


def format_memory(value: float, digits: int = 3) -> str:
    """Device memory in the binary unit it is sold in: 24 * 2**30 -> '24 GiB'."""
    return _scaled(
        value, [(1.0, "B"), (KiB, "KiB"), (MiB, "MiB"), (GiB, "GiB"), (TiB, "TiB")], digits
    )


def format_rate(value: float, digits: int = 3) -> str:
    """Bytes per second: 1.008e12 -> '1.01 TB/s'."""
    return _scaled(
        value, [(1.0, "B/s"), (KB, "KB/s"), (MB, "MB/s"), (GB, "GB/s"), (TB, "TB/s")], digits
    )


def format_flops(value: float, digits: int = 3) -> str:
    """FLOP/s: 3.12e14 -> '312 TFLOP/s'."""
    steps = [(1.0, "FLOP/s"), (1e9, "GFLOP/s"), (1e12, "TFLOP/s"), (1e15, "PFLOP/s")]
    return _scaled(value, steps, digits)


def format_seconds(value: float) -> str:
    """Human durations: 0.0123 -> '12.3 ms', 93784 -> '1.09 d'."""
    if not math.isfinite(value):
        return "∞"
    steps = [(1e-6, "µs"), (1e-3, "ms"), (1.0, "s"), (60.0, "min"), (3600.0, "h"), (86400.0, "d")]
    return _scaled(value, steps, 3)


def format_count(value: float, digits: int = 3) -> str:
    """Parameter and token counts: 7.0e9 -> '7 B'."""
    return _scaled(value, [(1.0, ""), (1e3, "K"), (1e6, "M"), (1e9, "B"), (1e12, "T")], digits)
