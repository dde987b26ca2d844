"""Models trained on the grid, their lineage, and the grades the grid itself gives them.

A train job that succeeds registers its weights (stored like a dataset, content-addressed) with
lineage: job, dataset and its SHA-256, config, node. Evaluations are evaluate jobs the grid runs
(held-out perplexity on a grid dataset, plus lm-evaluation-harness tasks when the job names
them), never numbers a submitter reports. The board ranks models by their best held-out
perplexity, lowest first; unevaluated models come last; task scores are shown, not ranked.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.errors import UnknownNameError, closest
from rigwise.grid.db import DatasetRow, EvaluationRow, JobRow, ModelRow
from rigwise.grid.storage import ChunkStores

METRIC = "perplexity"


def model_row(session: Session, reference: str) -> ModelRow:
    """A model by id, by name (newest of that name) or ``best`` (top of the board)."""
    if reference == "best":
        board = ranking(session)
        if board:
            row = session.get(ModelRow, board[0]["id"])
            if row is not None:
                return row
    row = session.get(ModelRow, reference)
    if row is not None:
        return row
    named = session.scalars(
        select(ModelRow).where(ModelRow.name == reference).order_by(ModelRow.created_at.desc())
    ).first()
    if named is not None:
        return named
    known = [m.id for m in session.scalars(select(ModelRow))] + [
        m.name for m in session.scalars(select(ModelRow))
    ]
    raise UnknownNameError("model", reference, closest(reference, known))


def register(
    session: Session, stores: ChunkStores, replicas: int, job: JobRow, result: dict[str, Any]
) -> ModelRow:
    """Store the weights of a finished train job and record the model with its lineage."""
    model_id = f"m-{secrets.token_hex(5)}"
    artifact = f"model:{model_id}"
    manifest = stores.put(artifact, result["weights"], replicas)
    session.add(DatasetRow(name=artifact, manifest=manifest.to_dict()))
    app = dict(job.spec.get("app", {}))
    dataset = session.get(DatasetRow, str(app.get("dataset")))
    lineage = {
        "job_id": job.id,
        "node": job.node,
        "config": app,
        "dataset": app.get("dataset"),
        "dataset_sha256": dataset.manifest["sha256"] if dataset else None,
        "steps": result.get("steps"),
        "final_loss": result.get("final_loss"),
        "weights_sha256": manifest.sha256,
    }
    row = ModelRow(
        id=model_id,
        name=str(app.get("register_as", job.name)),
        owner=job.submitter,
        artifact=artifact,
        lineage=lineage,
    )
    session.add(row)
    return row


def record_evaluation(session: Session, job: JobRow, result: dict[str, Any]) -> EvaluationRow:
    """Record an evaluate job's perplexity; its lm-eval task scores stay in the job's result
    (``tasks``), where ``ranking`` finds them through this row's ``job_id``."""
    task_scores(result)  # a malformed score fails the job instead of the board
    app = job.spec.get("app", {})
    row = EvaluationRow(
        model_id=str(app["model"]),
        metric=METRIC,
        value=float(result["metrics"][METRIC]),
        dataset=str(app["dataset"]),
        job_id=job.id,
    )
    session.add(row)
    return row


def task_scores(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """An evaluate job's lm-eval scores, ``{task: {metric: value}}`` (empty without tasks)."""
    tasks = result.get("tasks") or {}
    if not isinstance(tasks, dict) or not all(isinstance(m, dict) for m in tasks.values()):
        raise ValueError(f"task scores must map task -> metric -> value, got {tasks!r:.100}")
    return {
        str(task): {str(metric): float(value) for metric, value in metrics.items()}
        for task, metrics in tasks.items()
    }


def _latest_task_scores(
    session: Session, evaluations: list[EvaluationRow]
) -> dict[str, dict[str, float]]:
    """Each task's scores from the model's most recent evaluation that ran it."""
    ids = [evaluation.job_id for evaluation in evaluations]
    jobs = session.scalars(select(JobRow).where(JobRow.id.in_(ids))).all() if ids else []
    latest: dict[str, dict[str, float]] = {}
    for job in sorted(jobs, key=lambda j: j.finished_at or j.created_at):
        latest.update(task_scores(job.result or {}))
    return latest


def ranking(session: Session) -> list[dict[str, Any]]:
    """Every model with its best grid-run score, best first; ``tasks`` holds its latest
    lm-eval scores (they do not change the order)."""
    models = session.scalars(select(ModelRow).order_by(ModelRow.created_at)).all()
    board = []
    for model in models:
        scores = session.scalars(
            select(EvaluationRow).where(
                EvaluationRow.model_id == model.id, EvaluationRow.metric == METRIC
            )
        ).all()
        best = min(scores, key=lambda e: e.value) if scores else None
        tasks = _latest_task_scores(session, list(scores))
        board.append(
            {
                "id": model.id,
                "name": model.name,
                "owner": model.owner,
                "lineage": model.lineage,
                "created_at": model.created_at,
                METRIC: best.value if best else None,
                "eval_dataset": best.dataset if best else None,
                "eval_job": best.job_id if best else None,
                "tasks": tasks,
            }
        )
    board.sort(key=lambda m: (m[METRIC] is None, m[METRIC] or 0.0))
    for rank, entry in enumerate(board, start=1):
        entry["rank"] = rank if entry[METRIC] is not None else None
    return board
