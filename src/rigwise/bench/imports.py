"""``rigwise bench import FILE``: llama-bench JSON/CSV and Ollama ``--verbose`` timings into the
calibration store.

Formats: ``llama-bench -o json`` (a list of tests: ``n_prompt``, ``n_gen``, ``avg_ts``,
``model_type``, ``gpu_info``, ...; ggml-org/llama.cpp tools/llama-bench/README.md), the same
fields as ``-o csv``, and the timing block ``ollama run --verbose`` prints (``prompt eval
rate: 211.38 tokens/s``, ``eval rate: 66.22 tokens/s``; ollama docs). A decode rate sets
``decode_bandwidth_efficiency`` and a prompt rate ``prefill_compute_efficiency``: the factor
(searched in the physical range (0.05, 1.0]) at which the planner reproduces the measured rate
for that model, quant and device with llama.cpp. A rate no factor in that range explains is
refused with the reason, as in ``rigwise bench``.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rigwise.bench.calibration import EFFICIENCY_BOUNDS
from rigwise.errors import InputError, RigwiseError, shown_value
from rigwise.validate_input import load_json, plain_number, read_user_text

ENGINE = "llama.cpp"
_K_QUANT = re.compile(r"\b(Q\d_K)\s*-\s*(Small|Medium|Large)\b", re.IGNORECASE)
_PLAIN_QUANT = re.compile(r"\b(I?Q\d_[A-Z0-9_]+|F16|BF16|F32)\b", re.IGNORECASE)
_OLLAMA = re.compile(r"^\s*(prompt eval rate|eval rate|prompt eval count)\s*:\s*(\S+)", re.M)


@dataclass(frozen=True)
class Rate:
    """One measured rate: ``phase`` decode (tgN) or prefill (ppN) at ``tokens`` tokens."""

    phase: str
    tokens: int
    tokens_per_s: float
    device_hint: str = ""
    quant_hint: str = ""


@dataclass(frozen=True)
class Imported:
    source: str
    accelerator_id: str
    model: str
    quant: str
    factors: dict[str, float]
    refused: dict[str, str]  # key -> reason
    rates: tuple[Rate, ...]
    before: dict[str, float] = field(default_factory=dict)  # decode/prefill tok/s
    after: dict[str, float] = field(default_factory=dict)
    run_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "accelerator": self.accelerator_id,
            "model": self.model,
            "quant": self.quant,
            "factors": self.factors,
            "refused": self.refused,
            "rates": [r.__dict__ for r in self.rates],
            "plan_before": self.before,
            "plan_after": self.after,
            "run_id": self.run_id,
        }


def quant_from_model_type(text: str) -> str:
    """``llama 8B Q4_K - Medium`` -> ``Q4_K_M``; ``llama 7B Q4_0`` -> ``Q4_0``; '' if none."""
    found = _K_QUANT.search(text)
    if found:
        return f"{found.group(1).upper()}_{found.group(2)[0].upper()}"
    plain = _PLAIN_QUANT.search(text)
    return plain.group(1).upper() if plain else ""


_UNEDITED = "Give the file llama-bench wrote (`llama-bench -o json` or -o csv), unedited."


# Past any real run, so a number beyond is a damaged file: a rate no device reaches, and a
# test longer than the longest context (10M tokens; the planner plans up to 10^8 with the +1).
_MOST_TOKENS_PER_S = 1e9
_MOST_TOKENS = 10_000_000


def _number(value: object, where: str, whole: bool = False, hint: str = _UNEDITED) -> float:
    """A count or rate from the file: a finite number >= 0 (a whole one for token counts) up
    to the bound above, or an InputError naming where it is; a missing or empty value is 0."""
    try:
        number = plain_number(value) if value not in (None, "") else 0.0  # not '1_000', 'inf'
    except ValueError:
        number = math.nan
    shown = shown_value(str(value), 40)
    if not math.isfinite(number) or number < 0 or (whole and number != int(number)):
        kind = "a whole number >= 0" if whole else "a finite number >= 0"
        raise InputError(f"{where} = {shown} is not {kind}.", hint=hint)
    most = _MOST_TOKENS if whole else _MOST_TOKENS_PER_S
    if number > most:
        unit = "tokens" if whole else "tokens/s"
        raise InputError(f"{where} = {shown} is over {most:,.0f} {unit}, past any run.", hint=hint)
    return number


def _llama_bench_rows(rows: list[dict[str, Any]]) -> list[Rate]:
    rates = []
    for index, row in enumerate(rows, start=1):
        where = f"llama-bench test {index}"
        prompt = int(_number(row.get("n_prompt"), f"{where}: n_prompt", whole=True))
        gen = int(_number(row.get("n_gen"), f"{where}: n_gen", whole=True))
        speed = _number(row.get("avg_ts"), f"{where}: avg_ts")
        if speed <= 0 or (prompt == 0) == (gen == 0):
            continue  # pp+tg combined tests are skipped: no single phase
        rates.append(
            Rate(
                "decode" if gen else "prefill",
                gen or prompt,
                speed,
                str(row.get("gpu_info") or ""),
                quant_from_model_type(str(row.get("model_type") or "")),
            )
        )
    return rates


def parse(text: str) -> tuple[str, list[Rate]]:
    """(format, rates) of a llama-bench JSON/CSV or Ollama --verbose text."""
    stripped = text.strip()
    if stripped.startswith("["):
        data = load_json(stripped, "llama-bench JSON", allow_constants=True)  # nesting bounded
        return "llama-bench json", _llama_bench_rows([r for r in data if isinstance(r, dict)])
    if stripped.splitlines() and "avg_ts" in stripped.splitlines()[0]:
        return "llama-bench csv", _llama_bench_rows(list(csv.DictReader(io.StringIO(stripped))))
    ollama = "Save what `ollama run MODEL --verbose` prints after an answer, unedited."
    found = {
        name: _number(value, f"Ollama {name}", whole=name.endswith("count"), hint=ollama)
        for name, value in _OLLAMA.findall(stripped)
    }
    if "eval rate" in found or "prompt eval rate" in found:
        rates = []
        if found.get("prompt eval rate"):
            prompt = int(found.get("prompt eval count", 512))
            if prompt == 0:  # a rate of no tokens: the file was edited
                raise InputError("Ollama prompt eval count = '0' under a prompt rate.", hint=ollama)
            rates.append(Rate("prefill", prompt, found["prompt eval rate"]))
        if found.get("eval rate"):
            rates.append(Rate("decode", 128, found["eval rate"]))
        return "ollama --verbose", rates
    raise InputError(
        "Not a llama-bench JSON/CSV file or Ollama --verbose output.",
        hint="Use `llama-bench -o json` (or -o csv), or save what `ollama run MODEL --verbose` "
        "prints after an answer.",
    )


def _rate(plan_options: dict[str, Any], key: str, value: float, phase: str) -> float | None:
    from rigwise.api.infer import plan_inference

    plan = plan_inference(**plan_options, calibration={key: value})
    found = getattr(plan, phase)
    return float(found.tokens_per_s) if found is not None else None


def fit_factor(plan_options: dict[str, Any], rate: Rate) -> tuple[float | None, str]:
    """The efficiency at which the planner gives ``rate`` (bisection; rates rise with it)."""
    key = "decode_bandwidth_efficiency" if rate.phase == "decode" else "prefill_compute_efficiency"
    options = dict(plan_options)
    if rate.phase == "decode":
        options.update(prompt=1, gen=rate.tokens, context=rate.tokens + 1)
    else:
        options.update(prompt=rate.tokens, gen=1, context=rate.tokens + 1)
    low, high = EFFICIENCY_BOUNDS
    slowest, fastest = _rate(options, key, low, rate.phase), _rate(options, key, high, rate.phase)
    if slowest is None or fastest is None:
        return None, "the planner finds the model does not fit this device"
    if not slowest <= rate.tokens_per_s <= fastest:
        return None, (
            f"{rate.tokens_per_s:.1f} tok/s needs {key} outside ({low}, {high}] on this plan "
            f"({slowest:.1f}-{fastest:.1f} tok/s possible): wrong --on, --model or --quant?"
        )
    for _ in range(30):
        middle = (low + high) / 2
        speed = _rate(options, key, middle, rate.phase) or 0.0
        low, high = (middle, high) if speed < rate.tokens_per_s else (low, middle)
    return (low + high) / 2, ""


def import_file(
    path: Path, on: str | None, model: str, quant: str | None, save: bool = True
) -> Imported:
    """Read ``path``, fit the factors it measures, store them for this machine."""
    from rigwise.api.infer import plan_inference
    from rigwise.hardware import parse_node
    from rigwise.probe.matching import find_accelerator

    kind, rates = parse(read_user_text(path, "benchmark output file"))
    if not rates:
        raise InputError(f"{path.name}: no pp/tg rates found in this {kind} file.")
    hint = next((r.device_hint for r in rates if r.device_hint), "")
    found = find_accelerator(hint.split(",")[0]) if not on and hint else None
    on = on or getattr(found, "id", None)
    if not on:
        raise InputError(
            f"{path.name} does not name a device rigwise knows ({hint or 'none given'}).",
            hint="Pass --on with the device it ran on, e.g. --on rtx-4090.",
        )
    accelerator = parse_node(on).nodes[0].accelerator.id
    quant = quant or next((r.quant_hint for r in rates if r.quant_hint), "") or "Q4_K_M"
    options: dict[str, Any] = dict(model=model, on=on, quant=quant, engine=ENGINE, levers=False)
    factors: dict[str, float] = {}
    refused: dict[str, str] = {}
    for rate in rates:
        key = f"{rate.phase}"
        if key in factors or key in refused:
            continue  # the first test of each phase (llama-bench's default pp512 / tg128)
        try:
            value, why = fit_factor(options, rate)
        except RigwiseError as exc:
            value, why = None, str(exc)
        if value is None:
            refused[key] = why
        else:
            factors[key] = value
    named = {
        ("decode_bandwidth_efficiency" if k == "decode" else "prefill_compute_efficiency"): v
        for k, v in factors.items()
    }
    before_plan = plan_inference(**options).to_dict()
    after_plan = plan_inference(**options, calibration=named).to_dict() if named else before_plan
    result = Imported(
        source=f"{path.name} ({kind})",
        accelerator_id=accelerator,
        model=model,
        quant=quant,
        factors=named,
        refused=refused,
        rates=tuple(rates),
        before={p: before_plan[p]["tokens_per_s"] for p in ("prefill", "decode") if before_plan[p]},
        after={p: after_plan[p]["tokens_per_s"] for p in ("prefill", "decode") if after_plan[p]},
    )
    if save and named:
        result = _store(result, path)
    return result


def _store(result: Imported, path: Path) -> Imported:
    from dataclasses import replace

    from rigwise.bench import calibration

    run_id = calibration.save_run(
        calibration.current_fingerprint(),
        datetime.now(UTC).isoformat(timespec="seconds"),
        False,
        {
            "imported_from": path.name,
            "measurements": [
                {
                    "name": f"import_{r.phase}_{r.tokens}",
                    "device": result.accelerator_id,
                    "value": r.tokens_per_s,
                    "unit": "tokens/s",
                }
                for r in result.rates
            ],
        },
        {result.accelerator_id: result.factors},
    )
    return replace(result, run_id=run_id)
