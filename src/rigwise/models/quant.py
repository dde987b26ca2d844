"""Weight quantization formats (``catalog/data/quant_formats.csv``).

Each format says how many bits one matrix weight costs on average (block scales included) and
which tensors its tooling leaves at higher precision: llama.cpp quantizes the token embedding
and keeps 1-D tensors in F32; GPTQ/AWQ/bitsandbytes keep embeddings and the output head in
16 bit. The numbers and their sources are data; this module only reads them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from rigwise.catalog.loader import read_csv
from rigwise.catalog.names import normalize
from rigwise.errors import CatalogError, UnknownNameError, closest

_FILE = "quant_formats.csv"


@dataclass(frozen=True)
class QuantFormat:
    """A weights/KV format: bits per weight of each kind of tensor (quant_formats.csv)."""

    name: str
    kind: str  # float, llamacpp_block, llamacpp_mix, group_int, nf4, microscaling
    bits_per_weight: float  # matrices, scales included (a mix: its published effective bpw)
    embedding_bits: float  # token (and position) embedding
    lm_head_bits: float  # untied output head
    vector_bits: float  # norms, biases and other 1-D tensors
    kv_cache: bool  # usable as a KV-cache dtype
    scope: str  # "all" matrices, or only the routed "experts" (gpt-oss MXFP4)
    other_matrix_bits: float  # matrices outside the scope
    aliases: tuple[str, ...]
    notes: str
    source: str
    retrieved: str


def _bits(row: Mapping[str, str], column: str, default: float) -> float:
    value = row.get(column, "")
    try:
        return float(value) if value else default
    except ValueError as exc:
        raise CatalogError(f"{_FILE}: {row['name']}: {column}={value!r} is not a number.") from exc


def _parse(row: Mapping[str, str]) -> QuantFormat:
    bpw = _bits(row, "bits_per_weight", float("nan"))
    if not bpw > 0:
        raise CatalogError(f"{_FILE}: {row['name']}: bits_per_weight must be positive.")
    return QuantFormat(
        name=row["name"],
        kind=row["kind"],
        bits_per_weight=bpw,
        embedding_bits=_bits(row, "embedding_bits", bpw),
        lm_head_bits=_bits(row, "lm_head_bits", bpw),
        vector_bits=_bits(row, "vector_bits", 16.0),
        kv_cache=row.get("kv_cache", "").lower() in ("yes", "true", "1"),
        scope=row.get("scope", "") or "all",
        other_matrix_bits=_bits(row, "other_matrix_bits", bpw),
        aliases=tuple(a.strip() for a in row.get("aliases", "").split(";") if a.strip()),
        notes=row.get("notes", ""),
        source=row["source"],
        retrieved=row.get("retrieved", ""),
    )


@functools.cache
def _formats() -> dict[str, QuantFormat]:
    return {fmt.name: fmt for fmt in (_parse(row) for row in read_csv(_FILE))}


@functools.cache
def _aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    for fmt in _formats().values():
        for alias in (fmt.name, *fmt.aliases):
            table[normalize(alias, drop_vendor_words=False)] = fmt.name
    return table


class _QuantFormats(Mapping[str, QuantFormat]):
    """Read-only mapping name -> QuantFormat, loaded on first use."""

    def __getitem__(self, key: str) -> QuantFormat:
        return _formats()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_formats())

    def __len__(self) -> int:
        return len(_formats())


QUANT_FORMATS: Mapping[str, QuantFormat] = _QuantFormats()


@functools.lru_cache(maxsize=512)
def quant_format(name: str) -> QuantFormat:
    """The format called ``name`` ('Q4_K_M', 'q4_k_m', 'gptq-4bit', 'fp16'...)."""
    fmt = _aliases().get(normalize(name, drop_vendor_words=False))
    if fmt is None:
        raise UnknownNameError("quant format", name, closest(name, list(_formats())))
    return _formats()[fmt]


@functools.lru_cache(maxsize=64)
def kv_cache_format(name: str) -> QuantFormat:
    """A format usable for the KV cache: f16/fp16, bf16, fp8, q8_0, q4_0, q4_1, q5_0, f32."""
    try:
        fmt = quant_format(name)
    except UnknownNameError:  # not a format at all: name the KV-cache dtypes, not weights'
        fmt = None
    if fmt is None or not fmt.kv_cache:
        usable = [f.name for f in _formats().values() if f.kv_cache]
        raise UnknownNameError("KV-cache dtype", name, closest(name, usable))
    return fmt
