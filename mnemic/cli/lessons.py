"""`mnemic lessons`: see and withdraw what human reviewers taught (LangGraph and CrewAI alike).

Lessons are per user like every memory, so listing needs `--user` or `--all-users` said out loud.
`--where` narrows to a graph or flow ("writer") or one step of it ("writer/draft").
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from mnemic.core.lessons import Lesson, LessonPlace, LessonStore

from .operator import opened, store_options
from .terminal import cell, id_cell, plain


def _provenance(lesson: Lesson) -> str:
    """"bob in t1 (langgraph)": who taught it, in which thread, through which framework."""
    text = lesson.reviewer or "?"
    if lesson.thread:
        text += f" in {lesson.thread}"
    return f"{text} ({lesson.framework})" if lesson.framework else text


def _table(lessons: list[Lesson], title: str, *, with_reason: bool) -> Table:
    table = Table(title=cell(title))
    columns = ["id", "created", "user", "where", "state", "taught by", "lesson"]
    if with_reason:
        columns.append("why withdrawn")
    for column in columns:
        table.add_column(column, overflow="fold")
    for lesson in lessons:
        row = [lesson.id, lesson.created_at.strftime("%Y-%m-%d %H:%M"), lesson.user_id, lesson.where,
               lesson.state, _provenance(lesson), lesson.text]
        if with_reason:
            row.append(lesson.invalid_reason or "")
        cells = [cell(text) for text in row]  # written by reviewers and models: shown, never obeyed
        cells[2] = id_cell(lesson.user_id)
        table.add_row(*cells)
    return table


@click.group("lessons")
def lessons_group() -> None:
    """Lessons learned from human feedback (LangGraph human_feedback, CrewAI @human_feedback(learn=True))."""


@lessons_group.command("list")
@store_options
@click.option("--user", "user_id", default=None, help="Whose lessons to list.")
@click.option("--all-users", is_flag=True, help="List every user's lessons (operator overview).")
@click.option("--where", "where", default=None, help="A graph or flow ('writer'), or one step of it ('writer/draft').")
@click.option("--include-invalid", is_flag=True, help="Show withdrawn lessons too, with the reason.")
@click.option("--limit", default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def list_command(store: Path, server: str | None, namespace: str, embedder: str | None, user_id: str | None,
                 all_users: bool, where: str | None, include_invalid: bool, limit: int, as_json: bool) -> None:
    """List lessons, newest first."""
    if (user_id is None) == (not all_users):
        raise click.UsageError("say whose lessons: --user USER, or --all-users")
    try:
        place = LessonPlace.parse(where) if where is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--where") from exc
    with opened(store, server, namespace, embedder) as memory:
        lessons = LessonStore(memory).list(user_id=user_id, place=place, include_invalid=include_invalid,
                                           limit=limit)
        if as_json:
            click.echo(json.dumps([lesson.summary() for lesson in lessons], indent=2))
            return
        title = f"{namespace}: lessons of {user_id or 'all users'}" + (f" at {place}" if place else "")
        # Made per call: it reads the terminal's width (COLUMNS) now, not when the CLI was imported.
        Console(highlight=False, emoji=False).print(
            _table(lessons, f"{title} ({len(lessons)})", with_reason=include_invalid))


@lessons_group.command("invalidate")
@store_options
@click.argument("lesson_id")
@click.option("--reason", required=True, help="Why the lesson no longer holds (kept in its history).")
def invalidate_command(store: Path, server: str | None, namespace: str, embedder: str | None, lesson_id: str,
                       reason: str) -> None:
    """Withdraw a lesson: it is kept with its history and never applied again."""
    with opened(store, server, namespace, embedder) as memory:
        lessons = LessonStore(memory)
        before = lessons.get(lesson_id)
        if before.state == "invalid":
            click.echo(plain(f"{before.id} was already withdrawn ({before.where}): {before.invalid_reason}"))
            return
        lesson = lessons.invalidate(lesson_id, reason=reason, actor="operator")
        click.echo(plain(f"{lesson.id} withdrawn ({lesson.where}): {lesson.invalid_reason}"))
