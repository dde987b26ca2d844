"""One error hierarchy for rigwise.

Every error names the bad value and says how to fix it. The CLI maps ``InputError`` and its
subclasses (and environment problems) to exit code 2; "does not fit" is never an exception but
a result with a reason.
"""

from __future__ import annotations

from collections.abc import Iterable


class RigwiseError(Exception):
    """Base class of every error rigwise raises on purpose."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} {self.hint}"


class InputError(RigwiseError):
    """Bad input from a user: a value, an option or a file."""


class CatalogError(RigwiseError):
    """The packaged catalog (or a user catalog) is malformed."""


class UnknownNameError(InputError):
    """A name that is not in the catalog; carries the closest matches."""

    def __init__(self, kind: str, name: str, suggestions: Iterable[str] = ()) -> None:
        self.kind = kind
        self.name = name
        self.suggestions = tuple(suggestions)
        hint = (
            f"Did you mean: {', '.join(self.suggestions)}?"
            if self.suggestions
            else f"Run `rigwise {kind}s` to list the known names."
        )
        super().__init__(f"Unknown {kind} {shown_value(name, 80)}.", hint=hint)


class ModelFormatError(InputError):
    """A model file (config.json, GGUF) that cannot be read."""


class ProbeError(RigwiseError):
    """The machine could not be probed or benchmarked."""


class GridError(RigwiseError):
    """A grid coordinator, agent or job problem."""


def closest(name: str, candidates: Iterable[str], n: int = 3, cutoff: float = 0.0) -> list[str]:
    """The ``n`` closest candidates to ``name`` (difflib ratio), best first; ``cutoff`` drops
    poorer matches (and speeds up a search over many thousands of candidates)."""
    pool = list(dict.fromkeys(candidates))
    import difflib  # here: only a misspelt name needs it (every command's start-up does not)

    matches = difflib.get_close_matches(name, pool, n=n, cutoff=cutoff)
    return matches[:n]


class InternalError(RigwiseError):
    """A bug in rigwise (not the user's input): the CLI exits 70 with a one-line message."""


_SHOWN_VALUE_CHARS = 60


def shown_value(value: object, limit: int = _SHOWN_VALUE_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, so an error never echoes a whole file."""
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails still gets a message
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def validation_message(error: object, where: str = "input", *, most: int = 3) -> str:
    """A pydantic ``ValidationError`` as one line naming each bad key, its value and the rule:
    ``"<where>: key 'concurrency' = 0: Input should be greater than 0."``; the one helper every
    edge (options, files, HTTP) uses to turn validation errors into messages."""
    errors = error.errors() if hasattr(error, "errors") else []  # pydantic ValidationError
    parts = []
    for item in list(errors)[:most]:
        key = ".".join(str(part) for part in item.get("loc", ())) or "(top level)"
        value = item.get("input")
        got = "" if isinstance(value, dict | list) else f" = {shown_value(value)}"
        message = str(item.get("msg", "invalid")).rstrip(".")
        if isinstance(value, float) and value != value:  # NaN fails every bound, says none
            message = "not a number (NaN); give a finite number"
        parts.append(f"key {key!r}{got}: {message}")
    extra = len(errors) - most
    more = f" (and {extra} more)" if extra > 0 else ""
    body = "; ".join(parts) if parts else str(error)
    return f"{where}: {body}{more}."
