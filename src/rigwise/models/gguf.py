"""Read a local GGUF file's metadata and tensor infos (never its weights).

``gguf.GGUFReader`` memory-maps the file and parses the header; we read the key-value metadata
and each tensor's type, shape, element count and byte size. Parameter counts are the exact sum
of tensor element counts; weight bytes are the real per-tensor bytes. The ``gguf`` package is
imported here only, when a GGUF file is actually opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.errors import ModelFormatError
from rigwise.models.checks import (
    MAX_CONTEXT,
    MAX_EXPERTS,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_VOCAB,
    MAX_WIDTH,
    check_spec,
    config_int,
)
from rigwise.models.gguf_header import check_header
from rigwise.models.spec import ModelSpec, MoESpec


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    shape: tuple[int, ...]
    type_name: str
    n_elements: int
    n_bytes: int
    data_offset: int


def _open(path: Path) -> Any:
    try:
        import gguf
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise ModelFormatError(
            f"Reading {path} needs the 'gguf' package.", hint="pip install 'rigwise[gguf]'"
        ) from exc
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ModelFormatError(
            f"{path}: not a GGUF file (it starts with {magic!r}, a GGUF file with b'GGUF').",
            hint="Give a .gguf model file or an HF config.json.",
        )
    check_header(path)  # the reader loops for ever on an array longer than the file
    try:
        return gguf.GGUFReader(str(path), "r")
    except Exception as exc:  # the reader raises ValueError, IndexError, struct/numpy errors
        size = path.stat().st_size
        raise ModelFormatError(
            f"{path}: truncated or corrupt GGUF file ({size} bytes; {type(exc).__name__}: {exc}).",
            hint="Download the file again and compare its size with the published one.",
        ) from exc


def _metadata(reader: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, field in reader.fields.items():
        if key.startswith("tokenizer.ggml.") and key != "tokenizer.ggml.tokens":
            continue  # merges/scores are large and unused
        if key == "tokenizer.ggml.tokens":
            values[key] = len(field.data)
            continue
        try:
            values[key] = field.contents()
        except Exception:  # an exotic value type: keep the rest of the header
            continue
    return values


def _tensors(reader: Any, path: Path) -> list[GGUFTensor]:
    size = path.stat().st_size
    tensors = []
    for t in reader.tensors:
        tensor = GGUFTensor(
            name=str(t.name),
            shape=tuple(int(d) for d in t.shape),
            type_name=t.tensor_type.name,
            n_elements=int(t.n_elements),
            n_bytes=int(t.n_bytes),
            data_offset=int(t.data_offset),
        )
        if tensor.data_offset + tensor.n_bytes > size:
            raise ModelFormatError(
                f"{path}: truncated: tensor {tensor.name!r} ends at byte "
                f"{tensor.data_offset + tensor.n_bytes} but the file has {size} bytes.",
                hint="Download the file again.",
            )
        tensors.append(tensor)
    if not tensors:
        raise ModelFormatError(f"{path}: the GGUF file lists no tensors.")
    return tensors


def _file_type(meta: dict[str, Any]) -> str | None:
    value = meta.get("general.file_type")
    if value is None:
        return None
    import gguf

    try:
        name = gguf.LlamaFileType(int(value)).name
    except ValueError:
        return f"file_type {value}"
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def _require(meta: dict[str, Any], key: str, path: Path, low: int, high: int) -> int:
    if key not in meta:
        raise ModelFormatError(f"{path}: GGUF metadata key {key!r} is missing.")
    return config_int(meta[key], key, str(path), low, high)


def _optional(meta: dict[str, Any], key: str, path: Path, default: int, high: int) -> int:
    value = meta.get(key)
    return default if value is None else config_int(value, key, str(path), 0, high)


def load_gguf(path: Path) -> ModelSpec:
    reader = _open(path)
    try:
        meta = _metadata(reader)
        tensors = _tensors(reader, path)
    except ModelFormatError:
        raise
    except Exception as exc:
        raise ModelFormatError(f"{path}: corrupt GGUF header ({exc}).") from exc
    return check_spec(_spec(path, meta, tensors), str(path))


def _count(tensors: list[GGUFTensor], *needles: str) -> int:
    return sum(t.n_elements for t in tensors if any(n in t.name for n in needles))


def _spec(path: Path, meta: dict[str, Any], tensors: list[GGUFTensor]) -> ModelSpec:
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise ModelFormatError(f"{path}: GGUF metadata key 'general.architecture' is missing.")
    hidden = _require(meta, f"{arch}.embedding_length", path, 1, MAX_WIDTH)
    heads = _require(meta, f"{arch}.attention.head_count", path, 1, MAX_HEADS)
    kv_heads = _optional(meta, f"{arch}.attention.head_count_kv", path, heads, MAX_HEADS)
    embedding = _count(tensors, "token_embd.weight")
    lm_head = _count(tensors, "output.weight")
    tokens = _optional(meta, "tokenizer.ggml.tokens", path, 0, MAX_VOCAB)
    vocab = _optional(meta, f"{arch}.vocab_size", path, tokens, MAX_VOCAB)
    if not vocab and embedding:
        vocab = embedding // hidden
    total = sum(t.n_elements for t in tensors)
    moe, active = _moe(meta, arch, tensors, total, path)
    window = _optional(meta, f"{arch}.attention.sliding_window", path, 0, MAX_CONTEXT)
    return ModelSpec(
        name=str(meta.get("general.name") or path.stem)[:200],
        architecture=arch[:100],
        num_layers=_require(meta, f"{arch}.block_count", path, 1, MAX_LAYERS),
        hidden_size=hidden,
        intermediate_size=_optional(meta, f"{arch}.feed_forward_length", path, 0, MAX_WIDTH),
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=_optional(meta, f"{arch}.attention.key_length", path, hidden // heads, MAX_WIDTH),
        vocab_size=vocab,
        tie_word_embeddings=lm_head == 0,
        max_context=_optional(meta, f"{arch}.context_length", path, 0, MAX_CONTEXT),
        params_total=total,
        params_active=active,
        params_embedding=embedding,
        moe=moe,
        sliding_window=int(window) if window else None,
        source=str(path),
        gguf_weights_bytes=float(sum(t.n_bytes for t in tensors)),
        gguf_quant=_file_type(meta),
        params_lm_head=lm_head,
        params_positions=_count(tensors, "position_embd.weight"),
        params_vectors=sum(t.n_elements for t in tensors if len(t.shape) == 1),
        params_breakdown=(("tensors", total),),
        notes=("counted from GGUF tensor infos",),
    )


def _moe(
    meta: dict[str, Any], arch: str, tensors: list[GGUFTensor], total: int, path: Path
) -> tuple[MoESpec | None, int]:
    experts = _optional(meta, f"{arch}.expert_count", path, 0, MAX_EXPERTS)
    if experts <= 1:
        return None, total
    used = _optional(meta, f"{arch}.expert_used_count", path, 1, experts)
    routed = [t for t in tensors if "_exps" in t.name]
    routed_params = sum(t.n_elements for t in routed)
    moe_layers = len({t.name.split(".")[1] for t in routed if t.name.startswith("blk.")})
    per_expert = routed_params // (experts * max(moe_layers, 1))
    moe = MoESpec(
        num_experts=experts,
        experts_per_token=used,
        expert_intermediate_size=_optional(
            meta, f"{arch}.expert_feed_forward_length", path, 0, MAX_WIDTH
        ),
        num_moe_layers=moe_layers,
        params_per_expert=per_expert,
    )
    return moe, total - routed_params * (experts - used) // experts
