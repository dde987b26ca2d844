"""The benchmark's model config lives in a temporary folder that is gone when the process ends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CODE = """
from types import SimpleNamespace
from rigwise.bench.expectations import write_hf_config
shape = SimpleNamespace(hidden_size=64, intermediate_size=128, num_layers=2,
    num_attention_heads=4, num_kv_heads=2, head_dim=16, vocab_size=256,
    rms_norm_eps=1e-5, rope_theta=10000.0)
path = write_hf_config(shape)
assert path.is_file()
print(path)
"""


def test_the_benchmark_model_folder_is_removed_at_exit() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, check=True
    )
    path = Path(out.stdout.strip().splitlines()[-1])
    assert path.name == "config.json"
    assert path.parent.name.startswith("rigwise-bench-model-")
    assert not path.parent.exists()


def test_a_given_folder_is_kept(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from rigwise.bench.expectations import write_hf_config

    shape = SimpleNamespace(
        hidden_size=64, intermediate_size=128, num_layers=2, num_attention_heads=4,
        num_kv_heads=2, head_dim=16, vocab_size=256, rms_norm_eps=1e-5, rope_theta=1e4,
    )  # fmt: skip
    path = write_hf_config(shape, str(tmp_path))
    assert json.loads(path.read_text())["num_hidden_layers"] == 2
