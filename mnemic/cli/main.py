"""The `mnemic` command. Command groups live in their own modules and are attached here."""

from __future__ import annotations

from importlib import metadata

import click

from .checkpoints import checkpoints_group
from .kickoffs import kickoffs_group
from .lessons import lessons_group
from .models import models
from .operator import knowledge_group, memory_group, policy_group


def _version() -> str:
    try:
        return metadata.version("mnemic")
    except metadata.PackageNotFoundError:  # running from a source checkout
        return "unknown"


@click.group()
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
