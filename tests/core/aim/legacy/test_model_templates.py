"""The AIMServiceTemplates a model written in v1alpha1 makes (omectl/core/aim/legacy/model_templates.py and
template_names.py): upstream's names, the spec fields copied, labels, owner, custom templates, label propagation and
the templates' aggregate. Upstream's models are its pinned e2e YAML (tests/fixtures/upstream/aim, SOURCE), stored as
the API server stores them (converted to v1alpha2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.core.aim.legacy.model_templates import (
    SIMULATED_IMAGE_METADATA,
    expects_templates,
    from_labels,
    image_metadata,
    on_template_path,
    reads_registry,
    render_templates,
    template_conditions,
    template_health,
    unreadable,
    v1alpha1_spec,
)
from omectl.core.aim.legacy.template_names import custom_template_name, go_json, template_name
from omectl.core.aim.versions import convert

UPSTREAM = Path(__file__).parents[3] / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimmodel"
V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
DUMMY = "ghcr.io/silogen/aim-dummy:0.1.10"
MI300X_LATENCY = {"gpuModel": "MI300X", "gpuCount": 1, "metric": "latency", "precision": "fp16", "profileId": "p1"}


def stored(doc: dict[str, Any], namespace: str | None = "team", **annotations: str) -> dict[str, Any]:
    """An upstream v1alpha1 model as the controller reads it: in v1alpha2, with a uid (and `annotations`)."""
    meta = dict(doc["metadata"], uid="model-uid")
    if namespace and doc["kind"] == "AIMModel":
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = {**meta.get("annotations", {}), **annotations}
    return convert(dict(doc, metadata=meta), V2)


def upstream(scenario: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((UPSTREAM / scenario / "model.yaml").read_text())
    return loaded


def with_image_metadata(doc: dict[str, Any], *deployments: dict[str, Any]) -> dict[str, Any]:
    metadata = {"model": {"canonicalName": "org/model", "recommendedDeployments": list(deployments)}}
    return stored(doc, **{SIMULATED_IMAGE_METADATA: json.dumps(metadata)})


def rendered(model: dict[str, Any], config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    spec = v1alpha1_spec(model)
    return render_templates(model, spec, image_metadata(model, spec).value, config or {})


# --- names ------------------------------------------------------------------------------------------------------

# Computed with upstream's GenerateTemplateName / GenerateDerivedName (internal/aimservicetemplate/utils.go,
# internal/utils/naming.go at the pinned commit) run as a standalone Go program on these inputs.
UPSTREAM_NAMES = [
    (
        "test-spec-provided-metadata",
        "this-registry-does-not-exist-12345.invalid/fake-model:v1",
        {"gpuModel": "MI300X", "gpuCount": 1, "metric": "throughput", "precision": "fp16"},
        "this-registry-does-not-exist-12345-inva-1x-mi300x-thr-fp16-7a87",
    ),
    ("test-model-auto-templates", DUMMY, MI300X_LATENCY, "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-a16f"),
    ("test-cluster-model", DUMMY, MI300X_LATENCY, "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-2a3f"),
    (
        "my-model",
        "llama-3-1-70b-instruct",
        {"gpuModel": "mi300x", "gpuCount": 2, "metric": "latency", "precision": "fp8"},
        "llama-3-1-70b-instruct-2x-mi300x-lat-fp8-27aa",
    ),
    ("my-model", "test-model", {}, "test-model-part-452c"),
    ("my-model", "test-model", {"gpuCount": 4}, "test-model-x4-d55d"),
    (
        "m",
        "docker.io/amdenterpriseai/aim-meta-llama-llama-3-1-70b-instruct-very-long-name:0.8.5",
        {"gpuModel": "MI325X", "gpuCount": 8, "metric": "throughput", "precision": "bf16"},
        "docker-io-amdenterpriseai-aim-meta-llam-8x-mi325x-thr-bf16-c6e3",
    ),
    ("m<&>", "img", {"metric": "custom"}, "img-custom-d6c4"),
]


@pytest.mark.parametrize(("model", "image", "deployment", "expected"), UPSTREAM_NAMES)
def test_a_deployments_template_is_named_as_upstream_names_it(
    model: str, image: str, deployment: dict[str, Any], expected: str
) -> None:
    name = template_name(model, image, deployment)
    assert name == expected
    assert len(name) <= 63


@pytest.mark.parametrize(
    ("template", "index", "expected"),
    [
        (None, 0, "test-model-custom-30f7fe27"),
        (
            {
                "name": "fast",
                "profile": {"precision": "fp8", "metric": "latency"},
                "hardware": {"gpu": {"model": "MI300X", "requests": 1}},
            },
            0,
            "test-model-custom-fast-fp8-mi300x-0e2c7138",
        ),
        ({"hardware": {"gpu": {"model": "MI325X", "requests": 2}}}, 1, "test-model-custom-mi325x-4ab372bc"),
        ({"name": "x"}, 2, "test-model-custom-x-ba3938c0"),
    ],
)
def test_a_custom_template_is_named_as_upstream_names_it(
    template: dict[str, Any] | None, index: int, expected: str
) -> None:
    """Computed with upstream's generateCustomTemplateName (internal/aimmodel/template.go) the same way."""
    assert custom_template_name("test-model", template, index) == expected


def test_hash_inputs_are_written_as_gos_json_writes_them() -> None:
    assert go_json("a<b>&c") == '"a\\u003cb\\u003e\\u0026c"'
    assert go_json("é") == '"é"'
    assert go_json(3) == "3"
    assert go_json(None) == "null"
    with pytest.raises(TypeError):
        go_json(True)


def test_two_models_of_one_image_get_distinct_names() -> None:
    assert template_name("a", DUMMY, MI300X_LATENCY) != template_name("b", DUMMY, MI300X_LATENCY)


# --- which models, which metadata ---------------------------------------------------------------------------------


def test_spec_provided_metadata_makes_its_template_without_any_image_read() -> None:
    """Upstream's spec-provided-metadata model: its one recommended deployment is its one template."""
    model = stored(upstream("spec-provided-metadata"))
    assert on_template_path(model), "spec.imageMetadata travels in the v1alpha1 annotation"
    spec = v1alpha1_spec(model)
    metadata = image_metadata(model, spec)
    assert metadata.source == "spec"
    (template,) = render_templates(model, spec, metadata.value, {})
    assert template["apiVersion"] == V1 and template["kind"] == "AIMServiceTemplate"
    assert template["metadata"]["name"] == "this-registry-does-not-exist-12345-inva-1x-mi300x-thr-fp16-7a87"
    assert template["metadata"]["namespace"] == "team"
    assert template["metadata"]["labels"] == {
        "aim.eai.amd.com/model": "test-spec-provided-metadata",
        "aim.eai.amd.com/origin": "auto-generated",
    }
    (owner,) = template["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": V2,
        "kind": "AIMModel",
        "name": "test-spec-provided-metadata",
        "uid": "model-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert template["spec"] == {
        "modelName": "test-spec-provided-metadata",
        "metric": "throughput",
        "precision": "fp16",
        "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
    }


def test_a_model_written_in_v1alpha1_with_only_its_image_is_on_the_template_path_and_a_v1alpha2_one_is_not() -> None:
    doc = upstream("auto-create-templates")
    assert on_template_path(stored(doc)), "written in v1alpha1, even with only fields both versions hold"
    assert rendered(stored(doc)) == [], "nothing says what its image recommends yet"
    v2 = {**stored(doc), "metadata": {"name": "m", "namespace": "team"}}
    assert not on_template_path(v2), "written in v1alpha2: discovery's path"
    model = with_image_metadata(doc, MI300X_LATENCY)
    assert on_template_path(model)
    (template,) = rendered(model)
    assert template["metadata"]["name"] == "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-a16f"
    assert template["spec"]["profileId"] == "p1"


def test_the_deployment_template_copies_pull_secrets_and_service_account_and_needs_both_gpu_fields_for_hardware() -> (
    None
):
    doc = upstream("auto-create-templates")
    doc["spec"] |= {"imagePullSecrets": [{"name": "regcred"}], "serviceAccountName": "aim"}
    model = with_image_metadata(doc, MI300X_LATENCY, {"gpuModel": "MI325X", "metric": "throughput"})
    by_metric = {t["spec"]["metric"]: t for t in rendered(model)}
    assert by_metric["latency"]["spec"] == {
        "modelName": "test-model-auto-templates",
        "imagePullSecrets": [{"name": "regcred"}],
        "serviceAccountName": "aim",
        "metric": "latency",
        "precision": "fp16",
        "profileId": "p1",
        "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
    }
    assert "hardware" not in by_metric["throughput"]["spec"], "a GPU model without a count asks for no hardware"


def test_a_cluster_model_makes_cluster_templates() -> None:
    model = with_image_metadata(upstream("cluster-scoped-templates"), MI300X_LATENCY)
    (template,) = rendered(model)
    assert template["kind"] == "AIMClusterServiceTemplate"
    assert "namespace" not in template["metadata"]
    assert template["metadata"]["name"] == "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-2a3f"
    assert template["metadata"]["labels"]["aim.eai.amd.com/model"] == "test-cluster-model"
    assert template["metadata"]["ownerReferences"][0]["kind"] == "AIMClusterModel"


def test_discovery_flags_decide_what_is_read_and_whether_templates_are_made() -> None:
    doc = upstream("auto-create-templates")
    no_templates = dict(doc, spec={**doc["spec"], "discovery": {"createServiceTemplates": False}})
    model = with_image_metadata(no_templates, MI300X_LATENCY)
    assert expects_templates(v1alpha1_spec(model), image_metadata(model, v1alpha1_spec(model)).value) is False
    assert rendered(model) == []
    no_extract = dict(doc, spec={**doc["spec"], "discovery": {"extractMetadata": False}})
    model = with_image_metadata(no_extract, MI300X_LATENCY)
    assert image_metadata(model, v1alpha1_spec(model)).source == "none", "the image's labels are not read"
    assert expects_templates(v1alpha1_spec(model), None) is None, "unknown while the metadata is"
    spec_given = upstream("spec-provided-metadata")
    spec_given["spec"]["discovery"] = {"extractMetadata": False}
    assert len(rendered(stored(spec_given))) == 1, "metadata given in the spec is used all the same"


def test_unreadable_simulated_metadata_is_reported() -> None:
    model = stored(upstream("auto-create-templates"), **{SIMULATED_IMAGE_METADATA: "{not json"})
    metadata = image_metadata(model, v1alpha1_spec(model))
    assert metadata.value is None and metadata.source == "invalid"
    conditions = {c["type"]: c for c in template_conditions(model, metadata, None, [])}
    assert (conditions["ImageMetadataReady"]["status"], conditions["ImageMetadataReady"]["reason"]) == (
        "False",
        "ImageMetadataInvalid",
    )
    assert conditions["ServiceTemplatesReady"]["reason"] == "AwaitingMetadata"


# --- custom templates ---------------------------------------------------------------------------------------------


def test_custom_templates_are_added_to_the_images_templates() -> None:
    """Upstream's additive-custom-templates model: its discovered template and its two custom ones."""
    model = with_image_metadata(upstream("additive-custom-templates"), MI300X_LATENCY)
    templates = rendered(model)
    assert len(templates) == 3
    by_alias = {t["metadata"]["labels"].get("aim.eai.amd.com/template.alias"): t for t in templates}
    high = by_alias["custom-high-memory"]
    assert high["metadata"]["name"] == custom_template_name(
        "additive-templates-test",
        {"name": "custom-high-memory", "hardware": {"gpu": {"requests": 2, "model": "MI300X"}}},
        0,
    )
    assert high["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
    assert high["spec"] == {
        "modelName": "additive-templates-test",
        "type": "unoptimized",
        "env": [{"name": "MAX_MODEL_LEN", "value": "16384"}],
        "hardware": {"gpu": {"requests": 2, "model": "MI300X"}},
    }
    low = by_alias["custom-low-latency"]["spec"]
    assert (low["type"], low["metric"], low["precision"]) == ("optimized", "latency", "fp16")
    assert low["hardware"] == {"gpu": {"requests": 1, "model": "MI300X"}}
    assert None in by_alias, "the image's own template"


def test_a_custom_models_templates_are_its_custom_templates_with_its_sources_and_merged_hardware() -> None:
    """Upstream's custom-models/template-creation model: six custom templates and no image template."""
    model = stored(upstream("custom-models/template-creation"))
    templates = rendered(model)
    by_alias = {t["metadata"]["labels"]["aim.eai.amd.com/template.alias"]: t["spec"] for t in templates}
    assert set(by_alias) == {
        "default-hardware",
        "multi-gpu",
        "different-gpu",
        "latency-optimized",
        "throughput-optimized",
        "minimal",
    }
    sources = [{"modelId": "sshleifer/tiny-gpt2", "sourceUri": "hf://sshleifer/tiny-gpt2", "size": "100Mi"}]
    assert all(spec["modelSources"] == sources for spec in by_alias.values())
    assert by_alias["default-hardware"]["hardware"] == {"gpu": {"requests": 1, "model": "MI300X"}}
    assert by_alias["multi-gpu"]["hardware"] == {"gpu": {"requests": 2, "model": "MI300X"}}
    assert by_alias["different-gpu"]["hardware"] == {"gpu": {"requests": 1, "model": "MI250X"}}
    assert by_alias["throughput-optimized"]["env"] == [
        {"name": "VLLM_USE_V1", "value": "0"},
        {"name": "MAX_BATCH_SIZE", "value": "256"},
    ]
    assert [by_alias[a]["type"] for a in ("default-hardware", "throughput-optimized", "minimal")] == [
        "unoptimized",
        "preview",
        "unoptimized",
    ]


def test_a_custom_model_listing_no_templates_gets_one_from_its_custom_hardware_and_a_cluster_one_no_env() -> None:
    doc = {
        "apiVersion": V1,
        "kind": "AIMClusterModel",
        "metadata": {"name": "cm"},
        "spec": {
            "image": DUMMY,
            "env": [{"name": "A", "value": "1"}],
            "modelSources": [{"modelId": "org/m", "sourceUri": "hf://org/m"}],
            "custom": {"hardware": {"cpu": {"requests": "4", "limits": "8"}}, "type": "preview"},
        },
    }
    (template,) = rendered(stored(doc))
    assert template["metadata"]["name"] == custom_template_name("cm", None, 0)
    assert template["spec"] == {
        "modelName": "cm",
        "modelSources": [{"modelId": "org/m", "sourceUri": "hf://org/m"}],
        "type": "preview",
        "hardware": {"cpu": {"requests": "4", "limits": "8"}},
        "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "8"}},
    }


# --- label propagation ----------------------------------------------------------------------------------------------


def test_the_models_labels_propagate_to_its_templates_under_its_config() -> None:
    doc = upstream("spec-provided-metadata")
    doc["metadata"]["labels"] = {"org.example/team": "ml", "other": "x", "aim.eai.amd.com/tier": "gold"}
    config = {"labelPropagation": {"enabled": True, "match": ["org.example/*"]}}
    (template,) = rendered(stored(doc), config)
    labels = template["metadata"]["labels"]
    assert labels["org.example/team"] == "ml"
    assert labels["aim.eai.amd.com/tier"] == "gold", "aim.eai.amd.com/ labels always propagate"
    assert "other" not in labels
    assert template["metadata"]["annotations"]["aim.eai.amd.com/propagated-labels"] == (
        "aim.eai.amd.com/tier,org.example/team"
    )
    (off,) = rendered(stored(doc), {"labelPropagation": {"enabled": False, "match": ["org.example/*"]}})
    assert "org.example/team" not in off["metadata"]["labels"]


# --- the aggregate ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expects", "statuses", "state", "reason"),
    [
        (None, [], "Progressing", "AwaitingMetadata"),
        (True, [], "Progressing", "CreatingTemplates"),
        (False, [], "Ready", "NoTemplatesExpected"),
        (True, ["Ready", "Ready"], "Ready", "AllTemplatesReady"),
        (True, ["Failed", "Degraded"], "Failed", "AllTemplatesFailed"),
        (True, ["NotAvailable"], "NotAvailable", "NoTemplatesAvailable"),
        (True, ["Ready", "Failed", "Pending"], "Degraded", "SomeTemplatesDegraded"),
        (True, ["Ready", "Pending"], "Progressing", "TemplatesProgressing"),
        (True, ["Ready", "NotAvailable"], "Ready", "SomeTemplatesReady"),
        (True, [None], "Progressing", "TemplatesProgressing"),
    ],
)
def test_the_templates_aggregate_as_upstream_words_it(
    expects: bool | None, statuses: list[str | None], state: str, reason: str
) -> None:
    health = template_health(expects, statuses)
    assert (health.state, health.reason) == (state, reason)


def test_the_conditions_report_the_metadata_and_the_templates_of_the_model() -> None:
    model = stored(upstream("spec-provided-metadata"))
    metadata = image_metadata(model, v1alpha1_spec(model))
    ready = [{"status": {"status": "Ready"}}]
    conditions = {c["type"]: c for c in template_conditions(model, metadata, True, ready)}
    assert (conditions["ImageMetadataReady"]["status"], conditions["ImageMetadataReady"]["reason"]) == (
        "True",
        "ImageMetadataFound",
    )
    assert (conditions["ServiceTemplatesReady"]["status"], conditions["ServiceTemplatesReady"]["reason"]) == (
        "True",
        "AllTemplatesReady",
    )
    cluster = with_image_metadata(upstream("cluster-scoped-templates"))
    kinds = [c["type"] for c in template_conditions(cluster, image_metadata(cluster, {}), False, [])]
    assert kinds == ["ImageMetadataReady", "ClusterServiceTemplatesReady"]


# --- the image's labels from its registry -------------------------------------------------------------------------


def image_only_v1(**spec: Any) -> dict[str, Any]:
    doc = {"apiVersion": V1, "kind": "AIMModel", "metadata": {"name": "m"}, "spec": {"image": DUMMY, **spec}}
    return stored(doc)


def test_the_registry_is_read_for_a_v1alpha1_models_image_unless_the_metadata_is_given_or_not_extracted() -> None:
    on_path = image_only_v1(serviceAccountName="sa")
    assert reads_registry(on_path, v1alpha1_spec(on_path))
    for model in (
        image_only_v1(serviceAccountName="sa", discovery={"extractMetadata": False}),
        stored(upstream("spec-provided-metadata")),
        with_image_metadata(upstream("auto-create-templates"), MI300X_LATENCY),  # the simulated labels
        {**image_only_v1(), "metadata": {"name": "m", "namespace": "team"}},  # written in v1alpha2: off the path
    ):
        assert not reads_registry(model, v1alpha1_spec(model)), model


def test_labels_read_become_metadata_and_templates_and_failures_their_reason() -> None:
    model = image_only_v1(serviceAccountName="sa")
    spec = v1alpha1_spec(model)
    labels = {
        "com.amd.aim.model.canonicalName": "org/m",
        "com.amd.aim.model.recommendedDeployments": json.dumps([MI300X_LATENCY]),
    }
    metadata = from_labels(labels)
    assert (metadata.source, len(render_templates(model, spec, metadata.value, {}))) == ("image", 1)
    ready = {c["type"]: c for c in template_conditions(model, metadata, True, [])}["ImageMetadataReady"]
    assert (ready["status"], ready["reason"]) == ("True", "ImageMetadataFound")
    broken = from_labels({"com.amd.aim.model.recommendedDeployments": "{"})
    failed = unreadable("ImageNotFound", 'failed to fetch image "x": 404')
    for metadata, reason in ((broken, "ImageMetadataInvalid"), (failed, "ImageNotFound")):
        condition = {c["type"]: c for c in template_conditions(model, metadata, None, [])}["ImageMetadataReady"]
        assert (condition["status"], condition["reason"]) == ("False", reason)
        assert condition["message"] == metadata.error
