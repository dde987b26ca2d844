"""`rigwise prices import FILE.csv` and `rigwise prices show`: bring today's prices."""

from __future__ import annotations

import click

from rigwise.cli._common import EXIT_OK, console, print_json


@click.group("prices")
def prices() -> None:
    """Your own dated prices (new, used, rent) for GPUs and parts; builds use them first."""


@prices.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the imported rows as JSON.")
def import_(file: str, as_json: bool) -> int:
    """Add FILE's rows (columns kind,id,condition,usd,date,source) to your price store."""
    from rigwise.design.prices import import_prices, store_path

    rows = import_prices(file)
    if as_json:
        print_json({"imported": [r.to_dict() for r in rows], "store": str(store_path())})
    else:
        console().print(f"imported {len(rows)} price(s) into {store_path()}")
    return EXIT_OK


@prices.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the stored prices as JSON.")
def show(as_json: bool) -> int:
    """The prices you imported, with their dates and sources."""
    from rigwise.design.prices import store_path, user_prices

    rows = sorted(user_prices().values(), key=lambda r: (r.kind, r.id, r.condition))
    if as_json:
        print_json({"store": str(store_path()), "prices": [r.to_dict() for r in rows]})
        return EXIT_OK
    from rich.table import Table

    table = Table("kind", "id", "condition", "USD", "date", "source")
    for r in rows:
        usd = f"{r.usd:,.2f}/h" if r.condition == "rent" else f"{r.usd:,.0f}"
        table.add_row(r.kind, r.id, r.condition, usd, r.date, r.source)
    out = console()
    out.print(f"{len(rows)} price(s) in {store_path()}")
    out.print(table)
    return EXIT_OK


__all__ = ["prices"]
