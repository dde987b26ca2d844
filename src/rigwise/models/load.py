"""``load_model``: a catalog name, a local ``config.json`` (or its folder), or a GGUF file."""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING

from rigwise.errors import InputError, ModelFormatError, UnknownNameError, shown_value
from rigwise.models.arch import read_arch
from rigwise.models.build import spec_from_arch
from rigwise.models.catalog import load_catalog_model
from rigwise.models.checks import check_config, check_spec
from rigwise.models.spec import ModelSpec
from rigwise.validate_input import load_json, read_user_text

if TYPE_CHECKING:
    from pathlib import Path

_GGUF_MAGIC = b"GGUF"
MAX_CONFIG_BYTES = 4 * 1024 * 1024  # published config.json files are under 100 KB


# Planners call load_model thousands of times with the same few names: cache catalog hits.
_catalog_cached = functools.lru_cache(maxsize=4096)(load_catalog_model)


def load_model(name_or_path: str | Path) -> ModelSpec:
    """The ModelSpec for a catalog name/alias or a path to config.json, its folder or a .gguf.

    A string ending in .json/.gguf or starting with '.', '~' or '/' is a path; a hub-style
    'org/name' is a path only if it exists; otherwise it is a catalog name, and a local
    folder of that name is tried only when the catalog does not know it.
    """
    # pathlib is imported where a path is given, not for a catalog name (a command's start-up);
    # an argument that is a Path means pathlib is loaded already.
    pathlib = sys.modules.get("pathlib")
    if pathlib is not None and isinstance(name_or_path, pathlib.Path):
        return load_model_file(name_or_path.expanduser())
    text = str(name_or_path)
    if not text.strip():  # '' is the path '.': it was read as the folder rigwise ran in
        raise InputError(
            f"Empty model name {text!r}.",
            hint="Give a catalog name (see `rigwise models`), a config.json or a .gguf file.",
        )
    if text.lower().endswith((".json", ".gguf")) or text.startswith((".", "~", "/")):
        return load_model_file(_path(text).expanduser())
    if ("/" in text or os.sep in text) and _exists(text):
        return load_model_file(_path(text))
    try:
        return _catalog_cached(text)
    except UnknownNameError:
        if _exists(text):
            return load_model_file(_path(text))
        raise


def _path(text: str) -> Path:
    from pathlib import Path

    return Path(text)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _exists(text: str) -> bool:
    try:
        return _path(text).exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def load_model_file(path: Path) -> ModelSpec:
    if _is_dir(path):
        path = path / "config.json"
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        is_file = False
    if not is_file:
        raise ModelFormatError(
            f"Model file {shown_value(str(path))} does not exist (or is not a regular file).",
            hint="Give a catalog name (see `rigwise models`), a config.json or a .gguf file.",
        )
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic == _GGUF_MAGIC or path.suffix.lower() == ".gguf":
        from rigwise.models.gguf import load_gguf

        return load_gguf(path)
    return load_hf_config(path)


def load_hf_config(path: Path) -> ModelSpec:
    """A ModelSpec from an HF config.json: bounded read, every size key checked (types, bounds,
    finite), then the family reader; the spec is checked again (positive, bounded counts)."""
    origin = shown_value(str(path), 240)
    hint = "Give an HF config.json or a .gguf file."
    try:
        text = read_user_text(path, "model config", max_bytes=MAX_CONFIG_BYTES)
    except InputError as exc:
        raise ModelFormatError(exc.message, hint=hint) from None
    try:
        config = load_json(text, "the text", allow_constants=True)
    except InputError as exc:
        raise ModelFormatError(f"{origin}: not a JSON config ({exc.message})", hint=hint) from None
    if not isinstance(config, dict):
        raise ModelFormatError(f"{origin}: the JSON top level is not an object.", hint=hint)
    check_config(config, origin)
    # an HF download is FOLDER/config.json; any other file is named by itself ('mixtral.json'
    # in ~/Downloads was the model 'Downloads')
    folder_name = path.parent.name if path.name == "config.json" else ""
    name = config.get("_name_or_path") or folder_name or path.stem
    try:
        spec = spec_from_arch(read_arch(config, origin), name=str(name)[:200], source=str(path))
    except ModelFormatError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, ArithmeticError) as exc:
        # a value of the wrong shape in a key the bounds table does not know
        raise ModelFormatError(
            f"{origin}: a config value has the wrong type or shape "
            f"({type(exc).__name__}: {shown_value(str(exc), 120)}).",
            hint="Use the model's config.json as published on the Hugging Face hub.",
        ) from None
    return check_spec(spec, origin)
