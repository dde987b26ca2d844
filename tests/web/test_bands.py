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
