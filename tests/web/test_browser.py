"""End to end in a real headless Chromium (Debian's, driven by Playwright): fill each page's
form, see the result and its plot, follow a shared URL. Screenshots land in test-artifacts/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
# Chromium's background services try the network, which is closed here.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def page(live_server: str) -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 1400}, base_url=live_server)
        yield tab
        browser.close()


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _plotted(page: Any, chart_id: str) -> None:
    page.wait_for_selector(f"#{chart_id} .main-svg", timeout=15_000)


def test_compare_page(page: Any) -> None:
    page.goto("/compare")
    page.fill("#f-names", "RTX 3090, RTX 4090, M3 Max")
    page.click("#compare-submit")
    rows = page.locator("#gpu-table tbody tr")
    assert rows.count() == 3
    assert "4090" in rows.nth(1).inner_text()
    _plotted(page, "compare-chart")
    _shot(page, "compare")


def test_run_page_plans_and_shares(page: Any) -> None:
    page.goto("/run")
    page.fill("#f-model", "llama-3.1-70b")
    page.fill("#f-on", "2x rtx-3090")
    page.fill("#f-quant", "Q4_K_M")
    page.click("#run-submit")
    verdict = page.inner_text("#verdict")
    assert verdict.split(":")[0] in ("fits", "tight", "does not fit")
    _plotted(page, "memory-chart")
    shared = page.url
    assert "model=llama-3.1-70b" in shared and "quant=Q4_K_M" in shared
    _shot(page, "run")
    page.goto("/compare")
    page.goto(shared)  # a shared link reproduces the plan
    assert page.inner_text("#verdict") == verdict


def test_run_page_shows_errors_on_the_page(page: Any) -> None:
    page.goto("/run?model=llama-9-700b&on=rtx-4090")
    assert "llama-9-700b" in page.inner_text("#error")
    _shot(page, "run-error")


def test_train_page(page: Any) -> None:
    page.goto("/train")
    page.fill("#f-model", "llama-3.1-8b")
    page.fill("#f-on", "8x h100-sxm")
    page.select_option("#f-search", "true")
    page.fill("#f-tokens", "1e9")
    page.click("#train-submit")
    assert page.inner_text("#verdict").startswith("fits")
    _plotted(page, "step-chart")
    _shot(page, "train")


def test_machine_and_grid_pages(page: Any) -> None:
    page.goto("/machine")
    assert page.locator("#machine-summary").count() == 1
    page.wait_for_function("document.querySelector('#live-body').innerText.includes('threads')")
    _shot(page, "machine")
    page.goto("/grid")
    assert page.locator("#grid-unconfigured, #grid-nodes").count() == 1
    _shot(page, "grid")


def test_build_page(page: Any) -> None:
    page.goto("/build")
    page.fill("#f-model", "llama-3.1-70b")
    page.fill("#f-target_tps", "15")
    page.fill("#f-budget", "3000")
    page.click("#build-submit")
    page.wait_for_selector("#build-options", timeout=60_000)
    assert page.locator("#build-options tbody tr").count() >= 1
    _plotted(page, "pareto-chart")
    _shot(page, "build")


def test_fit_page_is_the_landing_page_and_ranks_models(page: Any) -> None:
    page.goto("/")
    assert page.url.endswith("/fit")
    page.fill("#f-on", "rtx-3090")
    page.select_option("#f-use", "code")
    page.fill("#f-min_tps", "30")
    page.click("#fit-submit")
    assert "rtx-3090" in page.inner_text("#fit-summary")
    rows = page.locator("#fit-table tbody tr")
    assert rows.count() > 10
    assert "runs" in rows.nth(0).inner_text()
    _plotted(page, "fit-chart")
    assert page.get_attribute("#f-context", "placeholder") == "4096"
    _shot(page, "fit")


def test_build_page_new_fields_and_comparison(page: Any) -> None:
    page.goto("/build")
    page.fill("#f-model", "llama-3.1-70b")
    page.fill("#f-target_tps", "15")
    page.fill("#f-budget", "3000")
    page.fill("#f-hours_per_day", "12")
    page.fill("#f-years", "2")
    page.fill("#f-circuit", "eu-230v-16a")
    page.select_option("#f-rank", "target")
    page.click("#build-submit")
    assert "at 12 h/day" in page.inner_text("#comparison")
    assert "2 years at 12 h/day" in page.inner_text("#build-options")
    _plotted(page, "pareto-chart")
    _shot(page, "build-fields")
