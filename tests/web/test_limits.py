"""RequestBudget: a request past its time budget is answered 503 (the server keeps answering)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rigwise.web.limits import RequestBudget


async def _slow_app(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.sleep(5)


def _call(app: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "headers": [], "method": "GET", "path": "/api/infer"}
    asyncio.run(app(scope, receive, send))
    return sent


def test_a_request_past_its_budget_gets_503_not_a_hang() -> None:
    sent = _call(RequestBudget(_slow_app, max_body_bytes=1024, seconds=0.2))
    assert sent[0]["status"] == 503
    assert "0.2 s" in json.loads(sent[1]["body"])["error"]


def test_a_declared_oversized_body_gets_413_without_calling_the_app() -> None:
    called = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append(scope)

    budget = RequestBudget(app, max_body_bytes=10)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "headers": [(b"content-length", b"11")]}
    asyncio.run(budget(scope, receive, send))
    assert sent[0]["status"] == 413 and not called


def test_a_content_length_that_is_no_count_gets_400_naming_it() -> None:
    # before: 413 'The request body is over 10 bytes.' for a header of 'abc' or '-1'
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app is not called")

    for value in (b"abc", b"-1"):
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)  # noqa: B023

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        scope = {"type": "http", "headers": [(b"content-length", value)]}
        asyncio.run(RequestBudget(app, max_body_bytes=10)(scope, receive, send))
        assert sent[0]["status"] == 400
        answer = json.loads(sent[1]["body"])
        assert repr(value.decode()) in answer["error"]
        assert answer["hint"] == (
            "Send the body's length in bytes as digits, or leave the header out."
        )
