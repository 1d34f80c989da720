"""A model written in v1alpha1 makes its AIMServiceTemplates (docs/aim-resources.md, "Templates of a model"), end to end
with the real kubectl on one simulated cluster (AMD MI300X nodes) whose controller runs: upstream's own YAML, pinned
under tests/fixtures/upstream/aim (aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87, SOURCE beside it), and
upstream's chainsaw assertions ported from the scenarios' chainsaw-test.yaml (pinned beside their documents).

An image's labels, which upstream's controller reads for the image's metadata, come from the simulated registry
(omectl.sim.registry, ghcr.io mirrored to it; a second one, private.example.io, gives tokens only for a pull secret's
credentials), or, for the ported scenarios, from the model's annotation `sim.omectl.io/image-metadata`
(`AIM_DUMMY_METADATA` for aim-dummy, below), as its discovery's output is the model's
`sim.omectl.io/discovery-result`.

- aimmodel/auto-create-templates: the template made for the image's recommended deployment, with upstream's labels,
  spec and name; here also its owner, the model's labels propagated under its runtime config, and the model's
  `ServiceTemplatesReady` following the template to Ready.
- aimmodel/cluster-scoped-templates: a cluster model makes an AIMClusterServiceTemplate.
- aimmodel/spec-provided-metadata: metadata given in the spec (an image that does not exist): `ImageMetadataReady`
  True and its template made, nothing read from the image.
- aimmodel/template-garbage-collection: the templates go with the model; here also a template deleted while its
  model lives is made again.
- a model's image read from the registry: its template from the image's labels; an image that does not exist; a
  private image read with the model's pull secret, a missing secret reported.
- aimmodel/additive-custom-templates: the model's custom templates beside its image's (their template steps).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.sim.registry import SimulatedImage, SimulatedRegistry
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet, serving
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "aimmtpl-1"
V1 = "aim.eai.amd.com/v1alpha1"
MODELS_V1 = "aimmodels.v1alpha1.aim.eai.amd.com"
TEMPLATES = "aimservicetemplates"
CLUSTER_TEMPLATES = "aimclusterservicetemplates"
UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimmodel"
AIM_DUMMY_METADATA = {
    "model": {
        "canonicalName": "HuggingFaceTB/SmolLM2-135M",
        "recommendedDeployments": [
            {
                "gpuModel": "MI300X",
                "gpuCount": 1,
                "metric": "latency",
                "precision": "fp16",
                "profileId": "vllm-mi300x-fp16-tp1-latency",
            }
        ],
    }
}
"""What the simulated aim-dummy:0.1.10's labels say (its one profile, the one its discovery prints below)."""
DRY_RUN = [
    {
        "id": "vllm-mi300x-fp16-tp1-latency",
        "filename": "vllm-mi300x-fp16-tp1-latency.yaml",
        "profile": {
            "model": "HuggingFaceTB/SmolLM2-135M",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI300X",
                "precision": "fp16",
                "gpu_count": 1,
                "metric": "latency",
                "type": "unoptimized",
            },
        },
        "models": [{"name": "HuggingFaceTB/SmolLM2-135M", "source": "hf://HuggingFaceTB/SmolLM2-135M", "size_gb": 0.5}],
    }
]
"""What the simulated aim-dummy's dry run prints for that profile (the template's discovery), with the profile's `id`
too: the model (written in v1alpha1, so its templates are made as it is created) also runs omectl's own model
discovery on the same simulated output, which reads each entry's `id` (docs/aim-resources.md), and fails without it."""
AUTO_TEMPLATE = "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-a16f"
CLUSTER_TEMPLATE = "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-2a3f"
SPEC_TEMPLATE = "this-registry-does-not-exist-12345-inva-1x-mi300x-thr-fp16-7a87"
"""Upstream's names for these models' templates (tests/core/aim/legacy/test_model_templates.py)."""


class Env(ClusterKubectl):
    def __init__(self, fleet: ControlledFleet) -> None:
        super().__init__(fleet.kubectl, CLUSTER)

    def apply_file(self, path: str, ns: str | None = None) -> dict[str, Any]:
        """One of upstream's pinned documents, applied as it is (in its namespace `ns`)."""
        self.k("apply", *(["-n", ns] if ns else []), "-f", str(UPSTREAM / path))
        doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
        return doc

    def apply_simulated(self, path: str, ns: str | None = None, **labels: str) -> dict[str, Any]:
        """One of upstream's pinned models, applied with the simulated aim-dummy's labels and discovery output (and
        `labels`) from its creation: a model written in v1alpha1 makes its templates at once, and their discovery Jobs
        take the output the model holds when they are made."""
        doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
        meta = dict(doc["metadata"])
        meta["annotations"] = {
            **meta.get("annotations", {}),
            "sim.omectl.io/image-metadata": json.dumps(AIM_DUMMY_METADATA),
            "sim.omectl.io/discovery-result": json.dumps(DRY_RUN),
        }
        if labels:
            meta["labels"] = {**meta.get("labels", {}), **labels}
        self.k("apply", *(["-n", ns] if ns else []), "-f", "-", stdin=yaml.safe_dump({**doc, "metadata": meta}))
        return doc

    def listed(self, resource: str, selector: str, ns: str | None = None) -> list[dict[str, Any]]:
        where = ["-n", ns] if ns else []
        items: list[dict[str, Any]] = json.loads(self.k("get", resource, *where, "-l", selector, "-o", "json"))["items"]
        return items

    def conditions(self, resource: str, name: str, ns: str | None = None) -> dict[str, dict[str, Any]]:
        status = (self.get(resource, name, ns) or {}).get("status") or {}
        return {c["type"]: c for c in status.get("conditions") or []}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


PRIVATE_CREDENTIALS = ("robot", "pull-token")
PRIVATE_LABELS = {
    "com.amd.aim.model.canonicalName": "team/private",
    "com.amd.aim.model.recommendedDeployments": "{'gpuModel': 'MI300X', 'gpuCount': 2, 'metric': 'throughput'}",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(
        pools=(NodePool(count=1, gpus_per_node=8, gpu_resource="amd.com/gpu", gpu_type="MI300X"),)
    )
    public = SimulatedRegistry(anonymous_tokens=True)
    private = SimulatedRegistry([SimulatedImage("team/aim", "1", PRIVATE_LABELS)], credentials=PRIVATE_CREDENTIALS)
    with (
        serving(public, private) as (public_url, private_url),
        running_fleet(
            tmp_path_factory.mktemp("aimmtpl"),
            1,
            "aimmtpl-",
            simulator=simulator,
            image_registry_mirrors={"ghcr.io": public_url, "private.example.io": private_url},
        ) as fleet,
    ):
        env = Env(fleet)
        env.apply(namespace("aim-system"))
        yield env


def test_upstreams_auto_create_templates_scenario_makes_the_images_template_with_the_models_labels(env: Env) -> None:
    """Ported: aimmodel/auto-create-templates."""
    ns = "mtpl-auto"
    env.apply(namespace(ns))
    config = {
        "apiVersion": V1,
        "kind": "AIMRuntimeConfig",
        "metadata": {"name": "default", "namespace": ns},
        "spec": {"labelPropagation": {"enabled": True, "match": ["org.example/*"]}},
    }
    env.apply(config)
    model = env.apply_simulated("auto-create-templates/model.yaml", ns, **{"org.example/team": "ml", "other": "x"})
    name = model["metadata"]["name"]
    # chainsaw: Assert templates are created; Assert template has correct spec
    selector = f"aim.eai.amd.com/origin=auto-generated,aim.eai.amd.com/model={name}"
    (template,) = until(lambda: env.listed(TEMPLATES, selector, ns), "the model's template")
    assert template["spec"]["modelName"] == name
    assert template["spec"]["hardware"]["gpu"]["model"] == "MI300X"
    # here: upstream's name, the rest of the spec, the owner and the propagated labels
    assert template["metadata"]["name"] == AUTO_TEMPLATE
    assert template["spec"] == {
        "modelName": name,
        "metric": "latency",
        "precision": "fp16",
        "profileId": "vllm-mi300x-fp16-tp1-latency",
        "hardware": {"gpu": {"requests": 1, "model": "MI300X", "resourceName": "amd.com/gpu"}},  # the CRD's default
    }
    model_uid = env.get(MODELS_V1, name, ns)["metadata"]["uid"]  # type: ignore[index]
    (owner,) = template["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("AIMModel", name, model_uid, True)
    assert template["metadata"]["labels"]["org.example/team"] == "ml", "matched by the config's labelPropagation"
    assert "other" not in template["metadata"]["labels"]
    # the model reports its templates: Ready once the template's discovery is done (upstream's commented-out step)
    found = until(
        lambda: (
            (c := env.conditions(MODELS_V1, name, ns)).get("ServiceTemplatesReady", {}).get("status") == "True" and c
        ),
        "ServiceTemplatesReady",
        timeout=60,
    )
    assert found["ServiceTemplatesReady"]["reason"] == "AllTemplatesReady"
    assert (found["ImageMetadataReady"]["status"], found["ImageMetadataReady"]["reason"]) == (
        "True",
        "ImageMetadataFound",
    )
    # a label change of the model follows onto the template
    env.k("label", "--overwrite", MODELS_V1, name, "-n", ns, "org.example/team=research")
    until(
        lambda: (
            (env.get(TEMPLATES, AUTO_TEMPLATE, ns) or {})["metadata"]["labels"].get("org.example/team") == "research"
        ),
        "the new label value on the template",
    )


def test_upstreams_cluster_scoped_templates_scenario_makes_cluster_templates(env: Env) -> None:
    """Ported: aimmodel/cluster-scoped-templates."""
    model = env.apply_simulated("cluster-scoped-templates/model.yaml")
    name = model["metadata"]["name"]
    # chainsaw: Assert AIMClusterServiceTemplate is created with correct labels
    selector = f"aim.eai.amd.com/origin=auto-generated,aim.eai.amd.com/model={name}"
    (template,) = until(lambda: env.listed(CLUSTER_TEMPLATES, selector), "the cluster model's template", timeout=60)
    assert template["spec"]["modelName"] == name
    assert template["metadata"]["name"] == CLUSTER_TEMPLATE
    assert "namespace" not in template["metadata"]
    namespaced = json.loads(env.k("get", TEMPLATES, "-A", "-l", selector, "-o", "json"))["items"]
    assert namespaced == [], "no namespaced template"
    found = until(
        lambda: (c := env.conditions("aimclustermodels", name)).get("ClusterServiceTemplatesReady") and c,
        "the cluster model's template condition",
    )
    assert "ServiceTemplatesReady" not in found


def test_upstreams_spec_provided_metadata_scenario_reads_no_image_and_makes_its_template(env: Env) -> None:
    """Ported: aimmodel/spec-provided-metadata (status.imageMetadata, a v1alpha1-only status field, is not
    written: docs/aim-versions.md)."""
    ns = "mtpl-spec"
    env.apply(namespace(ns))
    model = env.apply_file("spec-provided-metadata/model.yaml", ns)
    name = model["metadata"]["name"]
    # chainsaw: (conditions[?type == 'ImageMetadataReady']) status "True"
    found = until(
        lambda: (c := env.conditions(MODELS_V1, name, ns)).get("ImageMetadataReady", {}).get("status") == "True" and c,
        "ImageMetadataReady",
    )
    assert found["ImageMetadataReady"]["reason"] == "ImageMetadataFound"
    # the template of its spec's recommended deployment, under upstream's name
    template = until(lambda: env.get(TEMPLATES, SPEC_TEMPLATE, ns), "the template")
    assert template["spec"] == {
        "modelName": name,
        "metric": "throughput",
        "precision": "fp16",
        "hardware": {"gpu": {"requests": 1, "model": "MI300X", "resourceName": "amd.com/gpu"}},  # the CRD's default
    }


def test_upstreams_template_garbage_collection_scenario_deletes_the_templates_with_the_model(env: Env) -> None:
    """Ported: aimmodel/template-garbage-collection; here also a template deleted while its model lives comes back."""
    ns = "mtpl-gc"
    env.apply(namespace(ns))
    model = env.apply_simulated("template-garbage-collection/model.yaml", ns)
    name = model["metadata"]["name"]
    selector = f"aim.eai.amd.com/model={name}"
    # chainsaw: Assert templates are created
    (template,) = until(lambda: env.listed(TEMPLATES, selector, ns), "the model's template")
    first_uid = template["metadata"]["uid"]
    env.k("delete", TEMPLATES, template["metadata"]["name"], "-n", ns)
    again = until(
        lambda: [t for t in env.listed(TEMPLATES, selector, ns) if t["metadata"]["uid"] != first_uid],
        "the template made again",
    )
    assert [t["metadata"]["name"] for t in again] == [template["metadata"]["name"]]
    # chainsaw: Delete the model; Assert templates are garbage collected
    env.k("delete", MODELS_V1, name, "-n", ns)
    until(lambda: not env.listed(TEMPLATES, selector, ns), "no template of the deleted model")


def test_upstreams_additive_custom_templates_scenario_adds_the_custom_templates_to_the_images(env: Env) -> None:
    """Ported: aimmodel/additive-custom-templates, its template steps (the model's `status: Ready` and `sourceType`
    are not ported: omectl's discovery decides the status, and sourceType is v1alpha1-only status)."""
    ns = "mtpl-additive"
    env.apply(namespace(ns))
    model = env.apply_simulated("additive-custom-templates/model.yaml", ns)
    name = model["metadata"]["name"]
    base = f"aim.eai.amd.com/origin=auto-generated,aim.eai.amd.com/model={name}"
    # chainsaw: Assert custom-high-memory template is created
    (high,) = until(
        lambda: env.listed(TEMPLATES, f"{base},aim.eai.amd.com/template.alias=custom-high-memory", ns), "high-memory"
    )
    assert high["spec"]["modelName"] == name
    assert (high["spec"]["hardware"]["gpu"]["requests"], high["spec"]["hardware"]["gpu"]["model"]) == (2, "MI300X")
    assert high["spec"]["env"] == [{"name": "MAX_MODEL_LEN", "value": "16384"}]
    # chainsaw: Assert custom-low-latency template is created
    (low,) = until(
        lambda: env.listed(TEMPLATES, f"{base},aim.eai.amd.com/template.alias=custom-low-latency", ns), "low-latency"
    )
    assert (low["spec"]["type"], low["spec"]["metric"], low["spec"]["precision"]) == ("optimized", "latency", "fp16")
    assert (low["spec"]["hardware"]["gpu"]["requests"], low["spec"]["hardware"]["gpu"]["model"]) == (1, "MI300X")
    # chainsaw: Verify template count is greater than 2 (discovered + custom)
    # (one reconcile applies them all, the image's first: it is there once the custom ones are)
    templates = env.listed(TEMPLATES, f"aim.eai.amd.com/model={name}", ns)
    assert len(templates) > 2
    assert len(templates) == 3


def v1_model(name: str, ns: str, image: str, **spec: Any) -> dict[str, Any]:
    # `serviceAccountName` (a v1alpha1-only field) marks the model as written in v1alpha1; a model naming only its
    # image is not told from a v1alpha2 one yet (docs/aim-versions.md)
    fields = {"image": image, "serviceAccountName": "default", **spec}
    return {"apiVersion": V1, "kind": "AIMModel", "metadata": {"name": name, "namespace": ns}, "spec": fields}


def metadata_condition(env: Env, name: str, ns: str, status: str) -> dict[str, Any]:
    seen: list[Any] = []

    def probe() -> dict[str, Any] | None:
        seen[:] = [env.get(MODELS_V1, name, ns)]
        found = env.conditions(MODELS_V1, name, ns).get("ImageMetadataReady")
        return found if found and found["status"] == status else None

    try:
        return until(probe, f"{name}'s ImageMetadataReady {status}")
    except AssertionError as error:
        raise AssertionError(f"{error}; the model: {seen}") from None


def test_a_models_image_labels_are_read_from_its_registry_and_a_missing_image_is_reported(env: Env) -> None:
    ns = "mtpl-registry"
    env.apply(namespace(ns))
    env.apply(v1_model("dummy", ns, "ghcr.io/silogen/aim-dummy:0.1.10"))
    env.apply(v1_model("missing", ns, "ghcr.io/silogen/aim-dummy:0.0.0"))
    assert metadata_condition(env, "dummy", ns, "True")["reason"] == "ImageMetadataFound"
    (template,) = until(lambda: env.listed(TEMPLATES, "aim.eai.amd.com/model=dummy", ns), "dummy's template")
    assert template["spec"]["hardware"]["gpu"] | {"resourceName": None} == {
        "requests": 1,
        "model": "MI300X",
        "resourceName": None,
    }, "the image's recommended deployment (an image index's linux/amd64 image)"
    assert (template["spec"]["metric"], template["spec"]["profileId"]) == ("latency", "vllm-mi300x-fp16-tp1-latency")
    missing = metadata_condition(env, "missing", ns, "False")
    assert missing["reason"] == "ImageNotFound" and "ghcr.io/silogen/aim-dummy:0.0.0" in missing["message"]
    assert env.listed(TEMPLATES, "aim.eai.amd.com/model=missing", ns) == []


def test_a_private_image_is_read_with_the_models_pull_secret(env: Env) -> None:
    ns = "mtpl-private"
    env.apply(namespace(ns))
    env.apply(v1_model("private", ns, "private.example.io/team/aim:1", imagePullSecrets=[{"name": "pull"}]))
    absent = metadata_condition(env, "private", ns, "False")
    assert absent["reason"] == "SecretNotFound" and '"pull"' in absent["message"]
    auth = base64.b64encode(":".join(PRIVATE_CREDENTIALS).encode()).decode()
    config = json.dumps({"auths": {"private.example.io": {"auth": auth}}})
    env.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "pull", "namespace": ns},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()},
        }
    )
    env.k("annotate", MODELS_V1, "private", "-n", ns, "example.org/touched=1")  # a Secret queues no model
    assert metadata_condition(env, "private", ns, "True")["reason"] == "ImageMetadataFound"
    (template,) = until(lambda: env.listed(TEMPLATES, "aim.eai.amd.com/model=private", ns), "private's template")
    assert template["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert (template["spec"]["hardware"]["gpu"]["requests"], template["spec"]["metric"]) == (2, "throughput")
