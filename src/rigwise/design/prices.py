"""Prices you can renew: ``rigwise prices import FILE.csv`` and ``rigwise prices show``.

The user's prices live in ``prices.csv`` in rigwise's user data dir (the one ``rigwise bench``
keeps its calibrations in: ``$RIGWISE_DATA_DIR``, else platformdirs' user data dir). A row names
a catalog GPU (``kind`` gpu) or a parts-catalog part (``kind`` part, id or name) and a condition:
``new`` or ``used`` (USD per unit) or ``rent`` (USD per hour, GPUs only). An import adds rows and
replaces older rows of the same kind, id and condition; the builds then price with them, dated
and sourced as given. Columns: docs/build.md and catalog/SCHEMA.md ("User price files").
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rigwise.errors import InputError, shown_value, validation_message
from rigwise.hardware import Accelerator
from rigwise.serialize import JsonObject
from rigwise.validate_input import plain_number, read_user_text

DATA_DIR_ENV = "RIGWISE_DATA_DIR"  # shared with rigwise.bench.calibration
STORE = "prices.csv"
COLUMNS = ("kind", "id", "condition", "usd", "date", "source")
MAX_FILE_BYTES = 10_000_000
MAX_ROWS = 100_000


class PriceRow(BaseModel):
    """One user price; validated where the file enters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["gpu", "part"]
    id: str = Field(min_length=1, max_length=200)
    condition: Literal["new", "used", "rent"]
    usd: float = Field(gt=0, lt=10_000_000, allow_inf_nan=False)
    date: dt.date
    source: str = Field(min_length=1, max_length=500)

    @field_validator("usd", mode="before")
    @classmethod
    def _plain(cls, value: Any) -> float:
        return plain_number(value)  # pydantic reads '1_000' as 1000

    @field_validator("id", "source", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("date")
    @classmethod
    def _seen(cls, value: dt.date) -> dt.date:
        # a price is what was seen on a day: one dated later than tomorrow (any time zone) is a
        # typo, and would stay "fresh" for every --max-price-age
        if value > dt.date.today() + dt.timedelta(days=1):
            raise ValueError(f"{value.isoformat()} is in the future; give the day it was seen")
        return value


@dataclass(frozen=True)
class UserPrice(JsonObject):
    kind: str
    id: str
    condition: str
    usd: float
    date: str
    source: str


def data_dir() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    from platformdirs import user_data_dir

    return Path(user_data_dir("rigwise", appauthor=False))


def store_path() -> Path:
    return data_dir() / STORE


def _read_rows(text: str, where: str, lines: list[int] | None = None) -> list[UserPrice]:
    """The file's rows; ``lines``, when given, gets each row's line in the file."""
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in COLUMNS if c not in header]
    unknown = [c for c in header if c not in COLUMNS and c.strip()]  # '': a spreadsheet's
    blank = [c for c in header if not c.strip()]  # trailing comma; read below, kept if empty
    if missing or unknown:  # an unknown column was read by no one: its values were lost
        said = [f"missing column(s) {', '.join(missing)}"] if missing else []
        said += [f"unknown column(s) {', '.join(map(repr, unknown))}"] if unknown else []
        raise InputError(
            f"{where}: {'; '.join(said)}.",
            hint=f"The header must be: {','.join(COLUMNS)}",
        )
    rows = []
    for count, raw in enumerate(reader, start=1):
        number = reader.line_num  # the file's line: blank lines are skipped, not counted
        if count > MAX_ROWS:
            raise InputError(f"{where}: more than {MAX_ROWS} rows.", hint="Split the file.")
        if raw.get(None):  # csv puts the fields past the header's under None: they were lost
            raise InputError(
                f"{where}, line {number}: {len(COLUMNS) + len(raw[None])} fields, the header "
                f"has {len(COLUMNS)} (extra: {shown_value(','.join(raw[None]), 80)}).",
                hint='Quote a field that holds a comma: "eBay, sold listings".',
            )
        stray = [raw[c] for c in blank if (raw.get(c) or "").strip()]
        if stray:  # a value under a column without a name would be lost
            raise InputError(
                f"{where}, line {number}: {shown_value(stray[0], 80)} is under a column "
                "without a name.",
                hint=f"The header must be: {','.join(COLUMNS)}",
            )
        values = {k: (raw.get(k) or "").strip() for k in COLUMNS}
        try:
            row = PriceRow.model_validate(values)
        except ValidationError as exc:
            raise InputError(
                validation_message(exc, f"{where}, line {number}"),
                hint="kind gpu|part, condition new|used|rent, usd > 0, date YYYY-MM-DD.",
            ) from None
        rows.append(
            UserPrice(row.kind, row.id, row.condition, row.usd, row.date.isoformat(), row.source)
        )
        if lines is not None:
            lines.append(number)
    return rows


def _check_ids(rows: list[UserPrice], where: str, lines: list[int]) -> list[UserPrice]:
    """GPU ids are resolved through the catalog, part ids through the parts files (names as
    people type them work too): a price under a name no build looks up was never used. An
    error names the row's line, as a bad value does."""
    checked = []
    for row, line in zip(rows, lines, strict=True):
        try:
            checked.append(_checked(row))
        except InputError as exc:  # its kind kept (UnknownNameError): the line put in front
            exc.message = f"{where}, line {line}: {exc.message}"
            raise
    return checked


def _checked(row: UserPrice) -> UserPrice:
    from rigwise.design.parts import part_id
    from rigwise.hardware import get_accelerator

    if row.kind == "gpu":
        return replace(row, id=get_accelerator(row.id).id)
    if row.condition == "rent":
        raise InputError(f"Part {row.id!r}: 'rent' applies to GPUs only.", hint="Use new/used.")
    return replace(row, id=part_id(row.id))


def user_prices() -> dict[tuple[str, str, str], UserPrice]:
    """The stored prices by (kind, id, condition); empty when none were imported. Read once
    per version of the file (a design asks for thousands of prices)."""
    path = store_path()
    if not path.is_file():
        return {}
    return _load(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict[tuple[str, str, str], UserPrice]:
    rows = _read_rows(read_user_text(path, "price store", max_bytes=MAX_FILE_BYTES), path)
    return {(r.kind, r.id, r.condition): r for r in rows}


def import_prices(path: str | Path) -> tuple[UserPrice, ...]:
    """Add the rows of ``path`` to the store (replacing same kind, id and condition)."""
    source = Path(path)
    text = read_user_text(source, "price file", max_bytes=MAX_FILE_BYTES)
    lines: list[int] = []
    rows = _check_ids(_read_rows(text, str(source), lines), str(source), lines)
    merged = user_prices()
    merged.update({(r.kind, r.id, r.condition): r for r in rows})
    target = store_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in sorted(merged.values(), key=lambda r: (r.kind, r.id, r.condition)):
        writer.writerow(row.to_dict())
    target.write_text(out.getvalue(), encoding="utf-8")
    return tuple(rows)


def with_user_prices(accelerator: Accelerator, prices: dict[Any, UserPrice]) -> Accelerator:
    """The accelerator with the user's used (street) price and rental rate, where given."""
    used = prices.get(("gpu", accelerator.id, "used"))
    rent = prices.get(("gpu", accelerator.id, "rent"))
    if used is not None:
        accelerator = replace(
            accelerator, street_price_usd=used.usd, street_price_date=used.date, source=used.source
        )
    if rent is not None:
        accelerator = replace(accelerator, rental_usd_per_hour=rent.usd)
    return accelerator


def user_price(kind: str, item: str, condition: str) -> UserPrice | None:
    return user_prices().get((kind, item, condition))


def part_price(part_id: str, price: Any) -> Any:
    """A parts-catalog ``parts.Price`` with the user's new/used prices for ``part_id`` applied."""
    new = user_price("part", part_id, "new")
    used = user_price("part", part_id, "used")
    if new is None and used is None:
        return price
    latest = max((r for r in (new, used) if r is not None), key=lambda r: r.date)
    return replace(
        price,
        new_usd=new.usd if new else price.new_usd,
        used_usd=used.usd if used else price.used_usd,
        date=latest.date,
        source=latest.source,
    )
