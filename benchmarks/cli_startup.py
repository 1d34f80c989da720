"""Benchmark of the CLI's start-up: CPU seconds of commands that print help or read local files only.

`python -m benchmarks.cli_startup` runs each command in a fresh interpreter several times, side by side with a bare
`python -c pass` in the same run, and takes the median of the user + system CPU time of each (from
`resource.getrusage(RUSAGE_CHILDREN)`). It prints a table, writes `benchmarks/results/cli_startup.json` and rewrites
its section in `benchmarks/README.md`; `--quick` runs each command twice and leaves the README alone.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import (
    README,
    RESULTS_DIR,
    ROOT,
    evaluate_targets,
    figure_rows,
    machine_info,
    markdown_rows,
    measured_on,
    publish,
    run_header,
    units_of,
)

DEFAULT_OUT = RESULTS_DIR / "cli_startup.json"
README_BEGIN = "<!-- cli-startup:begin -->"
README_END = "<!-- cli-startup:end -->"
TARGET_S = 0.3
COMMANDS: dict[str, tuple[str, ...]] = {
    "python_baseline": ("-c", "pass"),
    "help": ("-m", "omectl", "--help"),
    "runtime_help": ("-m", "omectl", "runtime", "--help"),
    "cluster_list": ("-m", "omectl", "cluster", "list"),
    "version": ("-m", "omectl", "version"),
}
FIGURES: dict[str, tuple[str, str]] = {
    "python_baseline": ("s", "`python -c pass` (the interpreter alone)"),
    "help": ("s", "`omectl --help`"),
    "runtime_help": ("s", "`omectl runtime --help` (also `kubectl ome runtime --help`)"),
    "cluster_list": ("s", "`omectl cluster list` (an empty clusters directory)"),
    "version": ("s", "`omectl version`"),
}
TARGETS: dict[str, tuple[str, float]] = {
    "help": ("<=", TARGET_S),
    "runtime_help": ("<=", TARGET_S),
    "cluster_list": ("<=", TARGET_S),
}


def cpu_seconds(args: tuple[str, ...], cwd: Path, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, check=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_benchmark(repeats: int, quick: bool) -> dict[str, Any]:
    started = time.monotonic()
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="omectl-bench-cli-") as tmp:
        (Path(tmp) / "clusters").mkdir()  # a clusters directory that does not exist is an error
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMECTL_CLUSTERS_DIR=str(Path(tmp) / "clusters"))
        for args in COMMANDS.values():  # one untimed run each: the bytecode caches are written
            cpu_seconds(args, Path(tmp), env)
        for _ in range(repeats):  # interleaved, so a burst of other load touches every command alike
            for name, args in COMMANDS.items():
                samples[name].append(cpu_seconds(args, Path(tmp), env))
    figures = {name: round(statistics.median(values), 3) for name, values in samples.items()}
    return {
        **run_header("cli_startup", quick, started),
        "machine": machine_info(os.getloadavg()[0]),
        "repeats": repeats,
        "figures": figures,
        "spread": {name: [round(min(v), 3), round(max(v), 3)] for name, v in samples.items()},
        "units": units_of(FIGURES),
        "targets": evaluate_targets(figures, quick, TARGETS),
    }


def spread_text(results: dict[str, Any]) -> Callable[[str, float, str], str]:
    """A figure's median with the fastest and slowest run in brackets."""

    def text(name: str, value: float, unit: str) -> str:
        low, high = results["spread"][name]
        return f"{value:.3f} {unit} ({low:.3f}-{high:.3f})"

    return text


def markdown_table(results: dict[str, Any]) -> str:

    return "\n".join(
        [
            "## CLI start-up",
            "",
            "```sh",
            ".venv/bin/python -m benchmarks.cli_startup            # the full run; rewrites this section",
            "```",
            "",
            "CPU seconds (user + system) of each command in a fresh interpreter, median of "
            f"{results['repeats']} interleaved runs (min-max in brackets), beside the bare interpreter. Every "
            "command is imported only when it runs (`omectl/cli/lazy.py`), so these import no HTTP client, "
            "kubernetes_asyncio, OpenTelemetry, API models or pydantic (`tests/cli/test_startup.py`): parameters "
            "convert without typer's pydantic-based adapters (`omectl/cli/light_params.py`, bound to the pinned "
            "typer), and a cluster registration is a plain dataclass. That took `runtime --help` from 0.42 s and "
            "`cluster list` from 0.38 s to under 0.2 s; what is left above the interpreter is typer and rich. "
            "Before the lazy commands each of these cost 1.3-1.6 s on this machine (every command module, and with "
            "them the client, the controller and the API models, were imported for any command).",
            "",
            *markdown_rows(figure_rows(results, FIGURES, spread_text(results))),
            "",
            measured_on(results),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli_startup", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two runs per command; the README is untouched")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    results = run_benchmark(2 if args.quick else 7, args.quick)
    section = None if args.quick else markdown_table(results)
    rows = figure_rows(results, FIGURES, spread_text(results))
    publish(args.out, results, rows, section, README, (README_BEGIN, README_END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
