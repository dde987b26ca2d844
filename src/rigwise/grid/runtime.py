"""What a job does once Ray has placed it: the bodies of the four job kinds, and the body of
one rank of a multi-node (data-parallel) train job.

Runs inside a Ray worker on an admitted node; imports neither ``ray`` nor a web framework (the
adapter passes checkpoint callbacks in). Every body returns a plain dict with a ``log`` list.
"""

from __future__ import annotations

import importlib.util
import shlex
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

from rigwise.errors import GridError

SaveCheckpoint = Callable[[int, bytes], None]


def split_held_out(data: bytes, held_out_fraction: float) -> tuple[bytes, bytes]:
    """(training part, held-out tail); the tail is what the leaderboard grades on."""
    if not 0 < held_out_fraction < 1:
        raise GridError(f"held_out_fraction must be in (0, 1), got {held_out_fraction}.")
    cut = int(len(data) * (1 - held_out_fraction))
    return data[:cut], data[cut:]


def shard(data: bytes, rank: int, world_size: int) -> bytes:
    """Rank ``rank``'s contiguous share of ``data`` (the shards cover it, in rank order)."""
    if not 0 <= rank < world_size:
        raise GridError(f"rank {rank} is outside a world of {world_size} worker(s).")
    size = len(data)
    return data[size * rank // world_size : size * (rank + 1) // world_size]


def _missing(requires: list[str]) -> list[str]:
    return [name for name in requires if importlib.util.find_spec(name) is None]


def run_job(
    kind: str,
    app: dict[str, Any],
    requires: list[str],
    inputs: dict[str, bytes],
    resume: bytes | None,
    save_checkpoint: SaveCheckpoint,
) -> dict[str, Any]:
    """Run one job body; raises for a job error (the coordinator marks the job failed)."""
    log: list[str] = [f"running on {socket.gethostname()}"]
    missing = _missing(requires)
    if missing:
        raise GridError(f"Software environment lacks {', '.join(missing)} on this node.")
    started = time.perf_counter()
    body = {"train": _train, "evaluate": _evaluate, "serve": _serve, "command": _command}[kind]
    result = body(app, inputs, resume, save_checkpoint, log.append)
    result["log"] = log + list(result.get("log", []))
    result["seconds"] = time.perf_counter() - started
    return result


def _train(
    app: dict[str, Any],
    inputs: dict[str, bytes],
    resume: bytes | None,
    save: SaveCheckpoint,
    log: Callable[[str], None],
) -> dict[str, Any]:
    from rigwise.grid import tinylm

    train_part, _ = split_held_out(inputs["dataset"], float(app["held_out_fraction"]))
    config = tinylm.TinyConfig.from_app(app)
    return tinylm.train(train_part, config, resume, save, log)


def _evaluate(
    app: dict[str, Any],
    inputs: dict[str, bytes],
    resume: bytes | None,
    save: SaveCheckpoint,
    log: Callable[[str], None],
) -> dict[str, Any]:
    from rigwise.grid import tinylm

    _, held_out = split_held_out(inputs["dataset"], float(app["held_out_fraction"]))
    scores = tinylm.perplexity(inputs["weights"], held_out)
    log(f"held-out perplexity {scores['perplexity']:.3f} over {scores['tokens']:.0f} bytes")
    result: dict[str, Any] = {"metrics": scores}
    tasks = list(app.get("tasks") or [])
    if tasks:
        from rigwise.grid import harness

        # a grid: task's dataset travels in ``inputs`` under the task's own name
        data = {task: inputs[task] for task in tasks if task in inputs}
        result["tasks"] = harness.run_tasks(inputs["weights"], tasks, data)
        for task, metrics in result["tasks"].items():
            log(f"lm-eval {task}: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()))
    return result


def _serve(
    app: dict[str, Any],
    inputs: dict[str, bytes],
    resume: bytes | None,
    save: SaveCheckpoint,
    log: Callable[[str], None],
) -> dict[str, Any]:
    from rigwise.grid import tinylm

    tokens = int(app.get("tokens", 64))
    text = tinylm.generate(inputs["weights"], str(app.get("prompt", "")), tokens)
    return {"text": text, "tokens": tokens}


def _command(
    app: dict[str, Any],
    inputs: dict[str, bytes],
    resume: bytes | None,
    save: SaveCheckpoint,
    log: Callable[[str], None],
) -> dict[str, Any]:
    command = app.get("command")
    argv = shlex.split(command) if isinstance(command, str) else list(command or [])
    if not argv:
        raise GridError("A command job needs app.command.")
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=float(app.get("timeout_seconds", 3600)),
        check=False,
    )
    for line in (done.stdout + done.stderr).splitlines()[-200:]:
        log(line)
    if done.returncode != 0:
        raise GridError(f"Command exited with {done.returncode}.")
    return {"returncode": done.returncode}


def run_train_rank(
    app: dict[str, Any],
    requires: list[str],
    inputs: dict[str, bytes],
    resume: bytes | None,
    save_checkpoint: SaveCheckpoint,
    rank: int,
    world_size: int,
    node: str,
    on_start: Callable[[list[str]], None],
) -> dict[str, Any] | None:
    """One rank of a data-parallel train job, inside the torch process group Ray Train set up:
    trains on this rank's shard; rank 0 saves checkpoints, calls ``on_start`` with every rank's
    node, and returns the result (its weights, every rank's log); the other ranks return None."""
    from rigwise.grid import tinylm

    log: list[str] = [f"rank {rank}/{world_size} on node {node} ({socket.gethostname()})"]
    missing = _missing(requires)
    if missing:
        raise GridError(f"Software environment lacks {', '.join(missing)} on node {node}.")
    started = time.perf_counter()
    workers = [str(name) for name in tinylm.gather(node)]
    if rank == 0:
        on_start(workers)
    train_part, _ = split_held_out(inputs["dataset"], float(app["held_out_fraction"]))
    part = shard(train_part, rank, world_size)
    log.append(f"training on shard {rank} of {world_size}: {len(part)} bytes")
    config = tinylm.TinyConfig.from_app(app)
    result = tinylm.train(part, config, resume, save_checkpoint, log.append, distributed=True)
    logs = tinylm.gather(log)
    if rank != 0:
        return None
    result["log"] = [
        *logs[0],
        *(f"[rank {r}] {x}" for r, lines in enumerate(logs[1:], 1) for x in lines),
    ]
    result["world_size"] = world_size
    result["workers"] = workers
    result["seconds"] = time.perf_counter() - started
    return result
