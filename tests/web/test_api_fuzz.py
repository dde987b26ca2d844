"""schemathesis against the OpenAPI schema (the FastAPI app in-process): whatever a client sends,
no server error, no traceback, and a planner's JSON answer holds no negative or non-finite
number. ``RIGWISE_FUZZ_EXAMPLES`` raises the budget for a campaign."""

from __future__ import annotations

import os

import schemathesis
from hypothesis import HealthCheck, settings

from rigwise.serialize import nonsense_numbers
from rigwise.web.app import create_app

EXAMPLES = int(os.environ.get("RIGWISE_FUZZ_EXAMPLES", "15"))
PLANS = ("/api/infer", "/api/train", "/api/fit", "/api/gpus", "/api/build")

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())
# The designer re-plans hundreds of candidate builds per call (about a second each), so it gets
# fewer examples than the planners, which answer in milliseconds.
BUILD = "/api/build"


@schema.exclude(path=BUILD).parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_answers_with_a_server_error(case) -> None:  # type: ignore[no-untyped-def]
    check_answer(case.call(), case.path)


def check_answer(response, path: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code < 500, response.text[:500]
    assert "Traceback" not in response.text
    if response.status_code == 200 and path in PLANS:
        found = nonsense_numbers(response.json())
        assert not found, found[:5]


@schema.include(path=BUILD).parametrize()
@settings(
    max_examples=max(6, EXAMPLES // 5), deadline=None, suppress_health_check=list(HealthCheck)
)
def test_build_api_never_answers_with_a_server_error(case) -> None:  # type: ignore[no-untyped-def]
    check_answer(case.call(), case.path)
