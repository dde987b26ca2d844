"""`--queries` answers each line exactly as planning that query alone does.

The queries runner reuses work across lines: inference plans share a cached setup (model,
devices, engine, layout: ``api/infer.py``), training plans that share a model, hardware and
workload have their layouts scored together as arrays and share a fall-back search
(``api/train_batch.py``). These tests plan varied files both ways (devices, formats, sizes,
batches, layouts that break a rule or do not fit, bad lines) and compare the JSON to the float.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.cli.test_train import run

from rigwise.cli import cli
from rigwise.cli.queries import _answer, _outcome, _parse

INFER_LINES = [
    {"model": "llama-3.1-8b", "on": "rtx-4090", "levers": False},
    {"model": "llama-3.1-8b", "on": "rtx-4090", "prompt": 4096, "gen": 1, "levers": False},
    {"model": "llama-3.1-8b", "on": "rtx-4090", "quant": "Q8_0", "context": 32768},
    {"model": "llama-3.1-70b", "on": "rtx-4090", "levers": False},  # does not fit: exit 1
    {"model": "llama-3.1-70b", "on": "rtx-4090", "offload": "auto", "levers": False},
    {"model": "llama-3.1-70b", "on": "8x h100-sxm", "concurrency": 64, "levers": False},
    {"model": "llama-3.1-70b", "on": "8x h100-sxm", "concurrency": "max", "levers": False},
    {"model": "qwen2.5-7b", "on": "2x rtx-3090", "prompt": "8k", "kv_quant": "q8_0"},
    {"model": "mixtral-8x7b", "on": "h100-sxm", "quant": "FP8", "max_batch": 8, "levers": False},
    {"model": "mistral-7b", "on": "m3-max-40c-128gb", "latency_budget": "200ms"},
    {"model": "llama-3.1-8b", "on": "h100-sxm", "engine": "vllm", "concurrency": 32},
    {"model": "llama-3.1-8b", "on": "rtx-4090", "context": 10},  # context < prompt: exit 2
    {"model": "llama-3.1-8b", "on": "rtx-4900"},  # unknown GPU: exit 2
    {"model": "llama-3.1-8b", "on": "rtx-4090", "bogus": 1},  # unknown key: exit 2
    {"model": "llama-3.1-8b", "on": "rtx-4090", "context": "max", "levers": False},
]

TRAIN_LINES = [
    *(
        {"model": "llama-3.1-8b", "on": "8x h100-sxm", "global_batch": 64, "zero": z, "tp": tp}
        for z in (0, 1, 3)
        for tp in (1, 2, 3)  # tp 3 divides no head count: a broken layout, not a crash
    ),
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "global_batch": 64, "micro_batch": 4},
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "global_batch": 8},  # searched instead
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "global_batch": 8, "seq": 4096},
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "global_batch": 8, "tokens": 1e9},
    {"model": "llama-3.1-70b", "on": "rtx-4090", "method": "qlora"},
    {"model": "llama-3.1-70b", "on": "rtx-4090", "method": "lora"},  # does not fit: exit 1
    {"model": "qwen2.5-7b", "on": "4x h100-sxm", "global_batch": 32, "recompute": "full"},
    {"model": "llama-3.1-8b", "on": "rtx-4090", "method": "full", "framework": "torchtune"},
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "search": True, "global_batch": 16},
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "seq": "max", "global_batch": 8},
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "epochs": 2},  # needs dataset_tokens: exit 2
    {"model": "llama-3.1-8b", "on": "8x h100-sxm", "zero": 7},  # bad value: exit 2
]

# Wall-clock seconds a search took, and layouts per second from it: not the plan.
TIMINGS = ("seconds", "layouts_per_s")


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        search = value.get("search")
        kept = {k: _without_timings(v) for k, v in value.items() if k != "search"}
        if isinstance(search, dict):
            kept["search"] = {k: v for k, v in search.items() if k not in TIMINGS}
        return kept
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _alone(command: str, lines: list[str]) -> tuple[list[Any], int]:
    """Each line planned by itself, with the infer setup cache emptied before each."""
    from rigwise.api import infer
    from rigwise.api.infer import plan_inference
    from rigwise.api.train import plan_training

    plan = plan_inference if command == "infer" else plan_training
    answers, worst = [], 0
    for number, line in enumerate(lines, start=1):
        infer._SETUPS.clear()
        query = _parse(number, line)
        outcome = _outcome(plan, query) if isinstance(query, dict) else query
        result, code = _answer(number, outcome)
        answers.append(result)
        worst = max(worst, code)
    return answers, worst


def _queries(tmp_path: Path, command: str, lines: list[str]) -> tuple[list[Any], int]:
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run([command, "--queries", str(path)])
    return [json.loads(line) for line in out.splitlines()], code


@pytest.mark.timeout(300)
def test_infer_queries_answer_as_each_plan_alone(tmp_path: Path) -> None:
    lines = [json.dumps(q) for q in INFER_LINES] + ["not json", "[1, 2]"]
    together, code = _queries(tmp_path, "infer", lines)
    alone, worst = _alone("infer", lines)
    assert together == alone
    assert code == worst == 2
    assert sum("error" in a for a in alone) == 5 and any(a.get("fits") is False for a in alone)


@pytest.mark.timeout(300)
def test_train_queries_answer_as_each_plan_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigwise.api import train_batch, train_searches

    scored: dict[str, list[int]] = {"plans": [], "searches": []}

    def counted(module: Any, name: str) -> None:
        evaluate = module.evaluate

        def count(*args: Any) -> Any:
            scored[name].append(len(args[2]))  # layouts scored in one call
            return evaluate(*args)

        monkeypatch.setattr(module, "evaluate", count)

    counted(train_batch, "plans")
    counted(train_searches, "searches")
    lines = [json.dumps(q) for q in TRAIN_LINES] + ["oops"]
    together, code = _queries(tmp_path, "train", lines)
    alone, worst = _alone("train", lines)
    assert _without_timings(together) == _without_timings(alone)
    assert code == worst == 2
    # the nine zero x tp layouts, the micro-batch 4 one and the three of global batch 8 (one
    # of seq 4096, one with tokens) share a workload but its sizes: one group, whose ten
    # layouts that break no rule are scored in one call; the searches those that do not fit
    # fall back to (each its own fixed flags and sizes) are scored together in one call too
    assert max(scored["plans"]) == 10
    fell_back = [
        answer["search"]["evaluated"]
        for query, answer in zip(TRAIN_LINES, together, strict=False)
        if query["on"] == "8x h100-sxm"
        and "search" in answer
        and query.get("seq") != "max"
        and not query.get("search")
    ]
    assert len(fell_back) > 3 and scored["searches"][0] == sum(fell_back)
    broken = [a for a in alone if "tp does not divide" in a.get("reason", "")]
    assert len(broken) == 3 and sum("error" in a for a in alone) == 3


def _count_plans(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The options of every inference plan made from now on (``api.infer._plan`` counted)."""
    from rigwise.api import infer

    planned: list[Any] = []
    plan = infer._plan

    def counted(opts: Any) -> Any:
        planned.append(opts)
        return plan(opts)

    monkeypatch.setattr(infer, "_plan", counted)
    return planned


def test_repeated_lines_are_planned_once_and_answered_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line whose text came before is answered from that line's plan (the same JSON), and a
    repeated bad line still names its own line number."""
    planned = _count_plans(monkeypatch)
    good = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090", "levers": False})
    other = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090", "gen": 64, "levers": False})
    bad = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4900"})
    answers, code = _queries(tmp_path, "infer", [good, bad, good, other, bad, good])
    assert len(planned) == 3  # good, bad (its error is raised while planning) and other
    assert answers[0] == answers[2] == answers[5] != answers[3]
    assert answers[1]["error"].startswith("line 2:") and answers[4]["error"].startswith("line 5:")
    assert code == 2


def test_the_kept_answers_are_bounded_by_their_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeated lines are answered from kept answers until those hold MEMO_CHARS characters
    (65,536 full answers of ~4 KB held ~260 MB); then they are dropped and planned anew."""
    from rigwise.cli import queries as _common

    planned = _count_plans(monkeypatch)
    monkeypatch.setattr(_common, "QUERY_CHUNK", 1)  # one line a chunk: the bound checked each
    good = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090", "levers": False})
    answers, _ = _queries(tmp_path, "infer", [good] * 3)
    assert len(planned) == 1 and answers[0] == answers[2]
    monkeypatch.setattr(_common, "MEMO_CHARS", len(good))  # one answer is more than that
    answers, _ = _queries(tmp_path, "infer", [good] * 3)
    assert len(planned) == 1 + 3 and answers[0] == answers[2]


@pytest.mark.parametrize(
    ("command", "extra", "named"),
    [
        ("infer", ["--search"], "--search"),  # before: each line planned, nothing searched
        ("infer", ["--tp", "2"], "--tp"),  # before: ignored (tp 1 planned on one H100)
        ("infer", ["llama-3.1-8b"], "MODEL"),
        ("train", ["--seq", "4096"], "--seq"),  # before: each line's own (default) seq
    ],
)
def test_options_beside_queries_are_bad_input(
    tmp_path: Path, command: str, extra: list[str], named: str
) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text('{"model": "llama-3.1-8b", "on": "h100-sxm"}\n', encoding="utf-8")
    code, out = run([command, "--queries", str(path), *extra, "--json"])
    assert code == 2
    error = json.loads(out)
    assert (
        error["error"]
        == f"{named} cannot be combined with --queries: each line gives its own options."
    )
    code, out = run([command, "--queries", str(path), "--json"])  # --json alone is fine
    assert code in (0, 1) and "error" not in json.loads(out.splitlines()[0])


def test_queries_unknown_key_suggests_the_other_commands_name(tmp_path: Path) -> None:
    """infer and train answer an unknown key alike: named, with the option it likely means."""
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"model": "llama-3.1-8b", "on": "rtx-4090", "seq": 4096}\n'
        '{"model": "llama-3.1-8b", "on": "8x h100-sxm", "context": 4096}\n',
        encoding="utf-8",
    )
    infer = CliRunner().invoke(cli, ["infer", "--queries", str(path)])
    train = CliRunner().invoke(cli, ["train", "--queries", str(path)])
    infer_first = json.loads(infer.stdout.splitlines()[0])
    train_second = json.loads(train.stdout.splitlines()[1])
    assert infer_first["error"] == "line 1: Unknown option 'seq' for infer."
    assert infer_first["hint"].startswith("Did you mean: context,")
    assert train_second["error"] == "line 2: Unknown option 'context' for train."
    assert train_second["hint"].startswith("Did you mean: seq,")
    assert infer.exit_code == train.exit_code == 2


@pytest.mark.parametrize("command", ["infer", "train"])
def test_queries_empty_text_is_bad_input_as_on_the_command_line(
    tmp_path: Path, command: str
) -> None:
    """{"network": ""} was planned as no network given (as --network '' was): now the line is
    bad input naming the key, and the next line is still answered."""
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"model": "llama-3.1-8b", "on": "h100-sxm", "network": ""}\n'
        '{"model": "llama-3.1-8b", "on": "h100-sxm"}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, [command, "--queries", str(path)])
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["error"] == (
        "line 1: Bad option: key 'network' = '': Value error, '' is empty; give a value, or "
        "leave the key out."
    )
    assert "error" not in second
    assert result.exit_code == 2
