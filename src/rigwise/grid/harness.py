"""lm-evaluation-harness over the grid's tiny byte-level model: the only module importing
``lm_eval`` (lazily, inside functions, so importing this module stays cheap).

A task is either the name of a task registered in lm-eval (``hellaswag``: its dataset must be
reachable from the worker, on the Hugging Face Hub or in a local HF cache) or
``grid:<dataset>``: a grid dataset of JSONL rows ``{"context": str, "choices": [str, ...],
"label": int}`` that becomes a local lm-eval ``multiple_choice`` task, evaluated offline. Each
choice is scored verbatim right after the context (no delimiter is put between them), so a
separating space belongs in the choices.

Results are lm-eval's numeric metrics per task, keyed by metric name (``acc``, ``acc_norm``,
and their ``acc_stderr`` / ``acc_norm_stderr``); a metric under a filter other than ``none`` is
keyed ``metric,filter``; entries that are not finite numbers (the alias, ``N/A`` stderrs, a
NaN) are dropped.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from rigwise.errors import GridError, InputError, UnknownNameError, closest

GRID_PREFIX = "grid:"
MODULE = "lm_eval"
# lm-eval's own default for generate_until tasks that do not say
DEFAULT_MAX_GEN_TOKS = 256
# stderrs of mean metrics (acc) are analytic; this bounds the bootstrap of the others
BOOTSTRAP_ITERS = 1000
_OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_QUIET_LOGGERS = ("lm_eval", "datasets", "huggingface_hub", "fsspec")


def grid_dataset(task: str) -> str | None:
    """The grid dataset a ``grid:<dataset>`` task reads; None for a registered task."""
    return task[len(GRID_PREFIX) :] if task.startswith(GRID_PREFIX) else None


def run_tasks(
    weights: bytes, tasks: list[str], task_data: dict[str, bytes]
) -> dict[str, dict[str, float]]:
    """Evaluate a tinylm weights blob on ``tasks``; ``task_data`` maps each ``grid:`` task to
    its dataset's bytes. Returns ``{task: {metric: value}}`` in the order of ``tasks``."""
    grid = [task for task in tasks if grid_dataset(task) is not None]
    registered = [task for task in tasks if grid_dataset(task) is None]
    scores: dict[str, dict[str, float]] = {}
    with _quiet():
        lm = harness_lm(weights)
        if grid:
            scores.update(_run_grid(lm, grid, task_data))
        if registered:
            scores.update(_run_registered(lm, registered))
    return {task: scores[task] for task in tasks}


def harness_lm(weights: bytes) -> Any:
    """An ``lm_eval.api.model.LM`` over a tinylm weights blob."""
    return _lm_class()(weights)


@functools.cache
def _lm_class() -> type:
    # the class derives from lm-eval's, so it is made on first use, not at import
    from lm_eval.api.model import LM

    from rigwise.grid import tinylm

    class TinyGridLM(LM):
        """Bytes are the tokens: a request's strings are scored as their UTF-8 bytes."""

        def __init__(self, weights: bytes) -> None:
            super().__init__()
            self.model, self.config = tinylm.load(weights)

        def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
            return [self._score(*request.args) for request in requests]

        def loglikelihood_rolling(self, requests: list[Any]) -> list[float]:
            return [self._score("", request.args[0])[0] for request in requests]

        def generate_until(self, requests: list[Any]) -> list[str]:
            return [self._generate(*request.args) for request in requests]

        def _score(self, context: str, continuation: str) -> tuple[float, bool]:
            return tinylm.score(
                self.model, self.config, context.encode("utf-8"), continuation.encode("utf-8")
            )

        def _generate(self, context: str, options: dict[str, Any]) -> str:
            until = options.get("until") or []
            stops = [until] if isinstance(until, str) else list(until)
            tokens = int(options.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS))
            # lm-eval's contract is greedy decoding unless the task asks to sample
            greedy = not options.get("do_sample", False)
            text = tinylm.sample(self.model, self.config, context, tokens, greedy=greedy)
            return cut_at_stop(text[len(context) :], stops)

    return TinyGridLM


def summary(scores: dict[str, dict[str, float]]) -> str:
    """One headline score per task, for a table cell: ``grid:qa acc 0.8; hellaswag acc 0.25``
    (``acc`` where a task has it, else its first metric that is not a stderr)."""
    parts = []
    for task, metrics in scores.items():
        plain = [name for name in metrics if not name.endswith("_stderr")]
        headline = "acc" if "acc" in metrics else next(iter(plain), None)
        if headline is not None:
            parts.append(f"{task} {headline} {metrics[headline]:.4g}")
    return "; ".join(parts)


def cut_at_stop(text: str, stops: list[str]) -> str:
    """``text`` up to (not including) the earliest of ``stops`` found in it."""
    ends = [text.find(stop) for stop in stops if stop and stop in text]
    return text[: min(ends)] if ends else text


def _run_grid(
    lm: Any, tasks: list[str], task_data: dict[str, bytes]
) -> dict[str, dict[str, float]]:
    from lm_eval.tasks import TaskManager

    with tempfile.TemporaryDirectory(prefix="rigwise-lm-eval-") as folder, _offline():
        root = Path(folder)
        # lm-eval task names are identifiers; ``grid:name`` maps to one of these
        names = {f"rigwise_grid_{index}": task for index, task in enumerate(tasks)}
        for name, task in names.items():
            if task not in task_data:
                raise InputError(
                    f"No data for task {task!r}.",
                    hint=f"Put dataset {grid_dataset(task)!r} on the grid first.",
                )
            write_grid_task(root, name, task, task_data[task])
        manager = TaskManager(include_path=str(root / "tasks"), include_defaults=False)
        results = _evaluate(lm, list(names), manager)
    return {names[name]: metrics for name, metrics in results.items()}


def _run_registered(lm: Any, tasks: list[str]) -> dict[str, dict[str, float]]:
    manager = _registered_tasks()
    known = set(manager.all_tasks)
    for task in tasks:
        if task not in known:
            raise unknown_task(task, manager.all_tasks)
    scores = {}
    for task in tasks:
        # one task at a time, so a dataset that cannot be fetched is named in the error
        try:
            scores.update(_evaluate(lm, [task], manager))
        except OSError as exc:  # datasets raises ConnectionError / FileNotFoundError
            raise GridError(
                f"lm-eval task {task!r}: its dataset could not be loaded "
                f"({type(exc).__name__}: {str(exc)[:200]}).",
                hint="Registered tasks fetch their datasets from the Hugging Face Hub: give "
                "the workers a route to it or a filled HF cache (HF_HOME), or use grid:<dataset>.",
            ) from exc
    return scores


def unknown_task(task: str, known: list[str]) -> UnknownNameError:
    """The error for a task lm-eval does not know, with its close matches."""
    # difflib's usual cutoff (0.6) keeps this fast over lm-eval's ~15k names (cutoff 0: seconds)
    error = UnknownNameError("lm-eval task", task, closest(task, known, cutoff=0.6))
    if not error.suggestions:
        error.hint = "List them with `lm-eval ls tasks`; a grid dataset is grid:<dataset>."
    return error


@functools.cache
def _registered_tasks() -> Any:
    # indexing lm-eval's ~14k task files takes seconds: once per worker process
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _evaluate(lm: Any, names: list[str], manager: Any) -> dict[str, dict[str, float]]:
    from lm_eval.evaluator import simple_evaluate

    answer = simple_evaluate(
        model=lm,
        tasks=names,
        task_manager=manager,
        log_samples=False,
        bootstrap_iters=BOOTSTRAP_ITERS,
    )
    return {name: _task_metrics(answer["results"], name) for name in names}


def _task_metrics(results: dict[str, dict[str, Any]], name: str) -> dict[str, float]:
    if name in results:  # a task, or a group (lm-eval aggregates it)
        return numeric_metrics(results[name])
    # a tag has no aggregate: its tasks' metrics, as "task/metric"
    return {
        f"{task}/{metric}": value
        for task, entries in results.items()
        for metric, value in numeric_metrics(entries).items()
    }


def numeric_metrics(results: dict[str, Any]) -> dict[str, float]:
    """lm-eval's ``{"acc,none": 0.5, "alias": ...}`` as ``{"acc": 0.5}``: metrics only,
    numbers only."""
    metrics = {}
    for key, value in results.items():
        metric, comma, where = key.partition(",")
        # metrics are "name,filter"; other entries (alias, sample_len) describe the run
        if not comma or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):  # JSON (the job result, the API) has no NaN or infinity
            metrics[metric if where == "none" else key] = float(value)
    return metrics


def read_choice_rows(task: str, data: bytes) -> list[dict[str, Any]]:
    """The rows of a ``grid:`` task, checked: context, two or more choices, a valid label."""
    rows = []
    for number, line in enumerate(data.decode("utf-8", errors="strict").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad_row(task, number, f"is not JSON ({exc.msg})") from exc
        rows.append(_checked_row(task, number, row))
    if not rows:
        raise InputError(f"Task {task!r} has no rows.", hint=_ROW_HINT)
    return rows


_ROW_HINT = 'Each line: {"context": "...", "choices": ["...", "..."], "label": 0}.'


def _checked_row(task: str, number: int, row: Any) -> dict[str, Any]:
    if not isinstance(row, dict) or not isinstance(row.get("context"), str):
        raise _bad_row(task, number, "needs a string 'context'")
    choices = row.get("choices")
    if not isinstance(choices, list) or len(choices) < 2:
        raise _bad_row(task, number, "needs a list of two or more 'choices'")
    if not all(isinstance(choice, str) for choice in choices):
        raise _bad_row(task, number, "has a choice that is not a string")
    label = row.get("label")
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(choices):
        raise _bad_row(task, number, f"has label {label!r}, not an index into its choices")
    return {"context": row["context"], "choices": choices, "label": label}


def _bad_row(task: str, number: int, what: str) -> InputError:
    return InputError(f"Task {task!r}: line {number} {what}.", hint=_ROW_HINT)


def write_grid_task(root: Path, name: str, task: str, data: bytes) -> Path:
    """Write a ``grid:`` task's rows (JSONL) and its lm-eval task YAML under ``root/tasks``;
    returns the YAML's path. The datasets cache goes under ``root`` too, so nothing is left
    in the user's Hugging Face cache."""
    folder = root / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    rows_path = folder / f"{name}.jsonl"
    rows = read_choice_rows(task, data)
    rows_path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    config = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {
            "data_files": {"test": str(rows_path)},
            "cache_dir": str(root / "datasets-cache"),
        },
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": "context",
        "doc_to_choice": "choices",
        "doc_to_target": "label",
        "target_delimiter": "",
        "metric_list": [
            {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
            {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
        ],
        "metadata": {"version": 1.0, "grid_task": task},
    }
    yaml_path = folder / f"{name}.yaml"
    yaml_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return yaml_path


@contextmanager
def _offline() -> Iterator[None]:
    """No Hub look-ups while grid tasks load: their data is local, and a worker may have no
    route to the Hub. The libraries read the variables at import, so their copies are set too."""
    import datasets.config
    import huggingface_hub.constants

    saved_env = {key: os.environ.get(key) for key in _OFFLINE_ENV}
    saved = (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE)
    os.environ.update(dict.fromkeys(_OFFLINE_ENV, "1"))
    datasets.config.HF_HUB_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE = saved
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _quiet() -> Iterator[None]:
    """lm-eval and the datasets library log every step at INFO and draw progress bars; a job's
    log should hold its result, not that."""
    import datasets
    import lm_eval.api.task

    loggers = [logging.getLogger(name) for name in _QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    bars = datasets.is_progress_bar_enabled()
    # lm-eval draws a bar per task while building requests, with no switch to turn it off
    bar = getattr(lm_eval.api.task, "tqdm", None)
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    datasets.disable_progress_bars()
    if bar is not None:
        lm_eval.api.task.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        if bars:
            datasets.enable_progress_bars()
        if bar is not None:
            lm_eval.api.task.tqdm = bar
