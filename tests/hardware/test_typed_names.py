"""Names as people type them: product lines, editions and word order do not hide a device."""

from __future__ import annotations

import pytest

from rigwise.errors import UnknownNameError
from rigwise.hardware import get_accelerator
from rigwise.hardware.names import rewrite, word_key


@pytest.mark.parametrize(
    ("typed", "device"),
    [
        ("MacBook Pro M3 Max 128GB", "m3-max-40c-128gb"),
        ("Mac Studio M2 Ultra 192GB", "m2-ultra-76c-192gb"),
        ("Mac mini M4 Pro 64GB", "m4-pro-20c-64gb"),
        ("RTX 3090 Ti FE", "rtx-3090-ti"),
        ("NVIDIA GeForce RTX 4090 Founders Edition", "rtx-4090"),
        ("H100 SXM5 80GB", "h100-sxm"),
        ("A100 80GB SXM4", "a100-sxm-80gb"),
    ],
)
def test_typed_names_resolve(typed: str, device: str) -> None:
    assert get_accelerator(typed).id == device


def test_rewrites_keep_the_chip_words() -> None:
    assert rewrite("MacBook Pro M4 Pro 48GB") == "M4 Pro 48GB"
    assert word_key("A100 SXM 80GB") == word_key("80GB a100-sxm")


def test_an_unknown_name_still_suggests() -> None:
    with pytest.raises(UnknownNameError) as caught:
        get_accelerator("MacBook Pro M9 Max")
    assert "Did you mean" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "part"), [("2x rtx-3091", "rtx-3091"), ("20x raspberry-pi-5-8gb+nvlink", None)]
)
def test_an_unknown_device_with_a_count_is_named_without_its_count(
    text: str, part: str | None
) -> None:
    # before: "Unknown GPU '2x rtx-3091'", suggestions for the whole text
    from rigwise.hardware.nodes import node_from_text

    with pytest.raises(UnknownNameError) as caught:
        node_from_text(text)
    expected = part or text.split("x ", 1)[1].split("+")[0]
    assert caught.value.name == expected
    assert caught.value.suggestions
    assert node_from_text("2x 7900 XTX").count == 2  # a name that starts with digits still splits
