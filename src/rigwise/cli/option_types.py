"""Click parameter types for paths the CLI writes to."""

from __future__ import annotations

import os
from typing import Any

import click


class WritableFolder(click.ParamType):
    """A folder rigwise writes into (--plot-dir): made if missing, and a file can be created in
    it, checked before the command's work (a plot into /proc was an internal error after it)."""

    name = "directory"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import tempfile

        try:
            os.makedirs(value, exist_ok=True)
            with tempfile.TemporaryFile(dir=value):
                pass
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.fail(f"cannot write into {str(value)[:240]!r} ({reason}); give a writable folder.")
        return value
