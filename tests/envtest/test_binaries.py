"""Finding the real binaries: the pins in tools/envtest, the cache directory, and the skip (or CI failure).

These need neither Go nor the binaries, so they run on every machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omectl.envtest.binaries import (
    TOOLS_DIR,
    BinariesMissing,
    cache_dir,
    cache_root,
    find_binaries,
    module_version,
    pinned_versions,
)

from .conftest import ROOT


def test_the_pins_are_one_release_for_kubernetes_and_its_staging_modules() -> None:
    kube, etcd = pinned_versions()
    assert kube.startswith("v1.34.") and etcd.startswith("v3.6.")
    go_mod = (TOOLS_DIR / "kube-apiserver" / "go.mod").read_text()
    staging = "v0." + kube.removeprefix("v1.")
    replaces = [line.split() for line in go_mod.splitlines() if "=>" in line]
    assert len(replaces) >= 29
    assert all(words[0] == words[2] and words[3] == staging for words in replaces), "one release for every k8s.io"
    assert (TOOLS_DIR / "kube-apiserver" / "go.sum").is_file() and (TOOLS_DIR / "etcd" / "go.sum").is_file()


def test_module_version_reads_block_and_single_line_requires(tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\nrequire a.io/b v1.2.3\n\nrequire (\n\tc.io/d v0.1.0 // indirect\n)\n")
    assert module_version(go_mod, "a.io/b") == "v1.2.3"
    assert module_version(go_mod, "c.io/d") == "v0.1.0"
    with pytest.raises(ValueError, match=r"does not require e\.io/f"):
        module_version(go_mod, "e.io/f")


def test_cache_directory_and_its_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OMECTL_ENVTEST_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "omectl" / "envtest"
    monkeypatch.setenv("OMECTL_ENVTEST_CACHE", str(tmp_path / "mine"))
    kube, etcd = pinned_versions()
    assert cache_dir() == tmp_path / "mine" / f"k8s-{kube}_etcd-{etcd}"


def test_missing_binaries_say_why_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OMECTL_ENVTEST_BIN", raising=False)
    monkeypatch.setenv("OMECTL_ENVTEST_CACHE", str(tmp_path))
    with pytest.raises(BinariesMissing) as missing:
        find_binaries()
    message = str(missing.value)
    assert "\n" not in message
    assert "kube-apiserver and etcd not built in" in message
    assert "make envtest" in message or "Go is not installed" in message


def test_a_directory_of_binaries_named_by_env_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("kube-apiserver", "etcd"):
        path = tmp_path / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    monkeypatch.setenv("OMECTL_ENVTEST_BIN", str(tmp_path))
    found = find_binaries()
    assert found.kube_apiserver == tmp_path / "kube-apiserver"
    assert found.etcd == tmp_path / "etcd"


def _run_suite_without_binaries(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMECTL_ENVTEST_BIN", "CI", "PYTEST_XDIST_WORKER")}
    env["OMECTL_ENVTEST_CACHE"] = str(tmp_path / "empty-cache")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/envtest/test_real_server.py::test_kubectl_reports_the_pinned_server_version",
            "tests/envtest/test_real_server.py::test_every_crd_of_ours_is_established",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_binaries_the_suite_skips_with_one_line(tmp_path: Path) -> None:
    result = _run_suite_without_binaries(tmp_path, ci=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("real-server suite skipped (")]
    assert len(lines) == 1, result.stdout
    assert "2 tests" in lines[0] and "not built in" in lines[0]


def test_without_binaries_ci_fails_instead(tmp_path: Path) -> None:
    result = _run_suite_without_binaries(tmp_path, ci=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CI must run it" in result.stdout
