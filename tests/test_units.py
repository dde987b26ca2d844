import pytest

from rigwise import InputError
from rigwise.units import (
    GiB,
    format_bytes,
    format_seconds,
    parse_bytes,
    parse_count,
    parse_seconds,
    whole_count,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("24GB", 24e9), ("16GiB", 16 * GiB), ("512 MB", 512e6), ("1.5TB", 1.5e12), (100, 100.0)],
)
def test_parse_bytes(text: str, expected: float) -> None:
    assert parse_bytes(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"), [("200ms", 0.2), ("30d", 30 * 86400.0), ("2h", 7200.0), ("5", 5.0)]
)
def test_parse_seconds(text: str, expected: float) -> None:
    assert parse_seconds(text) == pytest.approx(expected)


def test_parse_count() -> None:
    assert parse_count("2T") == 2e12
    assert parse_count("15k") == 15e3
    # a "+" as every number option takes it (--nodes +5 planned; --prompt +5 was refused)
    assert parse_count("+5") == 5 and parse_count(" +1.5k") == 1500
    with pytest.raises(InputError):
        parse_count("++5")


@pytest.mark.parametrize("bad", ["24XB", "lots", "", "GB24"])
def test_bad_sizes_name_the_value(bad: str) -> None:
    with pytest.raises(InputError) as info:
        parse_bytes(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bare", ["24", "1e400"])
def test_a_size_without_a_unit_says_so(bare: str) -> None:
    # before: "Unknown size unit '' in '24'." (GET /api/gpus?min_memory=24, rigwise gpus)
    with pytest.raises(InputError, match=f"No size unit in '{bare}'") as info:
        parse_bytes(bare)
    assert "'24GB'" in str(info.value.hint)


def test_formatting() -> None:
    assert format_bytes(24e9) == "24 GB"
    assert format_seconds(0.0123) == "12.3 ms"


def test_rounding_up_moves_to_the_next_unit() -> None:
    from rigwise.units import format_count

    assert format_count(999_885_952) == "1 B"
    assert format_bytes(999.9e9) == "1 TB"


@pytest.mark.parametrize(("text", "expected"), [("8k", 8000), ("1.5k", 1500), ("64", 64)])
def test_whole_count_reads_whole_counts(text: str, expected: int) -> None:
    assert whole_count(text, "64") == expected


@pytest.mark.parametrize("text", ["max", "-3", "1.5", "abc"])
def test_whole_count_says_what_to_write(text: str) -> None:
    # a ValueError (not an InputError), so the option's validator names the option
    with pytest.raises(ValueError, match=r"must be a whole number, e\.g\. 64"):
        whole_count(text, "64")
