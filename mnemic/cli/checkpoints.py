"""`mnemic checkpoints`: see, inspect and prune CrewAI checkpoints (mnemic's or CrewAI's own).

A location is what `CheckpointConfig(location=...)` names: a JSON directory or a SQLite file.
Without one, the commands use every checkpoint location the namespace keeps for erasure (those
mnemic's providers wrote to), which needs the store (`--store`/`--server`/`--namespace`).
What they print comes from the checkpoints (users' inputs, task texts) and from paths: it is
shown through `terminal` (`cell`, `plain`): never read as rich markup, never obeyed by the terminal.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from mnemic.checkpoints import catalog
from mnemic.checkpoints.owners import CHECKPOINTS_LABEL

from .operator import opened, store_options
from .terminal import cell, id_cell, one_line, plain

_out = Console(highlight=False, emoji=False)
_err = Console(stderr=True, highlight=False, emoji=False)


def _locations(location: str | None, store: Path, server: str | None, namespace: str,
               embedder: str | None) -> list[str]:
    if location is not None:
        return [location]
    with opened(store, server, namespace, embedder) as memory:
        places = [p.path for p in memory.retained_places() if p.label == CHECKPOINTS_LABEL]
    if not places:
        raise click.ClickException(f"namespace {namespace!r} knows no checkpoint location: give one "
                                   "(the location CheckpointConfig(location=...) names)")
    return places


def _size(size: int) -> str:
    return f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"


@click.group("checkpoints")
def checkpoints_group() -> None:
    """CrewAI checkpoints: list, show and prune (JSON directories and SQLite files)."""


@checkpoints_group.command("list")
@store_options
@click.argument("location", required=False)
@click.option("--branch", default=None, help="Only this branch (e.g. main).")
@click.option("--user", "user_id", default=None, help="Only checkpoints of this user's runs.")
@click.option("--json", "as_json", is_flag=True)
def list_command(store: Path, server: str | None, namespace: str, embedder: str | None, location: str | None,
                 branch: str | None, user_id: str | None, as_json: bool) -> None:
    """Checkpoints at LOCATION (or at every location the namespace keeps), oldest first."""
    found = []
    for place in _locations(location, store, server, namespace, embedder):
        try:
            found.extend(catalog.list_checkpoints(place, branch=branch, user_id=user_id))
        except (FileNotFoundError, ValueError) as exc:
            if location is not None:
                raise click.ClickException(one_line(exc)) from exc
            _err.print(f"[yellow]skipped[/] {cell(f'{place}: {exc}')}")
    if as_json:
        click.echo(json.dumps([info.to_dict() for info in found], indent=2))
        return
    table = Table(title=cell(f"checkpoints ({len(found)})"))
    for column in ("id", "branch", "created", "user", "size", "parent", "restore from"):
        table.add_column(column, overflow="fold")
    for info in found:
        where = info.restore_from + (f"  ({info.note})" if info.note else "")
        table.add_row(cell(info.id), cell(info.branch), cell(info.created_at[:19].replace("T", " ")),
                      id_cell(info.user_id or "-"), *(cell(value) for value in (_size(info.size), info.parent_id or "-",
                                                                             where)))
    _out.print(table)


@checkpoints_group.command("show")
@store_options
@click.argument("reference")
@click.option("--location", default=None, help="Where to look for REFERENCE when it is a bare id.")
@click.option("--data", "with_data", is_flag=True, help="Print the whole checkpoint (JSON).")
@click.option("--json", "as_json", is_flag=True)
def show_command(store: Path, server: str | None, namespace: str, embedder: str | None, reference: str,
                 location: str | None, with_data: bool, as_json: bool) -> None:
    """What one checkpoint holds: REFERENCE is its file, its db#id, or its id (with --location)."""
    try:
        direct = Path(reference).expanduser().is_file() or "#" in reference
        places = [] if direct else _locations(location, store, server, namespace, embedder)
        info = catalog.find_checkpoint(reference, places)
        data = catalog.read_data(info)
    except (LookupError, OSError, ValueError) as exc:
        raise click.ClickException(one_line(exc)) from exc
    if with_data:
        click.echo(data)
        return
    summary = catalog.summarize(data)
    if as_json:
        click.echo(json.dumps({"checkpoint": info.to_dict(), "summary": summary}, indent=2))
        return
    _out.print(f"[bold]{cell(info.id)}[/]  "
               + cell(f"{info.format}  branch {info.branch or '-'}  {_size(info.size)}"))
    _out.print(plain(f"restore from: {info.restore_from}"), markup=False)
    if not summary["readable"]:
        _err.print(f"[red]unreadable:[/] {cell(str(summary['error']))}")
        raise SystemExit(1)
    _out.print(plain(f"user: {summary['user_id'] or info.user_id or '-'}   trigger: {summary['trigger'] or '-'}   "
                     f"events: {summary['events']}   crewai {summary['crewai_version']}"), markup=False)
    for entity in summary["entities"]:
        _out.print(plain(f"{entity['type']} {entity['name']!r}"), markup=False)
        if entity.get("inputs"):
            _out.print(plain(f"  inputs: {json.dumps(entity['inputs'], ensure_ascii=False)}"), markup=False)
        if "tasks" in entity:
            table = Table(show_header=True)
            table.add_column("#")
            table.add_column("task", overflow="fold")
            table.add_column("done")
            for number, task in enumerate(entity["tasks"], 1):
                table.add_row(str(number), cell(str(task["task"])), "yes" if task["done"] else "no")
            _out.print(table)
        if entity.get("completed_methods"):
            _out.print(plain(f"  completed methods: {', '.join(entity['completed_methods'])}"), markup=False)


@checkpoints_group.command("prune")
@store_options
@click.argument("location", required=False)
@click.option("--keep", type=click.IntRange(min=0), required=True, help="Checkpoints kept per branch (the newest).")
@click.option("--branch", default=None, help="Only this branch (default: every branch).")
@click.option("--yes", is_flag=True, help="Do it without asking.")
@click.option("--json", "as_json", is_flag=True)
def prune_command(store: Path, server: str | None, namespace: str, embedder: str | None, location: str | None,
                  keep: int, branch: str | None, yes: bool, as_json: bool) -> None:
    """Remove all but the newest --keep checkpoints per branch, and leftovers of crashed writes."""
    places = _locations(location, store, server, namespace, embedder)
    if not yes and not click.confirm(f"Keep the newest {keep} checkpoints per branch in {', '.join(places)}?"):
        raise click.Abort()
    results = {}
    for place in places:
        try:
            results[place] = catalog.prune_checkpoints(place, keep, branch=branch)
        except (FileNotFoundError, ValueError) as exc:
            raise click.ClickException(one_line(exc)) from exc
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    for place, counts in results.items():
        _out.print(plain(f"{place}: removed {counts['removed']} checkpoints, "
                         f"{counts['leftovers']} leftovers of crashed writes"), markup=False)
