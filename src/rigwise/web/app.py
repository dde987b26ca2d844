"""The FastAPI application behind ``rigwise ui`` (the one module that imports FastAPI for the UI).

Pages are server-rendered from ``views``; every page has a JSON twin under ``/api`` whose query
parameters are the CLI's long option names, documented in the OpenAPI schema at ``/docs``.
"""

import dataclasses
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, create_model
from starlette.exceptions import HTTPException

from rigwise import __version__
from rigwise.errors import RigwiseError, validation_message
from rigwise.serialize import to_jsonable
from rigwise.web import oi_routes, views
from rigwise.web.inputs import (
    MAX_UPLOAD_BYTES,
    SERVER_FILE_KEYS,
    Upload,
    given_twice,
    uploaded,
    web_options,
)
from rigwise.web.limits import RequestBudget

_HERE = Path(__file__).parent
_SCALARS = (str, int, float, bool)


class ErrorBody(BaseModel):
    """Every 400 answer: what was wrong (naming the value) and how to fix it."""

    error: str
    hint: str | None = None


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input: the message names the value and the fix"},
    413: {"model": ErrorBody, "description": "The request body is over the size limit"},
    422: {"model": ErrorBody, "description": "A parameter or body key of the wrong type or name"},
    503: {"model": ErrorBody, "description": "The request ran past its time budget"},
}


def _is_scalar(annotation: Any) -> bool:
    """Query strings carry scalars (and Literals of them), not mappings."""
    if annotation in _SCALARS:
        return True
    args = get_args(annotation)
    if get_origin(annotation) is not None and args:
        return all(_is_scalar(a) or a is type(None) or isinstance(a, str | int) for a in args)
    return False


def _is_count(annotation: Any) -> bool:
    """A number, or a number or 'max': ``int``, ``float | None``, ``int | Literal['max']``."""
    members = [a for a in (get_args(annotation) or (annotation,)) if a is not type(None)]
    texts = [m for m in members if get_origin(m) is Literal and all(map(_is_text, get_args(m)))]
    return any(m in (int, float) for m in members) and all(
        m in (int, float) or m in texts for m in members
    )


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _query_type(annotation: Any) -> Any:
    """A query string carries text: ``Literal[0, 1, 2, 3]`` (ZeRO stages) is read as an int
    and checked against the same choices (``zero=1`` works, ``zero=7`` is a clear 422). A
    count stays text for the options model to read, as the CLI's is: '8k', '2T' and 'max' were
    a 422 'Input should be a valid integer'."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    optional = len(args) < len(get_args(annotation))
    if _is_count(annotation):
        return str | None
    if get_origin(annotation) is not Literal and len(args) == 1:
        inner = args[0]
        return (
            _query_type(inner) | None if optional and get_origin(inner) is Literal else annotation
        )
    if get_origin(annotation) is Literal and all(
        isinstance(a, int) and not isinstance(a, bool) for a in args
    ):
        choices = frozenset(args)

        def _choice(value: int) -> int:
            if value not in choices:
                raise ValueError(f"must be one of {sorted(choices)}")
            return value

        return Annotated[int, AfterValidator(_choice)]
    return annotation


def query_model(options: type[Any], name: str) -> type[BaseModel]:
    """The scalar fields of a planner's options model, as a FastAPI query-parameter model;
    options that name server-side files (``cluster``) are left out (see ``web.inputs``)."""
    from rigwise.api.docs import described

    docs = described(options)  # each option's docstring line becomes its query description
    if dataclasses.is_dataclass(options):  # an options dataclass: its pydantic twin's fields
        from rigwise.option_fields import pydantic_model

        options = pydantic_model(options)
    fields: dict[str, Any] = {
        key: (_query_type(field.annotation), _query_field(field, docs.get(key)))
        for key, field in options.model_fields.items()
        if _is_scalar(field.annotation) and key not in SERVER_FILE_KEYS
    }
    model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
    return model


def _query_field(field: Any, description: str | None) -> Any:
    """The query parameter of an option: a count keeps its default and description but not
    its bounds (its text is read, and bounded, by the options model)."""
    if not _is_count(field.annotation):
        return _with_description(field, description)
    from pydantic.fields import FieldInfo

    default = None if field.default is None else str(field.default)
    return FieldInfo(default=default, description=field.description or description)


def _with_description(field: Any, description: str | None) -> Any:
    if not description or field.description:
        return field
    from pydantic.fields import FieldInfo

    return FieldInfo.merge_field_infos(field, description=description)


def _bad_input(exc: Exception) -> JSONResponse:
    hint = exc.hint if isinstance(exc, RigwiseError) else None
    message = exc.message if isinstance(exc, RigwiseError) else views.user_message(exc)
    return JSONResponse({"error": message, "hint": hint}, status_code=400)


def _options(params: Any) -> dict[str, Any]:
    """A query model's values (defaults included) as planner keyword arguments; a model must
    come from the catalog (an uploaded one travels in a POST body)."""
    return web_options(params.model_dump(exclude_none=True, exclude_unset=True))


def _json(value: Any) -> JSONResponse:
    return JSONResponse(to_jsonable(value))


def create_app() -> FastAPI:
    from rigwise.api.infer import InferOptions
    from rigwise.api.train import TrainOptions

    app = FastAPI(
        title="rigwise",
        version=__version__,
        description="Plans for running, fine-tuning and training AI models on hardware.",
        docs_url=None,  # served below from the installed swagger-ui-bundle (works offline)
        redoc_url=None,
    )
    app.add_middleware(RequestBudget, max_body_bytes=MAX_UPLOAD_BYTES)
    _docs_routes(app)
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")

    def render(request: Request, template: str, context: dict[str, Any]) -> HTMLResponse:
        status = 400 if context.get("error") else 200
        return templates.TemplateResponse(request, template, context, status_code=status)

    _guards(app)
    _page_routes(app, render)
    oi_routes.register(app, render)

    _api_routes(
        app, query_model(InferOptions, "InferQuery"), query_model(TrainOptions, "TrainQuery")
    )
    return app


def _guards(app: FastAPI) -> None:
    """Refuse server file paths on /api/; bad input answers 400 with the message and hint."""

    @app.middleware("http")
    async def _no_server_files(request: Request, call_next: Any) -> Response:
        named = [key for key in SERVER_FILE_KEYS if request.query_params.get(key)]
        if named and request.url.path.startswith("/api/"):
            error = f"The web API does not read files on the server ({named[0]}= given)."
            hint = "POST the content instead (see /docs: hf_config, cluster)."
            return JSONResponse({"error": error, "hint": hint}, status_code=400)
        twice = given_twice(request.url.path, request.query_params.multi_items())
        if twice is not None:  # ?on=a&on=b planned the last one without a word
            error = f"The query gives {twice} more than once."
            return JSONResponse({"error": error, "hint": "Give each parameter once."}, 400)
        response: Response = await call_next(request)
        return response

    @app.exception_handler(RigwiseError)
    async def _rigwise_error(request: Request, exc: RigwiseError) -> JSONResponse:
        return _bad_input(exc)

    @app.exception_handler(ValidationError)
    async def _validation_error(request: Request, exc: ValidationError) -> JSONResponse:
        return _bad_input(exc)

    @app.exception_handler(RequestValidationError)
    async def _request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer is {"detail": [...]}; the API's errors are {"error", "hint"}
        error = validation_message(exc, f"Bad request to {request.url.path}")
        hint = "See /docs for the parameters, their names and types."
        return JSONResponse({"error": error, "hint": hint}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        hint = (
            "See /docs for the API's routes and methods."
            if exc.status_code in (404, 405)
            else "Send the body as JSON in UTF-8, as /docs shows."  # a body FastAPI cannot parse
        )
        return JSONResponse(
            {"error": f"{exc.detail}: {request.method} {request.url.path}.", "hint": hint},
            status_code=exc.status_code,
            headers=exc.headers,
        )


def _page_routes(
    app: FastAPI, render: Callable[[Request, str, dict[str, Any]], HTMLResponse]
) -> None:
    """The HTML pages: Fit, Compare, Run, Train, Build, My machine, Grid."""

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/fit")

    @app.get("/fit", response_class=HTMLResponse, include_in_schema=False)
    def fit_page(request: Request) -> HTMLResponse:
        from rigwise.web.fit_view import fit_context

        return render(request, "fit.html", fit_context(request.query_params))

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        path = resources.files("plotly").joinpath("package_data", "plotly.min.js")
        return FileResponse(str(path), media_type="application/javascript")

    @app.get("/compare", response_class=HTMLResponse, include_in_schema=False)
    def compare_page(request: Request) -> HTMLResponse:
        return render(request, "compare.html", views.compare_context(request.query_params))

    @app.get("/run", response_class=HTMLResponse, include_in_schema=False)
    def run_page(request: Request) -> HTMLResponse:
        return render(request, "run.html", views.run_context(request.query_params))

    @app.get("/train", response_class=HTMLResponse, include_in_schema=False)
    def train_page(request: Request) -> HTMLResponse:
        return render(request, "train.html", views.train_context(request.query_params))

    @app.get("/build", response_class=HTMLResponse, include_in_schema=False)
    def build_page(request: Request) -> HTMLResponse:
        return render(request, "build.html", views.build_context(request.query_params))

    @app.get("/machine", response_class=HTMLResponse, include_in_schema=False)
    def machine_page(request: Request) -> HTMLResponse:
        return render(request, "machine.html", views.machine_context())

    @app.get("/grid", response_class=HTMLResponse, include_in_schema=False)
    def grid_page(request: Request) -> HTMLResponse:
        return render(request, "grid.html", views.grid_page_context())


def _api_routes(app: FastAPI, infer_query: type[BaseModel], train_query: type[BaseModel]) -> None:
    from rigwise.api.fit import FitOptions, fit_models
    from rigwise.api.gpus import GpusOptions, list_gpus

    @app.get(
        "/api/gpus",
        tags=["know"],
        summary="The accelerator catalog, filtered and sorted",
        responses=ERRORS,
    )
    def api_gpus(params: Annotated[GpusOptions, Query()]) -> Response:
        return _json(list_gpus(**_options(params)))

    _plan_routes(app, infer_query, train_query)

    @app.get(
        "/api/fit",
        tags=["plan"],
        summary="Every model ranked (as `rigwise fit --json`)",
        responses=ERRORS,
    )
    def api_fit(params: Annotated[FitOptions, Query()]) -> Response:
        return _json(fit_models(**_options(params)))

    @app.get("/api/probe", tags=["measure"], summary="This machine (as `rigwise probe --json`)")
    def api_probe() -> Response:
        from rigwise.probe import probe

        return _json(probe())

    @app.get("/api/metrics", tags=["measure"], summary="Live host and GPU metrics (one reading)")
    def api_metrics() -> Response:
        from rigwise.monitor.metrics import snapshot
        from rigwise.probe import default_backend

        return _json(snapshot(default_backend()))

    _build_route(app)


def _plan_routes(app: FastAPI, infer_query: type[BaseModel], train_query: type[BaseModel]) -> None:
    """/api/infer and /api/train: query parameters (GET) or uploaded files (POST)."""
    from rigwise.api.infer import plan_inference
    from rigwise.api.train import plan_training

    @app.get(
        "/api/infer",
        tags=["plan"],
        summary="Inference and serving plan (as `rigwise infer --json`)",
        responses=ERRORS,
    )
    def api_infer(params: Annotated[infer_query, Query()]) -> Response:  # type: ignore[valid-type]
        return _json(plan_inference(**_options(params)))

    @app.post(
        "/api/infer",
        tags=["plan"],
        summary="Inference plan for an uploaded config.json and/or cluster file",
        responses=ERRORS,
    )
    def api_infer_upload(upload: Upload) -> Response:
        with uploaded(upload) as options:
            return _json(plan_inference(**options))

    @app.get(
        "/api/train",
        tags=["plan"],
        summary="Training plan (as `rigwise train --json`)",
        responses=ERRORS,
    )
    def api_train(params: Annotated[train_query, Query()]) -> Response:  # type: ignore[valid-type]
        return _json(plan_training(**_options(params)))

    @app.post(
        "/api/train",
        tags=["plan"],
        summary="Training plan for an uploaded config.json and/or cluster file",
        responses=ERRORS,
    )
    def api_train_upload(upload: Upload) -> Response:
        with uploaded(upload) as options:
            return _json(plan_training(**options))


def _build_route(app: FastAPI) -> None:
    from rigwise.design.api import BuildOptions, design_builds

    build_query = query_model(BuildOptions, "BuildQuery")

    @app.get(
        "/api/build",
        tags=["build"],
        summary="Ranked builds (as `rigwise build --json`)",
        responses=ERRORS,
    )
    def api_build(params: Annotated[build_query, Query()]) -> Response:  # type: ignore[valid-type]
        return _json(design_builds(**_options(params)))


def _docs_routes(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the installed ``swagger-ui-bundle`` package (no CDN)."""
    from fastapi.openapi.docs import get_swagger_ui_html

    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:  # the web extra installs it; without it, the schema itself
        swagger_ui_path = None
    if swagger_ui_path is not None:
        app.mount("/vendor/swagger", StaticFiles(directory=str(swagger_ui_path)), name="swagger")

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        if swagger_ui_path is None:
            return RedirectResponse("/openapi.json")
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="rigwise API",
            swagger_js_url="/vendor/swagger/swagger-ui-bundle.js",
            swagger_css_url="/vendor/swagger/swagger-ui.css",
            swagger_favicon_url="/vendor/swagger/favicon-32x32.png",
        )
