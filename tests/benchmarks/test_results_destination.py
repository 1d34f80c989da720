"""Where embedded_server and fleet_convergence write their results JSON (benchmarks/output.py's rule): a run that
does not rewrite the README leaves the committed results alone unless `--out` says where to write."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchmarks import embedded_server, fleet_convergence

RESULTS = {"figures": {"x": 1.0}}


def stub_module(module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """The module with its measuring, table and README rewriting stubbed; the committed results file in tmp_path."""
    committed = tmp_path / "committed.json"
    readme_rewrites: list[str] = []

    def rewrite(*args: Any, **kwargs: Any) -> bool:
        readme_rewrites.append("rewritten")
        return True

    monkeypatch.setattr(module, "DEFAULT_OUT", committed)
    monkeypatch.setattr(module, "run_benchmark", lambda *args, **kwargs: RESULTS)
    monkeypatch.setattr(module, "format_table", lambda results: "table")
    monkeypatch.setattr(module, "markdown_table", lambda results: "markdown")
    monkeypatch.setattr(module, "rewrite_readme_section", rewrite)
    if module is embedded_server:
        monkeypatch.setattr(module, "real_server_for", lambda choice: (None, None))
    return committed, readme_rewrites


MODULES = [embedded_server, fleet_convergence]
NOT_REWRITING = [["--quick"], ["--no-readme"]]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("flags", NOT_REWRITING, ids=" ".join)
def test_a_run_that_keeps_the_readme_writes_no_results_without_out(
    module: ModuleType, flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed, rewrites = stub_module(module, tmp_path, monkeypatch)
    assert module.main(flags) == 0
    assert not committed.exists()
    assert rewrites == []


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_out_is_written_by_a_run_that_keeps_the_readme(
    module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed, _ = stub_module(module, tmp_path, monkeypatch)
    out = tmp_path / "mine.json"
    assert module.main(["--no-readme", "--out", str(out)]) == 0
    assert out.exists()
    assert not committed.exists()


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_a_run_that_rewrites_the_readme_writes_the_committed_results(
    module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed, rewrites = stub_module(module, tmp_path, monkeypatch)
    assert module.main([]) == 0
    assert committed.exists()
    assert rewrites == ["rewritten"]


def test_fleet_convergence_profile_run_writes_no_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    committed, rewrites = stub_module(fleet_convergence, tmp_path, monkeypatch)
    assert fleet_convergence.main(["--profile"]) == 0
    assert not committed.exists()
    assert rewrites == []
