"""How a command prints what it found, as kubectl does (`-o table|wide|name|json|yaml`).

A command that prints a table describes its columns once (`Column`: a header, how a record shows in it, and whether
only `-o wide` shows it) and hands its records to `print_records`: `table` and `wide` draw them through
`omectl.cli.tables` (rich, no borders, never wrapped), `name` prints one `<kind>/<name>` line per record
(`cluster/sim-1`, `servingruntime.ome.io/x`), `json` and `yaml` print the command's whole document. A command whose
rows are not objects refuses `-o name` before it reads anything (`refuse_name`).

`--watch` redraws a report every interval until Ctrl-C (`watch`). Importing this module costs typer and yaml only:
rich loads when a table is drawn.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

import typer
import yaml

__all__ = [
    "DOCUMENT_OUTPUT_OPTION",
    "OUTPUT_OPTION",
    "Column",
    "DocumentFormat",
    "OutputFormat",
    "emit",
    "print_records",
    "refuse_name",
    "render_records",
    "watch",
]

R = TypeVar("R")

# Exit status of a command interrupted by Ctrl-C, as a shell reports SIGINT.
EXIT_INTERRUPTED = 130


class OutputFormat(StrEnum):
    table = "table"
    wide = "wide"
    name = "name"
    json = "json"
    yaml = "yaml"

    @property
    def is_document(self) -> bool:
        return self in (OutputFormat.json, OutputFormat.yaml)


class DocumentFormat(StrEnum):
    """The formats of a command that prints no table of objects (`runtime plan`): its own view, json or yaml."""

    table = "table"
    json = "json"
    yaml = "yaml"


OUTPUT_OPTION: Any = typer.Option(OutputFormat.table, "-o", "--output", help="table, wide, name, json or yaml.")
DOCUMENT_OUTPUT_OPTION: Any = typer.Option(DocumentFormat.table, "-o", "--output", help="table, json or yaml.")


@dataclass(frozen=True)
class Column(Generic[R]):
    """One column of a table: its header, the cell of a record, and whether only `-o wide` shows it."""

    header: str
    value: Callable[[R], str]
    wide: bool = False


def shown(columns: Sequence[Column[R]], output: OutputFormat) -> list[Column[R]]:
    return [c for c in columns if output is OutputFormat.wide or not c.wide]


def render_records(records: Iterable[R], columns: Sequence[Column[R]], output: OutputFormat) -> str:
    """The table of `records` (`-o table`, or with the wide columns `-o wide`)."""
    from omectl.cli.tables import render_table

    picked = shown(columns, output)
    return render_table([c.header for c in picked], [[c.value(r) for c in picked] for r in records])


def render_names(records: Iterable[R], kind: str, name: Callable[[R], str]) -> str:
    """One `<kind>/<name>` line per record, each once, in order (`-o name`)."""
    lines = dict.fromkeys(f"{kind}/{name(r)}" for r in records)
    return "\n".join(lines)


def render_document(document: Any, output: OutputFormat | DocumentFormat) -> str:
    if output == "json":
        return json.dumps(document, indent=2)
    if output == "yaml":
        return yaml.safe_dump(_plain(document), sort_keys=False).rstrip()
    raise ValueError(f"-o {output} is not a document format")


def emit(document: Any, output: OutputFormat | DocumentFormat) -> None:
    """Print a command's whole document as `-o json` or `-o yaml`."""
    typer.echo(render_document(document, output))


def _plain(document: Any) -> Any:
    # yaml.safe_dump refuses Mapping types other than dict
    if isinstance(document, Mapping):
        return {key: _plain(value) for key, value in document.items()}
    if isinstance(document, list | tuple):
        return [_plain(value) for value in document]
    return document


def render(
    records: Sequence[R],
    columns: Sequence[Column[R]],
    output: OutputFormat,
    *,
    kind: str | None = None,
    name: Callable[[R], str] | None = None,
    document: Any = None,
) -> str:
    """`records` in the format `output` asks for: see `print_records`."""
    if output.is_document:
        return render_document(list(records) if document is None else document, output)
    if output is OutputFormat.name:
        if kind is None or name is None:
            raise ValueError("these records have no names")
        return render_names(records, kind, name)
    return render_records(records, columns, output)


def print_records(
    records: Sequence[R],
    columns: Sequence[Column[R]],
    output: OutputFormat,
    *,
    kind: str | None = None,
    name: Callable[[R], str] | None = None,
    document: Any = None,
) -> None:
    """Print `records` as `output` asks: a table of `columns` (the wide ones too with `-o wide`), `<kind>/<name>`
    lines, or `document` (the records themselves when None) as json or yaml."""
    text = render(records, columns, output, kind=kind, name=name, document=document)
    if text or output is not OutputFormat.name:
        typer.echo(text)


def refuse_name(output: OutputFormat, rows: str) -> None:
    """A usage error (exit 2) for `-o name` where a row is not an object: `rows` says what a row is."""
    if output is OutputFormat.name:
        raise typer.BadParameter(f"name: each row is {rows}, not an object", param_hint="'-o' / '--output'")


def watch(frame: Callable[[], str], interval: float, *, clear: bool) -> None:
    """Print `frame()` every `interval` seconds until Ctrl-C (exit 130): on a terminal each frame replaces the last
    (`clear`), else frames follow one another, a blank line apart, so a pipe reads every one."""
    clear = clear and sys.stdout.isatty()
    try:
        while True:
            text = frame()
            typer.echo(("\x1b[H\x1b[2J" + text) if clear else text + "\n", nl=not clear)
            time.sleep(interval)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
