"""InferOptions is checked without pydantic where it can be, with pydantic's results: the same
values and the same errors as the pydantic model made from the same declarations."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest
from pydantic import BaseModel, ValidationError

from rigwise.api.infer_options import InferOptions
from rigwise.api.train_options import TrainOptions
from rigwise.errors import RigwiseError, validation_message
from rigwise.option_fields import number_not_flag, pydantic_model, takes_text

BASE = {"model": "llama-3.1-8b"}
INPUTS = [
    {"on": "rtx-4090"},
    {"prompt": "8k", "gen": "1k", "context": 16384},
    {"prompt": 0},
    {"prompt": 1.5},
    {"prompt": 2.0},
    {"prompt": True},
    {"prompt": None},
    {"prompt": "abc"},
    {"concurrency": "max"},
    {"concurrency": "4"},
    {"concurrency": 0},
    {"concurrency": 2.5},
    {"engine": "LlamaCpp"},
    {"engine": "vlm"},
    {"engine": 3},
    {"engine_build": "2024-05"},
    {"engine_build": "yesterday"},
    {"offload": "maybe"},
    {"split": "tensor", "tp": 2},
    {"tp": 0, "pp": 0, "dp": 0, "ep": 0},
    {"nodes": 100_001},
    {"nodes": "2"},
    {"power_limit": 300.0},
    {"power_limit": 300},
    {"power_limit": 0},
    {"power_limit": float("nan")},
    {"levers": "yes"},
    {"levers": 0},
    {"calibration": {"decode_bandwidth_efficiency": 0.8}},
    {"calibration": {"decode_bandwidth_efficiency": 1}},
    {"calibration": [1]},
    {"disagg": {"prefill": {"tp": 4}, "decode": {"tp": 4}}},
    {"disagg": {"prefill": {"tp": "x"}}},
    {"bogus": 1},
    {"model": 5},
]


def _outcome(validate: object, data: dict[str, object]) -> object:
    """The fields made, or the error raised (type and message)."""
    try:
        options = validate(data)  # type: ignore[operator]
    except (RigwiseError, ValueError) as exc:
        return type(exc).__name__, validation_message(exc, "Bad option", most=99)
    return {name: getattr(options, name) for name in InferOptions.__dataclass_fields__}


@pytest.mark.parametrize("given", INPUTS)
def test_options_are_what_the_pydantic_model_makes(given: dict[str, object]) -> None:
    data = {**BASE, **given}
    expected = _outcome(pydantic_model(InferOptions).model_validate, data)
    assert _outcome(InferOptions.model_validate, data) == expected
    if "bogus" not in data:  # an unknown keyword is a TypeError of the dataclass's __init__
        assert _outcome(lambda d: InferOptions(**d), data) == expected


def test_a_missing_model_is_pydantics_error() -> None:
    assert _outcome(InferOptions.model_validate, {"on": "rtx-4090"})[0] == "ValidationError"


def test_well_typed_options_do_not_import_pydantic() -> None:
    code = (
        "import sys\nfrom rigwise.api.infer_options import InferOptions\n"
        "o = InferOptions.model_validate({'model': 'm', 'prompt': '8k', 'concurrency': 'max',"
        " 'engine': 'vllm', 'power_limit': 250.0, 'levers': False})\n"
        "assert o.prompt == 8000 and o.engine == 'vllm'\nprint('pydantic' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"prompt": True}, "key 'prompt' = True: Value error, true is not a number"),
        ({"context": True}, "key 'context' = True: Value error, true is not a number"),
        ({"tp": False}, "key 'tp' = False: Value error, false is not a number"),
        (
            {"disagg": {"prefill": {"tp": True}, "decode": {"tp": 1}}},
            "key 'disagg': Value error, prefill.tp = true is not a number",
        ),
        ({"calibration": {"decode_bandwidth_efficiency": True}}, "= true is not a number"),
    ],
)
def test_a_bool_is_not_a_number(given: dict[str, object], says: str) -> None:
    # before: pydantic read true as 1 ({"context": true} was a context of one token: "--context
    # 1 cannot hold the 512-token prompt"; --disagg '{"prefill": {"tp": true}, ...}' planned
    # tp 1) and false as 0
    kind, message = _outcome(InferOptions.model_validate, {**BASE, "on": "rtx-4090", **given})
    assert kind == "ValidationError" and says in message


# Option fields that take text refuse an empty one, for every options class and every way in
# (the options objects, --queries lines, the web API's model): {"quant": ""} planned the default
# quant without a word. Swept over the fields, so a text option added later is covered.


def _text_fields(cls: type) -> list[str]:
    if issubclass(cls, BaseModel):
        return [n for n, f in cls.model_fields.items() if takes_text(f.annotation)]
    return [n for n, hint in typing.get_type_hints(cls).items() if takes_text(hint)]


CASES = [
    pytest.param(cls, name, id=f"{cls.__name__}.{name}")
    for cls in (InferOptions, TrainOptions)
    for name in _text_fields(cls)
]


def test_the_sweep_finds_the_text_fields() -> None:
    ids = {p.id for p in CASES}
    assert {"InferOptions.quant", "InferOptions.network", "TrainOptions.framework"} <= ids


@pytest.mark.parametrize(("cls", "name"), CASES)
@pytest.mark.parametrize("blank", ["", " \t"])
def test_an_empty_text_option_is_refused_naming_the_key(cls: type, name: str, blank: str) -> None:
    given = {"model": "llama-3.1-8b", name: blank}
    with pytest.raises(ValidationError) as caught:
        cls.model_validate(given)  # type: ignore[attr-defined]
    (error,) = caught.value.errors()
    assert error["loc"] == (name,)
    assert f"{blank!r} is empty; give a value, or leave the key out" in error["msg"]


@pytest.mark.parametrize("name", _text_fields(InferOptions))
def test_the_fast_path_and_the_web_model_refuse_it_too(name: str) -> None:
    with pytest.raises(ValidationError, match="is empty"):
        InferOptions(**{"model": "llama-3.1-8b", name: ""})
    with pytest.raises(ValidationError, match="is empty"):
        pydantic_model(InferOptions).model_validate({"model": "llama-3.1-8b", name: ""})


def test_text_that_is_not_empty_passes() -> None:
    assert InferOptions(model="llama-3.1-8b", quant="Q8_0").quant == "Q8_0"
    assert TrainOptions(model="llama-3.1-8b", network="10gbe").network == "10gbe"


# A number field's text that Python reads but nobody writes: {"nodes": "1_0"} in a --queries line
# planned 10 nodes (``--nodes 1_0`` on the command line is refused by the CLI's own check), and
# {"power_limit": "NaN"} said "Input should be greater than 0". Swept over the fields.


def _number_fields(cls: type) -> list[str]:
    if issubclass(cls, BaseModel):
        hints = {n: f.annotation for n, f in cls.model_fields.items()}
    else:
        hints = typing.get_type_hints(cls)
    return [n for n, hint in hints.items() if number_not_flag(hint) and "dict" not in str(hint)]


# count fields read their own text ('4k', '2T', 'max') and refuse these with their own message
COUNTS = {"seq", "global_batch", "steps", "tokens", "dataset_tokens"}
NUMBERS = [
    pytest.param(cls, name, id=f"{cls.__name__}.{name}")
    for cls in (InferOptions, TrainOptions)
    for name in _number_fields(cls)
    if not (cls is TrainOptions and name in COUNTS)
]


def test_the_sweep_finds_the_number_fields() -> None:
    ids = {p.id for p in NUMBERS}
    assert {"InferOptions.nodes", "InferOptions.power_limit", "TrainOptions.goodput"} <= ids
    assert len(NUMBERS) > 20


@pytest.mark.parametrize(("cls", "name"), NUMBERS)
@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("1_0", "'1_0' is not a plain number"),
        ("\u0661\u0660", "is not a plain number"),  # Arabic-Indic 10
        ("NaN", "'NaN' is not a finite number"),
        ("-inf", "'-inf' is not a finite number"),
    ],
)
def test_a_number_field_refuses_text_not_written_plainly(
    cls: type, name: str, typed: str, says: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        cls.model_validate({"model": "llama-3.1-8b", name: typed})  # type: ignore[attr-defined]
    (error,) = caught.value.errors()
    assert error["loc"] == (name,)
    assert says in error["msg"]


@pytest.mark.parametrize("name", sorted(COUNTS))
@pytest.mark.parametrize("typed", ["1_0", "NaN"])
def test_a_training_count_refuses_them_with_its_own_message(name: str, typed: str) -> None:
    with pytest.raises((ValidationError, RigwiseError), match=r"whole number|Cannot read count"):
        TrainOptions.model_validate({"model": "llama-3.1-8b", name: typed})


def test_numbers_written_plainly_and_counts_still_pass() -> None:
    plan = InferOptions.model_validate({"model": "m", "nodes": " 2 ", "power_limit": "3e2"})
    assert (plan.nodes, plan.power_limit) == (2, 300.0)
    assert InferOptions.model_validate({"model": "m", "prompt": "8k"}).prompt == 8000
    train = TrainOptions.model_validate({"model": "m", "seq": "max", "tokens": "2T"})
    assert (train.seq, train.tokens) == ("max", 2e12)
