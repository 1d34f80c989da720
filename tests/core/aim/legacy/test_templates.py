"""A service template's decisions: its model, its discovery Job and result, its status fields and its cache
(omectl/core/aim/legacy/templates.py, discovery.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omectl.core.aim.discovery import DiscoveryResultError
from omectl.core.aim.legacy.discovery import (
    binary_quantity,
    discovery_job_name,
    parse_template_result,
    render_discovery_job,
)
from omectl.core.aim.legacy.templates import (
    already_discovered,
    discovery_spec_hash,
    hardware_summary,
    job_component,
    model_component,
    render_template_cache,
    resolved_hardware,
    spec_profile,
)

PROPAGATE = {"labelPropagation": {"enabled": True, "match": ["team"]}}


def template(kind: str = "AIMServiceTemplate", **spec: Any) -> dict[str, Any]:
    meta = {"name": "qwen-mi300x", "uid": "t-1", "labels": {"team": "ml", "other": "x"}}
    if kind == "AIMServiceTemplate":
        meta["namespace"] = "team"
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "spec": {"modelName": "qwen", **spec},
    }


def model(**spec: Any) -> dict[str, Any]:
    return {"kind": "AIMModel", "metadata": {"name": "qwen", "namespace": "team"}, "spec": spec}


def test_the_model_is_a_reference_that_fails_the_template_while_missing() -> None:
    missing = model_component(template(), None)
    assert (missing.state, missing.reason, missing.message, missing.missing_reference) == (
        "Failed",
        "ReferenceNotFound",
        "AIMModel qwen not found",
        True,
    )
    cluster = model_component(template("AIMClusterServiceTemplate"), None)
    assert (cluster.name, cluster.message) == ("ClusterModel", "AIMClusterModel qwen not found")
    imageless = model_component(template(), model())
    assert (imageless.state, imageless.reason) == ("Failed", "ImageNotSpecified")
    image_failed = [{"type": "ImageMetadataReady", "status": "False"}, {"type": "Ready", "status": "False"}]
    status = {"status": "Failed", "conditions": image_failed}
    failed = model_component(template(), {**model(image="i"), "status": status})
    assert (failed.state, failed.reason) == ("Failed", "ModelFailed")
    assert model_component(template(), model(image="i")).state == "Ready"


@pytest.mark.parametrize(
    ("kind", "found", "failed", "imageless"),
    [
        ("AIMServiceTemplate", "ModelFound", "ModelFailed", "Model does not specify an image"),
        (
            "AIMClusterServiceTemplate",
            "ClusterModelFound",
            "ClusterModelFailed",
            "Cluster model does not specify an image",
        ),
    ],
)
def test_a_cluster_templates_model_component_has_upstreams_cluster_model_reasons(
    kind: str, found: str, failed: str, imageless: str
) -> None:
    """Upstream's GetModelHealth / GetClusterModelHealth: each scope has its own reasons and messages."""
    model_kind = "AIMClusterModel" if "Cluster" in kind else "AIMModel"
    owner = {**model(image="i"), "kind": model_kind}
    ready = model_component(template(kind), owner)
    assert (ready.state, ready.reason, ready.message) == ("Ready", found, f"{model_kind} found with valid image")
    image_failed = [{"type": "ImageMetadataReady", "status": "False"}, {"type": "Ready", "status": "False"}]
    status = {"status": "Degraded", "conditions": image_failed}
    degraded = model_component(template(kind), {**owner, "status": status})
    assert (degraded.state, degraded.reason, degraded.message) == (
        "Degraded",
        failed,
        f"{model_kind} is in Degraded state",
    )
    no_image = model_component(template(kind), {**model(), "kind": model_kind})
    assert (no_image.reason, no_image.message) == ("ImageNotSpecified", imageless)


@pytest.mark.parametrize(
    ("kind", "condition"),
    [("AIMServiceTemplate", "ServiceTemplatesReady"), ("AIMClusterServiceTemplate", "ClusterServiceTemplatesReady")],
)
def test_a_model_failed_only_by_its_templates_does_not_fail_them(kind: str, condition: str) -> None:
    """Upstream's custom-models/nonexistent-image, phase 2: a model Failed only because its templates fail
    (ServiceTemplatesReady=False, its other component conditions True) is ignored, or model and templates would keep
    each other failed (upstream's model-template-only-failure.yaml's conditions)."""
    conditions = [
        {"type": "RuntimeConfigReady", "status": "True"},
        {"type": "ImageMetadataReady", "status": "True"},
        {"type": condition, "status": "False"},
        {"type": "Ready", "status": "False"},
    ]
    owner = {**model(image="i"), "kind": "AIMClusterModel" if "Cluster" in kind else "AIMModel"}
    found = model_component(template(kind), {**owner, "status": {"status": "Failed", "conditions": conditions}})
    assert (found.state, found.reason) == ("Ready", f"{found.name}Found")


def test_the_discovery_job_runs_the_model_image_with_config_env_under_template_env_under_what_it_asks() -> None:
    tpl = template(
        metric="latency",
        precision="fp8",
        profileId="vllm-fp8",
        hardware={"gpu": {"model": "MI300X", "requests": 2}},
        env=[{"name": "A", "value": "template"}, {"name": "AIM_METRIC", "value": "overridden"}],
    )
    config = {"env": [{"name": "A", "value": "config"}, {"name": "B", "value": "config"}], **PROPAGATE}
    job = render_discovery_job(tpl, model(image="ghcr.io/amd/qwen:1", serviceAccountName="sa"), config, "aim-system")
    meta = job["metadata"]
    assert meta["namespace"] == "team" and meta["name"].startswith("discover-qwen-mi300x-")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["args"]) == ("ghcr.io/amd/qwen:1", ["dry-run", "--format=json"])
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (env["A"], env["B"], env["AIM_METRIC"], env["AIM_PRECISION"]) == ("template", "config", "latency", "fp8")
    assert (env["AIM_GPU_MODEL"], env["AIM_GPU_COUNT"], env["AIM_PROFILE_ID"]) == ("MI300X", "2", "vllm-fp8")
    assert env["AIM_DISCOVERY_CONFIGMAP"] == meta["name"]
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "sa"
    assert (job["spec"]["backoffLimit"], job["spec"]["ttlSecondsAfterFinished"]) == (0, 60)
    for labels in (meta["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert labels["aim.eai.amd.com/template"] == "qwen-mi300x" and labels["team"] == "ml"
        assert "other" not in labels
    assert meta["ownerReferences"][0]["kind"] == "AIMServiceTemplate"


def test_a_cluster_templates_job_runs_in_the_operator_namespace_and_a_change_of_input_renames_it() -> None:
    tpl = template("AIMClusterServiceTemplate")
    job = render_discovery_job(tpl, model(image="i:1"), {}, "aim-ops")
    assert job["metadata"]["namespace"] == "aim-ops"
    other = render_discovery_job(tpl, model(image="i:2"), {}, "aim-ops")
    assert other["metadata"]["name"] != job["metadata"]["name"]
    assert len(discovery_job_name({"metadata": {"name": "x" * 80}}, "abcd1234")) == 63


DRY_RUN = [
    {
        "profile": {
            "metadata": {"engine": "vllm", "gpu": "MI300X", "precision": "fp8", "gpu_count": 1, "metric": "latency"},
            "engine_args": {"tensor-parallel-size": 1},
            "env_vars": {"VLLM_USE_V1": "0"},
        },
        "models": [{"name": "org/m", "source": "hf://org/m", "size_gb": 0.5}],
    }
]


def test_upstreams_dry_run_output_becomes_the_profile_and_the_model_sources() -> None:
    found = parse_template_result({"profiles.yaml": json.dumps(DRY_RUN)}, template(), model(image="i"))
    assert found.profile == {
        "metadata": {"engine": "vllm", "gpu": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"},
        "engine_args": {"tensor-parallel-size": 1},
        "env_vars": {"VLLM_USE_V1": "0"},
    }
    assert found.model_sources == [{"modelId": "org/m", "sourceUri": "hf://org/m", "size": "512Mi"}]


def test_omectls_profile_list_is_read_for_the_profile_the_template_names_or_fits() -> None:
    profiles = """\
- id: fp8-latency
  gpu: MI300X
  gpuCount: 1
  precision: fp8
  metric: latency
  engineEnv: {VLLM_TENSOR_PARALLEL_SIZE: "1"}
- id: bf16-throughput
  gpu: MI300X
  gpuCount: 2
  precision: bf16
  metric: throughput
"""
    sources = [{"name": "w", "modelId": "org/m", "sourceUri": "hf://org/m", "size": "1Gi"}]
    qwen = model(image="i", modelSources=sources)
    by_fit = parse_template_result({"profiles.yaml": profiles}, template(metric="throughput"), qwen)
    assert by_fit.profile["metadata"] == {"gpu": "MI300X", "gpuCount": 2, "precision": "bf16", "metric": "throughput"}
    assert by_fit.model_sources == [{"modelId": "org/m", "sourceUri": "hf://org/m", "size": "1Gi"}]
    by_id = parse_template_result({"profiles.yaml": profiles}, template(profileId="fp8-latency"), qwen)
    assert by_id.profile["env_vars"] == {"VLLM_TENSOR_PARALLEL_SIZE": "1"}
    with pytest.raises(DiscoveryResultError, match="no discovered profile fits"):
        parse_template_result({"profiles.yaml": profiles}, template(precision="int4"), qwen)
    with pytest.raises(DiscoveryResultError, match="empty array"):
        parse_template_result({"profiles.yaml": "[]"}, template(), qwen)


@pytest.mark.parametrize(("count", "text"), [(512 * 2**20, "512Mi"), (3 * 2**30, "3Gi"), (1000, "1000"), (0, "0")])
def test_sizes_are_written_as_kubernetes_writes_binary_quantities(count: int, text: str) -> None:
    assert binary_quantity(count) == text


def test_the_spec_gives_the_profile_and_hardware_of_inline_model_sources() -> None:
    tpl = template(
        metric="latency", hardware={"gpu": {"model": "MI300X", "requests": 2, "resourceName": "amd.com/gpu"}}
    )
    assert spec_profile(tpl) == {"metadata": {"gpuCount": 2, "gpu": "MI300X", "metric": "latency"}}
    hardware = resolved_hardware(tpl, None)
    assert hardware == {"gpu": {"requests": 2, "model": "MI300X", "resourceName": "amd.com/gpu"}}
    assert hardware_summary(hardware) == "2 x MI300X"
    discovered = resolved_hardware(tpl, {"metadata": {"gpu": "MI325X", "gpuCount": 4}})
    assert discovered is not None and discovered["gpu"]["model"] == "MI325X", "discovery wins over the spec"
    vram = resolved_hardware(template(hardware={"gpu": {"requests": 1, "minVram": "64Gi"}}), {"metadata": {"gpu": "X"}})
    assert vram == {"gpu": {"requests": 0, "minVram": "64Gi"}}, "a model and a minVram together break the schema"
    cpu = resolved_hardware(template(hardware={"cpu": {"requests": "500m"}}), None)
    assert hardware_summary(cpu) == "CPU" and hardware_summary(None) is None


def test_a_discovery_is_kept_for_the_spec_it_ran_for() -> None:
    qwen = model(image="i:1")
    tpl = template()
    tpl["status"] = {
        "conditions": [{"type": "Discovered", "status": "True"}],
        "discovery": {"specHash": discovery_spec_hash(tpl, qwen)},
    }
    assert already_discovered(tpl, qwen)
    assert not already_discovered(tpl, model(image="i:2")), "a new image is discovered again"


def test_the_job_component_follows_the_jobs_conditions() -> None:
    assert job_component(None).state == "Pending"
    assert job_component({"status": {}}).state == "Progressing"
    complete = {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert job_component(complete).state == "Ready"
    failed = {"status": {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}}
    component = job_component(failed)
    assert (component.state, component.message) == ("Failed", "Discovery job failed: BackoffLimitExceeded")


def test_a_templates_cache_carries_its_caching_env_config_and_labels() -> None:
    tpl = template(runtimeConfigName="team", caching={"enabled": True, "env": [{"name": "HF_TOKEN", "value": "t"}]})
    cache = render_template_cache(tpl, PROPAGATE)
    assert cache["metadata"]["name"] == "qwen-mi300x" and cache["metadata"]["namespace"] == "team"
    assert cache["spec"] == {
        "templateName": "qwen-mi300x",
        "templateScope": "Namespace",
        "env": [{"name": "HF_TOKEN", "value": "t"}],
        "runtimeConfigName": "team",
    }
    assert cache["metadata"]["labels"] == {"team": "ml"}
    assert cache["metadata"]["ownerReferences"][0]["uid"] == "t-1"
