"""Rendering InferenceServices: the spec's example end to end, merge rules as they reach the pod, placeholders,
model wiring, deployment modes, ownership and determinism."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.core.ome.merge import merge_spec
from omectl.core.ome.placeholders import PlaceholderError, fill_placeholders
from omectl.core.ome.render import (
    LWS_API_VERSION,
    RenderError,
    component_deployment_modes,
    deployment_mode,
    model_node_selector_key,
    render_hash,
    render_workloads,
)

SAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "samples" / "ome"
MODEL_PATH = "/raid/models/meta/llama-3-2-3b-instruct"

# The spec's expected output of its jsonpath command, line by line.
SPEC_JSONPATH_OUTPUT = """\
docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64
python3
-m
sglang.launch_server
--host=0.0.0.0
--port=8080
--model-path=$(MODEL_PATH)
--served-model-name=llama-3-2-3b-instruct
--tp-size=1
--mem-frac=0.9
"""


def load_sample(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    return document


def cluster_base_model(name: str = "llama-3-2-3b-instruct", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": name},
        "spec": {
            "vendor": "meta",
            "modelFormat": {"name": "safetensors", "version": "1.0.0"},
            "storage": {"path": MODEL_PATH},
            **spec,
        },
    }


def example_isvc() -> dict[str, Any]:
    isvc = load_sample("isvc.yaml")
    isvc["metadata"]["uid"] = "0b4e3c1a-9f2d-4c6e-8a1b-2d3f4e5a6b7c"
    return isvc


def example_merged_spec() -> dict[str, Any]:
    return merge_spec(load_sample("profile.yaml")["spec"], load_sample("runtime.yaml")["spec"])


def bare_isvc(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "svc", "namespace": "ns", "uid": "uid-1", **metadata},
        "spec": spec,
    }


def render(
    isvc: dict[str, Any], merged: dict[str, Any], model: dict[str, Any] | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    options: dict[str, Any] = {"runtime_name": "rt", "runtime_kind": "ServingRuntime", "model": model, **kwargs}
    return render_workloads(isvc, merged, **options)


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, [(o["kind"], o["metadata"]["name"]) for o in objects]
    return matches[0]


def runner_of(pod: dict[str, Any], name: str = "ome-container") -> dict[str, Any]:
    containers: list[dict[str, Any]] = [c for c in pod["containers"] if c["name"] == name]
    assert len(containers) == 1
    return containers[0]


def engine_pod(objects: list[dict[str, Any]], isvc_name: str = "svc") -> dict[str, Any]:
    pod: dict[str, Any] = find(objects, "Deployment", f"{isvc_name}-engine")["spec"]["template"]["spec"]
    return pod


def spec_jsonpath(deployment: dict[str, Any]) -> str:
    """The spec's jsonpath: for each container named ome-container, its image, each command item, each args item."""
    out: list[str] = []
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        if container.get("name") != "ome-container":
            continue
        out.append(f"{container.get('image', '')}\n")
        out.extend(f"{item}\n" for item in container.get("command") or ())
        out.extend(f"{item}\n" for item in container.get("args") or ())
    return "".join(out)


# ----------------------------------------------------------------------------------------------- the spec's example


def test_spec_example_engine_deployment_prints_the_spec_lines() -> None:
    objects = render_workloads(
        example_isvc(),
        example_merged_spec(),
        runtime_name="sglang-llama-3-2-3b",
        runtime_kind="ServingRuntime",
        model=cluster_base_model(),
    )

    deployment = find(objects, "Deployment", "llama-3-2-3b-instruct-engine")
    assert deployment["apiVersion"] == "apps/v1"
    assert deployment["metadata"]["namespace"] == "llama-demo"
    assert spec_jsonpath(deployment) == SPEC_JSONPATH_OUTPUT


def test_spec_example_raw_deployment_gets_a_service_selecting_its_pods() -> None:
    objects = render_workloads(
        example_isvc(),
        example_merged_spec(),
        runtime_name="sglang-llama-3-2-3b",
        runtime_kind="ServingRuntime",
        model=cluster_base_model(),
    )

    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Deployment", "llama-3-2-3b-instruct-engine"),
        ("Service", "llama-3-2-3b-instruct-engine"),
    ]
    deployment, service = objects
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["metadata"]["namespace"] == "llama-demo"
    assert service["spec"]["type"] == "ClusterIP"
    assert all(pod_labels[k] == v for k, v in service["spec"]["selector"].items())
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert service["spec"]["ports"] == [{"name": "http1", "port": 8080, "targetPort": 8080, "protocol": "TCP"}]


def test_spec_example_wires_the_model_into_the_runner_and_the_pod() -> None:
    objects = render_workloads(
        example_isvc(),
        example_merged_spec(),
        runtime_name="sglang-llama-3-2-3b",
        runtime_kind="ServingRuntime",
        model=cluster_base_model(),
    )
    pod = engine_pod(objects, "llama-3-2-3b-instruct")
    runner = runner_of(pod)

    assert {"name": "MODEL_PATH", "value": MODEL_PATH} in runner["env"]
    assert {"name": "PARALLELISM_SIZE", "value": "1"} in runner["env"]
    assert {"name": "llama-3-2-3b-instruct", "mountPath": MODEL_PATH, "readOnly": True} in runner["volumeMounts"]
    assert {"name": "llama-3-2-3b-instruct", "hostPath": {"path": MODEL_PATH}} in pod["volumes"]
    assert pod["nodeSelector"] == {"models.ome.io/clusterbasemodel.llama-3-2-3b-instruct": "Ready"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_spec_example_labels_and_annotations_name_the_child_runtime_and_the_model() -> None:
    objects = render_workloads(
        example_isvc(),
        example_merged_spec(),
        runtime_name="sglang-llama-3-2-3b",
        runtime_kind="ServingRuntime",
        model=cluster_base_model(),
        revision="sglang-llama-3-2-3b-5d9f",
    )
    deployment = find(objects, "Deployment", "llama-3-2-3b-instruct-engine")
    labels = deployment["metadata"]["labels"]
    template = deployment["spec"]["template"]["metadata"]

    assert labels == {
        "base-model-name": "llama-3-2-3b-instruct",
        "base-model-size": "SMALL",
        "base-model-type": "Serving",
        "base-model-vendor": "meta",
        "component": "engine",
        "fine-tuned-serving": "false",
        "ome.io/inferenceservice": "llama-3-2-3b-instruct",
        "serving-runtime": "sglang-llama-3-2-3b",
    }
    assert template["labels"] == {**labels, "app": "llama-3-2-3b-instruct-engine"}
    assert template["annotations"] == {
        "ome.io/base-model-format": "safetensors",
        "ome.io/base-model-format-version": "1.0.0",
        "ome.io/base-model-name": "llama-3-2-3b-instruct",
        "ome.io/base-model-vendor": "meta",
        "ome.io/serving-runtime": "sglang-llama-3-2-3b",
    }
    # The runtime's kind and revision mark the workload object only, so they never roll pods by themselves.
    assert deployment["metadata"]["annotations"] == {
        **template["annotations"],
        "ome.io/runtime-kind": "ServingRuntime",
        "ome.io/runtime-revision": "sglang-llama-3-2-3b-5d9f",
    }


def test_every_object_is_owned_by_the_inference_service() -> None:
    isvc = bare_isvc({"engine": {"runner": {"image": "e"}}, "decoder": {}, "router": {"runner": {"name": "router"}}})
    objects = render(isvc, {"decoderConfig": {"runner": {"name": "ome-container", "image": "d"}}})

    expected = [
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "name": "svc",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert len(objects) > 2
    assert all(o["metadata"]["ownerReferences"] == expected for o in objects)
    assert all(o["metadata"]["namespace"] == "ns" for o in objects)


def test_rollout_settings_default_to_a_surge_of_one_and_yield_to_the_blocks_strategy() -> None:
    default = find(render(bare_isvc({"engine": {"runner": {"image": "e"}}}), {}), "Deployment", "svc-engine")
    strategy = {"type": "Recreate"}
    custom = find(
        render(
            bare_isvc({"engine": {"runner": {"image": "e"}, "minReplicas": 3}}),
            {"engineConfig": {"deploymentStrategy": strategy}},
        ),
        "Deployment",
        "svc-engine",
    )

    assert default["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    assert default["spec"]["revisionHistoryLimit"] == 10
    assert default["spec"]["progressDeadlineSeconds"] == 600
    assert default["spec"]["replicas"] == 1
    assert custom["spec"]["strategy"] == strategy
    assert custom["spec"]["replicas"] == 3


# ----------------------------------------------------------------------------------------------- merge rules in the pod

RUNNER = {"name": "ome-container", "image": "img"}

MERGE_RULES = [
    pytest.param(
        {"runner": {**RUNNER, "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}},
        {"runner": {"env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}},
        lambda pod: runner_of(pod)["env"],
        [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
        id="env-by-name",
    ),
    pytest.param(
        {"runner": {**RUNNER, "ports": [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}]}},
        {"runner": {"ports": [{"containerPort": 8080, "name": "http"}, {"containerPort": 9090, "name": "metrics"}]}},
        lambda pod: runner_of(pod)["ports"],
        [{"containerPort": 8080, "name": "http", "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics"}],
        id="ports-by-containerPort",
    ),
    pytest.param(
        {"runner": {**RUNNER, "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}},
        {"runner": {"volumeMounts": [{"name": "big", "mountPath": "/dev/shm"}, {"name": "c", "mountPath": "/c"}]}},
        lambda pod: runner_of(pod)["volumeMounts"],
        [{"name": "big", "mountPath": "/dev/shm"}, {"name": "c", "mountPath": "/c"}],
        id="volumeMounts-by-mountPath",
    ),
    pytest.param(
        {"runner": {**RUNNER, "resources": {"requests": {"cpu": "10", "memory": "30Gi"}, "limits": {"cpu": "10"}}}},
        {"runner": {"resources": {"requests": {"cpu": "4"}, "limits": {"memory": "8Gi"}}}},
        lambda pod: runner_of(pod)["resources"],
        {"requests": {"cpu": "4", "memory": "30Gi"}, "limits": {"cpu": "10", "memory": "8Gi"}},
        id="resources-per-key",
    ),
    pytest.param(
        {"runner": RUNNER, "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]},
        {"tolerations": [{"key": "c", "operator": "Exists"}]},
        lambda pod: pod["tolerations"],
        [{"key": "c", "operator": "Exists"}],
        id="tolerations-replaced",
    ),
    pytest.param(
        {"runner": RUNNER, "nodeSelector": {"pool": "gpu", "zone": "a"}},
        {"nodeSelector": {"zone": "b", "tier": "prod"}},
        lambda pod: pod["nodeSelector"],
        {"pool": "gpu", "tier": "prod", "zone": "b"},
        id="nodeSelector-by-key",
    ),
    pytest.param(
        {"runner": {**RUNNER, "args": ["--tp-size=1", "--mem-frac=0.9"]}},
        {"runner": {"args": ["--tp-size=2"]}},
        lambda pod: runner_of(pod)["args"],
        ["--tp-size=2"],
        id="isvc-args-replace-runtime-args",
    ),
    pytest.param(
        {"runner": {**RUNNER, "command": ["python3", "-m", "a"]}},
        {"runner": {"command": ["b"]}},
        lambda pod: runner_of(pod)["command"],
        ["b"],
        id="isvc-command-replaces-runtime-command",
    ),
    pytest.param(
        {"runner": RUNNER, "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]},
        {"volumes": [{"name": "dshm", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "x", "emptyDir": {}}]},
        lambda pod: pod["volumes"],
        [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}, {"name": "x", "emptyDir": {}}],
        id="volumes-by-name-empty-dir-kept",
    ),
    pytest.param(
        {"runner": {**RUNNER, "image": "runtime-image", "readinessProbe": {"httpGet": {"path": "/h", "port": 80}}}},
        {"runner": {"image": "isvc-image", "readinessProbe": {"periodSeconds": 5}}},
        lambda pod: {k: runner_of(pod)[k] for k in ("image", "readinessProbe")},
        {"image": "isvc-image", "readinessProbe": {"httpGet": {"path": "/h", "port": 80}, "periodSeconds": 5}},
        id="scalars-replace-objects-merge",
    ),
]


@pytest.mark.parametrize(("runtime_engine", "isvc_engine", "extract", "expected"), MERGE_RULES)
def test_merge_rule_reaches_the_engine_pod(
    runtime_engine: dict[str, Any], isvc_engine: dict[str, Any], extract: Any, expected: Any
) -> None:
    objects = render(bare_isvc({"engine": isvc_engine}), {"engineConfig": runtime_engine})

    assert extract(engine_pod(objects)) == expected


def test_runtime_top_level_node_selector_lies_under_the_components() -> None:
    merged = {"nodeSelector": {"pool": "shared", "zone": "a"}, "engineConfig": {"runner": RUNNER}}
    isvc = bare_isvc({"engine": {"nodeSelector": {"zone": "b"}}, "model": {"name": "llama-3-2-3b-instruct"}})

    pod = engine_pod(render(isvc, merged, cluster_base_model()))

    assert pod["nodeSelector"] == {
        "models.ome.io/clusterbasemodel.llama-3-2-3b-instruct": "Ready",
        "pool": "shared",
        "zone": "b",
    }


def test_runner_joins_a_pod_container_of_its_name_with_args_appended() -> None:
    merged = {
        "engineConfig": {
            "containers": [
                {"name": "sidecar", "image": "side", "args": ["--x={{.Name}}"]},
                {"name": "ome-container", "image": "base", "args": ["--base"]},
            ],
            "runner": {"name": "ome-container", "args": ["--runner"]},
        }
    }

    pod = engine_pod(render(bare_isvc({"engine": {}}), merged))

    assert [c["name"] for c in pod["containers"]] == ["sidecar", "ome-container"]
    assert runner_of(pod)["image"] == "base"
    assert runner_of(pod)["args"] == ["--base", "--runner"]
    # Placeholders are filled only in the runner container.
    assert runner_of(pod, "sidecar")["args"] == ["--x={{.Name}}"]


def test_runtime_legacy_container_resources_fill_a_runner_without_resources() -> None:
    merged = {
        "containers": [{"name": "ome-container", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "1"}}}],
        "engineConfig": {"runner": {**RUNNER, "resources": {"limits": {"cpu": "2"}}}},
    }
    with_resources = bare_isvc({"engine": {"runner": {"resources": {"limits": {"cpu": "3"}}}}})

    filled = runner_of(engine_pod(render(bare_isvc({"engine": {}}), merged)))
    kept = runner_of(engine_pod(render(with_resources, merged)))

    assert filled["resources"] == {"limits": {"cpu": "2", "nvidia.com/gpu": "8"}}
    assert {"name": "PARALLELISM_SIZE", "value": "8"} in filled["env"]
    assert kept["resources"] == {"limits": {"cpu": "3"}}


def test_components_exist_only_when_the_inference_service_declares_them() -> None:
    merged = {
        "engineConfig": {"runner": RUNNER},
        "decoderConfig": {"runner": RUNNER},
        "routerConfig": {"runner": {"name": "router", "image": "r"}},
    }

    objects = render(bare_isvc({"engine": {}}), merged)

    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Deployment", "svc-engine"),
        ("Service", "svc-engine"),
    ]


def test_a_component_missing_from_the_runtime_renders_the_inference_service_block_as_it_is() -> None:
    isvc = bare_isvc({"engine": {"runner": {"name": "ome-container", "image": "own", "args": ["--own"]}}})

    runner = runner_of(engine_pod(render(isvc, {})))

    assert (runner["image"], runner["args"]) == ("own", ["--own"])


# ----------------------------------------------------------------------------------------------- placeholders


def test_placeholders_fill_from_name_namespace_labels_and_annotations() -> None:
    runner = {
        **RUNNER,
        "image": "repo/{{.Namespace}}:v1",
        "args": [
            "--name={{.Name}}",
            "--team={{.Labels.team}}",
            '--owner={{index .Annotations "example.com/owner"}}',
            "--missing={{.Labels.absent}}",
            "--model-path=$(MODEL_PATH)",
        ],
        "env": [{"name": "UID", "value": "{{ .UID }}"}],
    }
    isvc = bare_isvc({"engine": {}}, labels={"team": "search"}, annotations={"example.com/owner": "ana"})

    container = runner_of(engine_pod(render(isvc, {"engineConfig": {"runner": runner}})))

    assert container["image"] == "repo/ns:v1"
    assert container["args"] == [
        "--name=svc",
        "--team=search",
        "--owner=ana",
        "--missing=",
        "--model-path=$(MODEL_PATH)",
    ]
    assert container["env"] == [{"name": "UID", "value": "uid-1"}]


def test_unknown_placeholder_fails_the_render_with_a_clear_error() -> None:
    runner = {**RUNNER, "args": ["--model={{.Model}}"]}

    with pytest.raises(
        RenderError, match=r"placeholders in container ome-container: unknown placeholder \{\{\.Model\}\}"
    ):
        render(bare_isvc({"engine": {}}), {"engineConfig": {"runner": runner}})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{.Generation}}", "3"),
        ("{{.CreationTimestamp}}", "2024-05-06 07:08:09 +0000 UTC"),
        ("{{.Labels}}", "map[a:1 b:2]"),
        ("x-{{- .Name -}} -y", "x-svc-y"),
        ("x  {{- .Name }}  y", "xsvc  y"),
        ("x  {{ .Name -}}  y", "x  svcy"),
        ('{{index .Labels "b"}}', "2"),
        ("{{.DeletionTimestamp}}", ""),
        ("no placeholder $(MODEL_PATH)", "no placeholder $(MODEL_PATH)"),
    ],
)
def test_placeholder_values_print_as_go_prints_object_meta(text: str, expected: str) -> None:
    metadata = {
        "name": "svc",
        "generation": 3,
        "creationTimestamp": "2024-05-06T07:08:09Z",
        "labels": {"b": "2", "a": "1"},
    }

    assert fill_placeholders(text, metadata) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{.name}}", "no field name"),
        ("{{.Name.x}}", "Name is not a map"),
        ("{{if .Name}}x{{end}}", "unsupported placeholder"),
        ("--x={{.Name", "unclosed action"),
    ],
)
def test_invalid_placeholders_are_errors(text: str, message: str) -> None:
    with pytest.raises(PlaceholderError, match=message):
        fill_placeholders(text, {"name": "svc"})


@pytest.mark.parametrize(
    ("metadata", "text", "expected"),
    [
        ({"finalizers": ["a", "b"]}, "{{.Finalizers}}", "[a b]"),
        (
            {"ownerReferences": [{"kind": "X", "controller": True}]},
            "{{.OwnerReferences}}",
            "[map[controller:true kind:X]]",
        ),
        (
            {"ownerReferences": [{"blockOwnerDeletion": False}]},
            "{{.OwnerReferences}}",
            "[map[blockOwnerDeletion:false]]",
        ),
        ({"creationTimestamp": "2024-05-06T09:08:09+02:00"}, "{{.CreationTimestamp}}", "2024-05-06 07:08:09 +0000 UTC"),
        ({"creationTimestamp": "2024-05-06T07:08:09"}, "{{.CreationTimestamp}}", "2024-05-06 07:08:09 +0000 UTC"),
        ({"creationTimestamp": "not a time"}, "{{.CreationTimestamp}}", "not a time"),
        ({"name": "2024-05-06"}, "{{.Name}}", "2024-05-06"),  # a name that parses as a date is still a name
        ({"labels": {"day": "2024-05-06"}}, "{{.Labels.day}}", "2024-05-06"),
        ({}, "{{.Labels.missing}}", ""),
        ({}, '{{index .Annotations "a/b"}}', ""),
    ],
)
def test_fields_print_as_go_prints_them(metadata: dict[str, Any], text: str, expected: str) -> None:
    assert fill_placeholders(text, metadata) == expected


def test_placeholder_errors_name_the_action_and_the_known_fields() -> None:
    with pytest.raises(PlaceholderError) as unknown:
        fill_placeholders("{{.Model}}", {})
    assert str(unknown.value) == (
        "unknown placeholder {{.Model}}: the InferenceService's metadata has no field Model (known: Name, "
        "GenerateName, Namespace, SelfLink, UID, ResourceVersion, Generation, CreationTimestamp, DeletionTimestamp, "
        "DeletionGracePeriodSeconds, Labels, Annotations, OwnerReferences, Finalizers, ManagedFields)"
    )
    with pytest.raises(PlaceholderError) as not_a_map:
        fill_placeholders('{{index .Name "x"}}', {"name": "svc"})
    assert str(not_a_map.value) == (
        'invalid placeholder {{index .Name "x"}}: Name is not a map of labels or annotations'
    )


# ----------------------------------------------------------------------------------------------- model


def test_inference_service_without_model_gets_no_model_path_volume_or_model_labels() -> None:
    isvc = example_isvc()
    del isvc["spec"]["model"]

    objects = render_workloads(
        isvc, example_merged_spec(), runtime_name="sglang-llama-3-2-3b", runtime_kind="ServingRuntime", model=None
    )
    deployment = find(objects, "Deployment", "llama-3-2-3b-instruct-engine")
    pod = deployment["spec"]["template"]["spec"]
    runner = runner_of(pod)

    assert "MODEL_PATH" not in [e["name"] for e in runner.get("env", [])]
    assert [m["mountPath"] for m in runner["volumeMounts"]] == ["/dev/shm"]
    assert [v["name"] for v in pod["volumes"]] == ["dshm"]
    assert "nodeSelector" not in pod
    assert not any(k.startswith("base-model") for k in deployment["metadata"]["labels"])
    assert "--model-path=$(MODEL_PATH)" in runner["command"]


def test_base_model_node_selector_and_category_label() -> None:
    model = cluster_base_model("m")
    model["kind"] = "BaseModel"
    model["metadata"] = {"name": "m", "namespace": "ns", "annotations": {"models.ome.io/category": "LARGE"}}
    isvc = bare_isvc({"engine": {}, "model": {"name": "m"}})

    deployment = find(render(isvc, {"engineConfig": {"runner": RUNNER}}, model), "Deployment", "svc-engine")

    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"models.ome.io/ns.basemodel.m": "Ready"}
    assert deployment["metadata"]["labels"]["base-model-size"] == "LARGE"


def test_model_injection_is_skipped_when_the_inference_service_injects_the_model() -> None:
    isvc = bare_isvc({"engine": {}, "model": {"name": "llama-3-2-3b-instruct"}})
    isvc["metadata"]["annotations"] = {"ome.io/inject-model-init": "true"}

    runner = runner_of(engine_pod(render(isvc, {"engineConfig": {"runner": RUNNER}}, cluster_base_model())))

    assert "env" not in runner
    assert "volumeMounts" not in runner


def test_long_model_names_are_hashed_into_a_valid_label_key() -> None:
    name = "a-very-long-model-name-that-does-not-fit-into-a-label-key"
    key = model_node_selector_key("ClusterBaseModel", "", name)
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    prefix, _, label_name = key.partition("/")

    assert prefix == "models.ome.io"
    assert label_name == f"clusterbasemodel.{digest}-{name[-(32 - 9) :]}"
    assert len(label_name) <= 49


# ----------------------------------------------------------------------------------------------- deployment modes

MULTI_NODE_RUNTIME = {
    "engineConfig": {
        "leader": {
            "hostNetwork": True,
            "runner": {"name": "ome-container", "image": "lead", "resources": {"limits": {"nvidia.com/gpu": "8"}}},
        },
        "worker": {
            "size": 2,
            "runner": {"name": "ome-container", "image": "work", "resources": {"limits": {"nvidia.com/gpu": "8"}}},
        },
    }
}


@pytest.mark.parametrize(
    ("merged", "isvc_spec", "expected"),
    [
        ({}, {"engine": {}}, {"engine": "RawDeployment"}),
        (MULTI_NODE_RUNTIME, {"engine": {}}, {"engine": "MultiNode"}),
        ({}, {"engine": {"minReplicas": 0}}, {"engine": "Serverless"}),
        (
            {"engineConfig": {"annotations": {"ome.io/deploymentMode": "MultiNode"}}},
            {"engine": {}},
            {"engine": "MultiNode"},
        ),
        (
            {"engineConfig": {"annotations": {"ome.io/deploymentMode": "PDDisaggregated"}}},
            {"engine": {}},
            {"engine": "RawDeployment"},
        ),
        (
            {},
            {"engine": {"minReplicas": 0}, "decoder": {"worker": {"size": 1}}, "router": {"minReplicas": 0}},
            {"engine": "RawDeployment", "decoder": "MultiNode", "router": "Serverless"},
        ),
    ],
)
def test_component_deployment_modes_follow_the_merged_blocks(
    merged: dict[str, Any], isvc_spec: dict[str, Any], expected: dict[str, str]
) -> None:
    assert component_deployment_modes(merged, bare_isvc(isvc_spec)) == expected


@pytest.mark.parametrize(
    ("isvc_spec", "expected"),
    [
        ({"engine": {}}, "RawDeployment"),
        ({"engine": {}, "decoder": {}}, "PDDisaggregated"),
        ({"engine": {"worker": {"size": 1}}}, "MultiNode"),
    ],
)
def test_deployment_mode_of_the_inference_service(isvc_spec: dict[str, Any], expected: str) -> None:
    assert deployment_mode({}, bare_isvc(isvc_spec)) == expected


def test_multi_node_renders_a_leader_worker_set_with_group_size_workers_plus_one() -> None:
    isvc = bare_isvc({"engine": {"minReplicas": 2}, "model": {"name": "llama-3-2-3b-instruct"}})

    objects = render(isvc, MULTI_NODE_RUNTIME, cluster_base_model())
    lws = find(objects, "LeaderWorkerSet", "lws-svc-engine")
    template = lws["spec"]["leaderWorkerTemplate"]
    leader, worker = template["leaderTemplate"], template["workerTemplate"]

    assert lws["apiVersion"] == LWS_API_VERSION == "leaderworkerset.x-k8s.io/v1"
    assert template["size"] == 3
    assert lws["spec"]["replicas"] == 2
    assert not [o for o in objects if o["kind"] == "Deployment"]
    assert runner_of(leader["spec"])["image"] == "lead"
    assert runner_of(worker["spec"])["image"] == "work"
    assert leader["spec"]["hostNetwork"] is True
    assert "hostNetwork" not in worker["spec"]
    assert leader["metadata"]["labels"]["app"] == "svc-engine"
    assert leader["metadata"]["labels"]["ray.io/node-type"] == "head"
    for pod in (leader["spec"], worker["spec"]):
        assert {"name": "PARALLELISM_SIZE", "value": "24"} in runner_of(pod)["env"]
        assert {"name": "MODEL_PATH", "value": MODEL_PATH} in runner_of(pod)["env"]
    service = find(objects, "Service", "svc-engine")
    assert service["spec"]["selector"] == {"app": "svc-engine", "ray.io/node-type": "head"}


def test_multi_node_without_a_sized_worker_is_refused() -> None:
    merged = {"engineConfig": {"leader": {"runner": RUNNER}}}

    with pytest.raises(RenderError, match=r"worker must be defined and worker\.size must be greater than 0") as info:
        render(bare_isvc({"engine": {}}), merged)
    assert info.value.reason == "DeploymentModeError"


def test_pd_disaggregated_renders_engine_and_decoder_and_the_router_when_declared() -> None:
    merged = {
        "engineConfig": {"runner": {**RUNNER, "image": "prefill"}},
        "decoderConfig": {"runner": {**RUNNER, "image": "decode"}},
        "routerConfig": {"runner": {"name": "router", "image": "rt"}, "config": {"POLICY": "rr", "A": "1"}},
    }
    with_router = bare_isvc({"engine": {}, "decoder": {}, "router": {}, "model": {"name": "llama-3-2-3b-instruct"}})
    without_router = bare_isvc({"engine": {}, "decoder": {}})

    objects = render(with_router, merged, cluster_base_model())
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects]
    router_pod = find(objects, "Deployment", "svc-router")["spec"]["template"]["spec"]
    router = runner_of(router_pod, "router")

    assert kinds == [
        ("Deployment", "svc-engine"),
        ("Service", "svc-engine"),
        ("Deployment", "svc-decoder"),
        ("Service", "svc-decoder"),
        ("ServiceAccount", "svc-router"),
        ("Role", "svc-router"),
        ("RoleBinding", "svc-router"),
        ("Deployment", "svc-router"),
        ("Service", "svc-router"),
    ]
    assert runner_of(engine_pod(objects))["image"] == "prefill"
    decoder = find(objects, "Deployment", "svc-decoder")
    assert runner_of(decoder["spec"]["template"]["spec"])["image"] == "decode"
    assert decoder["metadata"]["labels"]["component"] == "decoder"
    assert router_pod["serviceAccountName"] == "svc-router"
    assert router["env"] == [{"name": "A", "value": "1"}, {"name": "POLICY", "value": "rr"}]
    assert "nodeSelector" not in router_pod
    assert [o["metadata"]["name"] for o in render(without_router, merged) if o["kind"] == "Deployment"] == [
        "svc-engine",
        "svc-decoder",
    ]


# ----------------------------------------------------------------------------------------------- invalid combinations


def test_inference_service_without_engine_is_refused() -> None:
    with pytest.raises(RenderError, match=r"^engine component is required$") as info:
        render(bare_isvc({"decoder": {}}), {"engineConfig": {"runner": RUNNER}})
    assert info.value.reason == "DeploymentModeError"


def test_serverless_component_is_rejected_with_its_own_reason() -> None:
    with pytest.raises(RenderError, match=r"Serverless .* needs Knative Serving") as info:
        render(bare_isvc({"engine": {"minReplicas": 0}}), {"engineConfig": {"runner": RUNNER}})
    assert info.value.reason == "ServerlessModeRejected"


@pytest.mark.parametrize(
    ("isvc", "merged", "model", "message"),
    [
        (bare_isvc({"engine": {}}), {}, None, "no containers found in pod spec and no runner spec provided"),
        (
            bare_isvc({"engine": {}, "model": {"name": "m"}}),
            {"engineConfig": {"runner": RUNNER}},
            None,
            "names model m",
        ),
        (
            bare_isvc({"engine": {}, "model": {"name": "m"}}),
            {"engineConfig": {"runner": RUNNER}},
            cluster_base_model(),
            "not llama",
        ),
        (bare_isvc({"engine": {}}), {"engineConfig": {"runner": RUNNER}}, cluster_base_model(), "has no spec.model"),
        (
            {"metadata": {"name": "svc", "namespace": "ns"}, "spec": {"engine": {}}},
            {"engineConfig": {"runner": RUNNER}},
            None,
            "no metadata.uid",
        ),
    ],
)
def test_invalid_combinations_raise_render_errors(
    isvc: dict[str, Any], merged: dict[str, Any], model: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(RenderError, match=message):
        render(isvc, merged, model)


def test_unknown_runtime_kind_is_refused() -> None:
    with pytest.raises(RenderError, match="runtime kind must be one of"):
        render(bare_isvc({"engine": {}}), {"engineConfig": {"runner": RUNNER}}, runtime_kind="Runtime")


# ----------------------------------------------------------------------------------------------- determinism


def test_rendering_twice_gives_equal_objects_and_hashes_and_leaves_inputs_alone() -> None:
    isvc, merged, model = example_isvc(), example_merged_spec(), cluster_base_model()
    inputs = copy.deepcopy((isvc, merged, model))
    options: dict[str, Any] = {"runtime_name": "sglang-llama-3-2-3b", "runtime_kind": "ServingRuntime", "model": model}

    first = render_workloads(isvc, merged, **options)
    first[0]["spec"]["template"]["spec"]["containers"][0]["args"].append("--mutated")
    first = render_workloads(isvc, merged, **options)
    second = render_workloads(isvc, merged, **options)

    assert first == second
    assert render_hash(first) == render_hash(second)
    assert (isvc, merged, model) == inputs


def test_render_hash_ignores_key_order_and_sees_any_change() -> None:
    objects = render(bare_isvc({"engine": {}}), {"engineConfig": {"runner": RUNNER}})
    reordered = [dict(reversed(list(o.items()))) for o in objects]
    changed = render(bare_isvc({"engine": {"runner": {"args": ["--x"]}}}), {"engineConfig": {"runner": RUNNER}})

    assert render_hash(reordered) == render_hash(objects)
    assert render_hash(changed) != render_hash(objects)
    assert len(render_hash(objects)) == 64


def test_runtime_revision_changes_the_workload_but_not_its_pods() -> None:
    isvc, merged = bare_isvc({"engine": {}}), {"engineConfig": {"runner": RUNNER}}

    one = find(render(isvc, merged, revision="rt-1"), "Deployment", "svc-engine")
    two = find(render(isvc, merged, revision="rt-2"), "Deployment", "svc-engine")

    assert one["metadata"]["annotations"]["ome.io/runtime-revision"] == "rt-1"
    assert one["spec"]["template"] == two["spec"]["template"]
    assert render_hash([one]) != render_hash([two])


def test_inference_service_annotations_reach_pods_but_not_the_dropped_or_pod_only_ones_on_services() -> None:
    annotations = {
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "prometheus.io/scrape": "true",
        "team.example.com/owner": "ana",
        "ome.io/service-type": "NodePort",
    }
    isvc = bare_isvc({"engine": {"annotations": {"team.example.com/owner": "bo"}}}, annotations=annotations)

    objects = render(isvc, {"engineConfig": {"runner": RUNNER}})
    pod_annotations = find(objects, "Deployment", "svc-engine")["spec"]["template"]["metadata"]["annotations"]
    service = find(objects, "Service", "svc-engine")

    assert pod_annotations == {
        "ome.io/service-type": "NodePort",
        "ome.io/serving-runtime": "rt",
        "prometheus.io/scrape": "true",
        "team.example.com/owner": "bo",
    }
    assert "prometheus.io/scrape" not in service["metadata"]["annotations"]
    assert service["spec"]["type"] == "NodePort"


def test_a_timestamp_prints_in_utc_whatever_the_machines_zone() -> None:
    import os
    import time

    saved = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"  # +05:30: a naive or converted time would show it
    time.tzset()
    try:
        naive = fill_placeholders("{{.CreationTimestamp}}", {"creationTimestamp": "2024-05-06T07:08:09"})
        offset = fill_placeholders("{{.CreationTimestamp}}", {"creationTimestamp": "2024-05-06T09:08:09+02:00"})
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()
    assert naive == offset == "2024-05-06 07:08:09 +0000 UTC"
