"""The wave formulas give the same numbers on plain floats (one plan, no numpy import) as on
arrays (the serving search), and a single plan does not import numpy (start-up time)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rigwise.estimate.serving import (
    wave_prefill_tokens,
    wave_ttft_seconds,
)
from rigwise.estimate.serving_tpot import wave_tpot_seconds


@pytest.mark.parametrize("admitted", [1, 4, 32, 250])
def test_scalar_and_array_paths_agree(admitted: int) -> None:
    prompt, budget = 256, 2048
    tokens = wave_prefill_tokens(admitted, prompt, budget)
    assert isinstance(tokens, int | float)
    assert tokens == pytest.approx(
        float(wave_prefill_tokens(np.array([admitted]), prompt, budget)[0])
    )
    ttft = wave_ttft_seconds(admitted, prompt, budget, (0.05, 1e-4), 0.02)
    ttft_array = wave_ttft_seconds(np.array([admitted]), prompt, budget, (0.05, 1e-4), 0.02)
    assert ttft == pytest.approx(float(ttft_array[0]), rel=1e-12)
    tpot = wave_tpot_seconds(3.0, float(ttft), 0.02, 100)
    assert tpot == pytest.approx(
        float(wave_tpot_seconds(np.array([3.0]), ttft_array, 0.02, 100)[0])
    )


def test_hand_value_of_the_wave() -> None:
    # 32 prompts of 256 tokens in steps of 2048: min(8192, 33/2 * 256 + 1024) = 5248 tokens
    assert wave_prefill_tokens(32, 256, 2048) == pytest.approx(5248.0)


def test_one_plan_does_not_import_numpy() -> None:
    code = (
        "import sys\n"
        "from rigwise.api.infer import plan_inference\n"
        "plan_inference(model='llama-3.1-8b', on='rtx-4090')\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
