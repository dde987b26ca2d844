"""The Grid page reads a real coordinator (in process, with an inline engine instead of Ray)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from rigwise.grid.client import GridClient
from rigwise.grid.config import make_config
from rigwise.grid.coordinator import create_app
from rigwise.grid.service import GridService
from rigwise.web.views import grid_context


class ThroughTestClient(httpx.BaseTransport):
    """Hands the grid client's requests to the app's TestClient (which may be built on httpx2,
    whose transports httpx cannot use)."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.client.request(
            request.method, str(request.url), headers=dict(request.headers), content=request.read()
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


@pytest.fixture
def coordinator(tmp_path: Path) -> tuple[GridService, TestClient]:
    service = GridService(make_config(tmp_path, replicas=1))
    return service, TestClient(create_app(service, scheduler_interval=None))


def test_grid_page_lists_what_the_coordinator_holds(coordinator) -> None:  # type: ignore[no-untyped-def]
    service, http = coordinator
    grid = GridClient("http://testserver", service.admin_token, transport=ThroughTestClient(http))
    ctx = grid_context(grid)
    assert ctx["error"] is None and ctx["configured"]
    assert ctx["nodes"] == [] and ctx["jobs"] == [] and ctx["models"] == []


def test_a_wrong_token_is_an_error_on_the_page_not_a_crash(coordinator) -> None:  # type: ignore[no-untyped-def]
    _, http = coordinator
    grid = GridClient("http://testserver", "not-the-token", transport=ThroughTestClient(http))
    ctx = grid_context(grid)
    assert ctx["error"] and "did not answer" in ctx["error"]


def test_a_grid_url_that_is_no_url_is_an_error_on_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # before: GET /grid answered the API's bare JSON {"error": "Bad grid URL 'notaurl' ..."}
    from rigwise.web.app import create_app as create_ui

    monkeypatch.setenv("RIGWISE_GRID_URL", "notaurl")
    monkeypatch.setenv("RIGWISE_GRID_TOKEN", "t")
    page = TestClient(create_ui()).get("/grid")
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "Bad grid URL" in page.text
