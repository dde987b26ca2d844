"""What the web UI accepts from a client: catalog names and uploaded content, never the name of
a file on the server (no web framework here).

A query string or form may name a catalog model (``model=llama-3.1-8b``); ``cluster=`` and model
paths are refused, because the server would read a file the client picked (and tell whether it
exists). A custom model or cluster travels in a POST body (``Upload``); the server writes it to a
private temporary folder, reads it back through the same bounded readers the CLI uses, and
deletes it when the request ends.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rigwise.errors import InputError, ModelFormatError, RigwiseError, shown_value

SERVER_FILE_KEYS = ("cluster", "rig", "calibration")
"""Options that name files (or machine-local data) on the machine running the planner."""
MAX_UPLOAD_BYTES = 1024 * 1024
"""Largest request body the UI reads (an HF config.json is ~1-10 KB, a cluster file less)."""
_PLAIN = (InputError, ModelFormatError)
_UPLOAD_HINT = (
    "POST the options as JSON with the model's config.json under 'hf_config' and/or the "
    "cluster file's content under 'cluster' (see /docs)."
)


class Upload(BaseModel):
    """A plan request with its own content: ``options`` as on the CLI (long names with ``_``),
    plus an optional HF ``config.json`` (as an object) and cluster file (as an object)."""

    model_config = ConfigDict(extra="forbid")

    options: dict[str, Any] = Field(default_factory=dict, max_length=64)
    hf_config: dict[str, Any] | None = Field(None, max_length=4096)
    cluster: dict[str, Any] | None = Field(None, max_length=16)


def web_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` from a query string or form, refused when they would make the server read
    a file the client named: ``cluster=``, ``rig=``, or a ``model`` that is not in the catalog."""
    refused = [key for key in SERVER_FILE_KEYS if options.get(key) not in (None, "")]
    if refused:
        raise InputError(
            f"The web UI does not read files on the server ({refused[0]}= given).",
            hint=_UPLOAD_HINT,
        )
    model = options.get("model")
    if model is not None:
        catalog_model(str(model))
    return dict(options)


def catalog_model(name: str) -> str:
    """``name`` if the catalog knows it; else an error that never touches the file system."""
    from rigwise.errors import UnknownNameError
    from rigwise.models.catalog import load_catalog_model

    try:
        load_catalog_model(name)
    except UnknownNameError as exc:
        raise InputError(exc.message, hint=f"{exc.hint} Or: {_UPLOAD_HINT}") from None
    return name


def given_twice(path: str, items: Iterable[tuple[str, str]]) -> str | None:
    """The first /api/ query parameter given more than once, as it may be shown (no API
    parameter is a list: ?on=a&on=b planned the last one without a word)."""
    if not path.startswith("/api/"):
        return None
    seen: set[str] = set()
    for key, _ in items:
        if key in seen:
            return shown_value(key, 40)
        seen.add(key)
    return None


@contextmanager
def uploaded(upload: Upload) -> Iterator[dict[str, Any]]:
    """The upload's options, with ``model``/``cluster`` pointing at its own content written to a
    private temporary folder (removed on exit)."""
    options = web_options({k: v for k, v in upload.options.items() if k != "model"})
    with tempfile.TemporaryDirectory(prefix="rigwise-upload-") as folder:
        if upload.hf_config is not None:
            name = str(upload.hf_config.get("_name_or_path") or "uploaded-model")
            path = Path(folder, "model", "config.json")
            path.parent.mkdir()
            config = {**upload.hf_config, "_name_or_path": shown_value(name, 80).strip("'\"")}
            path.write_text(json.dumps(config), encoding="utf-8")
            options["model"] = str(path)
        elif "model" in upload.options:
            options["model"] = catalog_model(str(upload.options["model"]))
        if upload.cluster is not None:
            path = Path(folder, "cluster.json")
            path.write_text(json.dumps(upload.cluster), encoding="utf-8")
            options["cluster"] = str(path)
        try:
            yield options
        except RigwiseError as exc:  # name the upload, not the server's temporary folder
            message = exc.message.replace(folder, "<upload>")
            raise (
                type(exc)(message, hint=exc.hint)
                if type(exc) in _PLAIN
                else InputError(message, hint=exc.hint)
            ) from None
