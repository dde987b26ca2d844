"""The bounded GGUF header walk: counts that the file has no bytes for are clear errors at
once (the gguf reader looped for ever on an array of 2**61 items), real headers pass."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import gguf
import numpy as np
import pytest

from rigwise.errors import ModelFormatError
from rigwise.models import load_model
from rigwise.models.gguf_header import MAX_ARRAY_ELEMENTS, check_header

KEY = b"general.architecture"


def _header(tensors: int, keys: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensors, keys)


def _array_kv(item_type: int, count: int) -> bytes:  # GGUF spec: type 9 is an array
    return struct.pack("<Q", len(KEY)) + KEY + struct.pack("<IIQ", 9, item_type, count)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (_header(0, 1) + _array_kv(4, 2**61), "an array of 2,305,843,009,213,693,952 items"),
        (_header(0, 1) + _array_kv(4, 1000), "an array of 1,000 items needs 4,000 bytes"),
        (_header(0, 1) + _array_kv(8, MAX_ARRAY_ELEMENTS + 1), "over 8,000,000 items"),
        (_header(2**62, 2**62), "cannot fit in 64 bytes"),
        (_header(0, 1) + _array_kv(9, 1) + struct.pack("<IQ", 9, 1) * 20, "nested"),
    ],
)
def test_impossible_counts_are_clear_errors_at_once(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content + b"\0" * 64)
    started = time.perf_counter()
    with pytest.raises(ModelFormatError, match=message) as err:
        load_model(path)
    assert time.perf_counter() - started < 2.0
    assert str(path) in err.value.message and "Download the file again" in (err.value.hint or "")


def test_a_header_written_by_the_gguf_package_passes(tmp_path: Path) -> None:
    path = tmp_path / "ok.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list([f"tok{i}" for i in range(1000)])
    writer.add_token_scores([0.5] * 1000)
    writer.add_array("test.nested", [[1, 2], [3]])
    writer.add_tensor("t", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    check_header(path)  # no error
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:2000])  # inside the token list
    with pytest.raises(ModelFormatError, match="past the end of the file"):
        check_header(cut)
