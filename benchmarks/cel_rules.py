"""Benchmark of CRD validation rules in the embedded server: compiling and type-checking a CRD's rules, and checking
a write against them.

`python -m benchmarks.cel_rules` takes upstream aim-engine's AIMService CRD (the pinned fixture under
tests/fixtures/upstream/aim, 12 rules) and times, per call: compiling its rules for evaluation (what the server does
once per CRD version), type-checking them (once per CRD write, then cached by schema), and `RuleValidator.validate`
on a create and on an update of an AIMService (every write). It prints a table, writes
`benchmarks/results/cel_rules.json` and rewrites its section in `benchmarks/README.md`; `--quick` runs small counts
(the smoke test) and leaves the README alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import (
    README,
    RESULTS_DIR,
    evaluate_targets,
    machine_info,
    markdown_rows,
    rewrite_readme_section,
    run_header,
    text_table,
    units_of,
    write_results,
)
from omectl.sim.apiserver import cel, cel_check

ROOT = Path(__file__).resolve().parents[1]
CRD_FILE = ROOT / "tests/fixtures/upstream/aim/config/crd/bases/aim.eai.amd.com_aimservices.yaml"
DEFAULT_OUT = RESULTS_DIR / "cel_rules.json"
README_BEGIN = "<!-- cel-rules:begin -->"
README_END = "<!-- cel-rules:end -->"

FIGURES: dict[str, tuple[str, str]] = {
    "compile_ms": ("ms", "compile the CRD's rules for evaluation (once per CRD version)"),
    "type_check_ms": ("ms", "type-check the CRD's rules (once per distinct schema written)"),
    "validate_create_us": ("µs", "check a create against the rules (p50)"),
    "validate_update_us": ("µs", "check an update against the rules, transition rules included (p50)"),
}
TARGETS: dict[str, tuple[str, float]] = {
    "compile_ms": ("<=", 100.0),
    "type_check_ms": ("<=", 200.0),
    "validate_create_us": ("<=", 1000.0),
    "validate_update_us": ("<=", 1000.0),
}
QUICK = {"compile": 3, "validate": 50}
FULL = {"compile": 30, "validate": 2000}


def _schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD_FILE.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _service(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {"model": {"name": "llama-3-8b"}, "replicas": replicas, "caching": {"mode": "Shared"}},
    }


def _median_us(call: Callable[[], Any], count: int) -> float:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def run_benchmark(counts: dict[str, int], quick: bool) -> dict[str, Any]:
    started = time.monotonic()
    schema = _schema()
    compile_rules: Callable[[], Any] = lambda: cel.RuleValidator(cel._RuleNode.build(schema))  # noqa: E731
    schema_json = cel_check.orjson.dumps(schema, option=cel_check.orjson.OPT_SORT_KEYS)
    type_check: Callable[[], Any] = lambda: cel_check._schema_errors.__wrapped__(schema_json, "")  # noqa: E731
    assert type_check() == (), "the pinned CRD's rules must type-check"
    validator = cel.RuleValidator.build(schema)
    assert validator is not None
    new, old = _service("svc", 2), _service("svc", 1)
    assert validator.validate(new, None) == ([], []), "the benchmark object must pass the rules"
    assert validator.validate(new, old) == ([], [])
    figures = {
        "compile_ms": _median_us(compile_rules, counts["compile"]) / 1000,
        "type_check_ms": _median_us(type_check, counts["compile"]) / 1000,
        "validate_create_us": _median_us(lambda: validator.validate(new, None), counts["validate"]),
        "validate_update_us": _median_us(lambda: validator.validate(new, old), counts["validate"]),
    }
    figures = {k: round(v, 3) for k, v in figures.items()}
    return {
        **run_header("cel_rules", quick, started),
        "machine": machine_info(),
        "counts": counts,
        "figures": figures,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(figures, quick, TARGETS),
    }


def _rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, (unit, label) in FIGURES.items():
        verdict = results["targets"][name]
        rows.append(
            [
                label,
                f"{results['figures'][name]} {unit}",
                f"{verdict['op']} {verdict['target']} {unit}",
                "pass" if verdict["pass"] else "FAIL",
            ]
        )
    return rows


def markdown_table(results: dict[str, Any]) -> str:
    lines = [
        "## CRD validation rules (CEL)",
        "",
        "```sh",
        ".venv/bin/python -m benchmarks.cel_rules                              # the full run; rewrites this section",
        ".venv/bin/python -m benchmarks.cel_rules --quick --out /tmp/c.json    # small counts, README untouched",
        "```",
        "",
        "Upstream aim-engine's AIMService CRD (12 rules), cel-expr-python; medians per call "
        f"({results['timestamp']}, {results['machine']['cpu_count']} cores).",
        "",
        *markdown_rows(_rows(results)),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cel_rules", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (the smoke test); the README is untouched")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the table in the README")
    args = parser.parse_args(argv)
    results = run_benchmark(QUICK if args.quick else FULL, args.quick)
    print(text_table(_rows(results)), flush=True)
    write_results(args.out, results)
    if not args.quick and not args.no_readme:
        rewrite_readme_section(README, markdown_table(results), README_BEGIN, README_END, append_missing=True)
        print(f"table rewritten in {README}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
