"""Guards for what enters rigwise from outside: files, YAML/JSON text and numbers.

Every reader of a user file goes through ``read_user_text`` (a regular file, bounded in size,
UTF-8) or ``open_text_lines`` (streamed, bounded lines) and ``load_yaml``/``load_json`` (bounded
nesting, no YAML aliases, so no "billion laughs"); each failure is an ``InputError`` naming the
value and the fix, never a traceback or unbounded work. Numbers are checked where they are parsed
(``units``, the CLI's number type, the options models).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

if TYPE_CHECKING:
    from pathlib import Path

    import yaml

from rigwise.errors import InputError, shown_value, validation_message
from rigwise.option_fields import PLAIN_NUMBER_HINT, written_plainly

Model = TypeVar("Model")

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Largest text file (config, rig, cluster, queries line set) read from a user: 4 MiB."""
MAX_YAML_CHARS = 256 * 1024
"""Longest YAML text parsed (the bounded loader is pure Python: 256 KiB is ~2 s, 25 times the
largest file shipped)."""
MAX_NESTING = 64
"""Deepest nesting of lists/mappings accepted in a user YAML or JSON document."""


def read_user_text(path: str | Path, what: str, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (a leading byte-order mark dropped);
    InputError if missing, a directory or device, larger than ``max_bytes`` or not text."""
    from pathlib import Path  # only where a user's file is read

    file = Path(path)
    article = "an" if what[:1] in "aeiou" else "a"  # 'a experiment file' read badly
    hint = f"Give the path of {article} {what} (a text file under {max_bytes // 1024:,} KiB)."
    try:
        info = file.stat()
    except FileNotFoundError:
        raise InputError(
            f"{what.capitalize()} {shown_value(str(file), 240)} not found.", hint=hint
        ) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not a usable path"
        raise InputError(
            f"Cannot read {what} {shown_value(str(file), 240)}: {reason}.", hint=hint
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(
            f"{what.capitalize()} {shown_value(str(file), 240)} is a directory.", hint=hint
        )
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"{what.capitalize()} {shown_value(str(file), 240)} is not a regular file.", hint=hint
        )
    if info.st_size > max_bytes:
        raise InputError(
            f"{what.capitalize()} {shown_value(str(file), 240)} is {info.st_size:,} bytes, "
            f"over the {max_bytes:,}-byte limit.",
            hint=hint,
        )
    try:
        with file.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(
            f"Cannot read {what} {shown_value(str(file), 240)}: {exc.strerror}.", hint=hint
        ) from None
    if len(data) > max_bytes:
        raise InputError(
            f"{what.capitalize()} {shown_value(str(file), 240)} is too large.", hint=hint
        )
    # Excel's "CSV UTF-8" and Notepad write a byte-order mark: no content ('\ufeffkind' column)
    return decode_text(data, f"{what} {shown_value(str(file), 240)}").removeprefix("\ufeff")


Line = str | InputError | None
"""A line's text; None for a line over the limit; the InputError of a line that is not text."""


def open_text_lines(path: str, what: str, max_line_bytes: int) -> Iterator[tuple[int, Line]]:
    """Numbered lines of a text file or of stdin ('-'), streamed (a queries file may be long);
    a line over ``max_line_bytes`` comes back as None (skipped without holding it in memory),
    a later line that is not UTF-8 text as its InputError (the lines after it still count).
    InputError for a missing path, a directory, a device or a first line that is binary."""
    if path == "-":
        yield from _lines(sys.stdin.buffer, what, "stdin", max_line_bytes)
        return
    from pathlib import Path  # only where a user's file is read

    file = Path(path)
    try:
        info = file.stat()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not found"
        raise InputError(
            f"Cannot read {what} {shown_value(path, 240)}: {reason}.", hint="Check the path."
        ) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise InputError(
            f"{what.capitalize()} {shown_value(path, 240)} is {kind}.",
            hint="Give a JSONL file (one JSON object per line) or '-' for stdin.",
        )
    with file.open("rb") as handle:
        yield from _lines(handle, what, shown_value(path, 240), max_line_bytes)


def _lines(handle: BinaryIO, what: str, name: str, limit: int) -> Iterator[tuple[int, Line]]:
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # drop the rest of the long line
                raw = handle.readline(1 << 16)
            yield number, None
            continue
        try:
            yield number, decode_text(raw, f"{what} {name}, line {number},")
        except InputError as exc:
            if number == 1:  # a binary file, not a bad line: the whole file is refused
                raise
            yield number, exc


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 bytes -> text; InputError (with the byte offset) for binary content."""
    where = where[:1].upper() + where[1:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {exc.start}).", hint="Give a text file."
        ) from None
    if "\x00" in text:
        raise InputError(f"{where} contains NUL bytes (binary?).", hint="Give a text file.")
    return text


@functools.cache
def _bounded_loader() -> Any:
    """PyYAML's safe loader without aliases (billion laughs), with bounded nesting (the
    composer recurses once per level, so a 50,000-deep document would hit RecursionError) and
    without duplicate keys.
    Made on first use: a command that reads no YAML does not import PyYAML."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not accepted", event.start_mark
                )
            self._depth += 1
            try:
                if self._depth > MAX_NESTING:
                    raise yaml.composer.ComposerError(
                        None,
                        None,
                        f"nesting deeper than {MAX_NESTING} levels",
                        self.peek_event().start_mark,
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # PyYAML keeps the last of two equal keys: the first block was dropped unread
            seen: set[str] = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    if key_node.value in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                        )
                    seen.add(key_node.value)
            return super().construct_mapping(node, deep=deep)

    return BoundedLoader


def load_yaml(text: str, where: str) -> Any:
    """YAML text -> data, safely (no tags, no aliases, nesting <= MAX_NESTING, at most
    MAX_YAML_CHARS: PyYAML's pure-Python loader takes ~10 s per MB)."""
    if len(text) > MAX_YAML_CHARS:
        raise InputError(
            f"{where} is {len(text):,} characters, over the YAML limit of {MAX_YAML_CHARS:,}.",
            hint="Rig, cluster, job, experiment and constants files are a few KB: check the file.",
        )
    import yaml

    try:
        return yaml.load(text, Loader=_bounded_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise InputError(
            f"{where} is not valid YAML: {_first_line(exc)}",
            hint="Check the indentation and the line named; aliases are not accepted.",
        ) from None
    except RecursionError:
        raise InputError(f"{where} is nested too deeply.", hint="Flatten the file.") from None


def load_json(text: str, where: str, *, allow_constants: bool = False) -> Any:
    """JSON text -> data; InputError for syntax errors, nesting > MAX_NESTING and (unless
    ``allow_constants``, for files whose numbers are checked key by key) NaN/Infinity."""
    if _max_depth(text) > MAX_NESTING:
        raise InputError(
            f"{where} nests deeper than {MAX_NESTING} levels.", hint="Flatten the JSON."
        )
    try:
        if allow_constants:
            return json.loads(text)
        if isinstance(text, str) and not text.startswith("\ufeff"):  # what json.loads checks
            return _STRICT.decode(text)  # one decoder: json.loads(**kw) makes one per call
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            hint="Check the JSON syntax at that position.",
        ) from None
    except _TwiceGiven as exc:
        raise InputError(
            f"{where} gives the key {exc.args[0]!r} twice (JSON keeps only the last).",
            hint="Keep one value for each key.",
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{where} is not valid JSON: {exc}", hint="Use finite numbers.") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON accepts")


class _TwiceGiven(ValueError):
    """A JSON object that gives one key twice: json keeps the last value without a word."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _TwiceGiven(key)
            seen.add(key)
    return found


# --queries decodes every line: one decoder; a key given twice is refused (options, rig files)
_STRICT = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)


def _max_depth(text: str) -> int:
    """Upper bound of the bracket nesting of JSON text (strings included, which only
    over-counts inside strings; a cheap scan that needs no recursion)."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _first_line(exc: yaml.YAMLError) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(line.strip() for line in text[:4])[:300]


# A number as a user's file writes it: digits, one '.', an exponent. Python's float() also reads
# '1_000', 'inf', 'nan', '1e999' (inf) and other scripts' digits ('١٠٠٠').
def plain_number(value: object) -> float:
    """A number from a user's file (CSV text, or a YAML/JSON number): an int or float that is
    no bool, or text written plainly (surrounding spaces aside), and finite. A ValueError
    says why otherwise, for the caller to name where it is."""
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a number; give a number")
    plain = isinstance(value, str) and written_plainly(value)
    if not (plain or isinstance(value, int | float)):
        raise ValueError(f"{shown_value(value, 40)} is not a plain number; {PLAIN_NUMBER_HINT}")
    number = float(value)  # type: ignore[arg-type]  # an int, a float or plain text
    if not math.isfinite(number):
        raise ValueError(f"{shown_value(value, 40)} is not a finite number; {PLAIN_NUMBER_HINT}")
    return number


def validated(model: type[Model], data: object, where: str, hint: str) -> Model:
    """``model.model_validate(data)`` (a pydantic model or an options dataclass), or an
    ``InputError`` naming each bad key, its value and the rule (``errors.validation_message``)
    with ``hint``: the one way an edge (options, files) turns a pydantic ValidationError into
    bad input."""
    try:
        result: Model = model.model_validate(data)  # type: ignore[attr-defined]
    except Exception as exc:
        error = validation_error(exc, where, hint)
        if error is None:
            raise
        raise error from None
    return result


def validation_error(exc: BaseException, where: str, hint: str | None) -> InputError | None:
    """The ``InputError`` for a pydantic ``ValidationError`` (None for any other exception).
    pydantic is not imported to ask: a ValidationError can only come from a loaded pydantic
    (options dataclasses load it only for values they cannot check themselves)."""
    if "pydantic" not in sys.modules:
        return None
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    return InputError(validation_message(exc, where), hint=hint)


def merged_options(options: object | None, fields: Mapping[str, object]) -> dict[str, object]:
    """The options set explicitly: an options object's set fields (for an options dataclass:
    those that differ from their defaults), overridden by keywords."""
    if options is None:
        return dict(fields)
    if dataclasses.is_dataclass(options):
        from rigwise.option_fields import given_fields

        return {**given_fields(options), **fields}
    dump = options.model_dump(exclude_unset=True)  # type: ignore[attr-defined]
    return {**dump, **fields}


# Names people bring from the other command, or from engines' and benchmarks' flags, for an option
# this command calls otherwise (only used where the name is not an option and the target is).
OTHER_NAMES = {
    "seq": "context",
    "seq_len": "context",
    "ctx": "context",
    "max_model_len": "context",
    "input_len": "prompt",
    "output_len": "gen",
    "max_tokens": "gen",
    "max_num_seqs": "max_batch",
    "context": "seq",
    "context_length": "seq",
    "prompt": "seq",
    "batch_size": "global_batch",
    "quant": "precision",
    "hardware": "on",
    "quantization": "quant",
}


def check_option_names(given: Mapping[str, object], names: Iterable[str], command: str) -> None:
    """``InputError`` for the first key of ``given`` that is not an option of ``command``
    (``names``), suggesting the option it likely means: the name ``OTHER_NAMES`` maps it to,
    then the closest spellings."""
    known = frozenset(names)
    unknown = sorted(name for name in given if name not in known)
    if not unknown:
        return
    from rigwise.errors import closest

    name = str(unknown[0])
    other = OTHER_NAMES.get(name)
    likely = [other] if other in known else []
    likely += [n for n in closest(name, sorted(known)) if n not in likely][: 3 - len(likely)]
    raise InputError(
        f"Unknown option {shown_value(name)} for {command}.",
        hint=f"Did you mean: {', '.join(likely)}? See `rigwise {command} --help`.",
    )
