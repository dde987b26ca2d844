"""The FastAPI application behind ``rigwise ui`` (the one module that imports FastAPI for the UI).

Pages are server-rendered from ``views``; every page has a JSON twin under ``/api`` whose query
parameters are the CLI's long option names, documented in the OpenAPI schema at ``/docs``.
"""

import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ValidationError, create_model

from rigwise import __version__
from rigwise.errors import RigwiseError
from rigwise.serialize import to_jsonable
from rigwise.web import views

_HERE = Path(__file__).parent
_SCALARS = (str, int, float, bool)


def _is_scalar(annotation: Any) -> bool:
    """Query strings carry scalars (and Literals of them), not mappings."""
    if annotation in _SCALARS:
        return True
    args = get_args(annotation)
    if get_origin(annotation) is not None and args:
        return all(_is_scalar(a) or a is type(None) or isinstance(a, str | int) for a in args)
    return False


def query_model(options: type[BaseModel], name: str) -> type[BaseModel]:
    """The scalar fields of a planner's options model, as a FastAPI query-parameter model."""
    fields: dict[str, Any] = {
        key: (field.annotation, field)
        for key, field in options.model_fields.items()
        if _is_scalar(field.annotation)
    }
    model: type[BaseModel] = create_model(name, **fields)
    return model


def _bad_input(exc: Exception) -> JSONResponse:
    return JSONResponse({"error": views.user_message(exc)}, status_code=400)


def _options(params: Any) -> dict[str, Any]:
    """A query model's values (defaults included) as planner keyword arguments."""
    return dict(params.model_dump(exclude_none=True))


def _json(value: Any) -> JSONResponse:
    return JSONResponse(to_jsonable(value))


def _grid_client() -> Any | None:
    url, token = os.environ.get("RIGWISE_GRID_URL"), os.environ.get("RIGWISE_GRID_TOKEN")
    if not url or not token:
        return None
    from rigwise.grid.client import GridClient

    return GridClient(url, token)


def create_app() -> FastAPI:
    from rigwise.api.infer import InferOptions
    from rigwise.api.train import TrainOptions

    app = FastAPI(
        title="rigwise",
        version=__version__,
        description="Plans for running, fine-tuning and training AI models on hardware.",
    )
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")

    def render(request: Request, template: str, context: dict[str, Any]) -> HTMLResponse:
        status = 400 if context.get("error") else 200
        return templates.TemplateResponse(request, template, context, status_code=status)

    @app.exception_handler(RigwiseError)
    async def _rigwise_error(request: Request, exc: RigwiseError) -> JSONResponse:
        return _bad_input(exc)

    @app.exception_handler(ValidationError)
    async def _validation_error(request: Request, exc: ValidationError) -> JSONResponse:
        return _bad_input(exc)

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
        return render(request, "grid.html", views.grid_context(_grid_client()))

    _api_routes(
        app, query_model(InferOptions, "InferQuery"), query_model(TrainOptions, "TrainQuery")
    )
    return app


def _api_routes(app: FastAPI, infer_query: type[BaseModel], train_query: type[BaseModel]) -> None:
    from rigwise.api.fit import FitOptions, fit_models
    from rigwise.api.gpus import GpusOptions, list_gpus
    from rigwise.api.infer import plan_inference
    from rigwise.api.train import plan_training

    @app.get("/api/gpus", tags=["know"], summary="The accelerator catalog, filtered and sorted")
    def api_gpus(params: Annotated[GpusOptions, Query()]) -> Response:
        return _json(list_gpus(**_options(params)))

    @app.get(
        "/api/infer",
        tags=["plan"],
        summary="Inference and serving plan (as `rigwise infer --json`)",
    )
    def api_infer(params: Annotated[infer_query, Query()]) -> Response:  # type: ignore[valid-type]
        return _json(plan_inference(**_options(params)))

    @app.get("/api/train", tags=["plan"], summary="Training plan (as `rigwise train --json`)")
    def api_train(params: Annotated[train_query, Query()]) -> Response:  # type: ignore[valid-type]
        return _json(plan_training(**_options(params)))

    @app.get("/api/fit", tags=["plan"], summary="Every model ranked (as `rigwise fit --json`)")
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


def _build_route(app: FastAPI) -> None:
    try:
        from rigwise.design.api import BuildOptions, design_builds
    except ImportError:  # the designer is optional until it lands
        return
    build_query = query_model(BuildOptions, "BuildQuery")

    @app.get("/api/build", tags=["build"], summary="Ranked builds (as `rigwise build --json`)")
    def api_build(params: Annotated[build_query, Query()]) -> Response:  # type: ignore[valid-type]
        return _json(design_builds(**_options(params)))
