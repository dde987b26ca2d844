"""Per-request budgets for the web UI as plain ASGI middleware (no framework import): a request
body larger than ``max_body_bytes`` is refused with 413 before it is read into memory, and a
request that runs past ``seconds`` is answered 503. Inputs are bounded where they are parsed
(device and node counts, context, file sizes), so the planner's own work is bounded too; the
timeout is the backstop that keeps the server answering."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

REQUEST_SECONDS = 30.0


class _TooLarge(Exception):
    pass


class RequestBudget:
    """Wrap an ASGI app: bounded body, bounded time."""

    def __init__(self, app: App, max_body_bytes: int, seconds: float = REQUEST_SECONDS) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and not declared.isdigit():  # was a 413 'over 1,048,576 bytes'
            shown = declared[:40].decode("latin-1")
            error = f"The Content-Length header {shown!r} is not a byte count."
            hint = "Send the body's length in bytes as digits, or leave the header out."
            await _answer(send, 400, error, hint)
            return
        if declared is not None and int(declared) > self.max_body_bytes:
            await _answer(send, 413, f"The request body is over {self.max_body_bytes:,} bytes.")
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body_bytes:
                raise _TooLarge
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await asyncio.wait_for(self.app(scope, counted, tracked), timeout=self.seconds)
        except _TooLarge:
            if not started:
                await _answer(send, 413, f"The request body is over {self.max_body_bytes:,} bytes.")
        except TimeoutError:
            if not started:
                await _answer(send, 503, f"The request took over {self.seconds:g} s; try less.")


async def _answer(send: Send, status: int, error: str, hint: str | None = None) -> None:
    body = json.dumps({"error": error, "hint": hint}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
