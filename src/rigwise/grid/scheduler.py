"""One scheduling pass over the database: verify joining nodes, refresh node liveness, follow
running jobs, launch queued ones. Called in a loop by the coordinator (and directly by tests)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.errors import RigwiseError
from rigwise.grid import credits, datasets, leaderboard, ledger, nodes
from rigwise.grid.db import JobRow, ModelRow, NodeRow, add_event
from rigwise.grid.engine import ADMITTED, LOST, MAX_ATTEMPTS, Engine, GridState
from rigwise.grid.harness import grid_dataset
from rigwise.grid.jobs import JobSpec
from rigwise.grid.placement import plan_placement

REPLICATION_INTERVAL_S = 5.0  # how often under-replicated datasets are topped up


def tick(service: GridState) -> None:
    engine = service.engine
    if engine is None:
        return
    with service.sessions.begin() as session:
        nodes.verify_pass(session, engine, service.policy, service.verification_rule)
        lost = _refresh_nodes(session, engine)
        if time.monotonic() >= service.next_replication:
            service.next_replication = time.monotonic() + REPLICATION_INTERVAL_S
            datasets.replicate_pass(session, service.stores(session))
        rows = session.scalars(
            select(JobRow)
            .where(JobRow.state.in_(("queued", "running")))
            .order_by(JobRow.created_at)
        ).all()
        for row in rows:
            if row.id in engine.running:
                _follow(service, session, engine, row, lost)
            elif row.id in service.released:  # released by a pass whose database write failed
                _settle(service, session, row, *service.released[row.id])
            elif row.id not in service.launched and (row.state == "running" or row.attempts):
                # launched by an earlier coordinator (seen running or not yet) that has died
                service.launched.add(row.id)  # said once; relaunched by the next pass
                _requeue(service, session, row, "coordinator restarted; job queued again")
            elif row.state == "running":  # dropped by the engine without an outcome
                _requeue(service, session, row, "its result was not recorded; job queued again")
            else:
                _try_launch(service, session, engine, row)
    service.released.clear()  # the pass's writes are committed: its outcomes are recorded


def _refresh_nodes(session: Session, engine: Engine) -> set[str]:
    """Admitted nodes whose Ray worker is dead or gone from the cluster are ``lost`` (Ray
    reports a killed worker within its health-check period, which the grid's head sets to a
    few seconds: ``ray_adapter.cluster.HEALTH_CHECK_ENV``); they return when it is back."""
    alive = engine.alive_nodes()
    lost = set()
    for node in session.scalars(select(NodeRow).where(NodeRow.state.in_((ADMITTED, LOST)))):
        up = alive.get(node.id, False)
        if node.state == ADMITTED and not up:
            node.state, node.reasons = LOST, ["its Ray worker stopped answering"]
        elif node.state == LOST and up:
            node.state, node.reasons = ADMITTED, []
        if node.state == LOST:
            lost.add(node.id)
    return lost


def _event(service: GridState, session: Session, job_id: str, message: str) -> None:
    add_event(session, job_id, message)


def _requeue(service: GridState, session: Session, row: JobRow, why: str) -> None:
    if row.attempts >= MAX_ATTEMPTS:
        _finish(service, session, row, "failed", f"{why}; gave up after {row.attempts} attempts")
        return
    row.state, row.node, row.reason = "queued", None, why
    _event(service, session, row.id, f"requeued: {why} (resumes from its last checkpoint)")


def _finish(service: GridState, session: Session, row: JobRow, state: str, why: str) -> None:
    row.state, row.reason, row.finished_at = state, why, time.time()
    service.launched.discard(row.id)
    _event(service, session, row.id, f"{state}: {why}")


def _follow(
    service: GridState, session: Session, engine: Engine, row: JobRow, lost: set[str]
) -> None:
    status, value = engine.poll(row.id)
    if status == "running":
        if row.state == "queued" and engine.placed(row.id):
            row.state, row.node, row.started_at = "running", engine.node_of(row.id), time.time()
            row.reason = f"running on node {row.node}"
            _event(service, session, row.id, f"running on node {row.node}")
        elif row.node in lost:
            engine.release(row.id, cancel=True)
            _requeue(service, session, row, f"node {row.node} lost")
        return
    # kept until this pass's writes commit: a pass that fails later replays it (never lost)
    service.released[row.id] = (status, value, row.node or engine.node_of(row.id))
    engine.release(row.id)
    _settle(service, session, row, *service.released[row.id])


def _settle(
    service: GridState, session: Session, row: JobRow, status: str, value: Any, node: str | None
) -> None:
    """Record the outcome the engine gave back for a job it has released."""
    if row.node is None:
        row.node, row.started_at = node, row.started_at or time.time()
    if status == "lost":
        _requeue(service, session, row, f"node {row.node} lost ({value})")
    elif status == "error":
        _finish(service, session, row, "failed", str(value))
    else:
        _succeed(service, session, row, value)


def _succeed(service: GridState, session: Session, row: JobRow, result: dict[str, Any]) -> None:
    for line in result.get("log", []):
        _event(service, session, row.id, f"[job] {line}")
    kept = {k: v for k, v in result.items() if k not in ("weights", "log")}
    try:
        if row.kind == "train":
            model = leaderboard.register(
                session, service.stores(session), service.config.replicas, row, result
            )
            kept["model_id"] = model.id
        elif row.kind == "evaluate":
            leaderboard.record_evaluation(session, row, result)
    except (RigwiseError, KeyError, ValueError) as exc:
        _finish(service, session, row, "failed", f"could not record the result: {exc}")
        return
    row.result = kept
    _credit(service, session, row, float(result.get("seconds", 0.0)), int(result.get("tokens", 0)))
    _finish(service, session, row, "succeeded", "done")


def _credit(service: GridState, session: Session, row: JobRow, seconds: float, tokens: int) -> None:
    """Credit the node's owner for verified work; the submitter pays (same transaction)."""
    node = session.get(NodeRow, row.node) if row.node else None
    if node is None:
        return
    rule = service.credit_rule
    earned = credits.credit_for_work(rule, seconds, node.measured_flops)
    key = service.ledger_key
    ledger.append(
        session, key, node.owner, earned.credits, "earn", row.id, node.id, earned.to_dict()
    )
    cost = credits.job_cost(rule, earned.credits) + credits.inference_cost(rule, tokens)
    detail = {"job_credits": earned.credits, "tokens": tokens}
    ledger.append(session, key, row.submitter, -cost, "spend", row.id, node.id, detail)


def _inputs(service: GridState, session: Session, spec: JobSpec) -> dict[str, bytes]:
    stores = service.stores(session)  # found once: it asks Ray which storage nodes are alive

    def read(name: str, what: str) -> bytes:
        manifest = service.manifest(session, name)
        if manifest is None:
            raise RigwiseError(f"{what} is gone from the grid")
        return stores.get(manifest).data

    inputs: dict[str, bytes] = {}
    dataset = spec.app.get("dataset")
    if dataset:
        inputs["dataset"] = read(str(dataset), f"dataset {dataset!r}")
    if spec.kind in ("evaluate", "serve"):
        model: ModelRow = leaderboard.model_row(session, str(spec.app.get("model", "")))
        inputs["weights"] = read(model.artifact, f"weights of model {model.id}")
    if spec.kind == "evaluate":
        for task in spec.app.get("tasks") or []:
            name = grid_dataset(str(task))
            if name:  # a grid: lm-eval task's dataset travels under the task's own name
                inputs[str(task)] = read(name, f"dataset {name!r} of task {task!r}")
    return inputs


def _try_launch(service: GridState, session: Session, engine: Engine, row: JobRow) -> None:
    spec = JobSpec.from_dict(row.spec)
    plan = plan_placement(spec.hardware, service.node_views(session))
    if not plan.feasible:
        if row.reason != plan.reason:
            row.reason = plan.reason
            _event(service, session, row.id, f"waiting: {plan.reason}")
        return
    try:
        inputs = _inputs(service, session, spec)
    except RigwiseError as exc:
        _finish(service, session, row, "failed", str(exc))
        return
    app = {**spec.app, "held_out_fraction": service.held_out_fraction}
    engine.launch(row.id, spec.kind, app, list(spec.requires), spec.env, plan, inputs)
    service.launched.add(row.id)
    row.attempts += 1
    row.reason = f"placing: {plan.reason}"
    _event(service, session, row.id, f"attempt {row.attempts} launched; {plan.reason}")
