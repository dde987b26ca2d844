"""`--fields a,b.c`: only those dotted paths of each plan's JSON, the values the whole JSON has.

``--fields`` makes only the parts of a plan's JSON its paths are in, runs the P10-P90 ranges'
finish on those parts only, and plans without the levers where ``levers`` is not asked for.
These tests take every path of a varied sweep (plans that fit and that do not, serving under
concurrency, a latency budget, a power cap, disaggregated pools, levers, bad lines) both ways
and compare them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_queries_batch import INFER_LINES, TIMINGS, TRAIN_LINES, _without_timings
from tests.cli.test_train import run

from rigwise.api.infer import InferencePlan, plan_inference
from rigwise.api.train import plan_training
from rigwise.json_fields import field_names, selection
from rigwise.plans import TrainingPlan
from rigwise.serialize import to_jsonable

MORE_INFER_LINES = [
    {"model": "llama-3.1-8b", "on": "rtx-4090", "power_limit": 300, "levers": False},
    {"model": "llama-3.1-8b", "on": "rtx-4090", "concurrency": 8, "latency_budget": "20ms"},
    {"model": "llama-3.1-70b", "on": "h100-sxm", "nodes": 2, "network": "ib-ndr"},
    {
        "model": "llama-3.1-70b",
        "on": "8x h100-sxm",
        "disagg": {"prefill": {"tp": 4, "workers": 1}, "decode": {"tp": 4, "workers": 1}},
        "levers": False,
    },
    {"model": "llama-3.1-8b", "on": "rtx-4090", "levers": "maybe"},  # bad levers: its error kept
]
INFER_FIELDS = (
    "verdict,fits,decode.tokens_per_s,decode.tokens_per_s_interval,decode.seconds_per_token,"
    "serving.tpot_s,serving.tpot_s_interval,memory.total_bytes,memory.total_bytes_interval,"
    "ttft_s_interval,latency.ttft_s_interval,power.decode_joules_per_token_interval,"
    "layout.disagg.decode.tp,prefill.parts.compute,intervals.decode.rows,workload"
)
TRAIN_FIELDS = (
    "fits,reason,tokens_per_s,tokens_per_s_interval,mfu_interval,step.seconds,"
    "step.seconds_interval,memory_per_gpu.total_bytes,memory_per_gpu.total_bytes_interval,"
    "layout.tp,search.generated,cost_usd_interval,intervals.speed.rows"
)


def _at(data: Any, path: str) -> Any:
    """The value at a dotted path of a JSON object, None where it has none."""
    for key in path.split("."):
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _queries(tmp_path: Path, command: str, lines: list[str], *extra: str) -> tuple[list[Any], int]:
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run([command, "--queries", str(path), *extra])
    return [json.loads(line) for line in out.splitlines()], code


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("command", "queries", "fields"),
    [
        ("infer", [*INFER_LINES, *MORE_INFER_LINES], INFER_FIELDS),
        ("infer", INFER_LINES, "levers,verdict"),  # the levers asked for: planned
        ("train", TRAIN_LINES, TRAIN_FIELDS),
    ],
)
def test_fields_are_the_paths_of_the_whole_answer(
    tmp_path: Path, command: str, queries: list[dict[str, Any]], fields: str
) -> None:
    lines = [json.dumps(q) for q in queries] + ["not json"]
    whole, code = _queries(tmp_path, command, lines)
    picked, picked_code = _queries(tmp_path, command, lines, "--fields", fields)
    assert picked_code == code
    paths = fields.split(",")
    for full, part in zip(_without_timings(whole), _without_timings(picked), strict=True):
        if "error" in full:
            assert part == full  # an error line keeps its shape
        else:
            assert list(part) == paths
            assert part == {path: _at(full, path) for path in paths}
    assert any(w.get("fits") is False for w in whole)  # a plan that does not fit: nulls
    ranged = [p for p in paths if p.endswith("_interval")]
    assert not ranged or any(p[ranged[0]] is not None for p in picked if "error" not in p)


def _every_path_alone(plans: list[Any], cls: type, command: str) -> int:
    """Each path of ``cls`` taken alone from each plan equals the whole JSON's value there."""
    checked = 0
    timings = {"search.seconds", "search.layouts_per_s"}  # wall-clock: not the plan's
    paths = sorted(field_names(cls).paths - timings)
    for plan in plans:
        whole = _without_timings(to_jsonable(plan))
        for path in paths:
            picked = selection(path, cls, command).of(plan)
            assert list(picked) == [path]
            value = picked[path]
            if path == "search" and isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in TIMINGS}
            assert value == _at(whole, path), path
            checked += _at(whole, path) is not None
    return checked


@pytest.mark.timeout(300)
def test_every_path_alone_is_the_whole_answers() -> None:
    queries = [*INFER_LINES[:11], *MORE_INFER_LINES[:4]]
    infer_plans = [plan_inference(**q) for q in queries]
    assert _every_path_alone(infer_plans, InferencePlan, "infer") > 1000
    train_plans = []
    for query in TRAIN_LINES[:-2]:
        train_plans.append(plan_training(**query))
    assert _every_path_alone(train_plans, TrainingPlan, "train") > 300


def _keys(data: Any, prefix: str = "") -> set[str]:
    """Every dotted key of a JSON object (lists not entered)."""
    if not isinstance(data, dict):
        return set()
    return {f"{prefix}{k}" for k in data} | {
        path for k, v in data.items() for path in _keys(v, f"{prefix}{k}.")
    }


def test_the_field_names_hold_every_key_of_the_json() -> None:
    """Read from the plan classes, not kept by hand: every key a plan's JSON has is a name."""
    infer = [plan_inference(**q) for q in (*INFER_LINES[:11], *MORE_INFER_LINES[:4])]
    known = field_names(InferencePlan)
    assert {k for p in infer for k in _keys(to_jsonable(p)) if not known.holds(k)} == set()
    train = [plan_training(**q) for q in TRAIN_LINES[:-2]]
    known = field_names(TrainingPlan)
    assert {k for p in train for k in _keys(to_jsonable(p)) if not known.holds(k)} == set()
    assert not known.holds("memory_per_gpu.total") and not known.holds("layout.tp.x")


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["infer", "llama-3.1-8b", "--on", "rtx-4090", "--json", "--fields", "decode.tokns"],
            "Unknown field 'decode.tokns' for infer.",
            "Did you mean: decode.tokens_per_s, decode.parts",
        ),
        (
            ["train", "llama-3.1-8b", "--on", "8x h100-sxm", "--json", "--fields", "tflops"],
            "Unknown field 'tflops' for train.",
            "Fields are dotted paths of the plan's JSON, from: accelerator, alternatives",
        ),
        (
            ["infer", "llama-3.1-8b", "--on", "rtx-4090", "--fields", "verdict"],
            "--fields picks from the plan's JSON: give --json too (or --queries FILE).",
            None,
        ),
        (  # before: "Unknown field 'x' for infer." listing a plan's fields, which --search
            # does not print ('best' was refused the same way)
            ["infer", "llama-3.1-8b", "--on", "8x h100-sxm", "--search", "--json", "--fields", "x"],
            "--fields picks from one plan's JSON: not with --search.",
            None,
        ),
        (
            [
                "infer",
                "llama-3.1-8b",
                "--on",
                "8x h100-sxm",
                "--search",
                "--json",
                "--fields",
                "verdict",
            ],
            "--fields picks from one plan's JSON: not with --search.",
            None,
        ),
    ],
)
def test_bad_fields_are_bad_input(args: list[str], message: str, hint: str | None) -> None:
    code, out = run(args)
    assert code == 2
    if "--json" not in args:  # the error is on stderr
        return
    error = json.loads(out)
    assert error["error"] == message
    assert (error["hint"] or "").startswith(hint or "")


def test_one_plan_with_fields(tmp_path: Path) -> None:
    """A single plan's --json --fields: the same values as its whole JSON, and its exit code."""
    args = ["infer", "llama-3.1-70b", "--on", "rtx-4090", "--json"]
    code, out = run(args)
    picked_code, picked = run([*args, "--fields", "verdict,memory.total_bytes,serving.tpot_s"])
    whole = json.loads(out)
    assert code == picked_code == 1
    assert json.loads(picked) == {
        "verdict": "does not fit",
        "memory.total_bytes": whole["memory"]["total_bytes"],
        "serving.tpot_s": None,
    }
    args = ["train", "llama-3.1-8b", "--on", "8x h100-sxm", "--global-batch", "64", "--json"]
    code, out = run(args)
    picked_code, picked = run([*args, "--fields", "tokens_per_s_interval,layout.dp"])
    whole = json.loads(out)
    assert code == picked_code == 0
    assert json.loads(picked) == {
        "tokens_per_s_interval": whole["tokens_per_s_interval"],
        "layout.dp": whole["layout"]["dp"],
    }


def test_a_step_part_is_a_field_and_a_misspelt_one_is_bad_input() -> None:
    # before: 'step.secnds' was any key of an open mapping: null, exit 0
    from rigwise.json_fields import field_names
    from rigwise.plans import STEP_PARTS, TrainingPlan

    known = field_names(TrainingPlan)
    assert all(known.holds(f"step.{part}") for part in STEP_PARTS)
    assert not known.holds("step.secnds")
    assert known.holds("step.seconds") and known.holds("step.microbatches")


@pytest.mark.parametrize(("command", "cls"), [("infer", InferencePlan), ("train", TrainingPlan)])
def test_the_help_example_of_fields_is_fields_of_that_command(command: str, cls: type) -> None:
    """``train --help`` gave infer's example (verdict,decode.tokens_per_s,memory.total_bytes):
    each of its paths is unknown to train (exit 2)."""
    import re

    import click

    from rigwise.cli import cli

    found = cli.get_command(click.Context(cli), command)
    assert found is not None
    option = next(p for p in found.params if p.name == "fields")
    example = re.search(r"e\.g\. (\S+)\.", " ".join((option.help or "").split()))
    assert example is not None
    paths = example.group(1).split(",")
    assert len(paths) >= 2 and all(field_names(cls).holds(path) for path in paths), paths
    selection(example.group(1), cls, command)  # no InputError
