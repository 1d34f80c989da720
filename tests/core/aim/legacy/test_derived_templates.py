"""The derived AIMServiceTemplate a v1alpha1 service's `spec.overrides` make (core/aim/legacy/derived_templates.py)
and how the service selects it (core/aim/service_templates.py, "Its derived template"): upstream's name (parts,
order, hash), the body built from the base template, and the selection of the base, the template to derive, or the
derived one. Facts from aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87 internal/aimservice/template.go
(generateDerivedTemplateName, buildOverrideNameParts, buildDerivedTemplate), its template_test.go and
internal/utils/naming.go; the hashes were checked against upstream's GenerateDerivedName run with Go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from omectl.core.aim.legacy.derived_templates import (
    derived_template_name,
    is_derived,
    override_name_parts,
    render_derived_template,
)
from omectl.core.aim.service_templates import select_template
from omectl.core.aim.versions import convert

V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
NS = "team"
ST, CST = "AIMServiceTemplate", "AIMClusterServiceTemplate"
OVERRIDES = {"metric": "latency", "precision": "fp8", "hardware": {"gpu": {"model": "MI300X", "requests": 2}}}
DERIVED = "base-ovr-mi300x-2gpu-fp8-latency-6be8"


def service(overrides: Mapping[str, Any] | None = None, *, status: Mapping[str, Any] | None = None, **spec: Any) -> Any:
    """A service written in v1alpha1, as the controller reads it: in v1alpha2, with a uid."""
    v1_spec: dict[str, Any] = {"model": {"name": "m"}, **spec}
    if overrides is not None:
        v1_spec["overrides"] = dict(overrides)
    meta = {"name": "svc", "namespace": NS, "uid": "svc-uid"}
    v2 = convert({"apiVersion": V1, "kind": "AIMService", "metadata": meta, "spec": v1_spec}, V2)
    if status is not None:
        v2["status"] = dict(status)
    return v2


def template(kind: str, name: str, status: str | None = "Ready", *, labels: Any = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if kind == ST:
        meta["namespace"] = NS
    if labels:
        meta["labels"] = labels
    obj: dict[str, Any] = {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": {"modelName": "m", **spec}}
    if status is not None:
        obj["status"] = {"status": status, "profile": {"metadata": {"type": "optimized"}}}
    return obj


class Found:
    """The lookups over some templates: by name, and by `spec.modelName`."""

    def __init__(self, *templates: dict[str, Any]) -> None:
        self.objects = {(t["kind"], t["metadata"].get("namespace", ""), t["metadata"]["name"]): t for t in templates}

    def __call__(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def for_model(self, kind: str, namespace: str, model: str) -> Sequence[Mapping[str, Any]]:
        return [t for (k, ns, _), t in self.objects.items() if (k, ns) == (kind, namespace)]


def select(svc: Any, *templates: dict[str, Any]) -> Any:
    found = Found(*templates)
    return select_template(svc, found, model_name="m", templates=found.for_model, gpu_models=lambda: {"MI300X"})


# --- the name ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "overrides", "name"),
    [
        # upstream's template_test.go cases (it asserts the prefixes; the hashes are GenerateDerivedName's)
        ("base", {"hardware": {"gpu": {"model": "MI300X"}}}, "base-ovr-mi300x-a61e"),
        ("base", {"hardware": {"gpu": {"requests": 4}}}, "base-ovr-4gpu-2da2"),
        ("base", {"hardware": {"gpu": {"model": "MI325X", "requests": 8}}}, "base-ovr-mi325x-8gpu-eeea"),
        ("base", {"precision": "fp16"}, "base-ovr-fp16-fe0f"),
        ("base", {"metric": "latency"}, "base-ovr-latency-817c"),
        (
            "my-template",
            {"hardware": {"gpu": {"model": "MI300X", "requests": 4}}, "precision": "fp8", "metric": "throughput"},
            "my-template-ovr-mi300x-4gpu-fp8-throughput-b295",
        ),
        # the examples of generateDerivedTemplateName's comment (the hash is of the overrides only: "base" and
        # "my-template" with latency share theirs)
        (
            "my-template",
            {"hardware": {"gpu": {"model": "MI325X"}}, "precision": "fp16"},
            "my-template-ovr-mi325x-fp16-ac2b",
        ),
        ("my-template", {"metric": "latency"}, "my-template-ovr-latency-817c"),
        ("my-template", {"hardware": {"gpu": {"model": "MI300X", "requests": 4}}}, "my-template-ovr-mi300x-4gpu-6a48"),
        # a long base is cut (its longest part) to fit 63 characters with the hash
        (
            "llama-3-1-70b-instruct-mi300x-8x-latency-fp8-with-a-long-suffix",
            {"metric": "throughput"},
            "llama-3-1-70b-instruct-mi300x-8x-latency-fp-ovr-throughput-39b8",
        ),
    ],
)
def test_the_derived_name_is_upstreams(base: str, overrides: dict[str, Any], name: str) -> None:
    assert derived_template_name(base, overrides) == name
    assert len(name) <= 63


def test_the_parts_and_hash_inputs_are_in_upstreams_order_gpu_count_precision_metric() -> None:
    overrides = {"metric": "latency", "precision": "fp16", "hardware": {"gpu": {"requests": 8, "model": "MI325X"}}}
    assert override_name_parts(overrides) == (
        ["mi325x", "8gpu", "fp16", "latency"],
        ["gpu", "MI325X", "count", 8, "precision", "fp16", "metric", "latency"],
    )


def test_the_hash_tells_apart_overrides_whose_parts_read_alike() -> None:
    """The hash inputs keep the GPU model as written (the part is lowercased) and the count as a number."""
    assert derived_template_name("t", {"hardware": {"gpu": {"model": "MI300X"}}}) != derived_template_name(
        "t", {"hardware": {"gpu": {"model": "mi300x"}}}
    )
    assert derived_template_name("t", {"precision": "fp16"}) != derived_template_name("t", {"precision": "fp8"})


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"hardware": {"cpu": {"requests": "4"}}},
        {"hardware": {"gpu": {"minVram": "64Gi"}}},
        {"hardware": {"gpu": {"requests": 0}}},
        {"metric": None},
    ],
    ids=["none", "cpu-only", "min-vram-only", "zero-gpus", "null-metric"],
)
def test_overrides_without_a_name_part_derive_no_name(overrides: dict[str, Any]) -> None:
    """Upstream then names the derived template as its base; omectl derives none."""
    assert derived_template_name("base", overrides) is None


# --- the body ------------------------------------------------------------------------------------------------------


def base_template(**spec: Any) -> dict[str, Any]:
    fields = {
        "metric": "throughput",
        "precision": "fp16",
        "hardware": {"gpu": {"model": "MI300X", "requests": 1, "resourceName": "amd.com/gpu"}},
        "runtimeConfigName": "base-config",
        "env": [{"name": "A", "value": "1"}],
        "imagePullSecrets": [{"name": "base-secret"}],
        "resources": {"limits": {"memory": "1Gi"}},
        "modelSources": [{"modelId": "org/m", "sourceUri": "hf://org/m"}],
        "profileId": "p1",
        "caching": {"enabled": False, "env": [{"name": "C", "value": "1"}]},
        **spec,
    }
    return template(ST, "base", **fields)


def test_the_derived_template_is_the_bases_spec_with_the_overrides_owned_by_the_service() -> None:
    derived = render_derived_template(service(OVERRIDES), base_template(), DERIVED, "m")
    assert derived["apiVersion"] == V1 and derived["kind"] == ST
    assert derived["metadata"] == {
        "name": DERIVED,
        "namespace": NS,
        "labels": {
            "app.kubernetes.io/managed-by": "omectl",
            "aim.eai.amd.com/origin": "derived",
            "aim.eai.amd.com/service.name": "svc",
        },
        "ownerReferences": [
            {
                "apiVersion": V2,
                "kind": "AIMService",
                "name": "svc",
                "uid": "svc-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert derived["spec"] == {
        "modelName": "m",
        "metric": "latency",
        "precision": "fp8",
        "hardware": {"gpu": {"model": "MI300X", "requests": 2}},  # replaced whole, as upstream's DeepCopy
        "runtimeConfigName": "base-config",
        "env": [{"name": "A", "value": "1"}],
        "imagePullSecrets": [{"name": "base-secret"}],
        "resources": {"limits": {"memory": "1Gi"}},
        "modelSources": [{"modelId": "org/m", "sourceUri": "hf://org/m"}],
        "profileId": "p1",
        "caching": {"enabled": True},  # the service caches Shared (its default)
    }
    assert is_derived(derived) and not is_derived(base_template())


def test_the_services_config_secrets_resources_and_caching_mode_win_over_the_bases() -> None:
    svc = service(
        {"metric": "latency"},
        runtimeConfigName=" svc-config ",
        imagePullSecrets=[{"name": "svc-secret"}],
        resources={"requests": {"cpu": "2"}},
        caching={"mode": "Dedicated"},
    )
    spec = render_derived_template(svc, base_template(), "d", "m")["spec"]
    assert spec["runtimeConfigName"] == "svc-config", "trimmed"
    assert spec["imagePullSecrets"] == [{"name": "svc-secret"}]
    assert spec["resources"] == {"requests": {"cpu": "2"}}
    assert spec["caching"] == {"enabled": False, "env": [{"name": "C", "value": "1"}]}, "Dedicated: the base's"
    assert (spec["metric"], spec["precision"]) == ("latency", "fp16"), "only the overrides given replace"


def test_a_base_without_a_config_model_or_secrets_gets_the_implicit_default_and_the_resolved_model() -> None:
    """Upstream writes `runtimeConfigName: default`, its implicit default; omectl reads a written `default` as an
    explicit reference (a hard error when missing), so the name is left out, omectl's implicit default."""
    base = template(ST, "base", modelName="", imagePullSecrets=[], runtimeConfigName=" ")
    spec = render_derived_template(service({"precision": "fp8"}), base, "d", "resolved")["spec"]
    assert spec == {"modelName": "resolved", "precision": "fp8", "caching": {"enabled": True}}
    named = render_derived_template(service({"precision": "fp8"}, runtimeConfigName="default"), base, "d", "m")
    assert named["spec"]["runtimeConfigName"] == "default", "the service's own, explicit"


# --- the selection -------------------------------------------------------------------------------------------------


def test_a_ready_namespaced_base_carries_the_derived_template_the_controller_then_selects() -> None:
    svc = service(OVERRIDES, template={"name": "base"})
    selection = select(svc, base_template())
    assert selection.template["metadata"]["name"] == "base" and selection.ready
    assert selection.derive == render_derived_template(svc, base_template(), DERIVED, "m")
    applied = dict(selection.derive, status={"status": "Ready"})
    applied["metadata"] = dict(applied["metadata"], uid="uid-derived")
    derived = selection.derived(applied)
    assert (derived.kind, derived.name, derived.named, derived.derive) == (ST, DERIVED, True, None)
    assert derived.component.message == f"AIMServiceTemplate {DERIVED} is ready"
    assert derived.resolved_ref() == {
        "kind": ST,
        "name": DERIVED,
        "namespace": NS,
        "scope": "Namespace",
        "uid": "uid-derived",
    }
    pending = selection.derived(selection.derive)  # just created: no status yet
    assert (pending.component.state, pending.resolved_ref()) == ("Pending", None)


def test_while_the_base_is_not_ready_or_missing_the_derived_template_is_selected_when_it_exists() -> None:
    svc = service(OVERRIDES, template={"name": "base"})
    derived = template(ST, DERIVED, labels={"aim.eai.amd.com/origin": "derived"})
    for base in (base_template(), None):
        if base is not None:
            base["status"]["status"] = "Progressing"
        selection = select(svc, *([base] if base else []), derived)
        assert (selection.template, selection.derive, selection.config_error) == (derived, None, None)
    waiting = select(svc, dict(base_template(), status={"status": "Progressing"}))
    assert (waiting.template["metadata"]["name"], waiting.derive) == ("base", None), "waits for its base"
    missing = select(svc)
    assert missing.config_error is not None and missing.component.message == 'template "base" not found'


def test_a_cluster_template_a_derived_one_and_overrides_without_a_part_are_used_as_they_are() -> None:
    cluster = template(CST, "base")
    assert select(service(OVERRIDES, template={"name": "base"}), cluster).derive is None
    derived = template(ST, "chosen", labels={"aim.eai.amd.com/origin": "derived"})
    assert select(service(OVERRIDES, template={"name": "chosen"}), derived).derive is None
    cpu_only = service({"hardware": {"cpu": {"requests": "2"}}}, template={"name": "base"})
    assert select(cpu_only, base_template()).derive is None
    assert select(service(None, template={"name": "base"}), base_template()).derive is None


def test_automatic_selection_skips_derived_templates_and_keeps_the_one_resolved() -> None:
    """A derived template is its base with the overrides: listed beside it, every choice would be ambiguous."""
    base = base_template(**OVERRIDES)  # it matches the overrides, as the derived one does
    derived = template(ST, DERIVED, labels={"aim.eai.amd.com/origin": "derived"}, **OVERRIDES)
    selection = select(service(OVERRIDES), base, derived)
    assert selection.template is base and selection.derive is not None
    assert selection.derive["metadata"]["name"] == DERIVED
    ref = {"kind": ST, "name": DERIVED, "namespace": NS, "scope": "Namespace", "uid": f"uid-{DERIVED}"}
    kept = select(service(OVERRIDES, status={"resolvedTemplate": ref}), base, derived)
    assert (kept.template, kept.derive, kept.named) == (derived, None, False)


def test_a_derived_template_another_service_made_or_a_template_not_derived_is_used_as_it_is() -> None:
    svc = service(OVERRIDES, template={"name": "base"})
    theirs = template(ST, DERIVED, labels={"aim.eai.amd.com/origin": "derived"})
    theirs["metadata"]["ownerReferences"] = [{"kind": "AIMService", "uid": "other", "controller": True}]
    selection = select(svc, base_template(), theirs)
    assert (selection.template, selection.derive) == (theirs, None), "never taken over"
    someones = template(ST, DERIVED)
    selection = select(svc, base_template(), someones)
    assert (selection.template, selection.derive) == (someones, None)
    ours = dict(theirs, metadata=dict(theirs["metadata"], ownerReferences=[{"uid": "svc-uid", "controller": True}]))
    assert select(svc, base_template(), ours).derive is not None, "its own is brought up to date"
