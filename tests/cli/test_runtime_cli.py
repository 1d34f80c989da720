"""`omectl runtime effective|tree` against embedded clusters served from a background thread, and as the real
`kubectl ome` plugin."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from typer.testing import CliRunner, Result

from omectl.cli.main import app
from omectl.core.ome.merge import merge_chain
from omectl.fleet.registration import ClusterRegistration, to_yaml
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from omectl.sim.kubeconfig import KubeconfigEntry, write_kubeconfig
from tests.support import kubectl_path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "deploy" / "samples" / "ome"
OPTS = WriteOptions(field_manager="test")
PLURALS = {
    "ClusterServingRuntime": "clusterservingruntimes",
    "ServingRuntime": "servingruntimes",
    "InferenceService": "inferenceservices",
    "Namespace": "namespaces",
}


def sample(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    return document


def runtime(kind: str, name: str, parent: str | None, namespace: str = "", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    runner = {"name": "ome-container", "args": [f"--{name}"]}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": kind,
        "metadata": meta,
        "spec": {"engineConfig": {"runner": runner}, **spec},
    }


def isvc(name: str, namespace: str, runtime_name: str | None, **runtime_fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"name": "llama-3-2-3b-instruct"}}
    if runtime_name is not None:
        spec["runtime"] = {"name": runtime_name, **runtime_fields}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def create(server: EmbeddedAPIServer, obj: dict[str, Any]) -> None:
    group = "" if obj["kind"] == "Namespace" else "ome.io"
    version = "v1" if obj["kind"] == "Namespace" else "v1beta1"
    rt = server.api.types.lookup(group, version, PLURALS[obj["kind"]])
    assert rt is not None
    await server.api.create(rt, obj["metadata"].get("namespace", ""), obj, OPTS)


async def set_status(server: EmbeddedAPIServer, namespace: str, name: str, status: dict[str, Any]) -> None:
    rt = server.api.types.lookup("ome.io", "v1beta1", "inferenceservices")
    assert rt is not None
    body = orjson.dumps({"status": status})
    await server.api.patch(rt, namespace, name, "application/merge-patch+json", body, OPTS, subresource="status")


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


CSR, SR = "ClusterServingRuntime", "ServingRuntime"

# rt-1: the spec's example plus a third level on each side, a ServingRuntime that shadows the profile in team-b,
# and InferenceServices naming runtimes at every level.
CLUSTER_ONE = [
    namespace("llama-demo"),
    namespace("team-b"),
    sample("profile.yaml"),
    sample("runtime.yaml"),
    runtime(SR, "sglang-llama-long-context", "sglang-llama-3-2-3b", "llama-demo"),
    runtime(CSR, "sglang-h100", "sglang-profile"),
    runtime(SR, "sglang-h100-tuned", "sglang-h100", "team-b"),
    runtime(SR, "sglang-profile", None, "team-b", disabled=True),
    runtime(SR, "shadowed-child", "sglang-profile", "team-b"),
    runtime(SR, "orphan", "no-such-parent", "llama-demo"),
    sample("isvc.yaml"),
    isvc("long-context", "llama-demo", "sglang-llama-long-context"),
    isvc("tuned", "team-b", "sglang-h100-tuned", autoSync=False),
    isvc("uses-shadow", "team-b", "sglang-profile"),
    isvc("auto", "llama-demo", None),
    isvc("broken", "llama-demo", "orphan"),
    isvc("missing-runtime", "llama-demo", "no-such-runtime"),
]
# rt-2: the profile and one child with one InferenceService.
CLUSTER_TWO = [
    namespace("llama-demo"),
    sample("profile.yaml"),
    sample("runtime.yaml"),
    sample("isvc.yaml"),
]
TUNED_STATUS: dict[str, Any] = {
    "runtime": {
        "name": "sglang-h100-tuned",
        "kind": SR,
        "chain": ["sglang-profile", "sglang-h100", "sglang-h100-tuned"],
        "revision": "sglang-h100-tuned-5d9f7c",
        "hash": "5d9f7c",
    },
    "conditions": [
        {
            "type": "RuntimeDrifted",
            "status": "True",
            "reason": "RevisionMismatch",
            "message": "pinned revision sglang-h100-tuned-5d9f7c, live revision sglang-h100-tuned-8a1b2e",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
}


@pytest.fixture(scope="module")
def fleet() -> Iterator[BackgroundFleet]:
    bg = BackgroundFleet(EmbeddedFleet(2, name_prefix="rt-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([REPO / "deploy" / "crds"]))
        for server, objects in zip(bg.fleet.servers, (CLUSTER_ONE, CLUSTER_TWO), strict=True):
            for obj in objects:
                bg.run(create(server, copy.deepcopy(obj)))
        bg.run(set_status(bg.fleet.servers[0], "team-b", "tuned", TUNED_STATUS))
        yield bg
    finally:
        bg.stop()


@pytest.fixture(scope="module")
def kubeconfig(fleet: BackgroundFleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Contexts rt-1 (current) and rt-2."""
    return fleet.fleet.write_kubeconfig(tmp_path_factory.mktemp("runtime-cli") / "kubeconfig")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def clusters_dir(kubeconfig: Path, tmp_path: Path) -> Path:
    """rt-1 and rt-2 registered, plus `down`, whose server refuses connections."""
    directory = tmp_path / "clusters"
    directory.mkdir()
    down = write_kubeconfig(
        tmp_path / "down.kubeconfig", [KubeconfigEntry("down", f"http://127.0.0.1:{closed_port()}")], current="down"
    )
    for name, path, context in (("rt-1", kubeconfig, "rt-1"), ("rt-2", kubeconfig, "rt-2"), ("down", down, None)):
        reg = ClusterRegistration(name=name, kubeconfig_path=path, context=context)
        (directory / f"{name}.yaml").write_text(to_yaml(reg))
    return directory


def invoke(*args: str, env: Mapping[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, ["runtime", *args], env=dict(env or {}))


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def table(output: str) -> list[dict[str, str]]:
    """Rows of a kubectl-style table (cells never hold spaces) as header → cell."""
    lines = [line for line in output.splitlines() if line.strip()]
    headers = lines[0].split()
    return [dict(zip(headers, line.split(), strict=True)) for line in lines[1:] if len(line.split()) == len(headers)]


# --- effective ---------------------------------------------------------------------------------------------


def test_effective_table_shows_the_runtime_its_kind_and_the_chain(kubeconfig: Path) -> None:
    result = ok(invoke("effective", "llama-3-2-3b-instruct", "-n", "llama-demo", "--kubeconfig", str(kubeconfig)))
    assert table(result.stdout) == [
        {
            "NAME": "llama-3-2-3b-instruct",
            "RUNTIME": "sglang-llama-3-2-3b",
            "KIND": "ServingRuntime",
            "REVISION": "-",
            "PINNED": "no",  # the CRD defaults spec.runtime.autoSync to true
            "DRIFTED": "-",
            "CHAIN": "sglang-profile,sglang-llama-3-2-3b",
        }
    ]


def test_effective_table_reads_revision_pin_and_drift_from_the_inference_service(kubeconfig: Path) -> None:
    result = ok(invoke("effective", "tuned", "-n", "team-b", "--kubeconfig", str(kubeconfig)))
    (row,) = table(result.stdout)
    assert (row["REVISION"], row["PINNED"], row["DRIFTED"]) == (TUNED_STATUS["runtime"]["revision"], "yes", "yes")
    assert row["CHAIN"] == "sglang-profile,sglang-h100,sglang-h100-tuned"


def test_effective_json_lists_the_chain_root_first_with_the_merged_spec_and_its_provenance(kubeconfig: Path) -> None:
    result = ok(
        invoke("effective", "llama-3-2-3b-instruct", "-n", "llama-demo", "--kubeconfig", str(kubeconfig), "-o", "json")
    )
    report = json.loads(result.stdout)
    profile, child = sample("profile.yaml"), sample("runtime.yaml")
    assert [(hop["kind"], hop.get("namespace"), hop["name"]) for hop in report["chain"]] == [
        (CSR, None, "sglang-profile"),
        (SR, "llama-demo", "sglang-llama-3-2-3b"),
    ]
    assert all(hop["resourceVersion"] for hop in report["chain"])
    runner = report["effectiveSpec"]["engineConfig"]["runner"]
    assert runner["image"] == profile["spec"]["engineConfig"]["runner"]["image"]
    assert runner["command"] == profile["spec"]["engineConfig"]["runner"]["command"]
    assert runner["args"] == child["spec"]["engineConfig"]["runner"]["args"]
    assert report["effectiveSpec"]["disabled"] is False
    stored = [(name, with_schema_defaults(doc["spec"])) for name, doc in (("p", profile), ("c", child))]
    assert report["effectiveSpec"] == merge_chain(stored).spec
    provenance = report["provenance"]
    assert provenance["engineConfig.runner.image"] == "sglang-profile"
    assert provenance["engineConfig.runner.args"] == "sglang-llama-3-2-3b"
    assert provenance["disabled"] == "sglang-llama-3-2-3b"
    assert provenance["engineConfig.volumes[name=dshm].emptyDir.medium"] == "sglang-profile"
    assert report["runtime"] == {"kind": SR, "name": "sglang-llama-3-2-3b", "namespace": "llama-demo"}
    assert (report["pinned"], report["autoSync"], report["drifted"]) == (False, True, None)


def test_effective_yaml_is_the_same_document_as_json(kubeconfig: Path) -> None:
    args = ("effective", "tuned", "-n", "team-b", "--kubeconfig", str(kubeconfig))
    as_json = json.loads(ok(invoke(*args, "-o", "json")).stdout)
    as_yaml = yaml.safe_load(ok(invoke(*args, "-o", "yaml")).stdout)
    assert as_yaml == as_json
    assert as_json["runtimeDriftedCondition"]["reason"] == "RevisionMismatch"
    assert [hop["name"] for hop in as_json["chain"]] == TUNED_STATUS["runtime"]["chain"]


def test_effective_says_so_when_the_inference_service_names_no_runtime(kubeconfig: Path) -> None:
    result = ok(invoke("effective", "auto", "-n", "llama-demo", "--kubeconfig", str(kubeconfig)))
    assert table(result.stdout)[0]["RUNTIME"] == "<none>"
    assert "InferenceService llama-demo/auto names no runtime" in result.stdout
    report = json.loads(
        ok(invoke("effective", "auto", "-n", "llama-demo", "--kubeconfig", str(kubeconfig), "-o", "json")).stdout
    )
    assert (report["namedRuntime"], report["runtime"], report["chain"], report["effectiveSpec"]) == (
        None,
        None,
        [],
        None,
    )


def test_effective_unknown_inference_service_is_a_one_line_error(kubeconfig: Path) -> None:
    result = invoke("effective", "nope", "-n", "llama-demo", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1
    assert result.stderr == 'error: InferenceService "nope" not found in namespace "llama-demo" (cluster rt-1)\n'
    assert result.stdout == ""


def test_effective_names_a_missing_runtime(kubeconfig: Path) -> None:
    result = invoke("effective", "missing-runtime", "-n", "llama-demo", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1
    assert result.stderr == (
        "error: InferenceService llama-demo/missing-runtime: "
        "runtime no-such-runtime not found in namespace llama-demo or at cluster scope\n"
    )


def test_effective_reports_a_broken_chain_with_the_chain_error(kubeconfig: Path) -> None:
    result = invoke("effective", "broken", "-n", "llama-demo", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: InferenceService llama-demo/broken: the chain of ServingRuntime llama-demo/orphan does not resolve "
        '(ParentNotFound): inherit-from parent "no-such-parent" not found (chain so far: [orphan])'
    ]


def test_effective_uses_the_context_namespace_and_the_kubeconfig_env(fleet: BackgroundFleet, tmp_path: Path) -> None:
    server = fleet.fleet.servers[0]
    path = write_kubeconfig(tmp_path / "kc", [server.kubeconfig_entry(namespace="team-b")], current=server.name)
    result = ok(invoke("effective", "tuned", env={"KUBECONFIG": str(path)}))
    assert table(result.stdout)[0]["RUNTIME"] == "sglang-h100-tuned"


def test_effective_context_selects_the_cluster(kubeconfig: Path) -> None:
    # rt-2 holds llama-3-2-3b-instruct but not `tuned`; rt-1 (current context) holds both.
    result = invoke("effective", "tuned", "-n", "team-b", "--kubeconfig", str(kubeconfig), "--context", "rt-2")
    assert result.exit_code == 1
    assert "(cluster rt-2)" in result.stderr


def test_effective_reads_a_registered_cluster(clusters_dir: Path) -> None:
    result = ok(invoke("effective", "llama-3-2-3b-instruct", "-n", "llama-demo", "--cluster", "rt-2",
                       "--clusters-dir", str(clusters_dir), "-o", "json"))  # fmt: skip
    assert json.loads(result.stdout)["cluster"] == "rt-2"
    missing = invoke("effective", "x", "--cluster", "elsewhere", "--clusters-dir", str(clusters_dir))
    assert (missing.exit_code, missing.stderr) == (
        1,
        f'error: cluster "elsewhere" is not registered in {clusters_dir}\n',
    )


def test_effective_unreachable_cluster_is_a_one_line_error_with_exit_code_2(clusters_dir: Path) -> None:
    result = invoke("effective", "x", "-n", "default", "--cluster", "down", "--clusters-dir", str(clusters_dir))
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(
        "error: cluster down: GET /apis/ome.io/v1beta1/namespaces/default/inferenceservices/x"
    )


def test_cluster_and_kubeconfig_cannot_be_combined(kubeconfig: Path, clusters_dir: Path) -> None:
    result = invoke(
        "effective", "x", "--cluster", "rt-1", "--kubeconfig", str(kubeconfig), "--clusters-dir", str(clusters_dir)
    )
    assert result.exit_code == 1
    assert "cannot be combined" in result.stderr


# --- tree --------------------------------------------------------------------------------------------------


def shape(node: Mapping[str, Any]) -> dict[str, Any]:
    """A node as {label: {"isvcs": [...], "children": {...}}} for comparison."""
    label = f"{node['kind']} {node.get('namespace', '')}/{node['name']}".replace(" /", " ")
    return {
        label: {
            "isvcs": [f"{i['namespace']}/{i['name']}" for i in node["inferenceServices"]],
            "children": {k: v for child in node["children"] for k, v in shape(child).items()},
        }
    }


def sections(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """Each resolution context's tree, as `shape` of its root."""
    return {section["context"]: shape(section["root"]) for section in cluster["sections"]}


def test_tree_json_has_a_section_per_resolution_context_and_names_the_shadowed_namespace(kubeconfig: Path) -> None:
    result = ok(invoke("tree", "sglang-profile", "--kubeconfig", str(kubeconfig), "-o", "json"))
    document = json.loads(result.stdout)
    assert document["errors"] == []
    (cluster,) = document["clusters"]
    # team-b's own sglang-profile shadows the cluster profile there: team-b/sglang-h100-tuned's chain passes the
    # ClusterServingRuntime sglang-h100 but finds team-b's sglang-profile above it, so it is not below this one.
    assert sections(cluster) == {
        "cluster-only": {
            "ClusterServingRuntime sglang-profile": {
                "isvcs": [],
                "children": {"ClusterServingRuntime sglang-h100": {"isvcs": [], "children": {}}},
            }
        },
        "namespace llama-demo": {
            "ClusterServingRuntime sglang-profile": {
                "isvcs": [],
                "children": {
                    "ServingRuntime llama-demo/sglang-llama-3-2-3b": {
                        "isvcs": ["llama-demo/llama-3-2-3b-instruct"],
                        "children": {
                            "ServingRuntime llama-demo/sglang-llama-long-context": {
                                "isvcs": ["llama-demo/long-context"],
                                "children": {},
                            },
                        },
                    },
                },
            }
        },
    }
    assert cluster["shadowedIn"] == [
        {"namespace": "team-b", "by": {"kind": "ServingRuntime", "name": "sglang-profile", "namespace": "team-b"}}
    ]
    assert (cluster["runtimes"], cluster["inferenceServices"]) == (3, 2)
    assert cluster["runtime"]["profile"] is True and cluster["runtime"]["disabled"] is True


def test_tree_of_the_shadowing_serving_runtime_reaches_its_namespace_through_the_cluster_runtime(
    kubeconfig: Path,
) -> None:
    result = ok(
        invoke(
            "tree",
            "sglang-profile",
            "-n",
            "team-b",
            "--kind",
            "ServingRuntime",
            "--kubeconfig",
            str(kubeconfig),
            "-o",
            "json",
        )
    )
    (cluster,) = json.loads(result.stdout)["clusters"]
    assert sections(cluster) == {
        "namespace team-b": {
            "ServingRuntime team-b/sglang-profile": {
                "isvcs": ["team-b/uses-shadow"],
                "children": {
                    "ClusterServingRuntime sglang-h100": {
                        "isvcs": [],
                        "children": {
                            "ServingRuntime team-b/sglang-h100-tuned": {"isvcs": ["team-b/tuned"], "children": {}}
                        },
                    },
                    "ServingRuntime team-b/shadowed-child": {"isvcs": [], "children": {}},
                },
            }
        }
    }


def test_tree_of_an_ambiguous_name_lists_both_and_asks_for_kind(kubeconfig: Path) -> None:
    result = invoke("tree", "sglang-profile", "-n", "team-b", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1
    assert result.stderr == (
        'error: runtime "sglang-profile" is ambiguous in cluster rt-1: ServingRuntime team-b/sglang-profile and '
        "ClusterServingRuntime sglang-profile both exist; choose one with --kind ServingRuntime or "
        "--kind ClusterServingRuntime\n"
    )
    chosen = ok(invoke("tree", "sglang-profile", "-n", "team-b", "--kind", "clusterservingruntime",
                       "--kubeconfig", str(kubeconfig), "-o", "json"))  # fmt: skip
    assert json.loads(chosen.stdout)["clusters"][0]["runtime"]["kind"] == "ClusterServingRuntime"


def test_tree_ancestors_prints_the_chain_per_context_root_first(kubeconfig: Path) -> None:
    result = ok(invoke("tree", "sglang-h100", "--ancestors", "--kubeconfig", str(kubeconfig), "-o", "json"))
    (cluster,) = json.loads(result.stdout)["clusters"]
    chains = {
        entry["context"]: [f"{hop['kind']} {hop.get('namespace', '')}/{hop['name']}" for hop in entry["chain"]]
        for entry in cluster["ancestors"]
    }
    assert chains == {
        "cluster-only": ["ClusterServingRuntime /sglang-profile", "ClusterServingRuntime /sglang-h100"],
        "namespace team-b": ["ServingRuntime team-b/sglang-profile", "ClusterServingRuntime /sglang-h100"],
    }
    table_result = ok(invoke("tree", "orphan", "-n", "llama-demo", "--ancestors", "--kubeconfig", str(kubeconfig)))
    assert 'namespace llama-demo: ParentNotFound: inherit-from parent "no-such-parent" not found' in (
        table_result.stdout
    )


def test_tree_table_draws_the_tree_and_its_reach(kubeconfig: Path) -> None:
    result = ok(invoke("tree", "sglang-profile", "--kubeconfig", str(kubeconfig)))
    lines = result.stdout.splitlines()
    assert lines[0] == "ClusterServingRuntime sglang-profile  (profile, disabled)"

    def depth(text: str, after: str = "") -> int:
        start = next(i for i, line in enumerate(lines) if after in line) if after else 0
        line = next(line for line in lines[start:] if line.endswith(text) or f"{text}  (" in line)
        return (len(line) - len(line.lstrip("│├└─ "))) // 4

    assert depth("cluster-only") == 1
    assert depth("ClusterServingRuntime sglang-h100", after="cluster-only") == 2
    assert depth("namespace llama-demo") == 1
    assert depth("ServingRuntime llama-demo/sglang-llama-3-2-3b") == 2
    assert depth("ServingRuntime llama-demo/sglang-llama-long-context") == 3
    assert depth("InferenceService llama-demo/long-context") == 4
    assert depth("namespace team-b: shadowed by ServingRuntime team-b/sglang-profile") == 1
    assert "sglang-h100-tuned" not in result.stdout and "uses-shadow" not in result.stdout
    assert lines[-1] == "3 runtimes and 2 InferenceServices below ClusterServingRuntime sglang-profile"


def test_tree_limit_bounds_each_node_and_says_how_many_more(kubeconfig: Path) -> None:
    result = ok(invoke("tree", "sglang-profile", "-n", "team-b", "--kind", "ServingRuntime", "--limit", "1",
                       "--kubeconfig", str(kubeconfig)))  # fmt: skip
    assert "… 1 more runtime" in result.stdout
    assert "shadowed-child" not in result.stdout
    document = json.loads(ok(invoke("tree", "sglang-profile", "-n", "team-b", "--kind", "ServingRuntime",
                                    "--limit", "1", "--kubeconfig", str(kubeconfig), "-o", "json")).stdout)  # fmt: skip
    root = document["clusters"][0]["sections"][0]["root"]
    assert (len(root["children"]), root["moreChildren"]) == (1, 1)


def test_tree_fails_closed_when_a_list_is_forbidden(fleet: BackgroundFleet, kubeconfig: Path) -> None:
    server = fleet.fleet.servers[0]
    server.faults.fail_next(1, 403, method="GET", path_contains="/inferenceservices")
    try:
        result = invoke("tree", "sglang-profile", "--kubeconfig", str(kubeconfig))
        assert not server.faults.rules, "the forbidden list was sent"
    finally:
        server.faults.clear()  # the module's fleet is shared: no fault outlives this test, even when it fails
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: cluster rt-1: cannot list inferenceservices: GET ")
    assert "403" in result.stderr and len(result.stderr.splitlines()) == 1


def test_tree_unknown_runtime_is_a_one_line_error(kubeconfig: Path) -> None:
    result = invoke("tree", "sglang-h100", "-n", "llama-demo", "--kind", "ServingRuntime", "--kubeconfig",
                    str(kubeconfig))  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr == 'error: ServingRuntime "sglang-h100" not found in namespace "llama-demo" (cluster rt-1)\n'
    neither = invoke("tree", "nothing", "-n", "llama-demo", "--kubeconfig", str(kubeconfig))
    assert neither.stderr == (
        'error: no ServingRuntime "nothing" in namespace "llama-demo" and no ClusterServingRuntime "nothing" '
        "(cluster rt-1)\n"
    )


def test_tree_all_clusters_reports_an_unreachable_cluster_and_continues(clusters_dir: Path) -> None:
    result = invoke("tree", "sglang-profile", "--all-clusters", "--clusters-dir", str(clusters_dir), "-o", "json")
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    reach = {c["cluster"]: (c["runtimes"], c["inferenceServices"]) for c in document["clusters"]}
    assert reach == {"rt-1": (3, 2), "rt-2": (1, 1)}
    (error,) = document["errors"]
    assert error["cluster"] == "down" and error["message"].startswith("cluster down: cannot list ")

    table_result = invoke("tree", "sglang-profile", "--all-clusters", "--clusters-dir", str(clusters_dir))
    assert table_result.exit_code == 2
    assert "cluster rt-1: ClusterServingRuntime sglang-profile  (profile, disabled)" in table_result.stdout
    assert "cluster rt-2: ClusterServingRuntime sglang-profile  (profile, disabled)" in table_result.stdout
    assert (
        "fleet: 4 runtimes and 3 InferenceServices below ClusterServingRuntime sglang-profile in 2 of 3 clusters"
        in (table_result.stdout)
    )
    assert [line[:20] for line in table_result.stderr.splitlines()] == ["error: cluster down:"]


def test_tree_all_clusters_succeeds_when_every_cluster_answers(clusters_dir: Path) -> None:
    (clusters_dir / "down.yaml").unlink()
    result = ok(invoke("tree", "sglang-h100", "--all-clusters", "--clusters-dir", str(clusters_dir), "-o", "json"))
    found = {c["cluster"]: c["runtime"] is not None for c in json.loads(result.stdout)["clusters"]}
    assert found == {"rt-1": True, "rt-2": False}


# --- -o wide and -o name -------------------------------------------------------------------------------------


def test_effective_wide_adds_autosync_the_pinned_revision_the_chain_versions_and_the_cluster(kubeconfig: Path) -> None:
    args = ("effective", "tuned", "-n", "team-b", "--kubeconfig", str(kubeconfig))
    plain = ok(invoke(*args)).stdout.splitlines()
    header, row = ok(invoke(*args, "-o", "wide")).stdout.splitlines()
    assert header.split() == [*plain[0].split(), "AUTOSYNC", "PINNED", "REVISION", "RESOURCEVERSIONS", "CLUSTER"]
    report = json.loads(ok(invoke(*args, "-o", "json")).stdout)
    versions = ",".join(hop["resourceVersion"] for hop in report["chain"])
    assert row.split() == [*plain[1].split(), "no", "-", versions, "rt-1"]


def test_effective_name_prints_the_inference_service_as_kubectl_does(kubeconfig: Path) -> None:
    result = ok(invoke("effective", "auto", "-n", "llama-demo", "--kubeconfig", str(kubeconfig), "-o", "name"))
    assert result.stdout == "inferenceservice.ome.io/auto\n"  # no note about automatic selection


def test_tree_name_lists_the_runtime_and_every_object_it_reaches(kubeconfig: Path) -> None:
    result = ok(invoke("tree", "sglang-profile", "--kubeconfig", str(kubeconfig), "-o", "name"))
    assert result.stdout.splitlines() == [
        "clusterservingruntime.ome.io/sglang-profile",
        "clusterservingruntime.ome.io/sglang-h100",
        "servingruntime.ome.io/sglang-llama-3-2-3b",
        "servingruntime.ome.io/sglang-llama-long-context",
        "inferenceservice.ome.io/llama-3-2-3b-instruct",
        "inferenceservice.ome.io/long-context",
    ]
    ancestors = ok(
        invoke(
            "tree", "sglang-h100-tuned", "-n", "team-b", "--ancestors", "--kubeconfig", str(kubeconfig), "-o", "name"
        )
    )
    assert ancestors.stdout.splitlines() == [
        "servingruntime.ome.io/sglang-h100-tuned",
        "servingruntime.ome.io/sglang-profile",
        "clusterservingruntime.ome.io/sglang-h100",
    ]


def test_tree_name_all_clusters_prints_each_object_once(clusters_dir: Path) -> None:
    (clusters_dir / "down.yaml").unlink()
    result = ok(invoke("tree", "sglang-profile", "--all-clusters", "--clusters-dir", str(clusters_dir), "-o", "name"))
    lines = result.stdout.splitlines()
    assert lines[0] == "clusterservingruntime.ome.io/sglang-profile"
    assert len(lines) == len(set(lines)) and "inferenceservice.ome.io/llama-3-2-3b-instruct" in lines


def test_effective_without_a_name_lists_the_namespace_and_with_all_namespaces_every_one(kubeconfig: Path) -> None:
    team_b = ok(invoke("effective", "-n", "team-b", "--kubeconfig", str(kubeconfig)))
    assert [(row["NAME"], row["RUNTIME"]) for row in table(team_b.stdout)] == [
        ("tuned", "sglang-h100-tuned"),
        ("uses-shadow", "sglang-profile"),
    ]
    everywhere = invoke("effective", "-A", "--kubeconfig", str(kubeconfig))
    assert everywhere.exit_code == 1  # two InferenceServices do not resolve: said, and the rest listed
    rows = table(everywhere.stdout)
    assert list(rows[0])[:2] == ["NAMESPACE", "NAME"]
    assert [(row["NAMESPACE"], row["NAME"]) for row in rows] == [
        ("llama-demo", "auto"),
        ("llama-demo", "llama-3-2-3b-instruct"),
        ("llama-demo", "long-context"),
        ("team-b", "tuned"),
        ("team-b", "uses-shadow"),
    ]
    assert [line.split(":")[0] for line in everywhere.stderr.splitlines()] == ["error", "error"]
    assert "llama-demo/broken" in everywhere.stderr and "llama-demo/missing-runtime" in everywhere.stderr
    document = json.loads(invoke("effective", "-A", "--kubeconfig", str(kubeconfig), "-o", "json").stdout)
    assert document["namespace"] is None and len(document["inferenceServices"]) == 5
    assert len(document["errors"]) == 2
    names = invoke("effective", "-A", "--kubeconfig", str(kubeconfig), "-o", "name")
    assert names.stdout.splitlines()[0] == "inferenceservice.ome.io/auto"


def test_effective_refuses_a_name_with_all_namespaces(kubeconfig: Path) -> None:
    result = CliRunner().invoke(
        app, ["runtime", "effective", "tuned", "-A", "--kubeconfig", str(kubeconfig)], prog_name="omectl"
    )
    assert result.exit_code == 2
    assert "an InferenceService is named within one namespace: drop NAME or -A" in result.stderr


# --- the kubectl plugin ------------------------------------------------------------------------------------


@pytest.mark.kubectl
def test_kubectl_ome_runtime_effective_runs_as_a_kubectl_plugin(kubeconfig: Path, tmp_path: Path) -> None:
    binary = kubectl_path()
    plugin_dir = Path(sys.executable).parent
    assert (plugin_dir / "kubectl-ome").is_file()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{plugin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path)
    argv = [binary, "ome", "runtime", "effective", "llama-3-2-3b-instruct", "-n", "llama-demo"]
    proc = subprocess.run([*argv, "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    (row,) = table(proc.stdout)
    assert (row["RUNTIME"], row["KIND"], row["CHAIN"]) == (
        "sglang-llama-3-2-3b",
        "ServingRuntime",
        "sglang-profile,sglang-llama-3-2-3b",
    )


def with_schema_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the API server stores it: the CRD defaults each format's operator and weight (as upstream's)."""
    spec = copy.deepcopy(spec)
    for supported in spec.get("supportedModelFormats") or ():
        for part in ("modelFormat", "modelFramework"):
            if part in supported:
                supported[part] = {"operator": "Equal", "weight": 1, **supported[part]}
    return spec


@pytest.mark.kubectl
def test_kubectl_ome_takes_kubectls_output_and_namespace_habits(
    kubeconfig: Path, clusters_dir: Path, tmp_path: Path
) -> None:
    """`-A`, `-o wide|name` and `-l` reach the plugin as kubectl hands them over, after the plugin's name."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path)

    def kubectl_ome(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([kubectl_path(), "ome", *args], capture_output=True, text=True, env=env, timeout=60)

    names = kubectl_ome("runtime", "effective", "-A", "-o", "name", "--kubeconfig", str(kubeconfig))
    assert names.returncode == 1  # two of them do not resolve (stderr), the others are named
    assert names.stdout.splitlines() == [
        f"inferenceservice.ome.io/{name}"
        for name in ("auto", "llama-3-2-3b-instruct", "long-context", "tuned", "uses-shadow")
    ]
    wide = kubectl_ome("runtime", "effective", "tuned", "-n", "team-b", "-o", "wide", "--kubeconfig", str(kubeconfig))
    assert wide.returncode == 0, wide.stderr
    assert wide.stdout.splitlines()[0].split()[-1] == "CLUSTER" and wide.stdout.splitlines()[1].endswith("rt-1")
    (clusters_dir / "down.yaml").unlink()
    (clusters_dir / "rt-2.yaml").write_text(
        to_yaml(ClusterRegistration(name="rt-2", kubeconfig_path=kubeconfig, context="rt-2", labels={"tier": "gold"}))
    )
    selected = kubectl_ome("fleet", "status", "-l", "tier in (gold)", "-o", "name", "--clusters-dir", str(clusters_dir))
    assert (selected.returncode, selected.stdout) == (0, "cluster/rt-2\n"), selected.stderr
