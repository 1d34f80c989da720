"""Entry point of the `omectl` and `kubectl-ome` commands.

Every command is imported when it runs, not before (`omectl.cli.lazy`): the tables below give each its module and
the one-line help that `--help` prints.
"""

from __future__ import annotations

import typer

from .lazy import LazyCommand, LazyGroup


class RuntimeCommands(LazyGroup):
    lazy = {
        "effective": LazyCommand(
            "omectl.cli.runtime",
            "runtime_app",
            "The runtime an InferenceService uses: kind, revision, pinned, drifted and its inheritance chain.",
            command="effective",
        ),
        "rollout": LazyCommand(
            "omectl.cli.runtime",
            "runtime_app",
            "Move an InferenceService pinned with `autoSync: false` to the live revision of its runtime.",
            command="rollout",
        ),
        "plan": LazyCommand(
            "omectl.cli.runtime_plan",
            "plan",
            "Before applying a runtime edit: every InferenceService it would reach and the diff of each engine "
            'workload it would re-render (pinned ones listed as "would drift"). Nothing is written.',
        ),
        "tree": LazyCommand(
            "omectl.cli.runtime_tree",
            "tree",
            "What an edit of RUNTIME reaches, per resolution context: the runtimes whose chains pass through it and "
            "the InferenceServices built on them; with --ancestors, the chain it resolves.",
        ),
        "history": LazyCommand(
            "omectl.cli.runtime_history",
            "history",
            "The revisions of RUNTIME's merged spec, newest first: hash, chain, live, and who is pinned to each.",
        ),
    }


class Commands(LazyGroup):
    order = ("run", "doctor", "version", "dev", "cluster", "trace", "fleet", "runtime")
    lazy = {
        "run": LazyCommand("omectl.cli.run", "run", "Run the fleet controller against every registered cluster."),
        "doctor": LazyCommand(
            "omectl.cli.doctor",
            "doctor",
            "Check each cluster for what omectl needs: CRDs, webhooks and their certificates, permissions, chains.",
        ),
        "dev": LazyCommand("omectl.cli.dev", "dev_app", "Run a simulated fleet for development and demos."),
        "cluster": LazyCommand(
            "omectl.cli.cluster", "cluster_app", "Register, list, remove, check and clean fleet clusters."
        ),
        "trace": LazyCommand(
            "omectl.cli.trace", "trace_app", "Inspect the reconcile and merge traces omectl recorded."
        ),
        "fleet": LazyCommand("omectl.cli.fleet", "fleet_app", "The fleet at a glance: GPUs and engines per cluster."),
    }


app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    add_completion=False,
    help="omectl: multi-cluster controller for LLM serving on GPU fleets.",
)
runtime_app = typer.Typer(
    cls=RuntimeCommands,
    no_args_is_help=True,
    help="Inspect OME runtime inheritance: effective runtimes and what a runtime edit reaches.",
)
app.add_typer(runtime_app, name="runtime")


@app.command()
def version() -> None:
    """Print omectl's version."""
    from omectl import __version__

    typer.echo(__version__)


def main() -> None:
    app()
