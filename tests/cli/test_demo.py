"""`rigwise` with no command: the tour every README reader runs first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rigwise.cli import main


def test_tour_answers_each_question_with_the_public_api(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-grid", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in results["know"]["devices"]] == [
        "rtx-3090",
        "rtx-4090",
        "m3-max-40c-128gb",
    ]
    assert results["model"]["params_total"] == 70_553_706_496
    assert (
        results["infer_70b"]["fits"] is True and results["infer_70b"]["decode"]["tokens_per_s"] > 0
    )
    assert results["infer_405b_laptop"]["verdict"] == "does not fit"
    assert results["train"]["fits"] is True
    assert results["build"]["options"], "a 70B build under $3,000 was found"
    assert results["probe"]["cpu"]["threads"] >= 1
    assert "grid" not in results


@pytest.mark.ray_cluster
@pytest.mark.slow
@pytest.mark.timeout(1200, method="signal")
def test_tour_starts_joins_and_stops_a_grid(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tour's grid: up, this machine joins it (a loopback member the grid measures), a
    dataset, then down; no folder (tokens included) and no Ray process of it is left."""
    import tempfile
    from pathlib import Path

    # The folders this tour makes (another tour running at the same time makes its own).
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args: Any, **kwargs: Any) -> str:
        made.append(real_mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    assert main(["demo", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    grid = results["grid"]
    assert "error" not in grid, grid
    assert grid["join"]["state"] == "admitted", grid["join"]
    assert grid["join"]["verification"]["state"] == "passed"
    assert "credential" not in grid["join"] and "ray_token" not in grid["join"]
    assert len(grid["dataset"]["sha256"]) == 64
    ours = [path for path in made if Path(path).name.startswith("rigwise-grid-demo-")]
    assert ours, "the tour keeps its grid in a temporary folder"
    assert [path for path in ours if Path(path).exists()] == []
    import psutil

    url = grid["join"]["ray_address"]
    left = [p for p in psutil.process_iter(["cmdline"]) if url in " ".join(p.info["cmdline"] or [])]
    assert left == []
