"""Entry point of the `omectl` and `kubectl-ome` commands."""

import typer

app = typer.Typer(no_args_is_help=True, help="omectl: multi-cluster controller for LLM serving on GPU fleets.")


def main() -> None:
    app()
