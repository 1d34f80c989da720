"""The environment variables omectl honours without the OMECTL_ prefix go through Settings, and reach the controller."""

from __future__ import annotations

from pathlib import Path

import pytest

from omectl.controller.app import ControllerApp
from omectl.settings import Settings


def test_pod_name_and_the_aim_operator_namespace_are_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POD_NAME", "omectl-7d9f-abcde")
    monkeypatch.setenv("AIM_SYSTEM_NAMESPACE", "amd-ops")
    settings = Settings.load()
    assert (settings.pod_name, settings.aim_system_namespace) == ("omectl-7d9f-abcde", "amd-ops")


def test_without_them_the_defaults_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAME", raising=False)
    monkeypatch.delenv("AIM_SYSTEM_NAMESPACE", raising=False)
    settings = Settings.load()
    assert (settings.pod_name, settings.aim_system_namespace) == (None, "aim-system")


def test_a_config_file_names_them_as_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIM_SYSTEM_NAMESPACE", "from-env")
    config = tmp_path / "omectl.yaml"
    config.write_text("aim-system-namespace: from-file\npod_name: pod-1\n")
    settings = Settings.load(config)
    assert (settings.pod_name, settings.aim_system_namespace) == ("pod-1", "from-file")


def test_an_empty_aim_operator_namespace_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIM_SYSTEM_NAMESPACE", "")
    assert Settings.load().aim_system_namespace == "aim-system"


def test_the_controller_uses_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "omectl-0")
    monkeypatch.setenv("AIM_SYSTEM_NAMESPACE", "amd-ops")
    app = ControllerApp(Settings.load(clusters_dir=tmp_path, trace_file=tmp_path / "traces.jsonl"))
    assert (app.holder.replica_id, app.holder.host) == ("omectl-0", "omectl-0")
    assert app.reconcilers.aim.operator_namespace == "amd-ops"
    assert app.reconcilers.aim_consumers.operator_namespace == "amd-ops"


def test_image_registry_mirrors_and_timeout_reach_the_aim_reconciler(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OMECTL_IMAGE_REGISTRY_MIRRORS", '{"ghcr.io": "http://127.0.0.1:5000/"}')
    monkeypatch.setenv("OMECTL_IMAGE_REGISTRY_TIMEOUT_SECONDS", "4")
    settings = Settings.load(trace_file=tmp_path / "traces.jsonl", metrics_port=-1)
    registry = ControllerApp(settings).reconcilers.aim_consumers.image_registry
    assert registry.base_url("ghcr.io") == "http://127.0.0.1:5000" and registry.timeout == 4
    assert registry.base_url("docker.io") == "https://registry-1.docker.io"


def _write_spans(app: ControllerApp, count: int) -> None:
    for index in range(count):
        with app.tracing.tracer.start_as_current_span("reconcile ome.io/ServingRuntime") as span:
            span.set_attribute("omectl.object.name", f"runtime-{index:04d}-" + "x" * 400)
        app.tracing.force_flush()  # one line per span


def test_the_controllers_trace_file_moves_aside_at_the_size_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMECTL_TRACE_FILE_MAX_BYTES", "4000")
    trace_file = tmp_path / "traces.jsonl"
    app = ControllerApp(Settings.load(clusters_dir=tmp_path, trace_file=trace_file, metrics_port=-1))
    try:
        _write_spans(app, 20)  # about 1 KB a line: the file rotates several times
    finally:
        app.tracing.shutdown()
    rotated = tmp_path / "traces.jsonl.1"
    assert rotated.is_file()
    assert 0 < trace_file.stat().st_size <= 4000 and rotated.stat().st_size <= 4000
    assert b"runtime-0019-" in trace_file.read_bytes()  # the newest span is in the current file


def test_by_default_the_trace_file_is_bounded_and_zero_leaves_it_unbounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMECTL_TRACE_FILE_MAX_BYTES", raising=False)
    assert Settings.load().trace_file_max_bytes == 64 * 2**20
    trace_file = tmp_path / "traces.jsonl"
    app = ControllerApp(
        Settings.load(clusters_dir=tmp_path, trace_file=trace_file, metrics_port=-1, trace_file_max_bytes=0)
    )
    try:
        _write_spans(app, 20)
    finally:
        app.tracing.shutdown()
    assert not (tmp_path / "traces.jsonl.1").exists()
    assert trace_file.read_bytes().count(b"\n") == 20
