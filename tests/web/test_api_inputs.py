"""The web API's edges: no server-side files from query strings, uploads in the body, bounded
bodies, ZeRO settable, errors documented, /docs served from local files."""

from __future__ import annotations

from typing import Any

import pytest

LLAMA_8B_CONFIG = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


@pytest.mark.parametrize(
    "url",
    [
        "/api/infer?model=llama-3.1-8b&on=rtx-4090&cluster=/etc/hostname",
        "/api/train?model=llama-3.1-8b&cluster=/etc/hostname",
        "/api/infer?model=/etc/hostname&on=rtx-4090",
        "/api/infer?model=../../etc&on=rtx-4090",
    ],
)
def test_query_strings_never_name_server_files(client: Any, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"error", "hint"} and "POST" in body["hint"]


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("/api/infer?model=llama-3.1-8b&on=rtx-4090&on=h100-sxm", "on"),
        ("/api/fit?on=rtx-4090&use=chat&use=code", "use"),
        ("/api/gpus?vendor=nvidia&vendor=amd", "vendor"),
    ],
)
def test_a_parameter_given_twice_is_refused(client: Any, url: str, key: str) -> None:
    """?on=rtx-4090&on=h100-sxm planned h100-sxm without a word (the last value kept)."""
    response = client.get(url)
    assert response.status_code == 400
    assert response.json() == {
        "error": f"The query gives '{key}' more than once.",
        "hint": "Give each parameter once.",
    }
    assert client.get(url.rsplit("&", 1)[0]).status_code == 200  # once: answered


@pytest.mark.parametrize(
    "url", ["/run?model=/etc/hostname&on=rtx-4090", "/run?model=llama-3.1-8b&cluster=/etc/hostname"]
)
def test_pages_never_read_server_files(client: Any, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 400
    assert "does not read files on the server" in response.text or "Unknown model" in response.text


def test_an_uploaded_config_plans_like_the_catalog_model(client: Any) -> None:
    options = {"on": "rtx-4090", "levers": False, "quant": "Q4_K_M"}
    uploaded = client.post("/api/infer", json={"options": options, "hf_config": LLAMA_8B_CONFIG})
    catalog = client.get("/api/infer", params={**options, "model": "llama-3.1-8b"})
    assert uploaded.status_code == 200 and catalog.status_code == 200
    mine, theirs = uploaded.json(), catalog.json()
    assert mine["fits"] is True
    assert mine["decode"]["tokens_per_s"] == pytest.approx(theirs["decode"]["tokens_per_s"], 0.02)


def test_an_uploaded_bad_config_names_the_key_not_the_server_path(client: Any) -> None:
    bad = {**LLAMA_8B_CONFIG, "num_attention_heads": 0}
    response = client.post("/api/infer", json={"options": {"on": "rtx-4090"}, "hf_config": bad})
    assert response.status_code == 400
    error = response.json()["error"]
    assert "num_attention_heads" in error and "<upload>" in error and "/tmp" not in error


def test_an_uploaded_cluster_and_zero_reach_the_training_planner(client: Any) -> None:
    cluster = {"nodes": [{"on": "8x h100-sxm", "count": 2}], "network": "ib-ndr"}
    body = {"options": {"model": "llama-3.1-8b", "zero": 1}, "cluster": cluster}
    response = client.post("/api/train", json=body)
    assert response.status_code == 200
    plan = response.json()
    assert plan["gpus"] == 16 and plan["layout"]["zero"] == 1


def test_zero_is_settable_from_the_query_string(client: Any) -> None:
    ok = client.get("/api/train", params={"model": "llama-3.1-8b", "on": "dgx-h100", "zero": 1})
    assert ok.status_code == 200 and ok.json()["layout"]["zero"] == 1
    bad = client.get("/api/train", params={"model": "llama-3.1-8b", "on": "dgx-h100", "zero": 7})
    assert bad.status_code == 422 and "zero" in bad.text


def test_a_body_over_the_limit_is_refused_before_it_is_read(client: Any) -> None:
    from rigwise.web.inputs import MAX_UPLOAD_BYTES

    blob = b"x" * (MAX_UPLOAD_BYTES + 1)
    response = client.post("/api/infer", content=blob, headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_openapi_documents_the_error_answers(client: Any) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/infer", "/api/train", "/api/gpus", "/api/fit", "/api/build"):
        for operation in paths[path].values():
            assert "400" in operation["responses"], path
    params = [p["name"] for p in paths["/api/infer"]["get"]["parameters"]]
    assert "cluster" not in params


def test_docs_work_offline(client: Any) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "/vendor/swagger/swagger-ui-bundle.js" in page.text
    script = client.get("/vendor/swagger/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/infer", {"prompt": "8k", "context": "max"}),
        ("/api/train", {"tokens": "2T", "seq": "4k", "zero": 3}),
        ("/api/build", {"budget": "3000", "top": "2"}),
    ],
)
def test_counts_read_as_the_cli_reads_them(client: Any, path: str, params: dict[str, Any]) -> None:
    # before: 422 "Input should be a valid integer" for prompt=8k, "a valid number" for tokens=2T
    base = {"model": "llama-3.1-8b", "on": "8x h100-sxm"} if path != "/api/build" else {}
    response = client.get(path, params={"model": "llama-3.1-8b", **base, **params})
    assert response.status_code == 200, response.text


def test_a_bad_count_is_a_400_naming_it(client: Any) -> None:
    # before: FastAPI's 422 {"detail": [...]}, not the API's {"error", "hint"}
    response = client.get("/api/infer", params={"model": "llama-3.1-8b", "on": "rtx-4090",
                                                "prompt": "1e400"})  # fmt: skip
    assert response.status_code == 400
    assert "'1e400' is not a finite number" in response.json()["error"]


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/infer", {"model": "llama-3.1-8b", "on": "rtx-4090", "promt": "8k"}),
        ("/api/train", {"model": "llama-3.1-8b", "tokenz": "2T"}),
        ("/api/build", {"model": "llama-3.1-8b", "budgett": "5"}),
    ],
)
def test_an_unknown_parameter_is_refused(client: Any, path: str, params: dict[str, Any]) -> None:
    # before: 200, the misspelt parameter dropped: a plan at the default prompt, no budget
    response = client.get(path, params=params)
    assert response.status_code == 422 and "Extra inputs are not permitted" in response.text


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "status", "named"),
    [
        ("GET", "/api/gpus", {"sort": "bogus"}, None, 422, "'bogus'"),
        ("GET", "/api/infer", {"model": "llama-3.1-8b", "gpu": "h100"}, None, 422, "gpu"),
        ("GET", "/api/oi/series", {"since_s": "abc"}, None, 422, "'abc'"),
        ("POST", "/api/infer", None, b"not json", 422, "JSON decode error"),
        ("POST", "/api/train", None, b'{"options": "str"}', 422, "options"),
        ("POST", "/api/gpus", None, b"{}", 405, "POST /api/gpus"),
        ("GET", "/api/nothing", None, None, 404, "/api/nothing"),
        ("POST", "/api/infer", None, b'{"options": {"model": "caf\xe9"}}', 400, "parsing the body"),
    ],
)
def test_every_error_is_the_apis_own_format(  # type: ignore[no-untyped-def]
    client: Any, method, path, params, body, status, named
) -> None:
    # before: FastAPI's {"detail": [...]} (422) and {"detail": "Not Found"} (404, 405)
    headers = {"content-type": "application/json"}
    response = client.request(method, path, params=params, content=body, headers=headers)
    assert response.status_code == status, response.text
    answer = response.json()
    assert set(answer) == {"error", "hint"} and named in answer["error"], answer
    # before: a body that is no UTF-8 JSON had the hint "See /docs for the API's routes"
    assert ("routes" in answer["hint"]) == (status in (404, 405)), answer
