"""The grid's domain logic behind the HTTP API: joins, jobs, scheduling, datasets, credits.

``GridService`` owns the database and, once ``attach_engine`` is called, a Ray engine. The
scheduler is ``tick()``: called in a loop by the coordinator, and directly by tests. Every state
change is committed at once, so the database (not this process) is the truth: a job the engine
does not know about but the database says is running was lost with a previous coordinator and
is queued again (it resumes from its last checkpoint).

Authorisation is by the authenticated principal, never by a claim in a request: a node's
account is fixed when its credential is issued (see ``join``), a job's submitter and a
dataset's or template's owner are the caller's account, and only that account or the admin may
cancel or replace them.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.catalog.loader import read_yaml
from rigwise.errors import InputError
from rigwise.grid import auth, credits, datasets, leaderboard, ledger, scheduler
from rigwise.grid.config import GridConfig
from rigwise.grid.db import (
    JobEventRow,
    JobRow,
    NodeRow,
    TemplateRow,
    TokenRow,
    add_event,
    open_database,
)
from rigwise.grid.engine import ADMITTED, LOST, REJECTED, VERIFYING, Engine
from rigwise.grid.harness import grid_dataset
from rigwise.grid.jobs import (
    FINAL_STATES,
    JobSpec,
    job_dict,
    job_row,
    parse_job,
    predict_seconds,
    template_of,
)
from rigwise.grid.ledger import ChainCheck
from rigwise.grid.nodes import grid_labels, node_dict, ray_resources
from rigwise.grid.placement import NodeView, plan_placement
from rigwise.grid.policy import DEFAULT_POLICY_FILE, MachineFacts, evaluate, load_policy
from rigwise.grid.storage import ChunkStores, Manifest
from rigwise.grid.verify import VerificationRule

RESERVED_ACCOUNTS = (auth.ADMIN_ACCOUNT, "join")


def _new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(5)}"


class GridService:
    def __init__(self, config: GridConfig, ray_address: str = "", ray_token: str = "") -> None:
        self.config = config
        self.sessions = open_database(config.db_url)
        self.policy = load_policy(config.policy_file)
        self.policy_data = read_yaml(DEFAULT_POLICY_FILE)
        self.credit_rule = credits.load_credit_rule(self.policy_data)
        self.verification_rule = VerificationRule.from_policy_data(self.policy_data)
        self.held_out_fraction = float(self.policy_data["leaderboard"]["held_out_fraction"])
        self.next_replication = 0.0  # monotonic time of the next under-replication pass
        self.launched: set[str] = set()  # scheduler: jobs this coordinator launched or took over
        # scheduler: outcomes the engine released in a pass whose writes have not committed
        self.released: dict[str, tuple[str, Any, str | None]] = {}
        self.ray_address, self.ray_token = ray_address, ray_token
        self.engine: Engine | None = None
        # the scheduler thread and API calls that touch running jobs take turns
        self.lock = threading.RLock()
        self.ledger_key = ledger.load_key(config.data_dir)
        self.admin_token, _ = auth.read_or_create_secret(config.admin_token_path)
        self.join_token, _ = auth.read_or_create_secret(config.data_dir / "join-token")
        self._register_token(self.admin_token, auth.ADMIN_ACCOUNT, auth.ROLE_ADMIN)
        self._register_token(self.join_token, "join", auth.ROLE_JOIN)

    # -- credentials ---------------------------------------------------------------------
    def _register_token(self, token: str, account: str, role: str, node: str | None = None) -> None:
        digest = auth.hash_token(token)
        with self.sessions.begin() as session:
            if session.scalar(select(TokenRow).where(TokenRow.token_hash == digest)) is None:
                session.add(TokenRow(token_hash=digest, account=account, role=role, node_id=node))

    def node_state(self, node_id: str) -> str | None:
        with self.sessions() as session:
            row = session.get(NodeRow, node_id)
            return row.state if row is not None else None

    def authenticate(self, token: str | None) -> auth.Principal | None:
        if not token:
            return None
        with self.sessions() as session:
            row = session.scalar(
                select(TokenRow).where(TokenRow.token_hash == auth.hash_token(token))
            )
        return auth.Principal(row.account, row.role, row.node_id) if row else None

    # -- nodes ---------------------------------------------------------------------------
    def _account_for(self, session: Session, who: auth.Principal, claimed: str) -> str:
        """The account a new node is credited to. The admin names it; a member's further
        machines join its own account; with the join token alone, a name no live node of
        another holder uses (so a joiner cannot become ``admin`` or someone else)."""
        if who.is_admin:
            return claimed
        if who.role == auth.ROLE_NODE:
            return who.account
        taken = session.scalar(
            select(NodeRow.id).where(
                NodeRow.owner == claimed, NodeRow.state.in_((ADMITTED, VERIFYING, LOST))
            )
        )
        if claimed in RESERVED_ACCOUNTS or taken is not None:
            raise auth.Forbidden(
                f"Account {claimed!r} is already held by another credential.",
                hint="Join with that account's node credential (--token), or pick another --owner.",
            )
        return claimed

    def join(
        self,
        who: auth.Principal,
        facts: MachineFacts,
        name: str,
        claimed_owner: str,
        labels: dict[str, str],
    ) -> dict[str, Any]:
        """Judge a machine's claim by policy. One that passes gets a credential and Ray access
        and is ``verifying`` until the grid has measured it on its own Ray worker
        (``rigwise.grid.verify``); that credential reads only the node's own record until the
        grid admits it. One that fails is rejected at once, with no credential."""
        decision = evaluate(self.policy, facts)
        node_id = _new_id("n")
        given_labels = {**grid_labels(facts), **labels}
        resources = {
            "CPU": float(facts.cpu_cores),
            "GPU": float(len(facts.gpus)),
            "gpu_memory_bytes": min((g.memory_bytes for g in facts.gpus), default=0.0),
        }
        state = VERIFYING if decision.admitted else REJECTED
        answer: dict[str, Any] = {"id": node_id, "state": state, **decision.to_dict()}
        with self.sessions.begin() as session:
            owner = self._account_for(session, who, claimed_owner)
            session.add(
                NodeRow(
                    id=node_id,
                    name=name,
                    owner=owner,
                    state=state,
                    reasons=decision.reasons,
                    facts=facts.to_dict(),
                    resources=resources,
                    labels=given_labels,
                    measured_flops=0.0,  # credited on the grid's own measurement only
                    storage_role=bool(facts.storage_path),
                    # the checks on the claim, until the grid's own replace them
                    verification={
                        "state": "pending" if decision.admitted else "not run",
                        "checks": decision.to_dict()["checks"],
                    },
                )
            )
        answer["owner"] = owner
        if decision.admitted:
            credential = auth.new_token()
            self._register_token(credential, owner, auth.ROLE_NODE, node_id)
            answer.update(
                credential=credential,
                ray_address=self.ray_address,
                ray_token=self.ray_token,
                labels=given_labels,
                resources=resources,
                verify_timeout_s=self.verification_rule.timeout_s,
                ray_resources=ray_resources(facts),
            )
        return answer

    def node(self, node_id: str) -> dict[str, Any]:
        with self.sessions() as session:
            row = session.get(NodeRow, node_id)
            if row is None:
                raise InputError(f"No node {node_id!r}.", hint="List them: rigwise grid nodes.")
            return node_dict(row, detail=True)

    def nodes(self) -> list[dict[str, Any]]:
        with self.sessions() as session:
            rows = session.scalars(select(NodeRow).order_by(NodeRow.joined_at)).all()
        return [node_dict(row) for row in rows]

    def node_views(self, session: Session) -> list[NodeView]:
        rows = session.scalars(select(NodeRow).where(NodeRow.state == ADMITTED)).all()
        return [
            NodeView(
                r.id,
                dict(r.labels),
                r.resources.get("CPU", 0.0),
                int(r.resources.get("GPU", 0)),
                r.resources.get("gpu_memory_bytes", 0.0),
            )
            for r in rows
        ]

    # -- jobs ----------------------------------------------------------------------------
    def submit(self, who: auth.Principal, data: dict[str, Any]) -> dict[str, Any]:
        with self.sessions.begin() as session:
            templates = {t.name: t.spec for t in session.scalars(select(TemplateRow)).all()}
            spec = parse_job(data, templates)
            self._check_submission(session, who, spec)
            if spec.save_as:
                self._save_template(session, who, spec.save_as, template_of(data))
            plan = plan_placement(spec.hardware, self.node_views(session))
            predicted, prediction_note = predict_seconds(spec)
            job = JobRow(
                id=_new_id("j"),
                name=spec.name,
                kind=spec.kind,
                state="queued",
                spec=spec.to_dict(),
                submitter=who.account,
                predicted_seconds=predicted,
            )
            session.add(job)
            session.flush()
            add_event(session, job.id, f"submitted by {who.account}; placement: {plan.reason}")
        return {
            "id": job.id,
            "state": "queued",
            "placement": plan.to_dict(),
            "predicted_seconds": job.predicted_seconds,
            "prediction": prediction_note,
        }

    @staticmethod
    def _save_template(
        session: Session, who: auth.Principal, name: str, spec: dict[str, Any]
    ) -> None:
        row = session.get(TemplateRow, name)
        if row is None:
            session.add(TemplateRow(name=name, spec=spec, owner=who.account))
            return
        auth.require_owner(who, row.owner or auth.ADMIN_ACCOUNT, f"Template {name!r}")
        row.spec = spec

    def _require_dataset(self, session: Session, name: str, shown: str) -> None:
        if not name or self.manifest(session, name) is None:
            raise InputError(
                f"Dataset {shown} is not on the grid.",
                hint="Put it first: rigwise grid data put FILE --name NAME.",
            )

    def _check_submission(self, session: Session, who: auth.Principal, spec: JobSpec) -> None:
        if spec.kind == "command" and not who.is_admin:
            raise auth.Forbidden(
                "Only the grid admin may submit command jobs.",
                hint="Use kind train, evaluate or serve.",
            )
        if spec.kind in ("train", "evaluate"):
            dataset = spec.app.get("dataset")
            self._require_dataset(session, str(dataset) if dataset else "", f"{dataset!r}")
        if spec.kind in ("evaluate", "serve"):
            leaderboard.model_row(session, str(spec.app.get("model", "")))
        for task in (spec.app.get("tasks") or []) if spec.kind == "evaluate" else []:
            name = grid_dataset(str(task))
            if name:
                self._require_dataset(session, name, f"{name!r} of task {task!r}")
        if who.is_admin:
            return
        rows = ledger.verified_rows(session, self.ledger_key, self.config.data_dir)
        balance = sum(row.amount for row in rows if row.account == who.account)
        if balance < self.credit_rule.min_balance_to_submit:
            raise InputError(
                f"Account {who.account!r} has {balance:.1f} credits; "
                f"{self.credit_rule.min_balance_to_submit:.1f} needed.",
                hint="Contribute a node to earn credit.",
            )

    def job(self, job_id: str) -> dict[str, Any]:
        with self.sessions() as session:
            return job_dict(job_row(session, job_id))

    def jobs(self) -> list[dict[str, Any]]:
        with self.sessions() as session:
            return [
                job_dict(r) for r in session.scalars(select(JobRow).order_by(JobRow.created_at))
            ]

    def logs(self, who: auth.Principal, job_id: str) -> list[dict[str, Any]]:
        """A job's events and output: its submitter's (or the admin's) to read."""
        with self.sessions() as session:
            row = job_row(session, job_id)
            auth.require_owner(who, row.submitter, f"The logs of job {job_id}")
            rows = session.scalars(
                select(JobEventRow).where(JobEventRow.job_id == job_id).order_by(JobEventRow.id)
            ).all()
        return [{"time": r.time, "message": r.message} for r in rows]

    def cancel(self, who: auth.Principal, job_id: str) -> dict[str, Any]:
        with self.lock, self.sessions.begin() as session:
            row = job_row(session, job_id)
            auth.require_owner(who, row.submitter, f"Job {job_id}")
            if row.state not in FINAL_STATES:
                if self.engine is not None and job_id in self.engine.running:
                    self.engine.release(job_id, cancel=True)
                row.state, row.finished_at = "cancelled", time.time()
                add_event(session, job_id, f"cancelled by {who.account}")
            return job_dict(row)

    # -- datasets ------------------------------------------------------------------------
    def manifest(self, session: Session, name: str) -> Manifest | None:
        return datasets.manifest(session, name)

    def data_put(
        self, who: auth.Principal, name: str, data: bytes, replicas: int | None = None
    ) -> dict[str, Any]:
        with self.sessions.begin() as session:
            return datasets.put(
                session, self.stores(session), who, name, data, replicas or self.config.replicas
            )

    def stores(self, session: Session) -> ChunkStores:
        """The dataset stores reachable now (storage nodes, --store dirs, the coordinator)."""
        return datasets.reachable_stores(session, self.config, self.engine)

    def data_get(self, name: str) -> bytes:
        with self.sessions() as session:
            manifest = self.manifest(session, name)
            if manifest is None:
                raise InputError(f"No dataset {name!r}.", hint="List them: rigwise grid data ls.")
            return self.stores(session).get(manifest).data

    def data_ls(self) -> list[dict[str, Any]]:
        with self.sessions() as session:
            return datasets.listing(session)

    # -- engine and leaderboard ------------------------------------------------------------
    def attach_engine(self, engine: Engine) -> None:
        self.engine = engine

    def tick(self) -> None:
        with self.lock:
            scheduler.tick(self)
            with self.sessions() as session:  # the ledger's last entry, once committed
                ledger.write_head(session, self.config.data_dir)

    def models(self) -> list[dict[str, Any]]:
        with self.sessions() as session:
            return leaderboard.ranking(session)

    def _model_id(self, reference: str) -> str:
        with self.sessions() as session:
            return leaderboard.model_row(session, reference).id

    def evaluate_model(
        self, who: auth.Principal, reference: str, dataset: str, tasks: list[str] | None = None
    ) -> dict[str, Any]:
        """Queue a grid-run evaluation: held-out perplexity on ``dataset`` and, when given,
        lm-eval ``tasks`` (registered task names or ``grid:<dataset>``)."""
        model_id = self._model_id(reference)
        app: dict[str, Any] = {"model": model_id, "dataset": dataset}
        if tasks:
            app["tasks"] = list(tasks)
        return self.submit(who, {"name": f"eval-{model_id}", "kind": "evaluate", "app": app})

    def run_model(
        self, who: auth.Principal, reference: str, prompt: str, tokens: int
    ) -> dict[str, Any]:
        """Queue an inference job on ``reference`` (``best`` = top of the board)."""
        model_id = self._model_id(reference)
        job = {
            "name": f"run-{model_id}",
            "kind": "serve",
            "app": {"model": model_id, "prompt": prompt, "tokens": tokens},
        }
        return self.submit(who, job)

    # -- credits -------------------------------------------------------------------------
    def ledger(self) -> dict[str, Any]:
        """Balances and entries, once the hash chain checks out (a GridError otherwise)."""
        with self.sessions() as session:
            rows = ledger.verified_rows(session, self.ledger_key, self.config.data_dir)
        return ledger.listing(rows)

    def verify_ledger(self) -> ChainCheck:
        with self.sessions() as session:
            return ledger.verify(session, self.ledger_key, self.config.data_dir)
