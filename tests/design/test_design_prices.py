"""Prices you can renew: an import changes a build's price and its date."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rigwise.cli import cli
from rigwise.design.api import design_builds
from rigwise.design.prices import import_prices, user_prices
from rigwise.errors import InputError, UnknownNameError

HEADER = "kind,id,condition,usd,date,source\n"


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RIGWISE_DATA_DIR", str(tmp_path))
    return tmp_path


def _gpu_line(model: str) -> tuple[float, str]:
    design = design_builds(model=model, task="infer", budget=3000, today="2026-11-23", top=200)
    option = next(o for o in design.options if o.on == "rtx-3090" and o.kind == "single-gpu")
    line = next(p for p in option.parts if p.kind == "gpu")
    return line.unit_price_usd or 0.0, line.price_date


def test_an_import_changes_the_build_price_and_date(store: Path) -> None:
    before = _gpu_line("llama-3.1-8b")
    prices = store / "today.csv"
    prices.write_text(HEADER + "gpu,RTX 3090,used,777,2026-11-20,sold listings (test)\n")
    rows = import_prices(prices)
    assert [r.id for r in rows] == ["rtx-3090"]  # the name as typed resolves to the catalog id
    after = _gpu_line("llama-3.1-8b")
    assert after == (777.0, "2026-11-20") and before != after


def test_a_later_import_replaces_the_same_row_and_keeps_others(store: Path) -> None:
    first = store / "a.csv"
    first.write_text(
        HEADER + "gpu,rtx-3090,used,700,2026-10-01,a\ngpu,rtx-4090,rent,0.5,2026-10-01,a\n"
    )
    import_prices(first)
    second = store / "b.csv"
    second.write_text(HEADER + "gpu,rtx-3090,used,650,2026-11-01,b\n")
    import_prices(second)
    stored = user_prices()
    assert stored[("gpu", "rtx-3090", "used")].usd == 650
    assert stored[("gpu", "rtx-4090", "rent")].usd == 0.5


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ("gpu,rtx-3090,used,-1,2026-11-01,x", InputError),
        ("gpu,rtx-3090,mint,500,2026-11-01,x", InputError),
        ("gpu,rtx-3090,used,500,yesterday,x", InputError),
        ("gpu,rtx 4900,used,500,2026-11-01,x", UnknownNameError),
        ("part,psu-1000w,rent,1,2026-11-01,x", InputError),
        ("gpu,rtx-3090,used,nan,2026-11-01,x", InputError),
        ("gpu,rtx-3090,used,500,2099-11-01,x", InputError),
        ("gpu,rtx-3090,used,500,2026-11-01,eBay,sold", InputError),
    ],
)
def test_bad_rows_are_input_errors_naming_the_line(store: Path, row: str, error: type) -> None:
    bad = store / "bad.csv"
    bad.write_text(HEADER + row + "\n")
    with pytest.raises(error):
        import_prices(bad)
    assert user_prices() == {}


def test_the_cli_imports_and_shows(store: Path) -> None:
    prices = store / "p.csv"
    prices.write_text(HEADER + "gpu,rtx-3090,rent,0.29,2026-11-20,listing\n")
    result = CliRunner().invoke(cli, ["prices", "import", str(prices)])
    assert result.exit_code == 0 and "imported 1 price(s)" in result.output
    shown = CliRunner().invoke(cli, ["prices", "show"])
    assert "rtx-3090" in shown.output and "0.29/h" in shown.output and "2026-11-20" in shown.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (HEADER.encode() + b"gpu,rtx-3090,used,700,2026-10-01,\xff\xfe\n", "is not UTF-8 text"),
        (HEADER.encode() + b"gpu,rtx-3090,used,700,2026-10-01,a\x00\n", "contains NUL bytes"),
        (
            HEADER.encode() + b"gpu,rtx-3090,used,nan,2026-10-01,a\n",
            "'nan': Value error, 'nan' is not a plain number",
        ),
        # before: exit 0, a price of 1000 (Python's float() reads '1_000')
        (
            HEADER.encode() + b"gpu,rtx-3090,used,1_000,2026-10-01,a\n",
            "key 'usd' = '1_000': Value error, '1_000' is not a plain number; write digits",
        ),
        (HEADER.encode() + b"gpu,rtx-3090,used,1e999,2026-10-01,a\n", "is not a finite number"),
        (HEADER.encode() + b"gpu,rtx-3090,used,-inf,2026-10-01,a\n", "is not a plain number"),
        (HEADER.encode() + b"gpu,rtx-3090,used,700,9999-01-01,a\n", "9999-01-01 is in the future"),
        (
            HEADER.encode() + b"gpu,rtx-3090,used,700,2026-10-01,eBay, sold\n",
            "7 fields, the header",
        ),
    ],
)
def test_the_cli_names_a_bad_file_and_exits_2(store: Path, content: bytes, message: str) -> None:
    """Before: a non-UTF-8 file was an internal error (exit 70), NUL bytes and a row with a
    stray comma were imported (the fields past the header dropped), a NaN price said 'less than
    10000000' and a price dated 9999 was stored."""
    bad = store / "bad.csv"
    bad.write_bytes(content)
    result = CliRunner().invoke(cli, ["prices", "import", str(bad)])
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert "Traceback" not in result.output and user_prices() == {}


def test_an_unknown_column_is_bad_input_naming_it_and_the_header(store: Path) -> None:
    """Before: exit 0, the 'notes' and 'vat' columns read by no one (a price with VAT in a
    column of its own was stored without it)."""
    bad = store / "extra.csv"
    bad.write_text(HEADER.strip() + ",notes,vat\ngpu,rtx-3090,used,700,2026-10-01,a,b,c\n")
    result = CliRunner().invoke(cli, ["prices", "import", str(bad), "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {
        "error": f"{bad}: unknown column(s) 'notes', 'vat'.",
        "hint": "The header must be: kind,id,condition,usd,date,source",
    }
    missing = store / "missing.csv"
    missing.write_text("kind,id,condition,usd,date,notes\ngpu,rtx-3090,used,700,2026-10-01,a\n")
    says = r"missing column\(s\) source; unknown column\(s\) 'notes'"
    with pytest.raises(InputError, match=says):
        import_prices(missing)
    assert user_prices() == {}


def test_a_file_saved_with_a_byte_order_mark_imports(store: Path) -> None:
    """Excel's "CSV UTF-8" starts the file with a BOM: the header's first column was
    '\\ufeffkind' ("missing column(s) kind; unknown column(s) '\\ufeffkind'", exit 2)."""
    saved = store / "excel.csv"
    line = "gpu,rtx-3090,used,700,2026-10-01,sold listings (test)\r\n"
    saved.write_bytes(b"\xef\xbb\xbf" + (HEADER.strip() + "\r\n" + line).encode("utf-8"))
    result = CliRunner().invoke(cli, ["prices", "import", str(saved), "--json"])
    assert result.exit_code == 0, result.output
    assert [r.usd for r in user_prices().values()] == [700.0]


def test_a_trailing_empty_column_imports_unless_it_holds_a_value(store: Path) -> None:
    """A spreadsheet's trailing comma gives a header column without a name: refused as
    "unknown column(s) ''" since the unknown-column check; nothing is lost while it is empty."""
    saved = store / "trailing.csv"
    saved.write_text(HEADER.strip() + ",\ngpu,rtx-3090,used,700,2026-10-01,sold listings,\n")
    result = CliRunner().invoke(cli, ["prices", "import", str(saved)])
    assert result.exit_code == 0, result.output
    assert [r.usd for r in user_prices().values()] == [700.0]
    lost = store / "lost.csv"
    lost.write_text(HEADER.strip() + ",\ngpu,rtx-4090,used,1500,2026-10-01,listings,VAT 20%\n")
    result = CliRunner().invoke(cli, ["prices", "import", str(lost)])
    assert result.exit_code == 2 and "'VAT 20%' is under a column without a name" in result.stderr


def test_a_part_resolves_to_its_catalog_id_or_is_refused(store: Path) -> None:
    # before: 'part,psu-corsair-hx1500i,...' (docs/build.md's own example) imported, and no
    # build ever looked it up: the id is corsair-hx1500i-2023; a typo was kept the same way
    good = store / "good.csv"
    good.write_text(HEADER + "part,HX1500i,new,380,2026-11-20,shop quote\n")
    assert [r.id for r in import_prices(good)] == ["corsair-hx1500i-2023"]
    bad = store / "bad.csv"
    bad.write_text(HEADER + "part,psu-corsair-hx1500i,new,380,2026-11-20,shop quote\n")
    with pytest.raises(UnknownNameError, match="Did you mean: corsair-hx1500i-2023"):
        import_prices(bad)


def test_a_bad_row_after_blank_lines_is_named_by_its_line(store: Path) -> None:
    # before: 'line 2' for the fourth line (the blank lines were not counted)
    bad = store / "bad.csv"
    bad.write_text(HEADER + "\n\ngpu,rtx-3090,used,0,2026-11-01,x\n")
    with pytest.raises(InputError, match=r"bad\.csv, line 4: key 'usd'"):
        import_prices(bad)


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ("part,psu-corsair-hx1500i,new,380,2026-11-20,q", "Unknown part 'psu-corsair-hx1500i'"),
        ("gpu,rtx 4900,used,500,2026-11-01,x", "Unknown GPU"),
        (
            "part,corsair-hx1500i-2023,rent,1,2026-11-01,x",
            "Part 'corsair-hx1500i-2023': 'rent' applies",
        ),
    ],
)
def test_a_name_no_catalog_knows_is_named_by_its_line(store: Path, row: str, said: str) -> None:
    # before: "Unknown part 'psu-corsair-hx1500i'. Did you mean: ..." with no line, in a file
    # of up to MAX_ROWS rows
    bad = store / "bad.csv"
    bad.write_text(HEADER + "gpu,rtx-3090,used,780,2026-11-20,x\n\n" + row + "\n")
    with pytest.raises(InputError, match=rf"bad\.csv, line 4: {said}"):
        import_prices(bad)
    assert user_prices() == {}
