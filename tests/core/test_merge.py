"""The spec's merge table, the unset rule, keyed-list order, provenance, and properties of layered merges."""

from __future__ import annotations

import copy
import functools
from collections import Counter
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.core.layering import copy_json
from omectl.core.ome.merge import (
    LIST_MERGE_KEYS,
    MergeResult,
    leaf_paths,
    merge_chain,
    merge_layer,
    merge_spec,
)

PROFILE_YAML = """
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata:
  name: sglang-profile
  annotations:
    ome.io/runtime-profile: "true"
spec:
  disabled: true
  engineConfig:
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
    volumes:
      - name: dshm
        emptyDir:
          medium: Memory
    runner:
      name: ome-container
      image: docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64
      command:
        - python3
        - -m
        - sglang.launch_server
        - --host=0.0.0.0
        - --port=8080
        - --model-path=$(MODEL_PATH)
        - "--served-model-name={{.Name}}"
      ports:
        - containerPort: 8080
          name: http1
          protocol: TCP
      volumeMounts:
        - name: dshm
          mountPath: /dev/shm
      readinessProbe:
        httpGet:
          path: /health_generate
          port: 8080
        periodSeconds: 60
        timeoutSeconds: 200
      startupProbe:
        httpGet:
          path: /health_generate
          port: 8080
        initialDelaySeconds: 60
        periodSeconds: 6
        timeoutSeconds: 30
        failureThreshold: 150
"""

RUNTIME_YAML = """
apiVersion: ome.io/v1beta1
kind: ServingRuntime
metadata:
  name: sglang-llama-3-2-3b
  namespace: llama-demo
  annotations:
    ome.io/inherit-from: sglang-profile
spec:
  disabled: false
  supportedModelFormats:
    - modelFormat:
        name: safetensors
        version: "1.0.0"
      modelFramework:
        name: transformers
        version: "4.45.0.dev0"
      modelArchitecture: LlamaForCausalLM
      autoSelect: false
  modelSizeRange:
    min: 2B
    max: 4B
  engineConfig:
    runner:
      name: ome-container
      args:
        - --tp-size=1
        - --mem-frac=0.9
      resources:
        requests:
          cpu: "10"
          memory: 30Gi
          nvidia.com/gpu: "1"
        limits:
          cpu: "10"
          memory: 30Gi
          nvidia.com/gpu: "1"
"""


def runner(**fields: Any) -> dict[str, Any]:
    return {"engineConfig": {"runner": {"name": "ome-container", **fields}}}


MERGE_TABLE: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "scalar image replaces",
        runner(image="sglang:1"),
        runner(image="sglang:2"),
        runner(image="sglang:2"),
    ),
    (
        "scalar disabled replaces",
        {"disabled": True, "protocolVersions": ["openAI"]},
        {"disabled": False},
        {"disabled": False, "protocolVersions": ["openAI"]},
    ),
    (
        "runner merges field by field",
        runner(image="sglang:1", command=["python3"]),
        runner(args=["--tp-size=1"]),
        runner(image="sglang:1", command=["python3"], args=["--tp-size=1"]),
    ),
    (
        "probe merges field by field",
        runner(readinessProbe={"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 60}),
        runner(readinessProbe={"periodSeconds": 10, "httpGet": {"port": 9090}}),
        runner(readinessProbe={"httpGet": {"path": "/health", "port": 9090}, "periodSeconds": 10}),
    ),
    (
        "modelSizeRange max only keeps parent's min",
        {"modelSizeRange": {"min": "2B", "max": "4B"}},
        {"modelSizeRange": {"max": "8B"}},
        {"modelSizeRange": {"min": "2B", "max": "8B"}},
    ),
    (
        "modelSizeRange one-sided over none stays one-sided",
        {"disabled": True},
        {"modelSizeRange": {"min": "7B"}},
        {"disabled": True, "modelSizeRange": {"min": "7B"}},
    ),
    (
        "nodeSelector merges by key",
        {"engineConfig": {"nodeSelector": {"gpu": "h100", "zone": "a"}}},
        {"engineConfig": {"nodeSelector": {"zone": "b", "kubernetes.io/arch": "amd64"}}},
        {"engineConfig": {"nodeSelector": {"gpu": "h100", "zone": "b", "kubernetes.io/arch": "amd64"}}},
    ),
    (
        "resources requests and limits merge by key",
        runner(resources={"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4"}}),
        runner(resources={"requests": {"cpu": "10", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}),
        runner(
            resources={
                "requests": {"cpu": "10", "memory": "8Gi", "nvidia.com/gpu": "1"},
                "limits": {"cpu": "4", "nvidia.com/gpu": "1"},
            }
        ),
    ),
    (
        "spec labels and annotations merge by key",
        {"labels": {"team": "a", "tier": "gold"}, "annotations": {"x.io/a": "1"}},
        {"labels": {"tier": "silver"}, "annotations": {"x.io/b": "2"}},
        {"labels": {"team": "a", "tier": "silver"}, "annotations": {"x.io/a": "1", "x.io/b": "2"}},
    ),
    (
        "env merges by name, item field by field",
        runner(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        runner(env=[{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]),
        runner(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}]),
    ),
    (
        "env item switching source keeps both",
        runner(env=[{"name": "A", "value": "1"}]),
        runner(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
        runner(env=[{"name": "A", "value": "1", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
    ),
    (
        "volumes merge by name, source field by field",
        {"engineConfig": {"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}},
        {"engineConfig": {"volumes": [{"name": "dshm", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "m"}]}},
        {
            "engineConfig": {
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}, {"name": "m"}]
            }
        },
    ),
    (
        "volume switching source keeps both",
        {"engineConfig": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}]}},
        {"engineConfig": {"volumes": [{"name": "v", "hostPath": {"path": "/data"}}]}},
        {"engineConfig": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}, "hostPath": {"path": "/data"}}]}},
    ),
    (
        "imagePullSecrets merge by name",
        {"engineConfig": {"imagePullSecrets": [{"name": "a"}]}},
        {"engineConfig": {"imagePullSecrets": [{"name": "b"}, {"name": "a"}]}},
        {"engineConfig": {"imagePullSecrets": [{"name": "a"}, {"name": "b"}]}},
    ),
    (
        "containers and initContainers merge by name",
        {
            "containers": [{"name": "c", "image": "i:1"}],
            "engineConfig": {"initContainers": [{"name": "i", "image": "x"}]},
        },
        {"containers": [{"name": "c", "args": ["-v"]}], "engineConfig": {"initContainers": [{"name": "j"}]}},
        {
            "containers": [{"name": "c", "image": "i:1", "args": ["-v"]}],
            "engineConfig": {"initContainers": [{"name": "i", "image": "x"}, {"name": "j"}]},
        },
    ),
    (
        "env inside a container merges by name",
        {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]},
        {"containers": [{"name": "c", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}]},
        {"containers": [{"name": "c", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}]},
    ),
    (
        "ports merge by containerPort",
        runner(ports=[{"containerPort": 8080, "name": "http1", "protocol": "TCP"}]),
        runner(ports=[{"containerPort": 8080, "name": "http"}, {"containerPort": 9090, "name": "metrics"}]),
        runner(
            ports=[
                {"containerPort": 8080, "name": "http", "protocol": "TCP"},
                {"containerPort": 9090, "name": "metrics"},
            ]
        ),
    ),
    (
        "volumeMounts merge by mountPath",
        runner(volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}]),
        runner(volumeMounts=[{"mountPath": "/dev/shm", "readOnly": True}, {"name": "m", "mountPath": "/models"}]),
        runner(
            volumeMounts=[
                {"name": "dshm", "mountPath": "/dev/shm", "readOnly": True},
                {"name": "m", "mountPath": "/models"},
            ]
        ),
    ),
    (
        "topologySpreadConstraints merge by topologyKey",
        {"engineConfig": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}]}},
        {"engineConfig": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}, {"topologyKey": "h"}]}},
        {"engineConfig": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}, {"topologyKey": "h"}]}},
    ),
    (
        "tolerations are replaced whole",
        {"engineConfig": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}, {"key": "b"}]}},
        {"engineConfig": {"tolerations": [{"key": "amd.com/gpu", "operator": "Exists"}]}},
        {"engineConfig": {"tolerations": [{"key": "amd.com/gpu", "operator": "Exists"}]}},
    ),
    (
        "command is replaced whole",
        runner(command=["python3", "-m", "sglang.launch_server"], args=["--a"]),
        runner(command=["vllm", "serve"]),
        runner(command=["vllm", "serve"], args=["--a"]),
    ),
    (
        "args are replaced whole",
        runner(command=["python3"], args=["--a", "--b"]),
        runner(args=["--c"]),
        runner(command=["python3"], args=["--c"]),
    ),
    (
        "supportedModelFormats are replaced whole",
        {"supportedModelFormats": [{"modelFormat": {"name": "safetensors"}, "autoSelect": True, "priority": 2}]},
        {"supportedModelFormats": [{"modelFormat": {"name": "safetensors"}}]},
        {"supportedModelFormats": [{"modelFormat": {"name": "safetensors"}}]},
    ),
    (
        "protocolVersions are replaced whole",
        {"protocolVersions": ["openAI", "openInference-v2"]},
        {"protocolVersions": ["openInference-v1"]},
        {"protocolVersions": ["openInference-v1"]},
    ),
    (
        "atomic list keeps empty strings and nulls inside it",
        runner(args=["--a"]),
        runner(args=["", None]),
        runner(args=["", None]),
    ),
    (
        "keyed lists keep parent order and append child's new items in child order",
        runner(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]),
        runner(env=[{"name": "E", "value": "5"}, {"name": "B", "value": "20"}, {"name": "D", "value": "4"}]),
        runner(
            env=[
                {"name": "A", "value": "1"},
                {"name": "B", "value": "20"},
                {"name": "C", "value": "3"},
                {"name": "E", "value": "5"},
                {"name": "D", "value": "4"},
            ]
        ),
    ),
    (
        "child items repeating a key merge into the first",
        runner(env=[{"name": "A", "value": "1"}]),
        runner(env=[{"name": "B", "value": "2"}, {"name": "B", "valueFrom": {"x": "y"}}]),
        runner(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2", "valueFrom": {"x": "y"}}]),
    ),
    (
        "a value of another shape replaces the parent's",
        {"engineConfig": {"affinity": {"nodeAffinity": {"x": "y"}}, "hostname": "h"}},
        {"engineConfig": {"affinity": "none", "hostname": {"from": "pod"}}},
        {"engineConfig": {"affinity": "none", "hostname": {"from": "pod"}}},
    ),
    (
        "a keyed list replaces a value of another shape, its items read for values field by field",
        {"engineConfig": {"containers": "none"}},
        {"engineConfig": {"containers": [{"args": ["serve"], "name": "main"}]}},
        {"engineConfig": {"containers": [{"args": ["serve"], "name": "main"}]}},
    ),
    (
        "explicit false and 0 override",
        {"disabled": True, "engineConfig": {"minReplicas": 3, "hostIPC": True, "runner": {"name": "r", "tty": True}}},
        {
            "disabled": False,
            "engineConfig": {"minReplicas": 0, "hostIPC": False, "runner": {"name": "r", "tty": False}},
        },
        {
            "disabled": False,
            "engineConfig": {"minReplicas": 0, "hostIPC": False, "runner": {"name": "r", "tty": False}},
        },
    ),
]


@pytest.mark.parametrize(
    ("parent", "child", "expected"), [row[1:] for row in MERGE_TABLE], ids=[r[0] for r in MERGE_TABLE]
)
def test_merge_table_row(parent: dict[str, Any], child: dict[str, Any], expected: dict[str, Any]) -> None:
    assert merge_spec(parent, child) == expected
    assert merge_chain([("parent", parent), ("child", child)]).spec == expected


PARENT_FOR_UNSET = {
    "disabled": True,
    "modelSizeRange": {"min": "2B"},
    "protocolVersions": ["openAI"],
    "engineConfig": {
        "nodeSelector": {"gpu": "h100"},
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        "runner": {
            "name": "ome-container",
            "image": "sglang:1",
            "command": ["python3"],
            "env": [{"name": "A", "value": "1"}],
            "resources": {"requests": {"cpu": "4"}},
        },
    },
}
UNSET_FIELDS = [
    ("disabled",),
    ("modelSizeRange",),
    ("modelSizeRange", "min"),
    ("protocolVersions",),
    ("engineConfig",),
    ("engineConfig", "nodeSelector"),
    ("engineConfig", "nodeSelector", "gpu"),
    ("engineConfig", "tolerations"),
    ("engineConfig", "volumes"),
    ("engineConfig", "runner", "image"),
    ("engineConfig", "runner", "command"),
    ("engineConfig", "runner", "env"),
    ("engineConfig", "runner", "resources"),
    ("engineConfig", "runner", "resources", "requests", "cpu"),
]


@pytest.mark.parametrize("unset", [None, [], {}, ""], ids=["null", "[]", "{}", "empty string"])
@pytest.mark.parametrize("field", UNSET_FIELDS, ids=".".join)
def test_unset_child_value_keeps_parent_value(field: tuple[str, ...], unset: Any) -> None:
    child: dict[str, Any] = {}
    node = child
    for name in field[:-1]:
        node = node.setdefault(name, {})
    node[field[-1]] = copy.copy(unset)
    assert merge_spec(PARENT_FOR_UNSET, child) == PARENT_FOR_UNSET
    result = merge_chain([("parent", PARENT_FOR_UNSET), ("child", child)])
    assert result.spec == PARENT_FOR_UNSET
    assert set(result.provenance.values()) == {"parent"}


@pytest.mark.parametrize("unset", [None, [], {}, ""], ids=["null", "[]", "{}", "empty string"])
def test_unset_item_field_keeps_parent_item_field(unset: Any) -> None:
    parent = runner(env=[{"name": "A", "value": "1"}], ports=[{"containerPort": 8080, "name": "http1"}])
    child = runner(env=[{"name": "A", "value": copy.copy(unset)}], ports=[{"containerPort": 8080, "name": unset}])
    assert merge_spec(parent, child) == parent


def test_unset_values_in_the_root_are_dropped() -> None:
    root = {"disabled": None, "modelSizeRange": {"min": ""}, "engineConfig": {"runner": {"name": "r", "args": []}}}
    result = merge_chain([("root", root)])
    assert result.spec == {"engineConfig": {"runner": {"name": "r"}}}
    assert result.provenance == {"engineConfig.runner.name": "root"}


def test_profile_and_runtime_from_the_spec_merge_to_the_documented_runner() -> None:
    profile, runtime = yaml.safe_load(PROFILE_YAML), yaml.safe_load(RUNTIME_YAML)
    result = merge_chain([("sglang-profile", profile["spec"]), ("sglang-llama-3-2-3b", runtime["spec"])])
    merged_runner = result.spec["engineConfig"]["runner"]
    assert merged_runner["image"] == profile["spec"]["engineConfig"]["runner"]["image"]
    assert merged_runner["command"] + merged_runner["args"] == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--host=0.0.0.0",
        "--port=8080",
        "--model-path=$(MODEL_PATH)",
        "--served-model-name={{.Name}}",
        "--tp-size=1",
        "--mem-frac=0.9",
    ]
    assert result.spec["disabled"] is False
    assert result.spec["engineConfig"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert result.spec["modelSizeRange"] == {"min": "2B", "max": "4B"}


def test_provenance_of_the_spec_example() -> None:
    profile, runtime = yaml.safe_load(PROFILE_YAML), yaml.safe_load(RUNTIME_YAML)
    result = merge_chain([("sglang-profile", profile["spec"]), ("sglang-llama-3-2-3b", runtime["spec"])])
    by = result.provenance
    assert by["engineConfig.runner.image"] == "sglang-profile"
    assert by["engineConfig.runner.command"] == "sglang-profile"
    assert by["engineConfig.volumes[name=dshm].emptyDir.medium"] == "sglang-profile"
    assert by["engineConfig.runner.ports[containerPort=8080].protocol"] == "sglang-profile"
    assert by["engineConfig.runner.volumeMounts[mountPath=/dev/shm].name"] == "sglang-profile"
    assert by["engineConfig.tolerations"] == "sglang-profile"
    assert by["engineConfig.runner.startupProbe.failureThreshold"] == "sglang-profile"
    assert by["engineConfig.runner.args"] == "sglang-llama-3-2-3b"
    assert by["engineConfig.runner.resources.requests.cpu"] == "sglang-llama-3-2-3b"
    assert by['engineConfig.runner.resources.limits["nvidia.com/gpu"]'] == "sglang-llama-3-2-3b"
    assert by["engineConfig.runner.name"] == "sglang-llama-3-2-3b"
    assert by["supportedModelFormats"] == "sglang-llama-3-2-3b"
    assert by["modelSizeRange.max"] == "sglang-llama-3-2-3b"
    assert by["disabled"] == "sglang-llama-3-2-3b"
    assert set(by) == set(leaf_paths(result.spec))
    child_leaves = set(leaf_paths(runtime["spec"]))
    assert {path for path, name in by.items() if name == "sglang-llama-3-2-3b"} == child_leaves
    assert result.layer_fields == {
        "sglang-profile": len(by) - len(child_leaves),
        "sglang-llama-3-2-3b": len(child_leaves),
    }
    assert result.chain == ("sglang-profile", "sglang-llama-3-2-3b")


def test_replacing_a_subtree_moves_its_provenance() -> None:
    parent = {"engineConfig": {"affinity": {"nodeAffinity": {"a": "1", "b": "2"}}}}
    child = {"engineConfig": {"affinity": "none"}}
    result = merge_chain([("p", parent), ("c", child)])
    assert result.provenance == {"engineConfig.affinity": "c"}
    assert result.layer_fields == {"p": 0, "c": 1}


def test_a_child_repeating_a_parent_value_owns_it() -> None:
    result = merge_chain([("p", runner(image="i")), ("c", runner(image="i"))])
    assert result.provenance == {"engineConfig.runner.name": "c", "engineConfig.runner.image": "c"}


def test_leaf_paths_syntax() -> None:
    spec = {
        "engineConfig": {
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            "initContainers": [{"name": "fetch", "args": ["--to", "/models"], "env": [{"name": "B", "value": "2"}]}],
            "runner": {
                "command": ["a", "b"],
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
                "ports": [{"containerPort": 8080}],
                "env": [{"value": "keyless"}, {"name": "A]", "value": "x"}, {"name": "A]", "value": "again"}],
            },
        },
        "labels": {},
    }
    assert leaf_paths(spec) == {
        "engineConfig.volumes[name=dshm].name": "dshm",
        "engineConfig.volumes[name=dshm].emptyDir.medium": "Memory",
        "engineConfig.initContainers[name=fetch].name": "fetch",
        "engineConfig.initContainers[name=fetch].args": ["--to", "/models"],
        "engineConfig.initContainers[name=fetch].env[name=B].name": "B",
        "engineConfig.initContainers[name=fetch].env[name=B].value": "2",
        "engineConfig.runner.command": ["a", "b"],
        'engineConfig.runner.resources.requests["nvidia.com/gpu"]': "1",
        "engineConfig.runner.ports[containerPort=8080].containerPort": 8080,
        "engineConfig.runner.env[0].value": "keyless",
        'engineConfig.runner.env[name="A]"].name': "A]",
        'engineConfig.runner.env[name="A]"].value': "x",
        "engineConfig.runner.env[2].name": "A]",
        "engineConfig.runner.env[2].value": "again",
    }


def test_keyless_items_are_appended_and_addressed_by_index() -> None:
    result = merge_chain([("p", runner(env=[{"name": "A", "value": "1"}])), ("c", runner(env=[{"value": "x"}]))])
    assert result.spec["engineConfig"]["runner"]["env"] == [{"name": "A", "value": "1"}, {"value": "x"}]
    assert result.provenance["engineConfig.runner.env[1].value"] == "c"


def test_merge_layer_rejects_a_name_already_in_the_chain() -> None:
    base = merge_layer(None, "a", {"disabled": True})
    with pytest.raises(ValueError, match="already in the chain"):
        merge_layer(base, "a", {})


def test_merge_chain_needs_a_layer_and_says_so() -> None:
    with pytest.raises(ValueError, match=r"^a chain holds at least one runtime$"):
        merge_chain([])


def test_merge_layer_shares_untouched_subtrees_with_base_only() -> None:
    parent = runner(image="i", command=["python3"])
    parent["engineConfig"]["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    base = merge_layer(None, "p", parent)
    child = runner(args=["--x"])
    result = merge_layer(base, "c", child)
    assert result.spec["engineConfig"]["volumes"] is base.spec["engineConfig"]["volumes"]
    assert result.spec["engineConfig"]["runner"] is not base.spec["engineConfig"]["runner"]
    assert result.spec["engineConfig"]["runner"]["args"] is not child["engineConfig"]["runner"]["args"]
    assert "args" not in base.spec["engineConfig"]["runner"]


def test_copy_json_shares_nothing() -> None:
    value = {"a": [{"b": [1, 2]}, ("t",)], "c": {"d": "e"}}
    copied = copy_json(value)
    assert copied == {"a": [{"b": [1, 2]}, ["t"]], "c": {"d": "e"}}
    copied["a"][0]["b"].append(3)
    copied["c"]["d"] = "f"
    assert value == {"a": [{"b": [1, 2]}, ("t",)], "c": {"d": "e"}}


# --- properties ------------------------------------------------------------------------------------------------

OBJECT_FIELDS = ("runner", "resources", "emptyDir", "modelSizeRange", "nodeSelector", "labels")
ATOMIC_FIELDS = ("command", "args", "tolerations")
KEYED_FIELDS = ("env", "volumes", "ports", "volumeMounts")
SCALAR_FIELDS = ("image", "disabled", "min", "value")
ANY_SHAPE_FIELD = "x"
FIELDS = (*OBJECT_FIELDS, *ATOMIC_FIELDS, *KEYED_FIELDS, *SCALAR_FIELDS, ANY_SHAPE_FIELD)

unset_values: st.SearchStrategy[Any] = st.one_of(st.none(), st.just(""), st.builds(list), st.builds(dict))
scalars = st.one_of(st.booleans(), st.sampled_from([0, 1, 8080]), st.sampled_from(["x", "y", "z"]))


@st.composite
def _objects(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=4))
    return {name: draw(values(name, depth)) for name in names}


@functools.cache
def objects(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    return _objects(depth)


@functools.cache
def values(field: str, depth: int) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = [unset_values, scalars]
    if depth > 0:
        if field in OBJECT_FIELDS or field == ANY_SHAPE_FIELD:
            options.append(objects(depth - 1))
        if field in KEYED_FIELDS:
            options.append(st.lists(items(field, depth - 1), max_size=3))
        if field in ATOMIC_FIELDS or field == ANY_SHAPE_FIELD:
            options.append(st.lists(st.one_of(scalars, unset_values), max_size=3))
    return st.one_of(options)


@functools.cache
def items(field: str, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    key = LIST_MERGE_KEYS[field]
    key_values = st.sampled_from([1, 2, 8080]) if key == "containerPort" else st.sampled_from(["a", "b", "c"])
    return st.builds(lambda rest, value: {**rest, key: value}, objects(depth), st.one_of(key_values, st.none()))


def unset_only(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaf = unset_values if depth == 0 else st.one_of(unset_values, st.deferred(lambda: unset_only(depth - 1)))
    return st.dictionaries(st.sampled_from(FIELDS), leaf, max_size=4)


specs = objects(2)
chains = st.lists(specs, min_size=1, max_size=5).map(lambda layers: [(f"rt-{i}", s) for i, s in enumerate(layers)])


def mutate_everything(value: Any) -> None:
    if isinstance(value, dict):
        for child in list(value.values()):
            mutate_everything(child)
        value["mutated"] = True
    elif isinstance(value, list):
        for child in list(value):
            mutate_everything(child)
        value.append("mutated")


def assert_consistent(result: MergeResult) -> None:
    assert set(result.provenance) == set(leaf_paths(result.spec))
    assert set(result.provenance.values()) <= set(result.chain)
    assert tuple(result.layer_fields) == result.chain
    counted = Counter(result.provenance.values())
    assert result.layer_fields == {name: counted.get(name, 0) for name in result.chain}


@settings(max_examples=120, deadline=None)
@given(chains)
def test_a_chains_provenance_names_each_leaf_of_its_spec_and_only_layers_of_the_chain(
    layers: list[tuple[str, Any]],
) -> None:
    assert_consistent(merge_chain(layers))


# Chains of up to four layers with the spec and the provenance written out: each rule of the module docstring
# across more than one hop (an expectation computed by merging again would agree with any merge, right or wrong).
LITERAL_CHAINS: dict[str, tuple[list[tuple[str, dict[str, Any]]], dict[str, Any], dict[str, str]]] = {
    "a root alone drops its unset values": (
        [("root", {"engineConfig": {"runner": {"name": "c", "image": "", "env": []}}, "disabled": None})],
        {"engineConfig": {"runner": {"name": "c"}}},
        {"engineConfig.runner.name": "root"},
    ),
    "a keyed list item is updated in place by every hop and new items are appended in order": (
        [
            ("root", {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}),
            ("mid", {"env": [{"name": "C", "value": "3"}, {"name": "A", "value": "10"}]}),
            ("leaf", {"env": [{"name": "B", "valueFrom": {"k": "v"}}, {"name": "D", "value": "4"}]}),
        ],
        {
            "env": [
                {"name": "A", "value": "10"},
                {"name": "B", "value": "2", "valueFrom": {"k": "v"}},
                {"name": "C", "value": "3"},
                {"name": "D", "value": "4"},
            ]
        },
        {
            "env[name=A].name": "mid",
            "env[name=A].value": "mid",
            "env[name=B].name": "leaf",
            "env[name=B].value": "root",
            "env[name=B].valueFrom.k": "leaf",
            "env[name=C].name": "mid",
            "env[name=C].value": "mid",
            "env[name=D].name": "leaf",
            "env[name=D].value": "leaf",
        },
    ),
    "an atomic list is replaced whole, a later unset one keeps it": (
        [
            ("root", {"args": ["--a", "--b"], "command": ["python"]}),
            ("mid", {"args": ["--c"]}),
            ("leaf", {"args": [], "command": None}),
        ],
        {"args": ["--c"], "command": ["python"]},
        {"args": "mid", "command": "root"},
    ),
    "false and 0 are values, unset values of every kind are not": (
        [
            ("root", {"disabled": True, "replicas": 3, "labels": {"team": "a"}, "image": "img:1"}),
            ("mid", {"disabled": False, "replicas": 0, "labels": {}, "image": ""}),
            ("leaf", {"labels": {"team": None, "tier": "gold"}}),
        ],
        {"disabled": False, "replicas": 0, "labels": {"team": "a", "tier": "gold"}, "image": "img:1"},
        {"disabled": "mid", "replicas": "mid", "labels.team": "root", "labels.tier": "leaf", "image": "root"},
    ),
    "a value of another shape replaces the parent's, and the next hop merges into it": (
        [
            ("root", {"x": "scalar", "resources": {"limits": {"cpu": "1"}}}),
            ("mid", {"x": {"a": 1}, "resources": "none"}),
            ("mid2", {"x": {"b": 2}}),
            ("leaf", {"resources": {"requests": {"nvidia.com/gpu": "1"}}}),
        ],
        {"x": {"a": 1, "b": 2}, "resources": {"requests": {"nvidia.com/gpu": "1"}}},
        {"x.a": "mid", "x.b": "mid2", 'resources.requests["nvidia.com/gpu"]': "leaf"},
    ),
}


@pytest.mark.parametrize(("layers", "spec", "provenance"), LITERAL_CHAINS.values(), ids=list(LITERAL_CHAINS))
def test_a_chain_merges_to_the_spec_and_provenance_written_out(
    layers: list[tuple[str, dict[str, Any]]], spec: dict[str, Any], provenance: dict[str, str]
) -> None:
    result = merge_chain(layers)
    assert result.spec == spec
    assert result.provenance == provenance
    assert result.chain == tuple(name for name, _ in layers)


def test_a_chain_of_three_merges_root_first_with_each_field_owned_by_its_last_setter() -> None:
    result = merge_chain(
        [
            ("root", {"engineConfig": {"runner": {"name": "c", "image": "img:1", "args": ["--a"]}}, "disabled": True}),
            ("mid", {"engineConfig": {"runner": {"name": "c", "env": [{"name": "X", "value": "1"}]}}}),
            ("leaf", {"engineConfig": {"runner": {"name": "c", "image": "img:2"}}, "disabled": False}),
        ]
    )
    assert result.spec == {
        "engineConfig": {
            "runner": {"name": "c", "image": "img:2", "args": ["--a"], "env": [{"name": "X", "value": "1"}]}
        },
        "disabled": False,
    }
    assert result.provenance == {
        "engineConfig.runner.name": "leaf",
        "engineConfig.runner.image": "leaf",
        "engineConfig.runner.args": "root",
        "engineConfig.runner.env[name=X].name": "mid",
        "engineConfig.runner.env[name=X].value": "mid",
        "disabled": "leaf",
    }
    assert result.chain == ("root", "mid", "leaf")
    assert result.layer_fields == {"root": 1, "mid": 2, "leaf": 3}


# Every list the merge keys, written out here (not read from LIST_MERGE_KEYS, so a key dropped there fails here).
KEYED_LISTS = [
    ("containers", "name"),
    ("initContainers", "name"),
    ("ephemeralContainers", "name"),
    ("env", "name"),
    ("volumes", "name"),
    ("imagePullSecrets", "name"),
    ("schedulingGates", "name"),
    ("resourceClaims", "name"),
    ("ports", "containerPort"),
    ("volumeMounts", "mountPath"),
    ("volumeDevices", "devicePath"),
    ("hostAliases", "ip"),
    ("topologySpreadConstraints", "topologyKey"),
]


def test_the_keyed_lists_are_exactly_these() -> None:
    assert dict(KEYED_LISTS) == dict(LIST_MERGE_KEYS)


@pytest.mark.parametrize(("field", "key"), KEYED_LISTS)
def test_every_keyed_list_merges_item_by_item_on_its_key(field: str, key: str) -> None:
    parent = {field: [{key: "a", "x": 1}, {key: "b", "x": 2}]}
    child = {field: [{key: "c", "x": 3}, {key: "a", "y": 4}]}
    assert merge_spec(parent, child) == {field: [{key: "a", "x": 1, "y": 4}, {key: "b", "x": 2}, {key: "c", "x": 3}]}


@settings(max_examples=100, deadline=None)
@given(specs, unset_only(3))
def test_a_child_of_unset_values_changes_nothing(parent: dict[str, Any], child: dict[str, Any]) -> None:
    base = merge_layer(None, "parent", parent)
    result = merge_layer(base, "child", child)
    assert result.spec == base.spec
    assert result.provenance == base.provenance


def _overlaps(path: str, other: str) -> bool:
    shorter, longer = sorted((path, other), key=len)
    return longer == shorter or longer.startswith((shorter + ".", shorter + "["))


@settings(max_examples=120, deadline=None)
@given(specs, specs)
def test_parent_leaves_survive_unless_the_child_sets_that_path(parent: dict[str, Any], child: dict[str, Any]) -> None:
    base = merge_layer(None, "parent", parent)
    result = merge_layer(base, "child", child)
    assert_consistent(result)
    set_by_child = [path for path, name in result.provenance.items() if name == "child"]
    result_leaves = leaf_paths(result.spec)
    for path, value in leaf_paths(base.spec).items():
        if any(_overlaps(path, other) for other in set_by_child):
            continue
        assert result_leaves.get(path) == value, path
        assert result.provenance[path] == "parent"


@settings(max_examples=100, deadline=None)
@given(chains)
def test_the_result_shares_nothing_mutable_with_the_layers(layers: list[tuple[str, Any]]) -> None:
    before = copy.deepcopy(layers)
    result = merge_chain(layers)
    assert layers == before
    mutate_everything(result.spec)
    assert layers == before


@settings(max_examples=100, deadline=None)
@given(specs, specs)
def test_merge_layer_never_mutates_its_base_or_spec(parent: dict[str, Any], child: dict[str, Any]) -> None:
    base = merge_layer(None, "parent", parent)
    base_before = copy.deepcopy(base)
    child_before = copy.deepcopy(child)
    result = merge_layer(base, "child", child)
    assert base == base_before
    assert child == child_before
    mutate_everything(result.spec)
    assert child == child_before


@settings(max_examples=100, deadline=None)
@given(specs, specs)
def test_merge_spec_shares_nothing_with_either_argument(parent: dict[str, Any], child: dict[str, Any]) -> None:
    parent_before, child_before = copy.deepcopy(parent), copy.deepcopy(child)
    mutate_everything(merge_spec(parent, child))
    assert parent == parent_before
    assert child == child_before


# A child that switches a field to another kind of value: the spec, and every leaf's owner (nothing stale left).
TYPE_CHANGES = [
    # (parent spec, child spec, merged spec, provenance)
    ({"x": {"a": 1, "b": {"c": 2}}}, {"x": "s"}, {"x": "s"}, {"x": "child"}),
    ({"x": {"a": 1}}, {"x": 2.5}, {"x": 2.5}, {"x": "child"}),
    ({"x": {"a": 1}}, {"x": False}, {"x": False}, {"x": "child"}),
    ({"x": ["l"]}, {"x": 5}, {"x": 5}, {"x": "child"}),
    ({"x": "s"}, {"x": {"a": 1}}, {"x": {"a": 1}}, {"x.a": "child"}),
    ({"x": "s"}, {"x": {"a": None, "b": ""}}, {"x": "s"}, {"x": "parent"}),
    ({"x": {"a": 1}}, {"x": ["l"]}, {"x": ["l"]}, {"x": "child"}),
    ({"x": ["l"]}, {"x": {"a": 1}}, {"x": {"a": 1}}, {"x.a": "child"}),
    ({"x": [1, 2]}, {"x": []}, {"x": [1, 2]}, {"x": "parent"}),
    ({"env": [{"name": "A", "value": "1"}]}, {"env": "s"}, {"env": "s"}, {"env": "child"}),
    ({"env": [{"name": "A", "value": "1"}]}, {"env": 3}, {"env": 3}, {"env": "child"}),
    (
        {"env": "s"},
        {"env": [{"name": "A", "value": "1"}]},
        {"env": [{"name": "A", "value": "1"}]},
        {"env[name=A].name": "child", "env[name=A].value": "child"},
    ),
    ({"env": "s"}, {"env": [{"name": "", "value": None}]}, {"env": "s"}, {"env": "parent"}),
    (
        {"env": ["plain"]},
        {"env": [{"name": "A"}]},
        {"env": [{"name": "A"}]},
        {"env[name=A].name": "child"},
    ),
    (
        {"env": [{"name": "A", "value": "1"}]},
        {"env": ["plain"]},
        {"env": ["plain"]},
        {"env": "child"},
    ),
    (
        {"ports": [{"containerPort": 80, "name": "a"}]},
        {"ports": [{"containerPort": 80, "protocol": "TCP"}]},
        {"ports": [{"containerPort": 80, "name": "a", "protocol": "TCP"}]},
        {
            "ports[containerPort=80].containerPort": "child",
            "ports[containerPort=80].name": "parent",
            "ports[containerPort=80].protocol": "child",
        },
    ),
    (
        {"env": [{"name": "a.b", "value": "1"}, {"name": 'q"', "value": "2"}]},
        {"env": [{"name": "a.b", "value": "3"}]},
        {"env": [{"name": "a.b", "value": "3"}, {"name": 'q"', "value": "2"}]},
        {
            "env[name=a.b].name": "child",
            "env[name=a.b].value": "child",
            'env[name="q\\""].name': "parent",
            'env[name="q\\""].value': "parent",
        },
    ),
    ({"x": "s"}, {"x": {"env": [{"name": ""}]}}, {"x": "s"}, {"x": "parent"}),  # an unset keyed list inside
    ({"x": "s"}, {"x": {"l": []}}, {"x": "s"}, {"x": "parent"}),
    ({"x": "s"}, {"x": {"l": [1]}}, {"x": {"l": [1]}}, {"x.l": "child"}),
    ({"env": [{"name": "A", "value": "1"}]}, {"env": {"a": 1}}, {"env": {"a": 1}}, {"env.a": "child"}),
    ({"env": {"a": 1}}, {"env": [{"name": "A"}]}, {"env": [{"name": "A"}]}, {"env[name=A].name": "child"}),
    ({}, {"env": [{"name": ""}]}, {}, {}),  # a keyed list of unset items adds nothing
    (
        {"env": [{"name": "A"}]},
        {"env": [{"name": ""}, {"name": "C"}]},  # an unset item is skipped, the next one still counts
        {"env": [{"name": "A"}, {"name": "C"}]},
        {"env[name=A].name": "parent", "env[name=C].name": "child"},
    ),
    ({"x": {"a": 1}}, {"x": MappingProxyType({"b": 2})}, {"x": {"a": 1, "b": 2}}, {"x.a": "parent", "x.b": "child"}),
    (
        {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
        {"env": [{"name": "A", "value": "x"}, {"name": "B", "value": "y"}]},
        {"env": [{"name": "A", "value": "x"}, {"name": "B", "value": "y"}]},
        {
            "env[name=A].name": "child",
            "env[name=A].value": "child",
            "env[name=B].name": "child",
            "env[name=B].value": "child",
        },
    ),
    (  # items without a usable key ("" or an object) never merge with another: they are appended
        {"env": [{"name": "", "value": "1"}, {"name": {"k": 1}, "value": "2"}]},
        {"env": [{"name": "", "value": "3"}, {"name": {"k": 1}, "value": "4"}]},
        {
            "env": [
                {"value": "1"},  # "" is unset: not kept
                {"name": {"k": 1}, "value": "2"},
                {"value": "3"},
                {"name": {"k": 1}, "value": "4"},
            ]
        },
        {
            "env[0].value": "parent",
            "env[1].name.k": "parent",
            "env[1].value": "parent",
            "env[2].value": "child",
            "env[3].name.k": "child",
            "env[3].value": "child",
        },
    ),
    (
        {"volumes": [{"name": True, "x": 1}]},
        {"volumes": [{"name": True, "y": 2}]},
        {"volumes": [{"name": True, "x": 1, "y": 2}]},
        {"volumes[name=true].name": "child", "volumes[name=true].x": "parent", "volumes[name=true].y": "child"},
    ),
]


@pytest.mark.parametrize(("parent", "child", "spec", "provenance"), TYPE_CHANGES)
def test_a_child_switching_a_fields_kind_leaves_no_stale_owner(
    parent: dict[str, Any], child: dict[str, Any], spec: dict[str, Any], provenance: dict[str, str]
) -> None:
    result = merge_chain([("parent", parent), ("child", child)])
    assert result.spec == spec
    assert result.provenance == provenance
    counted = Counter(provenance.values())
    assert result.layer_fields == {"parent": counted["parent"], "child": counted["child"]}
    assert merge_spec(parent, child) == spec
