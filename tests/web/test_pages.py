"""Pages and the JSON API through FastAPI's test client: same JSON as the CLI, clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from rigwise.api.infer import plan_inference
from rigwise.serialize import to_jsonable


def test_home_redirects_to_fit(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/", follow_redirects=False)
    assert response.status_code in (302, 307)
    assert response.headers["location"] == "/fit"


@pytest.mark.parametrize(
    "path", ["/fit", "/compare", "/run", "/train", "/build", "/machine", "/grid"]
)
def test_every_page_renders_with_navigation(client, path: str) -> None:  # type: ignore[no-untyped-def]
    response = client.get(path)
    assert response.status_code == 200
    for label in ("Compare", "Run", "Train", "Build", "My machine", "Grid"):
        assert label in response.text


def test_api_infer_is_the_cli_json(client) -> None:  # type: ignore[no-untyped-def]
    query = {"model": "llama-3.1-8b", "on": "rtx-4090", "quant": "Q4_K_M", "levers": "false"}
    response = client.get("/api/infer", params=query)
    assert response.status_code == 200
    expected = to_jsonable(
        plan_inference(model="llama-3.1-8b", on="rtx-4090", quant="Q4_K_M", levers=False)
    )
    assert response.json() == expected


def test_run_page_shows_verdict_and_shareable_link(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get(
        "/run", params={"model": "llama-3.1-70b", "on": "2x rtx-3090", "quant": "Q4_K_M"}
    )
    assert response.status_code == 200
    assert 'id="verdict"' in response.text
    assert "/api/infer?model=llama-3.1-70b" in response.text


def test_unknown_model_is_a_clear_400_not_a_crash(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/api/infer", params={"model": "llama-9-700b", "on": "rtx-4090"})
    assert response.status_code == 400
    assert "llama-9-700b" in response.json()["error"]
    page = client.get("/run", params={"model": "llama-9-700b", "on": "rtx-4090"})
    assert page.status_code == 400
    assert 'role="alert"' in page.text and "Did you mean" in page.text


def test_bad_option_value_names_the_field(client) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/run", params={"model": "llama-3.1-8b", "on": "rtx-4090", "prompt": "-5"})
    assert page.status_code == 400
    assert "prompt" in page.text


def test_api_gpus_filters_and_sorts(client) -> None:  # type: ignore[no-untyped-def]
    devices = client.get("/api/gpus", params={"min_memory": "48GB", "sort": "bandwidth"}).json()[
        "devices"
    ]
    assert devices and all(d["memory_bytes"] >= 48e9 for d in devices)
    bandwidths = [d["memory_bandwidth_bytes_per_s"] for d in devices]
    assert bandwidths == sorted(bandwidths, reverse=True)


def test_openapi_documents_the_cli_option_names(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/openapi.json").json()
    names = {p["name"] for p in schema["paths"]["/api/infer"]["get"]["parameters"]}
    assert {"model", "on", "quant", "kv_quant", "prompt", "gen", "concurrency", "engine"} <= names
    assert "/api/train" in schema["paths"] and "/api/probe" in schema["paths"]


def test_live_metrics_api_reads_the_host(client) -> None:  # type: ignore[no-untyped-def]
    import psutil

    reading = client.get("/api/metrics").json()
    assert reading["host"]["cpu_count"] == psutil.cpu_count()
    assert 0 < reading["host"]["memory_used_bytes"] <= reading["host"]["memory_total_bytes"]


def test_train_step_chart_holds_only_seconds() -> None:
    from rigwise.web.views import train_context

    ctx = train_context({"model": "llama-3.1-8b", "on": "8x h100-sxm", "tokens": "1e9"})
    step_chart = next(c for c in ctx["charts"] if c["id"] == "step-chart")
    parts = dict(zip(step_chart["data"][0]["y"], step_chart["data"][0]["x"], strict=True))
    assert "compute" in parts and "microbatches" not in parts
    assert sum(parts.values()) <= ctx["plan"]["step"]["seconds"] * 1.0001


def test_fit_page_ranks_models_and_reports_bad_input(client: Any) -> None:
    response = client.get("/fit", params={"on": "rtx-3090", "use": "code", "min_tps": "30"})
    assert response.status_code == 200
    assert 'id="fit-table"' in response.text and "qwen2.5-32b" in response.text
    assert 'placeholder="4096"' in response.text  # the sourced default context
    bad = client.get("/fit", params={"on": "rtx-3090", "min_tps": "fast"})
    assert bad.status_code == 400 and "min_tps" in bad.text


def test_api_fit_is_the_cli_json(client: Any) -> None:
    response = client.get("/api/fit", params={"on": "rtx-4090", "use": "vision"})
    assert response.status_code == 200
    report = response.json()
    assert report["runs"] >= 1 and all("vision" in m["uses"] for m in report["models"])


def test_build_page_exposes_power_circuit_years_and_utilisation(client: Any) -> None:
    page = client.get("/build").text
    for name in ("power_limit", "circuit", "hours_per_day", "years", "method", "rank"):
        assert f'name="{name}"' in page
    assert 'placeholder="us-120v-15a"' in page and 'placeholder="8"' in page  # real defaults


def test_finetune_build_page_plots_days_and_never_zero(client: Any) -> None:
    query = {"model": "llama-3.1-8b", "task": "finetune", "method": "qlora", "budget": "2500"}
    page = client.get("/build", params=query).text
    import re

    assert "days to train" in page and not re.search(r"(?<![\d.,])0\.0 d", page)
    assert "time unknown" not in page


def test_infer_build_page_says_buy_vs_rent_vs_api(client: Any) -> None:
    query = {"model": "llama-3.1-70b", "target_tps": "15", "budget": "3000"}
    page = client.get("/build", params=query).text
    assert "buy vs rent:" in page and "buy vs API:" in page


def test_run_page_exposes_offload_and_scales_times(client: Any) -> None:
    import re

    query = {"model": "qwen2.5-32b", "on": "rtx-3090", "prompt": "16000", "context": "16384"}
    page = client.get("/run", params=query).text
    assert 'name="offload"' in page
    # the value, before its range's <span>
    ttft = re.search(r'Time to first token</div><div class="v">([^<]*?) ?<', page)
    assert ttft is not None and ttft.group(1).endswith(" s")  # "19.7 s", not "19741 ms"


def test_compare_page_shows_verdicts(client: Any) -> None:
    page = client.get("/compare", params={"names": "P40, RTX 3090"}).text
    assert "bad for serve, finetune, train" in page and "CUDA 13" in page
