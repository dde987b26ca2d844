"""The run page shows the P10-P90 range next to decode and prefill, and draws the decode band."""

from __future__ import annotations

import json
import re


def test_the_run_page_shows_ranges_and_a_decode_band(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/run", params={"model": "llama-3.1-8b", "on": "rtx-4090"})
    assert response.status_code == 200
    assert response.text.count('title="P10-P90 of comparable independent measurements"') >= 2
    assert "&lt;span" not in response.text  # the range is markup, not escaped text
    traces = [t for t in re.findall(r'"name": ?"decode P10-P90"', response.text)]
    assert traces, "the context chart has the decode band"


def test_the_band_is_filled_between_its_p10_and_p90_lines() -> None:
    from rigwise.web.charts import speed_curve

    figure = speed_curve("c", "t", "x", [1, 2], {"d P10": [1, 2], "d P90": [3, 4], "d": [2, 3]})
    text = json.dumps(figure)
    assert '"fill": "tonexty"' in text and '"d P10-P90"' in text


_BAND = 'title="P10-P90 of comparable independent measurements"'


def test_the_run_page_ranges_memory_ttft_and_serving_and_bands_the_serving_curve(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get(
        "/run", params={"model": "llama-3.1-8b", "on": "rtx-4090", "concurrency": "8"}
    )
    assert response.status_code == 200
    # memory, decode, prefill, TTFT and serving each carry a range
    assert response.text.count(_BAND) >= 5
    assert re.search(r'"name": ?"aggregate P10-P90"', response.text)
    assert 'id="range-notes"' in response.text  # which rows set each range, and widenings


def test_the_train_page_ranges_every_figure(client) -> None:  # type: ignore[no-untyped-def]
    params = {"model": "llama-3.1-8b", "on": "8x h100-sxm", "tokens": "1e9", "search": "true"}
    response = client.get("/train", params=params)
    assert response.status_code == 200
    # step time, tokens/s, memory per GPU, MFU, time to train, GPU-hours, cost
    assert response.text.count(_BAND) == 7


def test_the_build_page_ranges_speed_and_cost_and_marks_a_one_sided_range(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/build", params={"model": "llama-3.1-8b", "top": "3"})
    assert response.status_code == 200
    assert response.text.count(_BAND) >= 6  # speed and $/M tokens of each of 3 options
    # the top options are Apple machines, whose llama.cpp rows ran faster than predicted
    assert ": similar rigs ran faster" in response.text
    assert "speed range: measurements on similar rigs ran faster" in response.text
    assert '"arrayminus"' in response.text  # the cost/speed chart has P10-P90 error bars


def test_the_band_says_which_side_when_the_range_excludes_the_estimate() -> None:
    from rigwise.web.app import create_app

    create_app()  # the templates' environment
    from jinja2 import Environment, FileSystemLoader

    from rigwise.web import app as web_app

    folder = web_app.__file__.rsplit("/", 1)[0] + "/templates"
    macros = Environment(loader=FileSystemLoader(folder)).get_template("_macros.html").module
    assert "similar rigs ran faster" in str(macros.band([11.0, 12.0], value=10.0))  # type: ignore[attr-defined]
    assert "ran slower" in str(macros.band([11.0, 12.0], value=10.0, time=True))  # type: ignore[attr-defined]
    assert "similar runs used more memory" in str(macros.band([11e9, 12e9], value=10e9, kind="gb"))  # type: ignore[attr-defined]
    assert "similar" not in str(macros.band([9.0, 12.0], value=10.0))  # type: ignore[attr-defined]
