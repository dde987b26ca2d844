"""Fuzzing the CLI: random argument lists drawn from the commands' real options, with values
that are valid, out of range, non-finite, huge, empty or not numbers at all. Whatever comes in,
the answer is an exit code of 0, 1 or 2 (never 70, never a traceback), within seconds, and a
JSON answer holds no negative or non-finite number.

The budget fits CI (a few seconds); ``RIGWISE_FUZZ_EXAMPLES`` raises it for a campaign.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigwise.cli import cli
from rigwise.serialize import nonsense_numbers

EXAMPLES = int(os.environ.get("RIGWISE_FUZZ_EXAMPLES", "40"))
SECONDS_PER_CALL = 10.0
VALUES = (
    "", "0", "-3", "1", "2", "8", "64", "4096", "100000", "1e400", "-1e400", "nan", "inf", "abc",
    "2T", "1.5", "200ms", "0s", "30d", "max", "rtx-4090", "h100-sxm", "2x rtx-3090+nvlink",
    "1000000000x rtx-4090", "99999999999999999999x h100-sxm", "1048576x rtx-4090", "dgx-h100",
    "llama-3.1-8b", "qwen3-30b-a3b", "Q4_K_M", "fp8", "10gbe", "ib-ndr", "a" * 300,
    "/dev/zero", "/nonexistent/config.json", "/", "{", "x\x00y", "-", "1048577",
)  # fmt: skip
MODELS = ("llama-3.1-8b", "qwen3-30b-a3b", "gpt2", "rtx 4900", "", "a" * 300, "/dev/zero", "/")
FAST_COMMANDS = ("infer", "train", "gpus", "gpu", "model")


def _command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None
    return found


def _option_values(param: click.Parameter) -> st.SearchStrategy[list[str]]:
    flag = param.opts[-1] if isinstance(param, click.Option) else ""
    if isinstance(param, click.Option) and param.is_flag:
        return st.just([flag])
    choices: tuple[str, ...] = VALUES
    if isinstance(param.type, click.Choice):
        choices = (*map(str, param.type.choices), "bogus", "")
    return st.sampled_from(choices).map(lambda value: [flag, value])


@st.composite
def argument_lists(draw: Any, commands: tuple[str, ...] = FAST_COMMANDS) -> list[str]:
    """``[command, MODEL?, --option value, ...]`` from the command's own options."""
    name = draw(st.sampled_from(commands))
    command = _command(name)
    options = [
        p for p in command.params if isinstance(p, click.Option) and p.name not in ("queries",)
    ]
    args = [name]
    if any(isinstance(p, click.Argument) for p in command.params) and draw(st.booleans()):
        args.append(draw(st.sampled_from(MODELS)))
    chosen = draw(st.lists(st.sampled_from(options), max_size=5, unique_by=lambda p: p.name))
    for param in chosen:
        args += draw(_option_values(param))
    if draw(st.booleans()):
        args.append("--json")
    return args


def check_cli_answer(args: list[str]) -> int:
    """Run ``rigwise *args``; assert a sane exit, no traceback, bounded time, sane JSON."""
    started = time.perf_counter()
    result = CliRunner().invoke(cli, args)
    seconds = time.perf_counter() - started
    output = result.stdout + result.stderr
    assert seconds < SECONDS_PER_CALL, f"{args}: {seconds:.1f} s"
    assert "Traceback" not in output, f"{args}: {output[-2000:]}"
    assert result.exit_code in (0, 1, 2), f"{args} -> {result.exit_code}: {output[-1000:]}"
    if "--json" in args and result.exit_code in (0, 1) and result.stdout.strip():
        document = json.loads(result.stdout)
        assert not nonsense_numbers(document), f"{args}: {nonsense_numbers(document)[:5]}"
    if result.exit_code == 2:
        assert output.strip(), f"{args}: exit 2 without a message"
    return int(result.exit_code)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=EXAMPLES <= 40,  # CI: the same lists every run; a campaign explores
)
@given(argument_lists())
def test_random_argument_lists_never_crash(args: list[str]) -> None:
    check_cli_answer(args)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["infer", "llama-3.1-8b", "--on", "1000000000x rtx-4090"], 2),
        (["infer", "llama-3.1-8b", "--on", "99999999999999999999x h100-sxm"], 2),
        (["infer", "llama-3.1-8b", "--on", "rtx-4090", "--prompt", "100000", "--context", "1"], 2),
        (["infer", "llama-3.1-8b", "--on", "rtx-4090", "--context", "1e400"], 2),
        (["infer", "llama-3.1-8b", "--on", "rtx-4090", "--concurrency", "0"], 2),
        (["infer", "llama-3.1-8b", "--on", "rtx-4090", "--nodes", "100001"], 2),
        (["train", "llama-3.1-8b", "--on", "dgx-h100", "--tokens", "1e400"], 2),
        (["train", "llama-3.1-8b", "--on", "dgx-h100", "--epochs", "inf"], 2),
        (["train", "llama-3.1-8b", "--on", "dgx-h100", "--seq", "1e400"], 2),
        (["gpus", "--max-price", "nan"], 2),
        (["build", "llama-3.1-8b", "--pool-on", "rtx-4090", "--nodes", "-3"], 2),
        (["build", "llama-3.1-8b", "--circuit", ""], 2),
        (["build", "llama-3.1-8b", "--task", "train", "--deadline", "0s"], 2),
        (["infer", "a" * 300 + ".json", "--on", "rtx-4090"], 2),
        (["infer", "llama-3.1-70b", "--on", "4x a100-sxm-80gb", "--nodes", "4"], 0),
    ],
)
def test_the_reported_cases_are_clear_errors(args: list[str], code: int) -> None:
    assert check_cli_answer(args) == code


def test_a_huge_cluster_is_planned_quickly() -> None:
    args = ["infer", "llama-3.1-8b", "--on", "rtx-4090", "--nodes", "100000", "--json"]
    started = time.perf_counter()
    assert check_cli_answer([*args, "--network", "10gbe"]) == 0
    assert time.perf_counter() - started < 10.0  # a hang guard; its speed: benchmarks/bench_cli.py


def test_latency_budget_of_zero_says_missed() -> None:
    result = CliRunner().invoke(
        cli, ["infer", "llama-3.1-8b", "--on", "rtx-4090", "--latency-budget", "0ms"]
    )
    assert result.exit_code == 0 and "missed" in result.stdout


def test_internal_errors_exit_70_with_one_line_and_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rigwise.api.infer as infer_api

    def broken(**_: Any) -> Any:
        raise ZeroDivisionError("planted bug")

    monkeypatch.setattr(infer_api, "plan_inference", broken)
    args = ["infer", "llama-3.1-8b", "--on", "rtx-4090"]
    quiet = CliRunner().invoke(cli, args)
    assert quiet.exit_code == 70
    assert quiet.stderr.strip().count("\n") == 0 and "--debug" in quiet.stderr
    assert "Traceback" not in quiet.stderr
    loud = CliRunner().invoke(cli, [*args, "--debug"])
    assert loud.exit_code == 70 and "Traceback" in loud.stderr
    as_json = CliRunner().invoke(cli, [*args, "--json"])
    assert as_json.exit_code == 70 and set(json.loads(as_json.stdout)) == {"error", "hint"}
