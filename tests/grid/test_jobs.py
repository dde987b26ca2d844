from __future__ import annotations

import pytest

from rigwise.errors import InputError, UnknownNameError
from rigwise.grid.jobs import JobSpec, merge, parse_job, read_job_text

TEXT = """
name: tiny
kind: train
hardware: {gpus_per_node: 2, min_gpu_memory: 24GB, same_nvlink_domain: true, labels: {site: lab}}
software: {env: {OMP_NUM_THREADS: "1"}, requires: [torch]}
app: {dataset: corpus, steps: 10}
template: {save_as: tiny}
"""


def test_four_steps_parse_into_a_spec() -> None:
    spec = parse_job(read_job_text(TEXT, "t.yaml"), {})
    assert spec.hardware.gpus_per_node == 2
    assert spec.hardware.min_gpu_memory_bytes == pytest.approx(24e9)
    assert spec.hardware.same_nvlink_domain and spec.hardware.labels == {"site": "lab"}
    assert spec.env == {"OMP_NUM_THREADS": "1"} and spec.requires == ("torch",)
    assert spec.save_as == "tiny"
    assert JobSpec.from_dict(spec.to_dict()) == spec


def test_uses_merges_over_a_saved_template() -> None:
    base = read_job_text(TEXT, "t.yaml")
    spec = parse_job(
        {"name": "b", "kind": "train", "app": {"steps": 99}, "template": {"uses": "tiny"}},
        {"tiny": base},
    )
    assert spec.app == {"dataset": "corpus", "steps": 99}
    assert spec.hardware.gpus_per_node == 2
    with pytest.raises(UnknownNameError, match="tiny"):
        parse_job({"name": "b", "kind": "train", "template": {"uses": "tinyy"}}, {"tiny": base})


def test_bad_values_are_named() -> None:
    with pytest.raises(InputError, match=r"hardware\.nodes"):
        parse_job({"name": "x", "kind": "train", "hardware": {"nodes": 0}}, {})
    with pytest.raises(InputError, match="mapping"):
        read_job_text("- a\n- b\n", "list.yaml")
    with pytest.raises(InputError, match="size"):
        parse_job({"name": "x", "kind": "train", "hardware": {"min_gpu_memory": "lots"}}, {})


def test_merge_is_deep() -> None:
    assert merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}) == {"a": {"b": 1, "c": 3}}


def test_planner_predicts_run_time_when_the_job_carries_a_plan() -> None:
    from rigwise.api.train import plan_training
    from rigwise.grid.jobs import predict_seconds

    options = {"model": "llama-3.1-8b", "on": "rtx-4090", "method": "qlora", "tokens": 1e6}
    spec = parse_job({"name": "p", "kind": "train", "app": {"plan": options}}, {})
    seconds, note = predict_seconds(spec)
    assert seconds == plan_training(**options).time_to_train_s
    assert seconds is not None and seconds > 0 and "rtx-4090" in note
    assert predict_seconds(parse_job({"name": "p", "kind": "train"}, {}))[0] is None


def test_evaluate_tasks_are_checked_and_require_lm_eval() -> None:
    def evaluate(tasks: object, requires: tuple[str, ...] = ()) -> JobSpec:
        app = {"model": "m", "dataset": "d", "tasks": tasks}
        software = {"requires": list(requires)}
        return parse_job({"name": "e", "kind": "evaluate", "app": app, "software": software}, {})

    spec = evaluate(["hellaswag", "grid:mc"], requires=("torch",))
    assert spec.requires == ("torch", "lm_eval")  # a worker without it fails, naming it
    assert evaluate(["grid:mc"], requires=("lm_eval",)).requires == ("lm_eval",)
    assert evaluate([]).requires == ()
    for bad, named in [("hellaswag", "list"), (["ok", ""], "list"), (["grid:"], "no dataset")]:
        with pytest.raises(InputError, match=named):
            evaluate(bad)
    with pytest.raises(InputError, match="twice"):
        evaluate(["grid:mc", "grid:mc"])


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_a_job_file_with_aliases_is_refused_at_once() -> None:
    # before: yaml.safe_load expanded the 9**9 aliases: `grid submit` ran past 20 s (and memory)
    import time

    started = time.perf_counter()
    with pytest.raises(InputError, match="aliases"):
        read_job_text(BOMB, "bomb.yaml")
    assert time.perf_counter() - started < 1.0
