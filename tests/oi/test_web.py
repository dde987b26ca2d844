"""The organoid page: server-rendered state and charts, JSON twins, and (in a real headless
Chromium, as tests/web/test_browser.py drives it) the live page with its alarm list."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.web.conftest import app, live_server  # noqa: F401 (fixtures shared with tests/web)

from rigwise.oi.constants import load_constants
from rigwise.oi.faults import parse_fault
from rigwise.oi.runner import run_sim
from rigwise.oi.store import Store
from rigwise.web.oi_routes import DB_ENV

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def oi_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("oi") / "oi.sqlite3"
    store = Store(path)
    run_sim(
        store,
        load_constants(),
        duration_s=2 * 86400,
        period_s=60.0,
        faults=(parse_fault("occlusion@1d+1h"),),
    )
    store.close()
    old = os.environ.get(DB_ENV)
    os.environ[DB_ENV] = str(path)
    yield path
    if old is None:
        os.environ.pop(DB_ENV, None)
    else:
        os.environ[DB_ENV] = old


@pytest.fixture(scope="module")
def client(app):  # type: ignore[no-untyped-def]  # noqa: F811
    from fastapi.testclient import TestClient

    return TestClient(app, raise_server_exceptions=False)


def test_page_without_a_store_says_how_to_start(client, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(DB_ENV, str(tmp_path / "none.sqlite3"))
    page = client.get("/oi")
    assert page.status_code == 200 and 'id="oi-empty"' in page.text
    assert client.get("/api/oi/status").status_code == 404


def test_page_shows_health_alarms_and_charts(client, oi_db) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/oi")
    assert page.status_code == 200
    assert 'id="oi-alarms"' in page.text and "occlusion" in page.text
    assert "cleared, awaiting ack" in page.text  # the fault cleared; nobody acknowledged
    assert 'id="oi-health-value" class="big">ALARM' in page.text
    for chart in ("oi-volumes", "oi-flow", "oi-temperature", "oi-ph", "oi-spikes", "oi-health"):
        assert f'id="{chart}"' in page.text
    assert "not a welfare measure" in page.text


def test_json_twins(client, oi_db) -> None:  # type: ignore[no-untyped-def]
    status = client.get("/api/oi/status").json()
    assert status["health_index"] == "ALARM"
    assert [a["kind"] for a in status["latched_alarms"]] == ["occlusion"]
    charts = client.get("/api/oi/series").json()["charts"]
    temperature = next(c for c in charts if c["id"] == "oi-temperature")
    ys = temperature["data"][0]["y"]
    assert len(ys) > 100 and all(35.5 < y < 38.5 for y in ys)
    later = client.get("/api/oi/series", params={"since_s": 1.5 * 86400}).json()["charts"]
    assert len(later[0]["data"][0]["x"]) < len(charts[0]["data"][0]["x"])


@pytest.mark.browser
def test_live_page_in_chromium(oi_db, live_server: str) -> None:  # noqa: F811
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    from tests.web.test_browser import ARTIFACTS, FLAGS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        tab: Any = browser.new_page(viewport={"width": 1280, "height": 1600}, base_url=live_server)
        tab.goto("/oi")
        assert tab.inner_text("#oi-health-value") == "ALARM"
        rows = tab.locator("#oi-alarms tbody tr.alarm")
        assert rows.count() == 1 and "occlusion" in rows.first.inner_text()
        for chart in ("oi-volumes", "oi-temperature", "oi-health"):
            tab.wait_for_selector(f"#{chart} .main-svg", timeout=15_000)
        # the live refresh replaces the charts from /api/oi/series
        tab.wait_for_function(
            "document.getElementById('oi-refreshed').dataset.refreshed", timeout=20_000
        )
        assert tab.inner_text("#oi-health-value") == "ALARM"
        tab.screenshot(path=str(ARTIFACTS / "oi.png"), full_page=True)
        browser.close()


def test_page_on_a_damaged_store_is_a_page_naming_it(client, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # before: /oi answered the API's JSON {"error": ...} instead of the page
    bad = tmp_path / "bad.sqlite3"
    bad.write_text("garbage")
    monkeypatch.setenv(DB_ENV, str(bad))
    page = client.get("/oi")
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "is not an O.I. store" in page.text
    assert client.get("/api/oi/status").status_code == 400  # the JSON twin stays JSON
