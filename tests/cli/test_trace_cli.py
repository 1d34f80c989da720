"""`omectl trace list|show|explain` against a trace file written by the real exporter."""

from __future__ import annotations

import functools
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
import yaml
from opentelemetry import context as otel_context
from opentelemetry.trace import Tracer
from typer.testing import CliRunner

from omectl.cli.main import app
from omectl.cli.trace import trace_app
from omectl.tracing import configure_tracing, merge_span, reconcile_span, set_result, watch_event_context
from omectl.tracing import spans as names
from tests.cli.test_run import omectl_env

HOUR_NS = 3600 * 10**9
TRACE_ID = re.compile(r"\b[0-9a-f]{32}\b")


@dataclass
class Recorded:
    path: Path
    traces: dict[str, str]  # label → trace id
    old_start_ns: int


def reconcile(
    tracer: Tracer,
    *,
    cluster: str,
    kind: str,
    namespace: str | None,
    name: str,
    rv: str,
    chain: list[str] | None = None,
    provenance: dict[str, str] | None = None,
    result: str | None = None,
    runtime: tuple[str, str | None, str] | None = None,
) -> str:
    with reconcile_span(
        tracer,
        cluster=cluster,
        kind=kind,
        namespace=namespace,
        name=name,
        resource_version=rv,
        queue_wait=0.004,
        retries=0,
        links=[watch_event_context(cluster, kind, namespace, name, rv)],
    ) as span:
        if chain is not None:
            runtime_kind, runtime_namespace, runtime_name = runtime or (None, None, None)
            with merge_span(
                tracer,
                chain=chain,
                cache_hit=False,
                layer_fields={layer: 1 for layer in chain},
                provenance=provenance or {},
                runtime_kind=runtime_kind,
                runtime_namespace=runtime_namespace,
                runtime_name=runtime_name,
            ):
                pass
        if result:
            set_result(span, result)
    return format(span.get_span_context().trace_id, "032x")


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    for variable in ("OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "traces.jsonl"
    handle = configure_tracing(file_path=path)
    tracer = handle.tracer
    # A reconcile two hours ago, written with explicit times.
    old_start = time.time_ns() - 2 * HOUR_NS
    old = tracer.start_span(
        "reconcile ServingRuntime",
        context=otel_context.Context(),
        start_time=old_start,
        attributes={
            names.ATTR_CLUSTER: "c1",
            names.ATTR_KIND: "ServingRuntime",
            names.ATTR_NAMESPACE: "default",
            names.ATTR_NAME: "ancient",
            names.ATTR_RESULT: "success",
        },
    )
    old.end(end_time=old_start + 5_000_000)
    traces = {"old": format(old.get_span_context().trace_id, "032x")}
    sr = functools.partial(
        reconcile, tracer, kind="ServingRuntime", namespace="default", name="rt", chain=["base", "profile", "rt"]
    )
    traces["rt-c1-first"] = sr(cluster="c1", rv="10", provenance={"spec.image": "base", "spec.replicas": "profile"})
    traces["rt-c2"] = sr(cluster="c2", rv="3", provenance={"spec.image": "c2-only"})
    traces["base"] = reconcile(
        tracer,
        cluster="c1",
        kind="ClusterServingRuntime",
        namespace=None,
        name="base",
        rv="4",
        chain=["base"],
        provenance={"spec.image": "base"},
    )
    traces["isvc"] = reconcile(
        tracer,
        cluster="c1",
        kind="InferenceService",
        namespace="llm",
        name="chat",
        rv="8",
        chain=["base", "chat-rt"],
        provenance={"spec.args": "chat-rt"},
        runtime=("ServingRuntime", "llm", "chat-rt"),
    )
    traces["rt-c1-latest"] = sr(
        cluster="c1",
        rv="11",
        result="requeue",
        provenance={
            "spec.containers[name=ome-container].image": "base",
            "spec.containers[name=ome-container].args": "profile",
            "spec.replicas": "rt",
        },
    )
    handle.shutdown()
    return Recorded(path, traces, old_start)


runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(trace_app, list(args))
    return result.exit_code, result.stdout, result.stderr


def listed_trace_ids(output: str) -> list[str]:
    return TRACE_ID.findall(output)


def test_list_shows_every_reconcile_newest_first(recorded: Recorded) -> None:
    code, out, _ = invoke("list", "--file", str(recorded.path))
    assert code == 0
    t = recorded.traces
    assert listed_trace_ids(out) == [t["rt-c1-latest"], t["isvc"], t["base"], t["rt-c2"], t["rt-c1-first"], t["old"]]
    latest_row = next(line for line in out.splitlines() if t["rt-c1-latest"] in line)
    assert re.search(r"c1\s+ServingRuntime\s+default/rt\s+requeue\s+\d+\.\d", latest_row)
    base_row = next(line for line in out.splitlines() if t["base"] in line)
    assert re.search(r"ClusterServingRuntime\s+base\s+success", base_row)


def test_list_filters_by_cluster(recorded: Recorded) -> None:
    code, out, _ = invoke("list", "--file", str(recorded.path), "--cluster", "c2")
    assert code == 0
    assert listed_trace_ids(out) == [recorded.traces["rt-c2"]]


def test_list_filters_by_object(recorded: Recorded) -> None:
    t = recorded.traces
    _, out, _ = invoke("list", "-f", str(recorded.path), "--object", "ServingRuntime/default/rt")
    assert listed_trace_ids(out) == [t["rt-c1-latest"], t["rt-c2"], t["rt-c1-first"]]
    _, cluster_scoped, _ = invoke("list", "-f", str(recorded.path), "--object", "clusterservingruntime/base")
    assert listed_trace_ids(cluster_scoped) == [t["base"]]
    _, combined, _ = invoke(
        "list", "-f", str(recorded.path), "--object", "ServingRuntime/default/rt", "--cluster", "c1"
    )
    assert listed_trace_ids(combined) == [t["rt-c1-latest"], t["rt-c1-first"]]


def test_list_filters_by_since_as_duration_or_rfc3339(recorded: Recorded) -> None:
    _, recent, _ = invoke("list", "-f", str(recorded.path), "--since", "1h")
    assert recorded.traces["old"] not in listed_trace_ids(recent)
    assert len(listed_trace_ids(recent)) == 5
    _, all_of_them, _ = invoke("list", "-f", str(recorded.path), "--since", "2h30m")
    assert recorded.traces["old"] in listed_trace_ids(all_of_them)
    between = datetime.fromtimestamp(recorded.old_start_ns / 1e9, tz=UTC) + timedelta(minutes=30)
    _, since_time, _ = invoke("list", "-f", str(recorded.path), "--since", between.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert listed_trace_ids(since_time) == listed_trace_ids(recent)


def test_list_limit_and_json_output(recorded: Recorded) -> None:
    code, out, _ = invoke("list", "-f", str(recorded.path), "--limit", "2", "-o", "json")
    assert code == 0
    rows = orjson.loads(out)
    assert [row["traceId"] for row in rows] == [recorded.traces["rt-c1-latest"], recorded.traces["isvc"]]
    assert rows[0] | {"time": None, "durationMs": None, "spanId": None} == {
        "time": None,
        "cluster": "c1",
        "kind": "ServingRuntime",
        "namespace": "default",
        "name": "rt",
        "resourceVersion": "11",
        "result": "requeue",
        "durationMs": None,
        "queueWaitMs": 4.0,
        "retries": 0,
        "traceId": recorded.traces["rt-c1-latest"],
        "spanId": None,
    }


def test_list_reads_the_file_named_by_omectl_trace_file(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMECTL_TRACE_FILE", str(recorded.path))
    code, out, _ = invoke("list", "--cluster", "c2")
    assert code == 0
    assert listed_trace_ids(out) == [recorded.traces["rt-c2"]]


def test_list_without_a_trace_file_exits_1(tmp_path: Path) -> None:
    missing = tmp_path / "none.jsonl"
    code, _, err = invoke("list", "--file", str(missing))
    assert code == 1
    assert f"error: no trace file at {missing}" in err


def test_list_rejects_a_bad_since(recorded: Recorded) -> None:
    code, _, err = invoke("list", "-f", str(recorded.path), "--since", "yesterday")
    assert code == 2
    assert "neither a duration" in err


def test_show_draws_the_span_tree(recorded: Recorded) -> None:
    trace_id = recorded.traces["rt-c1-latest"]
    code, out, _ = invoke("show", trace_id, "--file", str(recorded.path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"trace {trace_id}  (2 spans)")
    reconcile_line = next(i for i, line in enumerate(lines) if "reconcile ServingRuntime" in line)
    merge_line = next(i for i, line in enumerate(lines) if "merge" in line and "chain:" in line)
    assert merge_line > reconcile_line
    indent = lines[merge_line].index("merge") - lines[reconcile_line].index("reconcile")
    assert indent > 0  # the merge is drawn under the reconcile
    assert "c1 ServingRuntime default/rt" in lines[reconcile_line]
    assert "result=requeue" in lines[reconcile_line] and "rv=11" in lines[reconcile_line]
    assert "chain: base → profile → rt" in lines[merge_line] and "cache=miss" in lines[merge_line]
    event = watch_event_context("c1", "ServingRuntime", "default", "rt", "11")
    assert f"follows-from {event.trace_id:032x}/{event.span_id:016x}" in out


def test_show_accepts_a_unique_prefix(recorded: Recorded) -> None:
    trace_id = recorded.traces["base"]
    code, out, _ = invoke("show", trace_id[:12], "-f", str(recorded.path))
    assert code == 0
    assert out.startswith(f"trace {trace_id}")
    assert "reconcile ClusterServingRuntime" in out


def test_show_unknown_trace_exits_1(recorded: Recorded) -> None:
    code, out, err = invoke("show", "f" * 32, "-f", str(recorded.path))
    assert code == 1
    assert f"error: trace {'f' * 32} not found in {recorded.path}" in err
    assert out == ""


def field_rows(output: str) -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("spec."):
            rows[parts[0]] = parts[1]
    return rows


def test_explain_prints_each_field_with_its_runtime_from_the_latest_merge(recorded: Recorded) -> None:
    code, out, _ = invoke("explain", "ServingRuntime", "default/rt", "--file", str(recorded.path))
    assert code == 0
    assert "chain (root first): base → profile → rt" in out
    assert recorded.traces["rt-c1-latest"] in out
    assert field_rows(out) == {
        "spec.containers[name=ome-container].image": "base",
        "spec.containers[name=ome-container].args": "profile",
        "spec.replicas": "rt",
    }


def test_explain_filters_by_cluster(recorded: Recorded) -> None:
    code, out, _ = invoke("explain", "ServingRuntime", "default/rt", "--cluster", "c2", "-f", str(recorded.path))
    assert code == 0
    assert field_rows(out) == {"spec.image": "c2-only"}


def test_explain_a_cluster_scoped_runtime_by_name(recorded: Recorded) -> None:
    code, out, _ = invoke("explain", "ClusterServingRuntime", "base", "-f", str(recorded.path))
    assert code == 0
    assert "chain (root first): base" in out
    assert field_rows(out) == {"spec.image": "base"}


def test_explain_finds_a_runtime_merged_by_an_inference_service_as_json(recorded: Recorded) -> None:
    code, out, _ = invoke("explain", "ServingRuntime", "llm/chat-rt", "-f", str(recorded.path), "-o", "json")
    assert code == 0
    explained = orjson.loads(out)
    assert explained["traceId"] == recorded.traces["isvc"]
    assert explained["cluster"] == "c1"
    assert (explained["kind"], explained["namespace"], explained["name"]) == ("ServingRuntime", "llm", "chat-rt")
    assert explained["chain"] == ["base", "chat-rt"]
    assert explained["layerFields"] == {"base": 1, "chat-rt": 1}
    assert explained["provenance"] == {"spec.args": "chat-rt"}


def test_explain_with_nothing_recorded_exits_1(recorded: Recorded) -> None:
    code, _, err = invoke("explain", "ServingRuntime", "default/missing", "-f", str(recorded.path))
    assert code == 1
    assert f"error: no merge of ServingRuntime default/missing found in {recorded.path}" in err
    code, _, err = invoke("explain", "ServingRuntime", "default/rt", "--cluster", "c9", "-f", str(recorded.path))
    assert code == 1
    assert "error: no merge of ServingRuntime default/rt on cluster c9 found in" in err


def test_explain_names_each_runtime_with_its_kind_and_the_chains_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # team-a's own `base` shadows the ClusterServingRuntime `base` above the cluster runtime `bridge`.
    for variable in ("OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "traces.jsonl"
    handle = configure_tracing(file_path=path)
    reconcile = reconcile_span(
        handle.tracer, cluster="c1", kind="ServingRuntime", namespace="team-a", name="leaf",
        resource_version="5", queue_wait=0.0, retries=0, links=[],
    )  # fmt: skip
    merge = merge_span(
        handle.tracer,
        chain=["base", "bridge", "leaf"],
        chain_refs=["ServingRuntime/team-a/base", "ClusterServingRuntime/bridge", "ServingRuntime/team-a/leaf"],
        context="namespace team-a",
        cache_hit=False,
        layer_fields={"base": 1, "leaf": 1},
        provenance={"spec.image": "base", "spec.args": "leaf"},
    )
    with reconcile, merge:
        pass
    handle.shutdown()
    code, out, _ = invoke("explain", "ServingRuntime", "team-a/leaf", "-f", str(path))
    assert code == 0
    assert (
        "chain (root first, namespace team-a): ServingRuntime/team-a/base → ClusterServingRuntime/bridge → "
        "ServingRuntime/team-a/leaf"
    ) in out
    assert field_rows(out) == {"spec.image": "ServingRuntime/team-a/base", "spec.args": "ServingRuntime/team-a/leaf"}
    code, out, _ = invoke("explain", "ServingRuntime", "team-a/leaf", "-f", str(path), "-o", "json")
    explained = orjson.loads(out)
    assert explained["context"] == "namespace team-a"
    assert explained["chainRefs"][0] == "ServingRuntime/team-a/base"


def test_list_wide_adds_the_resource_version_queue_wait_retries_and_span_id(recorded: Recorded) -> None:
    code, out, _ = invoke("list", "-f", str(recorded.path), "--limit", "1", "-o", "wide")
    assert code == 0
    header, row = out.splitlines()
    assert header.split()[-8:] == ["RESOURCE", "VERSION", "QUEUE", "WAIT", "(ms)", "RETRIES", "SPAN", "ID"]
    (document,) = orjson.loads(invoke("list", "-f", str(recorded.path), "--limit", "1", "-o", "json")[1])
    assert row.split()[-5:] == [document["traceId"], "11", "4.0", "0", document["spanId"]]


def test_list_and_explain_print_yaml_and_refuse_name(recorded: Recorded) -> None:
    code, out, _ = invoke("list", "-f", str(recorded.path), "--limit", "2", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out) == orjson.loads(
        invoke("list", "-f", str(recorded.path), "--limit", "2", "-o", "json")[1]
    )
    args = ("explain", "ServingRuntime", "llm/chat-rt", "-f", str(recorded.path))
    assert yaml.safe_load(invoke(*args, "-o", "yaml")[1]) == orjson.loads(invoke(*args, "-o", "json")[1])
    for command, row in ((("list", "-f", str(recorded.path)), "a reconcile"), (args, "a field")):
        result = runner.invoke(app, ["trace", *command, "-o", "name"], prog_name="omectl")
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr == (
            f"error: Invalid value for '-o' / '--output': name: each row is {row}, not an object "
            f"(see 'omectl trace {command[0]} --help')\n"
        )


def test_list_watch_reads_the_file_again_each_interval_until_ctrl_c(recorded: Recorded, tmp_path: Path) -> None:
    lines = recorded.path.read_text().splitlines(keepends=True)
    growing = tmp_path / "growing.jsonl"
    growing.write_text(lines[0])
    proc = subprocess.Popen(
        [sys.executable, "-m", "omectl", "trace", "list", "--watch", "--interval", "0.1", "-f", str(growing)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=omectl_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    first: set[str] = set()
    seen: set[str] = set()
    try:
        for line in proc.stdout:
            ids = set(listed_trace_ids(line))
            if not first and ids:
                first = ids
                growing.write_text("".join(lines))  # the next frames read it again
            seen |= ids
            if seen == set(recorded.traces.values()):
                break
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert first and first < seen == set(recorded.traces.values())
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_list_namespace_keeps_that_namespaces_reconciles_and_all_namespaces_every_one(recorded: Recorded) -> None:
    t = recorded.traces
    _, llm, _ = invoke("list", "-f", str(recorded.path), "-n", "llm")
    assert listed_trace_ids(llm) == [t["isvc"]]
    _, everywhere, _ = invoke("list", "-f", str(recorded.path), "-n", "llm", "-A")
    _, default, _ = invoke("list", "-f", str(recorded.path))
    assert listed_trace_ids(everywhere) == listed_trace_ids(default) and len(listed_trace_ids(default)) == 6
    result = runner.invoke(
        app, ["trace", "list", "-f", str(recorded.path), "-n", "llm", "--object", "ServingRuntime/default/rt"],
        prog_name="omectl",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--object ServingRuntime/default/rt is not in namespace 'llm'" in result.stderr
