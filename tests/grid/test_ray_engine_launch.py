"""``RayEngine.launch`` that fails part-way leaves nothing running on Ray: the ranks it started
are cancelled and its placement group removed (the job is not in ``running``, so ``release``
would never find them and the group would hold its bundles for the coordinator's life).
Ray's calls are stood in for: no cluster is started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from rigwise.grid.placement import PlacementPlan
from rigwise.grid.ray_adapter import engine as engine_module


class _Submitter:
    """Stands in for ``_run_job``: the rank-th submission raises, the others return a ref."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at, self.submitted = fail_at, 0

    def options(self, **_: Any) -> _Submitter:
        return self

    def remote(self, *_: Any) -> str:
        if self.submitted == self.fail_at:
            raise RuntimeError("ray: could not serialise the job's inputs")
        self.submitted += 1
        return f"ref-{self.submitted - 1}"


class _Driver:
    """Stands in for the data-parallel driver actor, whose ``run.remote`` raises."""

    class run:  # the actor method's name
        @staticmethod
        def remote(*_: Any) -> None:
            raise RuntimeError("ray: the driver could not take the job")


def _engine(monkeypatch: pytest.MonkeyPatch, fail_at: int) -> tuple[Any, dict[str, list[Any]]]:
    calls: dict[str, list[Any]] = {"cancelled": [], "removed": [], "killed": []}
    monkeypatch.setattr(engine_module, "placement_group", lambda *a, **k: "group-1")
    monkeypatch.setattr(engine_module, "PlacementGroupSchedulingStrategy", lambda *a: None)
    monkeypatch.setattr(engine_module, "_run_job", _Submitter(fail_at))
    monkeypatch.setattr(engine_module, "remove_placement_group", calls["removed"].append)
    cancelled = calls["cancelled"]
    monkeypatch.setattr(engine_module.ray, "cancel", lambda ref, **_: cancelled.append(ref))
    monkeypatch.setattr(engine_module.ray, "kill", calls["killed"].append)
    engine = engine_module.RayEngine.__new__(engine_module.RayEngine)  # no Ray cluster
    engine.running, engine.sink, engine.train_storage = {}, None, "/nowhere"
    return engine, calls


def _plan(ranks: int) -> PlacementPlan:
    return PlacementPlan(True, "fits", bundles=tuple({"CPU": 1.0} for _ in range(ranks)))


def test_a_command_job_failing_at_its_third_rank_leaves_no_rank_or_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine, calls = _engine(monkeypatch, fail_at=2)
    with pytest.raises(RuntimeError, match="serialise"):
        engine.launch("j-1", "command", {}, [], {}, _plan(4), {})
    assert calls["cancelled"] == ["ref-0", "ref-1"]
    assert calls["removed"] == ["group-1"]
    assert engine.running == {}


def test_a_launch_that_succeeds_keeps_its_ranks_and_group(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, calls = _engine(monkeypatch, fail_at=99)
    engine.launch("j-1", "command", {}, [], {}, _plan(3), {})
    assert engine.running["j-1"].refs == ["ref-0", "ref-1", "ref-2"]
    assert calls == {"cancelled": [], "removed": [], "killed": []}


def test_a_clean_up_error_does_not_hide_the_launch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _ = _engine(monkeypatch, fail_at=1)

    def broken(_: Any) -> None:
        raise engine_module.ray.exceptions.RaySystemError("the GCS is gone")

    monkeypatch.setattr(engine_module, "remove_placement_group", broken)
    with pytest.raises(RuntimeError, match="serialise"):
        engine.launch("j-1", "command", {}, [], {}, _plan(2), {})


def test_a_data_parallel_job_whose_driver_refuses_it_kills_the_driver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    engine, calls = _engine(monkeypatch, fail_at=99)
    driver = _Driver()

    class _DriverClass:
        @staticmethod
        def options(**_: Any) -> _DriverClass:
            return _DriverClass()

        @staticmethod
        def remote() -> _Driver:
            return driver

    monkeypatch.setattr(engine_module, "_TrainDriver", _DriverClass)
    with pytest.raises(RuntimeError, match="driver could not"):
        engine.launch("j-2", "train", {}, [], {}, _plan(2), {})
    assert calls["killed"] == [driver]
    assert engine.running == {}
