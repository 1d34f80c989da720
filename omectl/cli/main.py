"""Entry point of the `omectl` and `kubectl-ome` commands."""

from __future__ import annotations

import typer

from .cluster import cluster_app
from .dev import dev_app
from .doctor import doctor
from .fleet import fleet_app
from .run import run
from .runtime import runtime_app
from .runtime_history import history
from .runtime_plan import plan
from .runtime_tree import tree
from .trace import trace_app

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="omectl: multi-cluster controller for LLM serving on GPU fleets.",
)
app.add_typer(dev_app, name="dev")
app.add_typer(cluster_app, name="cluster")
app.command("run")(run)
app.command("doctor")(doctor)
app.add_typer(trace_app, name="trace")
app.add_typer(fleet_app, name="fleet")
runtime_app.command("plan")(plan)
runtime_app.command("tree")(tree)
runtime_app.command("history")(history)
app.add_typer(runtime_app, name="runtime")


@app.command()
def version() -> None:
    """Print omectl's version."""
    from omectl import __version__

    typer.echo(__version__)


def main() -> None:
    app()
