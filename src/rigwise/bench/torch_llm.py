"""A Llama-architecture model with random weights (nothing downloaded) for the LLM benchmark:
prefill/decode speed at batch 1 and one fine-tuning step. It follows the Llama 3 paper
(arXiv:2407.21783, Section 3.2): RMSNorm, rotary position embeddings, grouped-query attention,
SwiGLU MLP, untied output head. PyTorch comes from ``torch_adapter.require_torch`` (that adapter
stays the only module that imports it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psutil

from rigwise.bench.torch_adapter import TORCH_DTYPES, require_torch, synchronize


@dataclass(frozen=True)
class LlamaShape:
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    rope_theta: float = 500000.0
    rms_norm_eps: float = 1e-5


def _init_params(torch: Any, shape: LlamaShape, device: str, dtype: Any) -> dict[str, Any]:
    h, q, kv = shape.hidden_size, shape.num_attention_heads, shape.num_kv_heads
    d, i = shape.head_dim, shape.intermediate_size
    generator = torch.Generator(device=device).manual_seed(0)

    def weight(*size: int) -> Any:
        return (torch.randn(*size, device=device, generator=generator) * 0.02).to(dtype)

    params = {"embed": weight(shape.vocab_size, h), "lm_head": weight(h, shape.vocab_size)}
    params["norm"] = torch.ones(h, device=device, dtype=dtype)
    for layer in range(shape.num_layers):
        for name, size in {
            "wq": (h, q * d),
            "wk": (h, kv * d),
            "wv": (h, kv * d),
            "wo": (q * d, h),
            "gate": (h, i),
            "up": (h, i),
            "down": (i, h),
        }.items():
            params[f"{layer}.{name}"] = weight(*size)
        params[f"{layer}.norm1"] = torch.ones(h, device=device, dtype=dtype)
        params[f"{layer}.norm2"] = torch.ones(h, device=device, dtype=dtype)
    return params


class _Llama:
    """A functional Llama forward pass over a dict of weights, with an optional KV cache."""

    def __init__(self, torch: Any, shape: LlamaShape, device: str, dtype: Any) -> None:
        self.torch, self.shape, self.device, self.dtype = torch, shape, device, dtype
        self.params = _init_params(torch, shape, device, dtype)
        self.cache: list[tuple[Any, Any]] = []

    def weight_bytes(self) -> float:
        return float(sum(p.numel() * p.element_size() for p in self.params.values()))

    def new_cache(self, batch: int, max_tokens: int) -> None:
        s = self.shape
        size = (batch, s.num_kv_heads, max_tokens, s.head_dim)
        self.cache = [
            (
                self.torch.zeros(size, device=self.device, dtype=self.dtype),
                self.torch.zeros(size, device=self.device, dtype=self.dtype),
            )
            for _ in range(s.num_layers)
        ]

    def _rotary(self, start: int, tokens: int) -> tuple[Any, Any]:
        """cos and sin of the rotary angles for positions start..start+tokens, once per forward
        (Su et al. 2021, RoFormer eq. 34); theta from the model config."""
        torch, d = self.torch, self.shape.head_dim
        inv = 1.0 / self.shape.rope_theta ** (torch.arange(0, d, 2, device=self.device) / d)
        angles = torch.outer(torch.arange(start, start + tokens, device=self.device), inv)
        return angles.cos().to(self.dtype), angles.sin().to(self.dtype)

    def _rope(self, x: Any, rotary: tuple[Any, Any]) -> Any:
        cos, sin = rotary
        half = self.shape.head_dim // 2
        first, second = x[..., :half], x[..., half:]
        return self.torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)

    def _norm(self, x: Any, weight: Any) -> Any:
        return self.torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, self.shape.rms_norm_eps)

    def _attention(self, x: Any, layer: int, start: int, rotary: tuple[Any, Any]) -> Any:
        torch, s, p = self.torch, self.shape, self.params
        batch, tokens, _ = x.shape

        def heads(w: str, n: int) -> Any:
            return (x @ p[f"{layer}.{w}"]).view(batch, tokens, n, s.head_dim).transpose(1, 2)

        q = self._rope(heads("wq", s.num_attention_heads), rotary)
        k = self._rope(heads("wk", s.num_kv_heads), rotary)
        v = heads("wv", s.num_kv_heads)
        if self.cache:
            k_cache, v_cache = self.cache[layer]
            k_cache[:, :, start : start + tokens] = k
            v_cache[:, :, start : start + tokens] = v
            k, v = k_cache[:, :, : start + tokens], v_cache[:, :, : start + tokens]
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=tokens > 1, enable_gqa=True
        )
        return out.transpose(1, 2).reshape(batch, tokens, -1) @ p[f"{layer}.wo"]

    def forward(self, tokens: Any, start: int = 0, last_only: bool = False) -> Any:
        p = self.params
        x = p["embed"][tokens]
        rotary = self._rotary(start, tokens.shape[1])
        for layer in range(self.shape.num_layers):
            x = x + self._attention(self._norm(x, p[f"{layer}.norm1"]), layer, start, rotary)
            h = self._norm(x, p[f"{layer}.norm2"])
            gate = self.torch.nn.functional.silu(h @ p[f"{layer}.gate"])
            x = x + (gate * (h @ p[f"{layer}.up"])) @ p[f"{layer}.down"]
        x = self._norm(x[:, -1:] if last_only else x, p["norm"])
        return x @ p["lm_head"]


class _PeakMemory:
    """Peak memory of a block: the CUDA allocator's peak, or the growth of this process's RSS."""

    def __init__(self, torch: Any, device: str) -> None:
        self.torch, self.device = torch, device
        self.cuda = device.startswith("cuda")
        self.baseline = 0.0
        self.peak = 0.0

    def start(self) -> None:
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats(self.device)
        self.baseline = float(psutil.Process().memory_info().rss)
        self.peak = self.baseline

    def sample(self) -> None:
        self.peak = max(self.peak, float(psutil.Process().memory_info().rss))

    def bytes(self) -> float:
        if self.cuda:
            return float(self.torch.cuda.max_memory_allocated(self.device))
        return self.peak - self.baseline


@dataclass(frozen=True)
class LlmResult:
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    peak_memory_bytes: float
    weight_bytes: float
    prompt_tokens: int
    generated_tokens: int


def llm_inference(shape: LlamaShape, device: str, dtype: str, prompt: int, gen: int) -> LlmResult:
    """Prefill ``prompt`` tokens, then decode ``gen`` tokens greedily at batch 1."""
    torch = require_torch()
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    memory = _PeakMemory(torch, device)
    memory.start()
    with torch.inference_mode():
        model = _Llama(torch, shape, device, torch_dtype)
        tokens = torch.randint(0, shape.vocab_size, (1, prompt), device=device)
        model.new_cache(1, prompt + gen + 1)
        model.forward(tokens[:, :8], last_only=True)  # warm-up: kernels, allocator
        synchronize(torch, device)
        start = time.perf_counter()
        logits = model.forward(tokens, last_only=True)
        synchronize(torch, device)
        prefill_seconds = time.perf_counter() - start
        memory.sample()
        start = time.perf_counter()
        for step in range(gen):
            next_token = logits[:, -1].argmax(dim=-1, keepdim=True)
            logits = model.forward(next_token, start=prompt + step)
        synchronize(torch, device)
        decode_seconds = time.perf_counter() - start
        memory.sample()
    return LlmResult(
        prefill_tokens_per_s=prompt / prefill_seconds,
        decode_tokens_per_s=gen / decode_seconds,
        peak_memory_bytes=memory.bytes(),
        weight_bytes=model.weight_bytes(),
        prompt_tokens=prompt,
        generated_tokens=gen,
    )


@dataclass(frozen=True)
class FinetuneResult:
    step_seconds: float
    peak_memory_bytes: float
    tokens: int


class _AdamW:
    """AdamW (Loshchilov & Hutter 2019, Algorithm 2) with two fp state tensors per weight, as
    torch.optim.AdamW keeps; written out because torch.optim's first call imports TorchDynamo
    (seconds on a small CPU), which would be timed as part of the bench."""

    def __init__(self, torch: Any, weights: list[Any], lr: float = 1e-5) -> None:
        self.torch, self.weights, self.lr = torch, weights, lr
        self.betas, self.eps, self.decay, self.steps = (0.9, 0.999), 1e-8, 0.01, 0
        self.moments = [(torch.zeros_like(w), torch.zeros_like(w)) for w in weights]

    def step(self) -> None:
        self.steps += 1
        beta1, beta2 = self.betas
        correction1, correction2 = 1 - beta1**self.steps, 1 - beta2**self.steps
        with self.torch.no_grad():
            for weight, (first, second) in zip(self.weights, self.moments, strict=True):
                grad = weight.grad
                first.mul_(beta1).add_(grad, alpha=1 - beta1)
                second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denominator = (second / correction2).sqrt_().add_(self.eps)
                weight.mul_(1 - self.lr * self.decay)
                weight.addcdiv_(first, denominator, value=-self.lr / correction1)
                weight.grad = None


def finetune_step(
    shape: LlamaShape, device: str, dtype: str, batch: int, seq: int
) -> FinetuneResult:
    """Time of one full fine-tuning step (forward, backward, AdamW), after one warm-up step."""
    torch = require_torch()
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    memory = _PeakMemory(torch, device)
    memory.start()
    model = _Llama(torch, shape, device, torch_dtype)
    weights = list(model.params.values())
    for weight in weights:
        weight.requires_grad_(True)
    optimizer = _AdamW(torch, weights)
    tokens = torch.randint(0, shape.vocab_size, (batch, seq + 1), device=device)

    def step() -> None:
        logits = model.forward(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, shape.vocab_size).float(), tokens[:, 1:].reshape(-1)
        )
        loss.backward()
        optimizer.step()
        memory.sample()

    step()
    synchronize(torch, device)
    start = time.perf_counter()
    step()
    synchronize(torch, device)
    return FinetuneResult(time.perf_counter() - start, memory.bytes(), batch * seq)
