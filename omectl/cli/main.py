"""Entry point of the `omectl` and `kubectl-ome` commands.

Every command is imported when it runs, not before (`omectl.cli.lazy`): the tables below give each its module and
the one-line help that `--help` prints. Every command runs inside the error boundary of `Commands`
(`omectl.cli.errors`): bad input is one line on stderr, never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer import _click as click
from typer.core import HAS_RICH

from omectl.cli import light_params
from omectl.cli.errors import describe, usage_line
from omectl.cli.lazy import LazyCommand, LazyGroup

light_params.install()  # parameters convert without pydantic (see the module for why it is safe)


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
            'workload it would re-render (pinned ones listed as "would drift"). Nothing is written. Exits as kubectl '
            "diff: 0 nothing changes, 1 something changes, 2 an error.",
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
    """The root group, and the error boundary of every command."""

    order = ("run", "doctor", "version", "dev", "cluster", "trace", "fleet", "runtime", "rollout", "completion")
    lazy = {
        "run": LazyCommand("omectl.cli.run", "run", "Run the fleet controller against every registered cluster."),
        "doctor": LazyCommand(
            "omectl.cli.doctor",
            "doctor",
            "Check each cluster for what omectl needs: CRDs, webhooks (admission, conversion), certificates, "
            "permissions, chains.",
        ),
        "dev": LazyCommand("omectl.cli.dev", "dev_app", "Run a simulated fleet for development and demos."),
        "cluster": LazyCommand(
            "omectl.cli.cluster", "cluster_app", "Register, list, remove, check and clean fleet clusters."
        ),
        "trace": LazyCommand(
            "omectl.cli.trace", "trace_app", "Inspect the reconcile and merge traces omectl recorded."
        ),
        "fleet": LazyCommand("omectl.cli.fleet", "fleet_app", "The fleet at a glance: GPUs and engines per cluster."),
        "rollout": LazyCommand(
            "omectl.cli.rollout",
            "rollout_app",
            "Watch and steer the wave rollout of a FleetRuntime (in the hub, or without one in --clusters-dir): "
            "status, plan, history, pause, resume, promote, abort, rollback.",
        ),
        "version": LazyCommand(
            "omectl.cli.meta",
            "version",
            "Print omectl's version; with --kubeconfig also each server's version and the CRD versions installed "
            "there.",
        ),
        "completion": LazyCommand(
            "omectl.cli.meta",
            "completion",
            "Print the shell completion script: `source <(omectl completion bash)` (or put it in your shell's rc "
            "file).",
        ),
    }

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:  # the CLI's last stop: what `describe` knows is one line and an exit status
            failure = describe(exc)
            if failure is None:
                raise
            from omectl.observability.redact import scrub

            message, code = failure
            typer.echo(f"error: {scrub(message)}", err=True)
            raise typer.Exit(code) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode or sys.stderr.isatty():  # typer's own report: rich panels fit a terminal
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            if not (HAS_RICH and self.rich_markup_mode is not None):  # else typer printed the help already
                exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            typer.echo(usage_line(exc), err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


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


def main() -> None:
    prog_name = os.path.basename(sys.argv[0])
    if prog_name in ("", "__main__.py"):  # python -m omectl
        prog_name = "omectl"
    complete_var = "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())
    if complete_var in os.environ:  # a shell asks for completions: typer's bash/zsh/fish protocol
        from typer._completion_classes import completion_init

        completion_init()
    typer.main.get_command(app).main(prog_name=prog_name, complete_var=complete_var)
