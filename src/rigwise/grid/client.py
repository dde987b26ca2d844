"""HTTP client of the coordinator API (httpx), used by the CLI and the agent."""

from __future__ import annotations

import os
from typing import Any

import httpx

from rigwise.errors import GridError, InputError

URL_ENV = "RIGWISE_GRID_URL"
TOKEN_ENV = "RIGWISE_GRID_TOKEN"
_NOT_A_COORDINATOR = (
    f"Is that a rigwise coordinator? Give the URL `rigwise grid up` printed (--url or {URL_ENV})."
)


def _checked_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host; InputError naming it otherwise (httpx
    raised InvalidURL, an internal error, for 'http://[::1' on the first request)."""
    hint = f"Give the coordinator's URL, e.g. http://10.0.0.5:8765 (--url or {URL_ENV})."
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InputError(f"Bad grid URL {url[:200]!r}: {exc}.", hint=hint) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InputError(f"Bad grid URL {url[:200]!r}: not http(s)://HOST[:PORT].", hint=hint)
    return url


CONNECT_TIMEOUT_S = 10.0  # to open a connection; a request may then take `timeout`


class GridClient:
    def __init__(
        self,
        url: str | None,
        token: str | None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = url or os.environ.get(URL_ENV)
        token = token or os.environ.get(TOKEN_ENV)
        if not url:
            raise InputError("No grid URL.", hint=f"Pass --url or set {URL_ENV}.")
        if not token:
            raise InputError("No grid token.", hint=f"Pass --token or set {TOKEN_ENV}.")
        self.url = _checked_url(url.rstrip("/"))
        self.transport = transport
        self._http = httpx.Client(
            base_url=self.url,
            # an address that never answers (a black-holed host) fails in seconds, not a minute
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S)),
            transport=transport,
            headers={"Authorization": f"Bearer {token}"},
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise GridError(
                f"Cannot reach the grid at {self.url}: {type(exc).__name__}.",
                hint="Check the URL and that `rigwise grid up` is running.",
            ) from exc
        if response.status_code == 401:
            raise GridError(
                "The grid refused the token (401).",
                hint=f"Use the token printed by `rigwise grid up` ({TOKEN_ENV}).",
            )
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            said = body.get("error") or body.get("detail") if isinstance(body, dict) else None
            if not said:  # not the coordinator's answer ('Grid: None', 'Grid: <!DOCTYPE HTML>')
                raise GridError(
                    f"The grid at {self.url} answered {response.status_code} to {method} {path}"
                    " without the coordinator's error.",
                    hint=_NOT_A_COORDINATOR,
                )
            error = InputError if response.status_code in (400, 404, 422) else GridError
            raise error(f"Grid: {said}", hint=body.get("hint") or None)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._call(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:  # an HTML page or a cut-off body was an internal error (exit 70)
            raise GridError(
                f"The grid at {self.url} did not answer JSON to {method} {path}.",
                hint=_NOT_A_COORDINATOR,
            ) from None

    def join(
        self, facts: dict[str, Any], name: str, owner: str, labels: dict[str, str]
    ) -> dict[str, Any]:
        body = {"facts": facts, "name": name, "owner": owner, "labels": labels}
        result: dict[str, Any] = self._json("POST", "/api/join", json=body)
        return result

    def speedtest(self, size_bytes: int) -> bytes:
        return self._call("GET", "/api/speedtest", params={"size_bytes": size_bytes}).content

    def nodes(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/api/nodes"))

    def node(self, node_id: str) -> dict[str, Any]:
        return dict(self._json("GET", f"/api/nodes/{node_id}"))

    def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        return dict(self._json("POST", "/api/jobs", json={"job": job}))

    def jobs(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/api/jobs"))

    def job(self, job_id: str) -> dict[str, Any]:
        return dict(self._json("GET", f"/api/jobs/{job_id}"))

    def logs(self, job_id: str) -> list[dict[str, Any]]:
        return list(self._json("GET", f"/api/jobs/{job_id}/logs"))

    def cancel(self, job_id: str) -> dict[str, Any]:
        return dict(self._json("POST", f"/api/jobs/{job_id}/cancel"))

    def data_put(self, name: str, data: bytes, replicas: int | None = None) -> dict[str, Any]:
        params = {"replicas": replicas} if replicas else None
        return dict(self._json("PUT", f"/api/data/{name}", content=data, params=params))

    def data_get(self, name: str) -> bytes:
        return self._call("GET", f"/api/data/{name}").content

    def data_ls(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/api/data"))

    def credits(self) -> dict[str, Any]:
        return dict(self._json("GET", "/api/credits"))

    def models(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/api/models"))

    def evaluate(
        self, model: str, dataset: str, tasks: tuple[str, ...] | list[str] = ()
    ) -> dict[str, Any]:
        body = {"dataset": dataset, "tasks": list(tasks)}
        return dict(self._json("POST", f"/api/models/{model}/eval", json=body))

    def run(self, model: str, prompt: str, tokens: int) -> dict[str, Any]:
        body = {"prompt": prompt, "tokens": tokens}
        return dict(self._json("POST", f"/api/models/{model}/run", json=body))
