"""`--queries -` answers each line as it comes: a caller that waits for one answer before it
sends the next query is never left waiting on a buffer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rigwise

SRC = str(Path(rigwise.__file__).resolve().parent.parent)


@pytest.mark.timeout(120)
def test_stdin_queries_are_answered_one_line_at_a_time() -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    child = subprocess.Popen(
        [sys.executable, "-m", "rigwise", "infer", "--queries", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        for model in ("llama-3.1-8b", "no-such-model"):
            child.stdin.write(json.dumps({"model": model, "on": "rtx-4090", "levers": False}))
            child.stdin.write("\n")
            child.stdin.flush()
            answer = json.loads(child.stdout.readline())  # blocks unless the line was flushed
            assert ("error" in answer) == (model == "no-such-model")
        child.stdin.close()
        assert child.wait(timeout=60) == 2  # the worst line: bad input
    finally:
        child.kill()
