"""`python -m mnemic` is the `mnemic` command."""

from mnemic.cli.main import cli

if __name__ == "__main__":
    cli(prog_name="mnemic")
