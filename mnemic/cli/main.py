"""The `mnemic` command. Command groups live in their own modules and are attached here."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import click

from .checkpoints import checkpoints_group
from .kickoffs import kickoffs_group
from .lessons import lessons_group
from .models import models
from .operator import knowledge_group, memory_group, policy_group
from .terminal import one_line


def _version() -> str:
    try:
        return metadata.version("mnemic")
    except metadata.PackageNotFoundError:  # running from a source checkout
        return "unknown"


class _Commands(click.Group):
    """The top command. A failure no command foresaw ends as every other error does, one
    `Error: ...` line and exit code 1, rather than a traceback in the operator's terminal."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.Abort, click.exceptions.Exit):
            raise
        except Exception as exc:
            raise click.ClickException(one_line(f"{type(exc).__name__}: {exc}")) from exc


@click.group(cls=_Commands)
@click.version_option(version=_version(), prog_name="mnemic")
def cli() -> None:
    """mnemic: long-term memory for AI agents on Chroma."""


cli.add_command(models)
cli.add_command(memory_group)
cli.add_command(policy_group)
cli.add_command(knowledge_group)
cli.add_command(checkpoints_group)
cli.add_command(kickoffs_group)
cli.add_command(lessons_group)


if __name__ == "__main__":  # pragma: no cover
    cli()
