"""`rigwise infer --search`: what it refuses, and why."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigwise.cli import cli


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        # before: every option was refused as one "the search chooses the layout", which is not
        # why for a build date, a context or a power limit
        (["--engine-build", "2025-10"], "--engine-build: not modelled by the search"),
        (["--tp", "2"], "--tp: the search chooses the layout and batch)"),
        (
            ["--tp", "2", "--context", "4096"],
            "(--tp: the search chooses the layout and batch; --context: not modelled",
        ),
        # before: exit 0, the search's figures without the measured factors, no word of them
        (["--calibrated"], "(--calibrated: not modelled by the search; plan one layout to use it)"),
        # before: "--latency-budget: not modelled by the search; plan one layout to use it",
        # though the search takes the same limits as --slo-ttft / --slo-tpot
        (
            ["--latency-budget", "40ms"],
            "(--latency-budget: the search takes --slo-ttft / --slo-tpot)",
        ),
    ],
)
def test_options_the_search_does_not_take_are_refused_with_their_own_reason(
    flags: list[str], reason: str
) -> None:
    result = CliRunner().invoke(
        cli, ["infer", "llama-3.1-8b", "--on", "rtx-5090", "--engine", "vllm", "--search", *flags]
    )
    assert result.exit_code == 2
    assert reason in result.output
