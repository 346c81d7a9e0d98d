"""How the job commands print: rich tables for people, JSON or YAML for scripts (``-o``).

A helper of the commands, not a command.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from aitj.core import api


def console() -> Console:
    """console: stdout; piped or captured output is not folded at 80 columns."""
    out = Console(highlight=False)
    return out if out.is_terminal else Console(width=250, highlight=False)


def emit(data: Any, output: str) -> None:
    """emit prints ``data`` (plain JSON values) as JSON or YAML."""
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False), nl=False)


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    title: str | None = None,
    *,
    headers: bool = True,
) -> Table:
    """table: a borderless table like kubectl's, cells as text (no markup); ``headers`` False:
    without its header line (``--no-headers``)."""
    t = Table(
        title=title, title_justify="left", box=None, pad_edge=False, header_style="bold", show_header=headers
    )
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in rows:
        t.add_row(*(Text("-" if v is None else str(v)) for v in row))  # Text: "[pod]" is no markup
    return t


def name_of(job: str) -> str:
    """name_of: ``-o name``'s line for a job, as kubectl prints it (``kubectl delete $(...)`` takes it)."""
    return f"{api.PLURAL[:-1]}.{api.GROUP}/{job}"


def lines(out: Console, text: Sequence[str]) -> None:
    """lines prints each line as written."""
    for line in text:
        out.print(line, markup=False, soft_wrap=True)
