"""The coordinator's HTTP API (FastAPI): the only grid module importing a web framework.

Every route needs ``Authorization: Bearer <token>``: the join token may only call
``POST /api/join``; node credentials and the admin token may read and submit; only the admin
may run command jobs. Errors are JSON ``{"error": ..., "hint": ...}`` with 400/401/403/404/409.
"""

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from rigwise.errors import GridError, InputError, RigwiseError, UnknownNameError
from rigwise.grid import auth
from rigwise.grid.config import GridConfig, ray_network_env
from rigwise.grid.policy import MachineFacts
from rigwise.grid.service import GridService
from rigwise.grid.verify import VERIFYING

log = logging.getLogger("rigwise.grid")


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message


class JoinBody(BaseModel):
    facts: dict[str, Any]
    name: str = Field(min_length=1, max_length=200)
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


def _scheduler_loop(service: GridService, stop: threading.Event, interval: float) -> None:
    while not stop.is_set():
        try:
            service.tick()
        except Exception as exc:  # a failing pass must not stop the grid; it is retried
            log.warning("scheduler pass failed: %s: %.200s", type(exc).__name__, exc)
        stop.wait(interval)


def create_app(service: GridService, scheduler_interval: float | None = 0.5) -> FastAPI:
    """The API over ``service``; a scheduler thread runs while the app is up."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        stop = threading.Event()
        thread = None
        if scheduler_interval is not None:
            thread = threading.Thread(
                target=_scheduler_loop, daemon=True, args=(service, stop, scheduler_interval)
            )
            thread.start()
        yield
        stop.set()
        if thread is not None:
            thread.join(timeout=10)

    app = FastAPI(title="rigwise grid", lifespan=lifespan)

    @app.exception_handler(_Refused)
    async def refused(_: Request, exc: _Refused) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    @app.exception_handler(RigwiseError)
    async def rigwise_error(_: Request, exc: RigwiseError) -> JSONResponse:
        status = 404 if isinstance(exc, UnknownNameError) else 400
        status = 409 if isinstance(exc, GridError) and not isinstance(exc, InputError) else status
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=status)

    def principal(authorization: Annotated[str | None, Header()] = None) -> auth.Principal:
        who = service.authenticate(auth.bearer(authorization))
        if who is None:
            raise _Refused(401, "missing or wrong token")
        return who

    def caller(who: Annotated[auth.Principal, Depends(principal)]) -> auth.Principal:
        if who.role == auth.ROLE_JOIN:
            raise _Refused(403, "the join token may only join a node")
        return who

    def refuse_unadmitted(who: auth.Principal) -> None:
        # a node's credential works once the grid has verified the node (see grid/verify.py)
        state = service.node_state(who.node_id) if who.node_id is not None else None
        if state in (VERIFYING, "rejected"):
            raise _Refused(403, f"node {who.node_id} is {state}: only its own record is readable")

    def member(who: Annotated[auth.Principal, Depends(caller)]) -> auth.Principal:
        refuse_unadmitted(who)
        return who

    Member = Annotated[auth.Principal, Depends(member)]
    Caller = Annotated[auth.Principal, Depends(caller)]
    Anyone = Annotated[auth.Principal, Depends(principal)]

    @app.post("/api/join")
    def join(body: JoinBody, who: Anyone) -> dict[str, Any]:
        if who.role not in (auth.ROLE_JOIN, auth.ROLE_ADMIN):
            raise _Refused(403, "joining needs the join token")
        answer = service.join(
            MachineFacts.from_dict(body.facts), body.name, body.owner, body.labels
        )
        log.info("node %s %s", answer["id"], answer["state"])
        return answer

    @app.get("/api/speedtest")
    def speedtest(who: Anyone, size_bytes: int = 8_000_000) -> Response:
        # the agent measures its link to the coordinator with this download
        return Response(
            bytes(min(max(size_bytes, 0), 64_000_000)), media_type="application/octet-stream"
        )

    @app.get("/api/nodes")
    def nodes(who: Member) -> list[dict[str, Any]]:
        return service.nodes()

    @app.get("/api/nodes/{node_id}")
    def node(node_id: str, who: Caller) -> dict[str, Any]:
        # a verifying or rejected node may read its own verdict and nothing else
        if (
            who.node_id is not None
            and who.node_id != node_id
            and service.node_state(who.node_id) == VERIFYING
        ):
            raise _Refused(403, f"node {who.node_id} is still being verified by the grid")
        return service.node(node_id)

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
        return service.logs(job_id)

    @app.post("/api/jobs/{job_id}/cancel")
    def cancel(job_id: str, who: Member) -> dict[str, Any]:
        return service.cancel(who, job_id)

    @app.get("/api/data")
    def data_ls(who: Member) -> list[dict[str, Any]]:
        return service.data_ls()

    @app.put("/api/data/{name}")
    async def data_put(
        name: str, request: Request, who: Member, replicas: int | None = None
    ) -> dict[str, Any]:
        return service.data_put(name, await request.body(), replicas)

    @app.get("/api/data/{name}")
    def data_get(name: str, who: Member) -> Response:
        return Response(service.data_get(name), media_type="application/octet-stream")

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

    return app


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

    address = config.ray_address or ray_adapter.start_head(config.host, ray_port, ray_token)
    ray_adapter.connect(address, ray_token)
    service = GridService(config, ray_address=address, ray_token=ray_token)
    payload = service.verification_rule.payload_bytes
    service.attach_engine(ray_adapter.RayEngine(config.checkpoint_dir, payload))
    on_ready(service.join_token)
    serve(service, config.host, config.port)
