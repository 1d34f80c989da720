"""The AIMModel of a v1alpha1 AIMService's inline custom model (core/aim/custom_models.py), as upstream's aimservice
controller finds or creates it (aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87 internal/aimservice/model.go
resolveCustomModel and buildModelForCustom, model_matching.go FindMatchingCustomModel and GenerateCustomModelName):
when a service has one, upstream's name for its model, which models match it, and the model as stored."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from omectl.core.aim.custom_models import (
    creating_component,
    custom_model_name,
    custom_spec,
    find_custom_model,
    matches,
    render_custom_model,
    resolve_custom_model,
    serving_image,
)
from omectl.core.aim.labels import PROPAGATED_LABELS_ANNOTATION
from omectl.core.aim.versions import carried_annotation, convert

V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
DUMMY = "ghcr.io/silogen/aim-dummy:0.1.10"
TINY = {"modelId": "inline/test-model", "sourceUri": "hf://sshleifer/tiny-gpt2"}
CUSTOM = {"baseImage": DUMMY, "modelSources": [TINY], "hardware": {"gpu": {"requests": 1}}}
PROPAGATION = {"labelPropagation": {"enabled": True, "match": ["team-*"]}}


def service(model: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A service written in v1alpha1, as stored (v1alpha2, its v1alpha1-only fields in the annotation)."""
    meta: dict[str, Any] = {"name": "svc", "namespace": "team", **({"labels": labels} if labels else {})}
    return convert({"apiVersion": V1, "kind": "AIMService", "metadata": meta, "spec": {"model": model, **spec}}, V2)


def model(name: str, image: str, sources: Sequence[dict[str, Any]], status: str | None = None) -> dict[str, Any]:
    """An AIMModel written in v1alpha1, as stored."""
    spec: dict[str, Any] = {"image": image, "modelSources": list(sources), "custom": {"hardware": {}}}
    doc = {"apiVersion": V1, "kind": "AIMModel", "metadata": {"name": name, "namespace": "team"}, "spec": spec}
    stored = convert(doc, V2)
    return {**stored, "status": {"status": status}} if status else stored


def s3(endpoint: str | None, **more: Any) -> dict[str, Any]:
    env = [{"name": "AWS_ENDPOINT_URL", "value": endpoint}] if endpoint is not None else []
    return {"modelId": "shared/s3-model", "sourceUri": "s3://bucket/model", "env": env, **more}


def endpoint_source(endpoint: str) -> dict[str, Any]:
    return s3(endpoint, modelId="shared/s3-endpoint-model", sourceUri="s3://test-bucket/model")


def test_a_service_has_a_custom_model_only_in_v1alpha1_and_when_it_names_none_otherwise() -> None:
    assert custom_spec(service({"custom": CUSTOM})) == CUSTOM
    assert custom_spec(service({"name": "m"})) is None
    written = service({"custom": CUSTOM})
    # a v1alpha2 edit naming a model wins, as upstream looks at name and image first
    assert custom_spec({**written, "spec": {"model": {"name": "m"}}}) is None
    assert custom_spec({**written, "spec": {"model": {"image": " "}}}) == CUSTOM, "a blank image names nothing"
    garbled = {"metadata": {"name": "s", "annotations": {carried_annotation("v1alpha1"): "{not json"}}}
    assert custom_spec(garbled) is None


@pytest.mark.parametrize(
    ("custom", "name"),
    [
        ({"baseImage": DUMMY, "modelSources": [TINY]}, "inline-test-model-2cfa2a00"),
        (
            {"baseImage": DUMMY, "modelSources": [{**TINY, "modelId": "cpu/inline-model"}]},
            "cpu-inline-model-39384b4b",
        ),
        (
            {"baseImage": DUMMY, "modelSources": [{**TINY, "modelId": "shared/dedup-model"}]},
            "shared-dedup-model-a56c4780",
        ),
        (
            {"baseImage": DUMMY, "modelSources": [endpoint_source("https://minio-a.example.com")]},
            "shared-s3-endpoint-model-6b8c5ec3",
        ),
        (
            {"baseImage": DUMMY, "modelSources": [endpoint_source("https://minio-b.example.com")]},
            "shared-s3-endpoint-model-30c85694",
        ),
        ({"baseImage": DUMMY, "modelSources": []}, "custom-model-9bf80281"),
        (
            {
                "baseImage": "b:1",
                "modelSources": [
                    {
                        "modelId": "Org/A_Very-Long.Model.Name-With-Many-Parts-That-Exceeds-The-Limit-of-63-chars",
                        "sourceUri": "hf://o/m<&>",
                    },
                    s3("http://e", modelId="o/two", sourceUri="s3://b/two"),
                ],
            },
            "org-a-very-long-model-name-with-many-parts-that-exceed-12e4e23a",
        ),
    ],
    ids=["inline", "cpu-only", "dedup", "endpoint-a", "endpoint-b", "no-source", "long-two-sources-go-escapes"],
)
def test_upstreams_name_is_the_first_model_id_and_a_hash_of_the_image_and_every_source(
    custom: dict[str, Any], name: str
) -> None:
    """Each expected name is what upstream's GenerateCustomModelName (its naming.go run with Go on the same inputs)
    returns: the first modelId made DNS-safe and cut to fit 63, and the hash of the base image and each source's
    modelId, sourceUri and AWS_ENDPOINT_URL (as Go's JSON writes them, `<&>` escaped)."""
    assert custom_model_name(custom) == name
    assert len(name) <= 63


def test_a_model_matches_by_image_and_each_sources_model_id_uri_and_endpoint_in_order() -> None:
    custom = {"baseImage": DUMMY, "modelSources": [s3("https://a")]}
    assert matches(model("m", DUMMY, [s3("https://a")]), custom)
    # size and other env do not count; the source's v1alpha2 name does not either (read in v1alpha1)
    other_env = s3("https://a", size="10Gi")
    other_env["env"].append({"name": "AWS_DEFAULT_REGION", "value": "us-east-1"})
    assert matches(model("m", DUMMY, [other_env]), custom)
    assert not matches(model("m", DUMMY, [s3("https://b")]), custom), "another S3 endpoint"
    assert not matches(model("m", DUMMY, [s3(None)]), custom)
    assert not matches(model("m", "ghcr.io/silogen/aim-dummy:0.2.0", [s3("https://a")]), custom)
    assert not matches(model("m", DUMMY, [{**s3("https://a"), "sourceUri": "s3://bucket/other"}]), custom)
    assert not matches(model("m", DUMMY, []), custom), "a model without sources is no custom one"
    # an endpoint taken from elsewhere counts as none, as upstream reads only a value
    from_secret = s3(None)
    from_secret["env"] = [{"name": "AWS_ENDPOINT_URL", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    assert matches(model("m", DUMMY, [from_secret]), {**custom, "modelSources": [s3(None)]})


def test_the_first_match_by_name_is_the_model_and_it_stands_as_a_named_model_does() -> None:
    found = [model("zeta", DUMMY, [TINY], "Ready"), model("alpha", DUMMY, [TINY], "Progressing")]
    first = find_custom_model(CUSTOM, [model("other", DUMMY, [s3(None)]), *found])
    assert first is not None and first["metadata"]["name"] == "alpha"
    assert find_custom_model(CUSTOM, []) is None
    asked: list[tuple[str, str, str]] = []

    def by_image(kind: str, namespace: str, image: str) -> list[dict[str, Any]]:
        asked.append((kind, namespace, image))
        return found

    resolution = resolve_custom_model(service({"custom": CUSTOM}), {**CUSTOM, "baseImage": f" {DUMMY} "}, by_image)
    assert asked == [("AIMModel", "team", DUMMY)], "namespaced models only, never a cluster model"
    assert resolution is None, "the untrimmed base image is another image, as upstream compares it"
    resolution = resolve_custom_model(service({"custom": CUSTOM}), CUSTOM, by_image)
    assert resolution is not None and resolution.kind == "AIMModel"
    assert (resolution.component.state, resolution.component.reason) == ("Pending", "ModelNotReady")
    assert resolution.component.message == "AIMModel alpha is not ready yet"
    assert resolution.resolved_ref() is None, "resolvedModel only once Ready"
    assert serving_image(resolution.model) == DUMMY


def test_the_model_is_upstreams_v1alpha1_model_stored_at_v1alpha2_unowned_with_propagated_labels() -> None:
    pull = [{"name": "regcred"}]
    env = [{"name": "HF_TOKEN", "value": "t"}]
    labels = {"team-a": "ml", "other": "x"}
    svc = service(
        {"custom": CUSTOM},
        labels,
        runtimeConfigName="rc",
        env=env,
        imagePullSecrets=pull,
        serviceAccountName="sa",
        template={"allowUnoptimized": True},
    )
    stored = render_custom_model(svc, CUSTOM, "inline-test-model-2cfa2a00", PROPAGATION)
    meta = stored["metadata"]
    assert (stored["apiVersion"], stored["kind"], meta["name"], meta["namespace"]) == (
        V2,
        "AIMModel",
        "inline-test-model-2cfa2a00",
        "team",
    )
    assert meta["labels"] == {
        "aim.eai.amd.com/origin": "auto-generated",
        "aim.eai.amd.com/custom-model": "true",
        "aim.eai.amd.com/service": "svc",
        "team-a": "ml",
    }, "upstream's labels and the service's matching ones"
    assert meta["annotations"][PROPAGATED_LABELS_ANNOTATION] == "team-a"
    assert "ownerReferences" not in meta, "upstream applies it without an owner"
    assert stored["spec"] == {
        "image": DUMMY,
        "runtimeConfigName": "rc",
        "env": env,
        "modelSources": [{**TINY, "name": "inline-test-model"}],
    }
    carried = json.loads(meta["annotations"][carried_annotation("v1alpha1")])
    assert carried == {
        "spec": {"custom": {"hardware": {"gpu": {"requests": 1}}}, "imagePullSecrets": pull, "serviceAccountName": "sa"}
    }
    v1 = convert(stored, V1)["spec"]
    assert v1["custom"] == {"hardware": CUSTOM["hardware"]} and v1["modelSources"] == [TINY]
    assert matches(stored, CUSTOM), "the next service with the same custom model finds it"


def test_a_service_with_nothing_more_writes_a_bare_model_and_waits_for_it() -> None:
    custom = {"baseImage": DUMMY, "modelSources": [TINY], "hardware": {"cpu": {"requests": "500m"}}}
    stored = render_custom_model(service({"custom": custom}), custom, "m", {})
    assert stored["spec"] == {"image": DUMMY, "modelSources": [{**TINY, "name": "inline-test-model"}]}
    assert json.loads(stored["metadata"]["annotations"][carried_annotation("v1alpha1")]) == {
        "spec": {"custom": {"hardware": {"cpu": {"requests": "500m"}}}}
    }
    waiting = creating_component(custom)
    assert (waiting.name, waiting.state, waiting.reason) == ("Model", "Pending", "CreatingModel")
    assert waiting.message == "Custom model will be created for inline/test-model"
    assert creating_component({"baseImage": DUMMY}).message == "Model will be created"
