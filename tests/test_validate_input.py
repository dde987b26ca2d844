"""The guards every user file and value passes: bounded reads, safe YAML, bounded JSON, and the
one helper that turns validation errors into messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, ValidationError

from rigwise.errors import InputError, shown_value, validation_message
from rigwise.validate_input import (
    MAX_NESTING,
    MAX_YAML_CHARS,
    check_option_names,
    load_json,
    load_yaml,
    open_text_lines,
    plain_number,
    read_user_text,
)


def test_read_user_text_names_missing_directories_devices_huge_and_binary(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_user_text(tmp_path / "nope.yaml", "rig file")
    with pytest.raises(InputError, match="is a directory"):
        read_user_text(tmp_path, "rig file")
    with pytest.raises(InputError, match="not a regular file"):
        read_user_text("/dev/zero", "rig file")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 2048)
    with pytest.raises(InputError, match="over the 1,024-byte limit"):
        read_user_text(big, "rig file", max_bytes=1024)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\xfd")
    with pytest.raises(InputError, match="not UTF-8"):
        read_user_text(binary, "rig file")
    with pytest.raises(InputError):
        read_user_text("x" * 5000, "rig file")  # a name too long for the file system


def test_the_hint_reads_as_english(tmp_path: Path) -> None:
    # before: 'Give the path of a experiment file' (oi experiments submit, fake hardware file)
    with pytest.raises(InputError) as caught:
        read_user_text(tmp_path / "nope.yaml", "experiment file")
    assert str(caught.value.hint).startswith("Give the path of an experiment file")


def test_yaml_refuses_aliases_and_deep_nesting_but_reads_plain_documents() -> None:
    assert load_yaml("nodes: [{name: rtx-4090, count: 2}]", "f") == {
        "nodes": [{"name": "rtx-4090", "count": 2}]
    }
    with pytest.raises(InputError, match="aliases"):
        load_yaml("a: &a [1, 2]\nb: *a", "f")
    with pytest.raises(InputError, match="nesting"):
        load_yaml("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1), "f")
    with pytest.raises(InputError, match="nesting"):
        load_yaml("[" * 50_000, "f")
    assert load_yaml("[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1), "f") is not None


def test_json_refuses_deep_nesting_and_non_finite_constants() -> None:
    assert load_json('{"a": [1, 2]}', "f") == {"a": [1, 2]}
    with pytest.raises(InputError, match="deeper"):
        load_json("[" * 100_000, "f")
    with pytest.raises(InputError, match="NaN"):
        load_json('{"a": NaN}', "f")
    with pytest.raises(InputError, match="line 1, column"):
        load_json("{", "f")
    assert load_json('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', "f")


def test_lines_are_streamed_and_over_long_lines_come_back_as_none(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_bytes(b"short\n" + b"x" * 100 + b"\nlast")
    assert list(open_text_lines(str(path), "queries file", 10)) == [
        (1, "short\n"),
        (2, None),
        (3, "last"),
    ]
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"text\n\xff\nmore\n")  # a later line that is not text: its error
    lines = list(open_text_lines(str(binary), "queries file", 10))
    assert [n for n, _ in lines] == [1, 2, 3] and lines[2] == (3, "more\n")
    assert isinstance(lines[1][1], InputError) and "line 2, is not UTF-8" in lines[1][1].message
    binary.write_bytes(b"\xff\ntext\n")  # the first line: the file is not text
    with pytest.raises(InputError, match="line 1, is not UTF-8"):
        list(open_text_lines(str(binary), "queries file", 10))


class _Options(BaseModel):
    concurrency: int = Field(ge=1)
    name: str


def test_validation_message_names_each_key_its_value_and_the_rule() -> None:
    with pytest.raises(ValidationError) as err:
        _Options(concurrency=0, name=12)  # type: ignore[arg-type]
    message = validation_message(err.value, "Bad option")
    assert message.startswith("Bad option: key 'concurrency' = 0: Input should be greater")
    assert "key 'name' = 12" in message and message.endswith(".")


def test_shown_values_are_cut_so_errors_never_echo_a_whole_file() -> None:
    shown = shown_value("x" * 10_000)
    assert len(shown) == 60 and shown.endswith("...")


def test_yaml_longer_than_the_limit_is_refused_before_parsing() -> None:
    # before: a 1.3 MB experiment file (a list of 200,000 electrodes) took 12 s to parse
    import time

    text = "electrodes: [" + ", ".join(map(str, range(60_000))) + "]"
    assert len(text) > MAX_YAML_CHARS
    started = time.perf_counter()
    with pytest.raises(InputError, match=f"over the YAML limit of {MAX_YAML_CHARS:,}"):
        load_yaml(text, "The experiment file")
    assert time.perf_counter() - started < 0.5
    assert load_yaml(text[: MAX_YAML_CHARS // 8].rsplit(",", 1)[0] + "]", "f")["electrodes"][
        :2
    ] == [0, 1]


def test_yaml_refuses_a_duplicate_key_naming_it_and_its_line() -> None:
    # before: PyYAML kept the last of the two: the first block was dropped unread
    with pytest.raises(InputError, match=r"duplicate key 'cpu'.*line 2"):
        load_yaml("cpu: a\ncpu: b\n", "rig file")
    assert load_yaml("a: {cpu: 1}\nb: {cpu: 2}\n", "f") == {"a": {"cpu": 1}, "b": {"cpu": 2}}


def test_unknown_option_names_itself_and_the_option_it_likely_means() -> None:
    train_names = ("model", "on", "seq", "global_batch", "recompute", "precision")
    infer_names = ("model", "on", "context", "prompt", "gen", "quant", "max_batch")
    check_option_names({"model": "m", "seq": 8}, train_names, "train")  # all known: no error
    # The other command's (or an engine's) name for the option comes first ...
    with pytest.raises(InputError, match="Unknown option 'context' for train") as train:
        check_option_names({"model": "m", "context": 4096}, train_names, "train")
    assert (train.value.hint or "").startswith("Did you mean: seq,")
    with pytest.raises(InputError, match="Unknown option 'seq' for infer") as infer:
        check_option_names({"seq": 4096}, infer_names, "infer")
    assert (infer.value.hint or "").startswith("Did you mean: context,")
    with pytest.raises(InputError) as engine:
        check_option_names({"max_num_seqs": 64}, infer_names, "infer")
    assert (engine.value.hint or "").startswith("Did you mean: max_batch,")
    # ... a misspelling gets its closest spellings, and a mapped name that is not an option of
    # this command is not suggested (quantization -> quant only where quant exists).
    with pytest.raises(InputError) as typo:
        check_option_names({"promt": 1}, infer_names, "infer")
    assert (typo.value.hint or "").startswith("Did you mean: prompt")
    with pytest.raises(InputError) as missing:
        check_option_names({"quantization": "fp8"}, train_names, "train")
    assert "quant," not in (missing.value.hint or "") and "precision" in (missing.value.hint or "")


def test_nan_is_named_as_not_a_number_not_as_a_failed_bound() -> None:
    class Dose(BaseModel):
        amplitude_ua: float = Field(gt=0)

    with pytest.raises(ValidationError) as nan:
        Dose(amplitude_ua=float("nan"))
    assert validation_message(nan.value, "experiment") == (
        "experiment: key 'amplitude_ua' = nan: not a number (NaN); give a finite number."
    )
    with pytest.raises(ValidationError) as negative:  # a real number keeps pydantic's rule
        Dose(amplitude_ua=-1.0)
    assert "greater than 0" in validation_message(negative.value, "experiment")


@pytest.mark.parametrize(
    ("value", "number"),
    [("1000", 1000.0), (" 2.5 ", 2.5), ("1e3", 1000.0), ("-0.5", -0.5), (".5", 0.5), (7, 7.0)],
)
def test_plain_number_reads_numbers_as_written(value: object, number: float) -> None:
    assert plain_number(value) == number


@pytest.mark.parametrize(
    ("value", "says"),
    [
        # Python's float() reads each of these: 1000.0, inf, nan, inf, 1000.0, 16.0 (no: error)
        ("1_000", "'1_000' is not a plain number; write digits"),
        ("inf", "'inf' is not a plain number"),
        ("nan", "'nan' is not a plain number"),
        ("1e999", "'1e999' is not a finite number"),
        ("\u0661\u0660\u0660\u0660", "is not a plain number"),
        ("0x10", "'0x10' is not a plain number"),
        ("", "'' is not a plain number"),
        (True, "true is not a number"),
        (float("inf"), "inf is not a finite number"),
        (None, "None is not a plain number"),
    ],
)
def test_plain_number_refuses_other_spellings_saying_why(value: object, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        plain_number(value)
