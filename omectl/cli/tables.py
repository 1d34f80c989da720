"""kubectl-style tables drawn by rich: no borders, left-aligned columns three spaces apart, never wrapped or cut
(safe to pipe into grep/awk), no trailing spaces."""

from __future__ import annotations

import io
from collections.abc import Sequence

import typer
from rich.console import Console
from rich.table import Table

# Wide enough that rich never wraps a cell: the table sizes to its content, kubectl never cuts a column.
_UNBOUNDED_WIDTH = 100_000


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 3, 0, 0), header_style="", highlight=False)
    for header in headers:
        table.add_column(header, no_wrap=True, overflow="ignore")
    for row in rows:
        table.add_row(*row)
    buffer = io.StringIO()
    Console(file=buffer, width=_UNBOUNDED_WIDTH, color_system=None, markup=False, emoji=False).print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    typer.echo(render_table(headers, rows))
