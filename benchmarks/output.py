"""Where a benchmark writes its results JSON: `--out` when given; else the committed file in benchmarks/results/
only on a run that also rewrites the README (a full run without `--profile` or `--no-readme`), so the committed
results and the README's figures always come from the same run; else nowhere."""

from __future__ import annotations

from pathlib import Path


def results_path(out: Path | None, committed: Path, *, rewrites_readme: bool) -> Path | None:
    if out is not None:
        return out
    return committed if rewrites_readme else None


def not_written_note() -> str:
    return (
        "results JSON not written (pass --out to keep it; only a run that rewrites the README writes the committed one)"
    )
