"""``rigwise.__all__`` is exactly the public names of the package (as httpx checks)."""

import subprocess
import sys

import rigwise


def _public_names() -> set[str]:
    names = {name for name in dir(rigwise) if not name.startswith("_")}
    modules = {name for name in names if type(getattr(rigwise, name)).__name__ == "module"}
    return names - modules


def test_all_is_exactly_the_public_names() -> None:
    assert set(rigwise.__all__) - {"__version__"} == _public_names()


def test_every_exported_name_resolves() -> None:
    for name in rigwise.__all__:
        assert getattr(rigwise, name) is not None


def test_import_stays_light() -> None:
    """The planners and their numpy/pydantic stack load on first use, not on import."""
    code = "import sys, rigwise; print('rigwise.api.infer' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_documented_example_runs() -> None:
    plan = rigwise.plan_inference(model="llama-3.1-70b", on="2x rtx-3090", quant="Q4_K_M")
    assert plan.verdict in ("fits", "tight") and plan.decode is not None
    assert plan.decode.tokens_per_s > 1


def test_planners_take_one_typed_options_object_or_its_fields() -> None:
    options = rigwise.InferOptions(model="llama-3.1-8b", on="rtx-4090", levers=False)
    by_object = rigwise.plan_inference(options)
    by_keywords = rigwise.plan_inference(model="llama-3.1-8b", on="rtx-4090", levers=False)
    assert by_object == by_keywords
    longer = rigwise.plan_inference(options, context=8192)  # keywords override the object
    # llama.cpp's default context (4096, engine_defaults.csv) unless overridden
    assert longer.workload.context == 8192 and by_object.workload.context == 4096
    train = rigwise.TrainOptions(model="llama-3.1-8b", on="rtx-4090", method="qlora")
    assert rigwise.plan_training(train).fits == rigwise.plan_training(train, seq=1024).fits


def test_every_option_is_documented_where_it_is_declared() -> None:
    from rigwise.api.docs import described

    for options in (rigwise.InferOptions, rigwise.TrainOptions):
        undocumented = [name for name, text in described(options).items() if not text]
        assert undocumented == [], f"{options.__name__}: add a docstring line under {undocumented}"


def test_plans_are_frozen_with_typed_parts() -> None:
    import dataclasses

    from rigwise.plans import InferenceLayout, InferenceWorkload

    plan = rigwise.plan_inference(model="llama-3.1-8b", on="2x rtx-3090", levers=False)
    assert isinstance(plan.layout, InferenceLayout) and plan.layout.pp == 2
    assert isinstance(plan.workload, InferenceWorkload)
    try:
        plan.verdict = "fits"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("InferencePlan must be frozen")


def test_option_docs_are_read_from_the_class_body_when_asked() -> None:
    from pydantic import BaseModel

    from rigwise.api.docs import described

    class Options(BaseModel):
        model: str
        """The model."""
        on: str | None = None
        quiet: bool = False
        """Say less."""

    assert described(Options) == {"model": "The model.", "on": "", "quiet": "Say less."}
