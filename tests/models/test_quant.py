"""``kv_cache_format``: a name that is no KV-cache dtype is named as one, with KV suggestions."""

from __future__ import annotations

import pytest

from rigwise.errors import UnknownNameError
from rigwise.models.quant import QUANT_FORMATS, kv_cache_format


@pytest.mark.parametrize("name", ["zzz", "Q4_K_M"])  # not a format / a weights-only format
def test_an_unknown_kv_dtype_suggests_kv_dtypes(name: str) -> None:
    # before: 'zzz' said "Unknown quant format 'zzz'. Did you mean: Q8_0, Q6_K, Q5_K_S?" --
    # weights formats (Q6_K) that --kv-quant does not take
    kv_names = {f.name for f in QUANT_FORMATS.values() if f.kv_cache}
    with pytest.raises(UnknownNameError, match="Unknown KV-cache dtype") as caught:
        kv_cache_format(name)
    assert caught.value.suggestions and set(caught.value.suggestions) <= kv_names


def test_kv_dtypes_still_read() -> None:
    assert [kv_cache_format(n).name for n in ("fp16", "bf16", "fp8", "q8_0")] == [
        "F16", "BF16", "FP8", "Q8_0",
    ]  # fmt: skip
