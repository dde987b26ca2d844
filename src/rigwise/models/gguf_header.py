"""A bounded walk over a GGUF file's header before ``gguf.GGUFReader`` parses it.

The reader loops once per element of an array value, and an element read past the end of the
file comes back empty rather than as an error: an array whose length says 2**61 (a corrupt or
hostile file of 50 bytes) loops for ever. Here every count is checked against the bytes left
in the file, and the array elements of all values together against a total, so reading a
header costs time in proportion to its real size. Layout: the GGUF spec
(github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic, version u32, tensor count u64,
key-value count u64, then per key a string (u64 length + bytes), a value type u32 and a value.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from rigwise.errors import ModelFormatError

MAX_ARRAY_ELEMENTS = 8_000_000
"""Array elements of all values together. A 256k-token vocabulary's tokens, scores, types and
~400k merges are ~1.2 M; eight million is plenty and stays a second or two of parsing."""
MAX_ARRAY_NESTING = 8
# Bytes of each scalar value type (GGUF spec: uint8 0, int8 1, ..., bool 7, uint64 10 ...).
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_MIN_KV_BYTES = 8 + 4 + 1  # an empty key, a type and a one-byte value
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8  # an empty name, no dimensions, a type, an offset
HINT = "Download the file again and compare its size with the published one."


def check_header(path: Path) -> None:
    """ModelFormatError if a count in the header of the GGUF file ``path`` cannot be true
    (more elements, keys or tensors than the file has bytes for); else nothing."""
    with path.open("rb") as handle:
        if path.stat().st_size < 4:
            return  # the reader's own error names a file this short
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _Walk(data, path).header()


class _Walk:
    def __init__(self, data: mmap.mmap, path: Path) -> None:
        self.data, self.path = data, path
        self.offset = 4  # past the magic
        self.order = "<"
        self.budget = MAX_ARRAY_ELEMENTS

    def fail(self, what: str) -> ModelFormatError:
        return ModelFormatError(
            f"{self.path}: corrupt GGUF header: {what} (at byte {self.offset:,} of "
            f"{len(self.data):,}).",
            hint=HINT,
        )

    def take(self, size: int, what: str) -> int:
        if size > len(self.data) - self.offset:
            raise self.fail(f"{what} needs {size:,} bytes, past the end of the file")
        start = self.offset
        self.offset += size
        return start

    def number(self, code: str, what: str) -> int:
        value: int = struct.unpack_from(
            self.order + code, self.data, self.take(8 if code == "Q" else 4, what)
        )[0]
        return value

    def header(self) -> None:
        version = self.number("I", "the version")
        if version not in (2, 3):
            swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
            if swapped not in (2, 3):
                return  # an unknown version: the reader names it
            self.order = ">"
        tensors = self.number("Q", "the tensor count")
        keys = self.number("Q", "the key count")
        left = len(self.data) - self.offset
        if keys * _MIN_KV_BYTES > left or tensors * _MIN_TENSOR_INFO_BYTES > left:
            raise self.fail(f"{keys:,} keys and {tensors:,} tensors cannot fit in {left:,} bytes")
        for _ in range(keys):
            self.string("a key")
            self.value(self.number("I", "a value type"), 0)

    def string(self, what: str) -> None:
        self.take(self.number("Q", f"the length of {what}"), what)

    def value(self, kind: int, depth: int) -> None:
        if kind in _SCALAR_BYTES:
            self.take(_SCALAR_BYTES[kind], "a value")
        elif kind == _STRING:
            self.string("a string value")
        elif kind == _ARRAY:
            self.array(depth)
        else:
            raise self.fail(f"unknown value type {kind}")

    def array(self, depth: int) -> None:
        if depth >= MAX_ARRAY_NESTING:
            raise self.fail(f"arrays nested deeper than {MAX_ARRAY_NESTING}")
        item = self.number("I", "an array's item type")
        count = self.number("Q", "an array's length")
        self.budget -= count
        if self.budget < 0:
            raise self.fail(
                f"an array of {count:,} items (over {MAX_ARRAY_ELEMENTS:,} items in all)"
            )
        if item in _SCALAR_BYTES:
            self.take(count * _SCALAR_BYTES[item], f"an array of {count:,} items")
            return
        for _ in range(count):
            self.value(item, depth + 1)
