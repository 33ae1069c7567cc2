"""`mnemic kickoffs`: the crew kickoffs a namespace keeps for replay (see `core.runs`).

They live in the namespace's Chroma database, so these commands read the same store the crews
write to: `--store` for an embedded store, `--server` for a deployment's Chroma server. What they
print was written by users and models: it goes through `terminal.cell`, so "[redacted secret]" shows
as itself rather than being read as rich markup, and a control character never reaches the terminal.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..core.validation import check_user_id
from .operator import opened, store_options
from .terminal import cell, id_cell

_out = Console(highlight=False, emoji=False)


def _when(value: str) -> str:
    return value[:19].replace("T", " ")


@click.group("kickoffs")
def kickoffs_group() -> None:
    """Crew kickoffs kept for replay: list and show."""


@kickoffs_group.command("list")
@store_options
@click.option("--crew", default=None, help="Only this crew (its name or its key).")
@click.option("--user", "user_id", default=None, help="Only this user's kickoffs.")
@click.option("--all-users", is_flag=True, help="Every user's kickoffs (operator overview).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True)
def list_command(store: Path, server: str | None, namespace: str, embedder: str | None, crew: str | None,
                 user_id: str | None, all_users: bool, limit: int, as_json: bool) -> None:
    """Kickoffs, newest first."""
    # As for memories and lessons: a kickoff's inputs are what its user said, so a slip of the
    # keyboard (a --user left out) must not list everyone's.
    if (user_id is None) == (not all_users):
        raise click.UsageError("say whose kickoffs: --user USER, or --all-users")
    if user_id is not None:
        try:
            user_id = check_user_id(user_id)  # as `memory list` does: no reserved owner is listed by name
        except (TypeError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--user") from None
    with opened(store, server, namespace, embedder) as memory:
        runs = memory.runs.runs(user_id=user_id)
    if crew is not None:
        runs = [r for r in runs if crew in (r.group, r.group_name)]
    runs = runs[:limit]
    if as_json:
        click.echo(json.dumps([r.to_dict(with_steps=False) for r in runs], indent=2, ensure_ascii=False))
        return
    table = Table(title=cell(f"{namespace}: kickoffs ({len(runs)})"))
    for column in ("kickoff", "crew", "user", "started", "updated", "tasks", "replay of"):
        table.add_column(column, overflow="fold")
    for run in runs:
        table.add_row(cell(run.run_id), cell(run.group_name or run.group), id_cell(run.user_id or "-"),
                      _when(run.started_at.isoformat()), _when(run.updated_at.isoformat()), str(run.step_count),
                      cell(str(run.meta.get("replay_of") or "-")))
    _out.print(table)


@kickoffs_group.command("show")
@store_options
@click.argument("kickoff_id")
@click.option("--json", "as_json", is_flag=True)
def show_command(store: Path, server: str | None, namespace: str, embedder: str | None, kickoff_id: str,
                 as_json: bool) -> None:
    """One kickoff: whose, its inputs, and each task's output (with the task id replay takes)."""
    with opened(store, server, namespace, embedder) as memory:
        run = memory.runs.get(kickoff_id)
    if run is None:
        raise click.ClickException(f"no kickoff {kickoff_id} in namespace {namespace!r} (see `mnemic kickoffs list`)")
    if as_json:
        click.echo(json.dumps(run.to_dict(), indent=2, ensure_ascii=False))
        return
    _out.print(f"[bold]{cell(run.run_id)}[/]  crew {cell(run.group_name or '-')} (key {cell(run.group)})  "
               f"user {id_cell(run.user_id or '-')}")
    _out.print(f"started {_when(run.started_at.isoformat())}  updated {_when(run.updated_at.isoformat())}"
               + (f"  replay of {cell(str(run.meta['replay_of']))}" if run.meta.get("replay_of") else ""))
    _out.print(f"inputs: {cell(json.dumps(run.inputs, ensure_ascii=False))}")
    table = Table()
    for column in ("#", "task id", "task", "agent", "output"):
        table.add_column(column, overflow="fold")
    for step in run.steps:
        output = step.output.get("output") or {}
        text = str(output.get("raw") or "")
        task = " ".join(str(output.get("description") or step.output.get("task_name") or "").split())[:80]
        table.add_row(str(step.index + 1), cell(str(step.output.get("task_id") or "-")), cell(task),
                      cell(str(step.output.get("agent") or "-")),
                      cell(text if len(text) <= 400 else text[:399] + "…"))
    _out.print(table)
