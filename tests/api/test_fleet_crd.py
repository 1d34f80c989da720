"""The hub's FleetRuntime CRD (fleet.omectl.io/v1alpha1): committed as generated, served by an API server with its
default and enum, the template kept as written; and the controller's own template checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.api import crdgen, fleet
from tests.support import RawClient

HUB_CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "hub"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FR = "/apis/fleet.omectl.io/v1alpha1/fleetruntimes"

TEMPLATE: dict[str, Any] = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "ClusterServingRuntime",
    "metadata": {"name": "vllm", "labels": {"team": "ml"}},
    "spec": {"engineConfig": {"runner": {"name": "ome-container", "image": "vllm:1"}}, "futureField": {"x": 1}},
}


def fleet_runtime(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": fleet.API_VERSION,
        "kind": fleet.KIND,
        "metadata": {"name": "vllm"},
        "spec": {"template": TEMPLATE, "placement": {"clusterSelector": {"matchLabels": {"gpu": "h200"}}}, **spec},
    }


def test_the_hub_crd_is_committed_as_generated() -> None:
    (definition,) = crdgen.HUB_CRDS
    assert (HUB_CRD_DIR / definition.file_name).read_text() == crdgen.render_yaml(definition)
    assert definition.scope == "Cluster" and definition.group == "fleet.omectl.io"
    assert definition.name not in {d.name for d in crdgen.CRDS}  # members do not get it from deploy/member/crds


async def test_an_api_server_serves_fleet_runtimes_with_the_default_drift_policy(raw: RawClient) -> None:
    crd = yaml.safe_load((HUB_CRD_DIR / "fleet.omectl.io_fleetruntimes.yaml").read_text())
    reply = await raw.post(CRDS_PATH, crd)
    assert reply.status == 201, reply.body
    reply = await raw.post(FR, fleet_runtime())
    assert reply.status == 201, reply.body
    assert reply.body["spec"]["driftPolicy"] == "Report"
    # the template is kept as written, unknown fields included (the controller validates it)
    assert reply.body["spec"]["template"] == TEMPLATE
    bad = fleet_runtime(driftPolicy="Sometimes")
    bad["metadata"]["name"] = "bad"
    reply = await raw.post(FR, bad)
    assert reply.status == 422, reply.body
    assert "driftPolicy" in reply.body["message"]


def test_waves_are_part_of_the_type() -> None:
    spec = fleet.FleetRuntimeSpec.model_validate(
        {
            "template": TEMPLATE,
            "rollout": {
                "waves": [{"name": "lab", "clusters": ["sim-1"], "soakSeconds": 60}, {"name": "rest", "percent": 100}],
                "maxUnavailableClusters": "25%",
                "paused": True,
            },
        }
    )
    assert spec.rollout is not None and spec.rollout.waves is not None
    assert [w.name for w in spec.rollout.waves] == ["lab", "rest"]
    assert spec.drift_policy == "Report"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"template": {}}, "spec.template is missing"),
        ({"template": {**TEMPLATE, "kind": "Deployment"}}, "kind must be ServingRuntime or ClusterServingRuntime"),
        ({"template": {**TEMPLATE, "apiVersion": "ome.io/v1"}}, "apiVersion must be ome.io/v1beta1"),
        ({"template": {**TEMPLATE, "metadata": {}}}, "spec.template.metadata.name is missing"),
        ({"template": {**TEMPLATE, "metadata": {"name": "a", "namespace": "x"}}}, "namespace must be unset"),
        ({"template": {**TEMPLATE, "kind": "ServingRuntime"}}, "spec.namespaces is required"),
        ({"namespaces": ["a"]}, "spec.namespaces must be empty for a ClusterServingRuntime"),
        (
            {"template": {**TEMPLATE, "spec": {"engineConfig": {"runner": {"image": "no-name"}}}}},
            "spec.template.spec.engineConfig.runner.name: Field required",
        ),
    ],
)
def test_template_problems_are_one_line(change: dict[str, Any], problem: str) -> None:
    spec = {"template": TEMPLATE, **change}
    found = fleet.template_problem(spec)
    assert found is not None and problem in found, found
    assert "\n" not in found


def test_a_valid_template_has_no_problem() -> None:
    assert fleet.template_problem({"template": TEMPLATE}) is None
    namespaced = {**TEMPLATE, "kind": "ServingRuntime"}
    assert fleet.template_problem({"template": namespaced, "namespaces": ["a", "b"]}) is None
