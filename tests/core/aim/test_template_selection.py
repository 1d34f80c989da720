"""Upstream's automatic template selection (core/aim/template_selection.py, through service_templates.select_template)
for a service written in v1alpha1 that names no template: the candidates of the resolved model, upstream's filters
(availability, optimization unless allowed, overrides, GPUs on the Nodes), the namespaced preference, the preference
ranking with its tie (ambiguity), and what each outcome reports. Facts from aim-engine
9223504d74b01fec2e99d250933ea2884aef3b87 internal/aimservice/selection.go and its selection_test.go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from omectl.core.aim.service_templates import select_template
from omectl.core.aim.status import roll_up
from tests.core.aim.test_service_templates import CONFIG_READY, NS, Templates, service

ST, CST = "AIMServiceTemplate", "AIMClusterServiceTemplate"
MI300X = frozenset({"MI300X"})


def template(
    kind: str,
    name: str,
    *,
    status: str = "Ready",
    type_: str | None = "optimized",
    gpu: str | None = "MI300X",
    metric: str | None = None,
    precision: str | None = None,
    model: str = "m",
    count: int = 1,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if kind == ST:
        meta["namespace"] = NS
    spec: dict[str, Any] = {"modelName": model}
    if gpu is not None:
        spec["hardware"] = {"gpu": {"model": gpu, "requests": count}}
    profile: dict[str, Any] = {}
    for key, value in (("type", type_), ("metric", metric), ("precision", precision)):
        if value is not None:
            profile[key] = value
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": meta,
        "spec": spec,
        "status": {"status": status},
    }
    if type_ is not None:
        obj["status"]["profile"] = {"metadata": profile}
    return obj


class ForModel(Templates):
    """The lookups over some templates: by name, and by `spec.modelName`."""

    def for_model(self, kind: str, namespace: str, model: str) -> Sequence[Mapping[str, Any]]:
        return [
            t
            for (k, ns, _), t in reversed(self.objects.items())  # any order: the selection sorts by name
            if k == kind and ns == namespace and t["spec"]["modelName"] == model
        ]


def select(
    *templates: dict[str, Any], gpus: frozenset[str] = MI300X, status: Mapping[str, Any] | None = None, **spec: Any
) -> Any:
    found = ForModel(*templates)
    svc = service(status=status, **spec)
    return select_template(svc, found, model_name="m", templates=found.for_model, gpu_models=lambda: gpus)


def chosen(selection: Any) -> tuple[str, str] | None:
    assert selection is not None
    if selection.template is None:
        return None
    return selection.kind, selection.template["metadata"]["name"]


def test_a_single_ready_optimized_template_is_selected_and_resolved_like_a_named_one() -> None:
    selection = select(template(ST, "t"), template(ST, "other-model", model="x"))
    assert chosen(selection) == (ST, "t")
    assert selection.ready and not selection.named and selection.config_error is None
    assert selection.resolved_ref() == {"kind": ST, "name": "t", "namespace": NS, "scope": "Namespace", "uid": "uid-t"}
    assert selection.component.message == "AIMServiceTemplate t is ready"


def test_no_template_for_the_model_holds_a_v1alpha1_service_and_is_no_selection_for_a_v1alpha2_one() -> None:
    """Upstream's frozen template-not-found: a service written in v1alpha1 waits for a template of its model; a
    v1alpha2 service is served from its model alone (no selection); no model selects nothing."""
    selection = select(template(ST, "t", model="x"))
    assert selection is not None and selection.template is None and selection.config_error is None
    component = selection.component
    assert (component.state, component.reason, component.message) == (
        "Pending",
        "TemplateNotFound",
        'No templates found for model "m"',
    )
    found = ForModel(template(ST, "t", model="x"))
    v2 = {"apiVersion": "aim.eai.amd.com/v1alpha2", "kind": "AIMService", "metadata": {"name": "s", "namespace": NS}}
    assert select_template(v2, found, model_name="m", templates=found.for_model) is None
    found = ForModel(template(ST, "t"))
    assert select_template(service(), found, model_name=None, templates=found.for_model) is None


def test_templates_that_are_not_ready_make_the_service_wait_with_upstreams_message() -> None:
    selection = select(template(ST, "t", status="Progressing"), template(CST, "c", status="NotAvailable"))
    assert chosen(selection) is None
    component = selection.component
    assert (component.state, component.reason, component.message) == (
        "Pending",
        "TemplateNotReady",
        "Templates exist but are not ready yet",
    )
    assert selection.config_error is None and selection.resolved_ref() is None
    assert roll_up([CONFIG_READY, component]).status == "Pending"


def test_unoptimized_templates_are_dropped_unless_the_service_allows_them() -> None:
    templates = (template(ST, "u", type_="unoptimized"), template(CST, "none", type_=None))
    selection = select(*templates)
    assert chosen(selection) is None
    assert (selection.component.reason, selection.component.message) == (
        "TemplateNotFound",
        'No available templates match requirements for model "m": 2 unoptimized template(s) filtered out. '
        "Set allowUnoptimized to use them.",
    )
    assert chosen(select(*templates, template={"allowUnoptimized": True})) == (ST, "u")


def test_a_template_whose_gpu_no_node_has_is_dropped_and_a_gpu_less_one_is_kept() -> None:
    selection = select(template(ST, "t", gpu="MI355X"))
    assert chosen(selection) is None
    assert (selection.component.state, selection.component.reason, selection.component.message) == (
        "Pending",
        "TemplateNotFound",
        'No available templates match requirements for model "m"',
    )
    assert chosen(select(template(ST, "t", gpu="AMD Instinct MI355X"), gpus=frozenset({"MI355X"}))) == (ST, "t")
    assert chosen(select(template(ST, "cpu", gpu=None), gpus=frozenset())) == (ST, "cpu")


def test_namespaced_templates_are_preferred_over_cluster_ones_whatever_their_rank() -> None:
    selection = select(template(CST, "best", metric="latency", precision="fp8"), template(ST, "worse", metric="x"))
    assert chosen(selection) == (ST, "worse")
    assert chosen(select(template(CST, "c"), template(ST, "t", gpu="MI355X"))) == (CST, "c"), "after the GPU filter"


@pytest.mark.parametrize(
    ("a", "b", "winner"),
    [
        # profile type first: optimized > preview > unoptimized
        ({"type_": "preview", "metric": "latency"}, {"type_": "optimized", "metric": "throughput"}, "b"),
        # then the GPU: MI325X > MI300X > MI250X > MI210 > any other
        ({"gpu": "MI300X", "metric": "latency"}, {"gpu": "MI325X", "metric": "throughput"}, "b"),
        ({"gpu": "MI355X"}, {"gpu": "MI210"}, "b"),
        # then the metric: latency > throughput
        ({"metric": "throughput", "precision": "fp4"}, {"metric": "latency", "precision": "fp32"}, "b"),
        # then the precision: fp4 > int4 > fp8 > int8 > fp16 > bf16 > fp32, case-insensitively
        ({"precision": "BF16"}, {"precision": "fp16"}, "b"),
        ({"precision": "int4"}, {"precision": "fp8"}, "a"),
    ],
)
def test_candidates_are_ranked_by_upstreams_preferences(a: dict[str, Any], b: dict[str, Any], winner: str) -> None:
    gpus = frozenset({"MI300X", "MI325X", "MI355X", "MI210"})
    selection = select(template(ST, "a", **a), template(ST, "b", **b), gpus=gpus)
    assert chosen(selection) == (ST, winner)


def test_equally_preferred_candidates_are_ambiguous_and_none_is_selected() -> None:
    selection = select(template(ST, "a", metric="latency"), template(ST, "b", metric="LATENCY"), template(ST, "c"))
    assert chosen(selection) is None
    component = selection.component
    assert (component.state, component.reason, component.message) == (
        "Pending",
        "TemplateSelectionAmbiguous",
        'Multiple templates (2) satisfy model "m"',
    )


def test_the_services_overrides_narrow_the_candidates() -> None:
    templates = (
        template(ST, "lat", metric="latency", precision="fp8"),
        template(ST, "thr", metric="throughput", precision="fp16", count=2),
    )
    assert chosen(select(*templates)) == (ST, "lat")
    assert chosen(select(*templates, overrides={"metric": "throughput"})) == (ST, "thr")
    assert chosen(select(*templates, overrides={"precision": "FP16"})) == (ST, "thr")
    assert chosen(select(*templates, overrides={"hardware": {"gpu": {"requests": 2}}})) == (ST, "thr")
    none = select(*templates, overrides={"hardware": {"gpu": {"model": "MI210", "requests": 1}}})
    assert chosen(none) is None and none.component.reason == "TemplateNotFound"


def test_a_ready_resolved_template_is_kept_and_one_that_is_not_ready_is_selected_again() -> None:
    ref = {"kind": CST, "name": "kept", "scope": "Cluster", "uid": "uid-kept"}
    kept = template(CST, "kept", metric="throughput")
    better = template(ST, "better", metric="latency")
    assert chosen(select(kept, better, status={"resolvedTemplate": ref})) == (CST, "kept"), "as upstream keeps it"
    kept["status"]["status"] = "Progressing"
    assert chosen(select(kept, better, status={"resolvedTemplate": ref})) == (ST, "better")


def test_a_named_template_or_the_models_default_wins_over_the_automatic_selection() -> None:
    found = ForModel(template(ST, "auto"), template(ST, "named", metric="throughput"))
    named = select_template(service({"name": "named"}), found, model_name="m", templates=found.for_model)
    default = select_template(service(), found, "named", model_name="m", templates=found.for_model)
    assert chosen(named) == chosen(default) == (ST, "named")
    assert named is not None and named.named
