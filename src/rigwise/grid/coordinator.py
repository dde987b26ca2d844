"""The coordinator's HTTP API (FastAPI): the only grid module importing a web framework.

Every route needs ``Authorization: Bearer <token>``, and what a caller may do follows from who
the token says it is (``auth.Principal``), never from a field in the request:

- the join token may join a machine and measure its link (``/api/speedtest``), nothing else;
- a node credential whose node is ``verifying`` or ``rejected`` reads its own record only;
- an admitted node's credential (and the admin token) reads the grid's shared state (nodes,
  jobs, datasets, credits, models), submits jobs, and changes only what its account owns
  (cancel its jobs, read their logs, replace its datasets and templates); only the admin runs
  command jobs or replaces what another account owns.

Errors are JSON ``{"error": ..., "hint": ...}`` with 400/401/403/404/409/413.
"""

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, field_validator

from rigwise.errors import GridError, InputError, RigwiseError, UnknownNameError
from rigwise.grid import auth
from rigwise.grid.config import GridConfig, ray_network_env
from rigwise.grid.engine import ADMITTED, LOST
from rigwise.grid.policy import facts_from_request
from rigwise.grid.service import GridService
from rigwise.option_fields import no_flag

log = logging.getLogger("rigwise.grid")


class _Refused(Exception):
    def __init__(self, status: int, message: str, hint: str = "") -> None:
        self.status, self.message, self.hint = status, message, hint


class JoinBody(BaseModel):
    facts: dict[str, Any]  # checked by policy.facts_from_request (HTTP 400 naming the key)
    name: str = Field(min_length=1, max_length=200)
    # the account to credit: used with the join token for a new account, ignored for a
    # member's credential (its own account), chosen freely by the admin only
    owner: str = Field(min_length=1, max_length=200)
    labels: dict[str, str] = Field(default_factory=dict)


class SubmitBody(BaseModel):
    job: dict[str, Any]


class EvalBody(BaseModel):
    dataset: str
    # lm-eval tasks: registered names (e.g. hellaswag) or grid:<dataset>
    tasks: list[str] = Field(default_factory=list)


class RunBody(BaseModel):
    prompt: str = ""
    tokens: int = Field(64, ge=1, le=4096)

    @field_validator("tokens", mode="before")
    @classmethod
    def _no_flag(cls, value: Any) -> Any:
        return no_flag(None)(value)  # pydantic's lax int read {"tokens": true} as 1 token


def _scheduler_loop(service: GridService, stop: threading.Event, interval: float) -> None:
    while not stop.is_set():
        try:
            service.tick()
        except Exception as exc:  # a failing pass must not stop the grid; it is retried
            log.warning("scheduler pass failed: %s: %.200s", type(exc).__name__, exc)
        stop.wait(interval)


def _lifespan(service: GridService, interval: float | None) -> Callable[[FastAPI], Any]:
    """Runs the scheduler thread while the app is up (none when ``interval`` is None)."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        stop = threading.Event()
        thread = None
        if interval is not None:
            thread = threading.Thread(
                target=_scheduler_loop, daemon=True, args=(service, stop, interval)
            )
            thread.start()
        yield
        stop.set()
        if thread is not None:
            thread.join(timeout=10)

    return lifespan


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(_Refused)
    async def refused(_: Request, exc: _Refused) -> JSONResponse:
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=exc.status)

    @app.exception_handler(RigwiseError)
    async def rigwise_error(_: Request, exc: RigwiseError) -> JSONResponse:
        status = 404 if isinstance(exc, UnknownNameError) else 400
        status = 409 if isinstance(exc, GridError) and not isinstance(exc, InputError) else status
        status = 403 if isinstance(exc, auth.Forbidden) else status
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=status)


class _Access:
    """The FastAPI dependencies that turn a bearer token into a principal, by kind."""

    def __init__(self, service: GridService) -> None:
        self.service = service

    def anyone(self, authorization: Annotated[str | None, Header()] = None) -> auth.Principal:
        who = self.service.authenticate(auth.bearer(authorization))
        if who is None:
            raise _Refused(401, "missing or wrong token", "Pass Authorization: Bearer <token>.")
        return who

    def own_record(self, who: auth.Principal, node_id: str) -> None:
        """A verifying or rejected node's credential reads its own record and nothing else."""
        if who.role == auth.ROLE_JOIN:
            raise _Refused(403, "the join token may only join a node")
        state = self.service.node_state(who.node_id) if who.node_id is not None else None
        if who.node_id is not None and state not in (ADMITTED, LOST) and who.node_id != node_id:
            raise _Refused(403, f"node {who.node_id} is {state}: only its own record is readable")

    def member(self, authorization: Annotated[str | None, Header()] = None) -> auth.Principal:
        who = self.anyone(authorization)
        if who.role == auth.ROLE_JOIN:
            raise _Refused(403, "the join token may only join a node")
        state = self.service.node_state(who.node_id) if who.node_id is not None else None
        if who.node_id is not None and state not in (ADMITTED, LOST):
            raise _Refused(403, f"node {who.node_id} is {state}: only its own record is readable")
        return who

    def joiner(self, authorization: Annotated[str | None, Header()] = None) -> auth.Principal:
        """The join token, the admin, or an admitted member adding a machine to its account."""
        who = self.anyone(authorization)
        return who if who.role == auth.ROLE_JOIN else self.member(authorization)


def create_app(service: GridService, scheduler_interval: float | None = 0.5) -> FastAPI:
    """The API over ``service``; a scheduler thread runs while the app is up."""
    app = FastAPI(title="rigwise grid", lifespan=_lifespan(service, scheduler_interval))
    _error_handlers(app)
    access = _Access(service)
    _node_routes(app, service, access)
    _job_routes(app, service, access)
    _data_routes(app, service, access)
    _result_routes(app, service, access)
    return app


def _node_routes(app: FastAPI, service: GridService, access: _Access) -> None:
    Joiner = Annotated[auth.Principal, Depends(access.joiner)]
    Member = Annotated[auth.Principal, Depends(access.member)]
    Anyone = Annotated[auth.Principal, Depends(access.anyone)]

    @app.post("/api/join")
    def join(body: JoinBody, who: Joiner) -> dict[str, Any]:
        facts = facts_from_request(body.facts)
        answer = service.join(who, facts, body.name, body.owner, body.labels)
        log.info("node %s %s", answer["id"], answer["state"])
        return answer

    @app.get("/api/speedtest")
    def speedtest(who: Joiner, size_bytes: int = 8_000_000) -> Response:
        # the agent measures its link to the coordinator with this download
        return Response(
            bytes(min(max(size_bytes, 0), 64_000_000)), media_type="application/octet-stream"
        )

    @app.get("/api/nodes")
    def nodes(who: Member) -> list[dict[str, Any]]:
        return service.nodes()

    @app.get("/api/nodes/{node_id}")
    def node(node_id: str, who: Anyone) -> dict[str, Any]:
        access.own_record(who, node_id)
        return service.node(node_id)


def _job_routes(app: FastAPI, service: GridService, access: _Access) -> None:
    Member = Annotated[auth.Principal, Depends(access.member)]

    @app.get("/api/jobs")
    def jobs(who: Member) -> list[dict[str, Any]]:
        return service.jobs()

    @app.post("/api/jobs")
    def submit(body: SubmitBody, who: Member) -> dict[str, Any]:
        return service.submit(who, body.job)

    @app.get("/api/jobs/{job_id}")
    def job(job_id: str, who: Member) -> dict[str, Any]:
        return service.job(job_id)

    @app.get("/api/jobs/{job_id}/logs")
    def logs(job_id: str, who: Member) -> list[dict[str, Any]]:
        return service.logs(who, job_id)

    @app.post("/api/jobs/{job_id}/cancel")
    def cancel(job_id: str, who: Member) -> dict[str, Any]:
        return service.cancel(who, job_id)


async def _bounded_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 past ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length", "")
    too_big = _Refused(
        413,
        f"upload larger than the grid's limit of {limit} bytes",
        "Split the file, or start the coordinator with a larger --max-upload-mib.",
    )
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise too_big
        parts.append(part)
    return b"".join(parts)


def _data_routes(app: FastAPI, service: GridService, access: _Access) -> None:
    Member = Annotated[auth.Principal, Depends(access.member)]

    @app.get("/api/data")
    def data_ls(who: Member) -> list[dict[str, Any]]:
        return service.data_ls()

    @app.put("/api/data/{name}")
    async def data_put(
        name: str, request: Request, who: Member, replicas: int | None = None
    ) -> dict[str, Any]:
        body = await _bounded_body(request, service.config.max_upload_bytes)
        return service.data_put(who, name, body, replicas)

    @app.get("/api/data/{name}")
    def data_get(name: str, who: Member) -> Response:
        return Response(service.data_get(name), media_type="application/octet-stream")


def _result_routes(app: FastAPI, service: GridService, access: _Access) -> None:
    Member = Annotated[auth.Principal, Depends(access.member)]

    @app.get("/api/credits")
    def credits(who: Member) -> dict[str, Any]:
        return service.ledger()

    @app.get("/api/models")
    def models(who: Member) -> list[dict[str, Any]]:
        return service.models()

    @app.post("/api/models/{reference}/eval")
    def evaluate(reference: str, body: EvalBody, who: Member) -> dict[str, Any]:
        return service.evaluate_model(who, reference, body.dataset, body.tasks)

    @app.post("/api/models/{reference}/run")
    def run(reference: str, body: RunBody, who: Member) -> dict[str, Any]:
        return service.run_model(who, reference, body.prompt, body.tokens)


def serve(service: GridService, host: str, port: int) -> None:
    """Run the API with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(service), host=host, port=port, log_level="warning")


def start(config: GridConfig, ray_port: int, on_ready: Callable[[str], None]) -> None:
    """``rigwise grid up``: start (or attach to) the Ray head, then serve the API."""
    ray_token, _ = auth.read_or_create_secret(config.ray_token_path)
    # before ray is imported: Ray reads both once
    os.environ.update({**auth.ray_auth_env(ray_token), **ray_network_env(config.host)})
    from rigwise.grid import ray_adapter

    address = config.ray_address or ray_adapter.start_head(
        config.host, ray_port, ray_token, config.data_dir
    )
    ray_adapter.connect(address, ray_token)
    service = GridService(config, ray_address=address, ray_token=ray_token)
    payload = service.verification_rule.payload_bytes
    service.attach_engine(ray_adapter.RayEngine(config.checkpoint_dir, payload))
    on_ready(service.join_token)
    serve(service, config.host, config.port)
