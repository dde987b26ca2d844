"""P10-P90 ranges of a build option's speed-derived numbers (``rigwise build``).

The planners range their own numbers (``estimate/plan_intervals.py``); an option carries the
range of its decode speed or training time, scaled with it where the option changed the
planner's figure (a power limit), and from it the range of everything computed from that
speed: the cost per million tokens, a rented training job's cost, and against an API the
monthly token value and the payback time. Prices and power draw are inputs, not predictions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rigwise.design.options import BuildOption
    from rigwise.design.planner import Estimate


def _scaled(bounds: list[float] | None, value: float | None, base: float | None) -> Any:
    """``bounds`` of ``base`` moved with ``value`` (same relative width)."""
    if not bounds or value is None or not base:
        return None
    return [b * value / base for b in bounds]


def with_ranges(option: BuildOption, estimate: Estimate) -> BuildOption:
    """``option`` with the ranges of the planner's ``estimate`` behind it."""
    from dataclasses import replace

    note = (estimate.detail or {}).get("interval_note")
    return replace(
        option,
        decode_tokens_per_s_interval=_scaled(
            estimate.decode_tokens_per_s_interval,
            option.decode_tokens_per_s,
            estimate.decode_tokens_per_s,
        ),
        time_to_train_s_interval=_scaled(
            estimate.time_to_train_s_interval, option.time_to_train_s, estimate.time_to_train_s
        ),
        interval_note=note if isinstance(note, str) else None,
    )


def _inverse(value: float | None, rate: float | None, bounds: list[float] | None) -> Any:
    """The range of ``value`` proportional to 1 / ``rate`` (cost per token)."""
    if value is None or not rate or not bounds or not all(bounds):
        return None
    return [value * rate / bounds[1], value * rate / bounds[0]]


def option_ranges(option: BuildOption) -> dict[str, Any]:
    """The ``*_interval`` keys of ``BuildOption.to_dict``."""
    decode = option.decode_tokens_per_s
    ranged = option.decode_tokens_per_s_interval
    per_million = _inverse(option.usd_per_million_tokens, decode, ranged)
    train, train_ranged = option.time_to_train_s, option.time_to_train_s_interval
    tco = None
    if option.kind == "rent" and train and train_ranged:  # a rented job costs its hours
        tco = [option.tco_usd * b / train for b in train_ranged]
    return {
        "decode_tokens_per_s_interval": ranged,
        "time_to_train_s_interval": train_ranged,
        "usd_per_million_tokens_interval": per_million,
        "tco_usd_interval": tco,
        "interval_note": option.interval_note,
    }


def api_ranges(
    option: BuildOption, api_month: float | None, electricity_month: float
) -> dict[str, Any]:
    """Ranges of the API comparison: the tokens a month are worth (with decode speed) and the
    months to pay the purchase back (null upper bound: never, at the P10 speed)."""
    ranged = option.decode_tokens_per_s_interval
    if api_month is None or not ranged or not option.decode_tokens_per_s:
        return {"api_usd_per_month_interval": None, "api_break_even_months_interval": None}
    month = [api_month * b / option.decode_tokens_per_s for b in ranged]
    margins = [m - electricity_month for m in month]
    months = [
        option.purchase_usd / margins[1] if margins[1] > 0 else None,
        option.purchase_usd / margins[0] if margins[0] > 0 else None,
    ]
    return {"api_usd_per_month_interval": month, "api_break_even_months_interval": months}
