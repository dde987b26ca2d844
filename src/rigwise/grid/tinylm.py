"""A tiny byte-level language model (the grid's test and demo workload); the only grid module
importing ``torch``.

Model: the previous ``context`` bytes are embedded, concatenated and fed to a one-hidden-layer
MLP predicting the next byte (Bengio et al. 2003, "A Neural Probabilistic Language Model",
JMLR 3). Perplexity is exp(mean negative log-likelihood per byte) on held-out bytes; a model
that learned nothing scores the vocabulary size, 256.

Data-parallel training (``distributed=True``, inside a torch process group that Ray Train's
``TorchTrainer`` set up): every rank trains a replica wrapped in ``DistributedDataParallel``
(gradients averaged by all-reduce, Li et al. 2020, "PyTorch Distributed", VLDB 13) on its own
shard of the bytes; rank 0 alone saves checkpoints, and its weights are the model's.
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

VOCAB = 256
# the byte a context shorter than the window is padded with (a space)
PAD = 32


@dataclass(frozen=True)
class TinyConfig:
    context: int = 8
    embed: int = 16
    hidden: int = 64
    steps: int = 300
    batch: int = 64
    learning_rate: float = 3e-3
    checkpoint_every: int = 50
    seed: int = 0

    @classmethod
    def from_app(cls, app: dict[str, Any]) -> TinyConfig:
        known = {key: app[key] for key in cls.__dataclass_fields__ if key in app}
        return cls(**known)


class TinyLM(nn.Module):
    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        self.context = config.context
        self.embed = nn.Embedding(VOCAB, config.embed)
        self.hidden = nn.Linear(config.context * config.embed, config.hidden)
        self.out = nn.Linear(config.hidden, VOCAB)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        x = self.embed(windows).flatten(1)
        return self.out(torch.tanh(self.hidden(x)))


def _tensor(data: bytes) -> torch.Tensor:
    return torch.tensor(list(data), dtype=torch.long)


def _windows(text: torch.Tensor, starts: torch.Tensor, context: int) -> torch.Tensor:
    offsets = torch.arange(context)
    return text[starts.unsqueeze(1) + offsets]


def _to_bytes(payload: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def _from_bytes(blob: bytes) -> dict[str, Any]:
    loaded: dict[str, Any] = torch.load(io.BytesIO(blob), weights_only=False)
    return loaded


def train(
    data: bytes,
    config: TinyConfig,
    resume: bytes | None,
    save_checkpoint: Callable[[int, bytes], None],
    log: Callable[[str], None],
    distributed: bool = False,
) -> dict[str, Any]:
    """Train on ``data`` (this rank's shard when ``distributed``); resume from a checkpoint
    blob when given one. Checkpoints and weights hold the plain model's state either way."""
    torch.set_num_threads(1)
    torch.manual_seed(config.seed)
    if len(data) <= config.context + 1:
        raise ValueError(f"dataset has {len(data)} bytes; needs more than {config.context + 1}")
    plain = TinyLM(config)
    optimiser = torch.optim.Adam(plain.parameters(), lr=config.learning_rate)
    step = 0
    if resume is not None:
        state = _from_bytes(resume)
        plain.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        step = int(state["step"])
        log(f"resumed from checkpoint at step {step}")
    rank = 0
    model: nn.Module = plain
    if distributed:
        # DDP broadcasts rank 0's parameters at construction, so every replica starts equal
        model = nn.parallel.DistributedDataParallel(plain)
        rank = torch.distributed.get_rank()
    text = _tensor(data)
    generator = torch.Generator().manual_seed(config.seed + step + 1_000_003 * rank)
    started, loss_value = time.perf_counter(), math.nan
    while step < config.steps:
        starts = torch.randint(
            0, len(text) - config.context - 1, (config.batch,), generator=generator
        )
        logits = model(_windows(text, starts, config.context))
        loss = nn.functional.cross_entropy(logits, text[starts + config.context])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        step += 1
        loss_value = loss.item()
        if step % config.checkpoint_every == 0 or step == config.steps:
            if rank == 0:
                state = {
                    "model": plain.state_dict(),
                    "optimiser": optimiser.state_dict(),
                    "step": step,
                }
                save_checkpoint(step, _to_bytes(state))
            log(f"step {step}/{config.steps} loss {loss_value:.4f}")
    weights = _to_bytes({"config": config.__dict__, "model": plain.state_dict()})
    return {
        "weights": weights,
        "steps": step,
        "final_loss": loss_value,
        "train_seconds": time.perf_counter() - started,
    }


def gather(value: Any) -> list[Any]:
    """``value`` from every rank of the torch process group, in rank order ([value] alone
    outside one)."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [value]
    gathered: list[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(gathered, value)
    return gathered


def load(weights: bytes) -> tuple[TinyLM, TinyConfig]:
    """The model (in eval mode) and its config from a weights blob."""
    payload = _from_bytes(weights)
    config = TinyConfig(**payload["config"])
    model = TinyLM(config)
    model.load_state_dict(payload["model"])
    model.eval()
    return model, config


def perplexity(weights: bytes, data: bytes) -> dict[str, float]:
    """exp(mean NLL per byte) over every position of ``data`` that has a full context."""
    model, config = load(weights)
    count = len(data) - config.context
    if count <= 0:
        raise ValueError(f"held-out data has {len(data)} bytes; needs more than {config.context}")
    # the first ``context`` bytes are only context: each later byte is predicted from real text
    log_likelihood, _ = score(model, config, data[: config.context], data[config.context :])
    return {"perplexity": math.exp(-log_likelihood / count), "tokens": float(count)}


def score(
    model: TinyLM, config: TinyConfig, context: bytes, continuation: bytes
) -> tuple[float, bool]:
    """(log-likelihood of ``continuation`` after ``context``, whether greedy decoding yields
    it): each byte is predicted from the ``config.context`` bytes before it, the text padded
    with spaces on the left as ``sample`` pads a short prompt, so scores chain: score(a, b) +
    score(a + b, c) == score(a, b + c)."""
    torch.set_num_threads(1)
    text = _tensor(bytes([PAD]) * config.context + context + continuation)
    total, greedy = 0.0, True
    with torch.no_grad():
        for begin in range(config.context + len(context), len(text), 4096):
            positions = torch.arange(begin, min(begin + 4096, len(text)))
            logits = model(_windows(text, positions - config.context, config.context))
            targets = text[positions]
            picked = torch.log_softmax(logits, dim=1).gather(1, targets.unsqueeze(1))
            total += float(picked.sum())
            greedy = greedy and bool((logits.argmax(dim=1) == targets).all())
    return total, greedy


def generate(weights: bytes, prompt: str, tokens: int, seed: int = 0) -> str:
    """Sample ``tokens`` bytes after ``prompt``."""
    return sample(*load(weights), prompt, tokens, seed)


def sample(
    model: TinyLM,
    config: TinyConfig,
    prompt: str,
    tokens: int,
    seed: int = 0,
    greedy: bool = False,
) -> str:
    """Sample ``tokens`` bytes after ``prompt`` from a loaded model (a Serve replica keeps
    one loaded); ``greedy`` takes the likeliest byte each time instead."""
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(seed)
    history = list(prompt.encode("utf-8"))
    history = [PAD] * max(0, config.context - len(history)) + history
    produced = []
    with torch.no_grad():
        for _ in range(tokens):
            window = torch.tensor([history[-config.context :]], dtype=torch.long)
            probabilities = torch.softmax(model(window)[0], dim=0)
            if greedy:
                byte = int(probabilities.argmax())
            else:
                byte = int(torch.multinomial(probabilities, 1, generator=generator))
            history.append(byte)
            produced.append(byte)
    return prompt + bytes(produced).decode("utf-8", errors="replace")
