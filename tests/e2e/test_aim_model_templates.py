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
- aimmodel/invalid-image-pull-secret, custom-models/nonexistent-image, custom-models/valid-image and
  clone-templates-for-gpu: the model's status rolled up from its image metadata and templates as upstream's is
  (Failed on a missing pull secret, Degraded on an image the registry does not have, Ready with its templates), with
  `sourceType` and `imageMetadata`, and no discovery Job; the clone script's step done here as the script does it.
  (aimmodel/error-recovery is ported by tests/e2e/test_aim_versions.py.)
- aimclustermodelsource/auto-sourcing, wildcard and auth-failure: a v1alpha1 source scanning Docker Hub (its API,
  hub.docker.com, mirrored to the public registry) makes five models of amdenterpriseai/aim-*:0.8.4 as upstream
  builds them, its limit reached; one scanning ghcr.io's catalog anonymously fails, with upstream's events; here also
  a private registry's catalog read with the source's pull secret, an image pushed later found on `syncInterval`,
  and a spec written in v1alpha2 ending the scan, the models staying.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.core.aim.versions import written_in_v1alpha1
from omectl.core.aim.versions.engine import spec_digest
from omectl.sim.registry import AIM_DUMMY_DRY_RUN, SIMULATED_IMAGES, SimulatedImage, SimulatedRegistry
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet, serving
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "aimmtpl-1"
V1 = "aim.eai.amd.com/v1alpha1"
MODELS_V1 = "aimmodels.v1alpha1.aim.eai.amd.com"
MODELS_V2 = "aimmodels.v1alpha2.aim.eai.amd.com"
CLUSTER_MODELS_V1 = "aimclustermodels.v1alpha1.aim.eai.amd.com"
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
DRY_RUN = AIM_DUMMY_DRY_RUN
"""What the simulated aim-dummy's dry run prints for that profile (the template's discovery); the model, written in
v1alpha1, runs no discovery of omectl's (its templates are made as it is created)."""
AUTO_TEMPLATE = "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-a16f"
CLUSTER_TEMPLATE = "ghcr-io-silogen-aim-dummy-0-1-10-1x-mi300x-lat-fp16-2a3f"
SPEC_TEMPLATE = "this-registry-does-not-exist-12345-inva-1x-mi300x-thr-fp16-7a87"
"""Upstream's names for these models' templates (tests/core/aim/legacy/test_model_templates.py)."""


class Env(ClusterKubectl):
    def __init__(
        self, fleet: ControlledFleet, public: SimulatedRegistry | None = None, private: SimulatedRegistry | None = None
    ) -> None:
        super().__init__(fleet.kubectl, CLUSTER)
        self.public = public
        """The registry of ghcr.io and docker.io (and Docker Hub's API, hub.docker.com)."""
        self.private = private
        """The registry of private.example.io, which answers only a pull secret's credentials."""

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

    def events(self, name: str, ns: str | None = None) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the events about the object `name` (a cluster-scoped one's are in default)."""
        items = json.loads(self.k("get", "events", "-n", ns or "default", "-o", "json"))["items"]
        return [(e["type"], e["reason"], e["message"]) for e in items if e["involvedObject"]["name"] == name]

    def status(self, resource: str, name: str, ns: str | None = None) -> dict[str, Any]:
        found: dict[str, Any] = (self.get(resource, name, ns) or {}).get("status") or {}
        return found

    def reaches(self, resource: str, name: str, ns: str | None, want: str, timeout: float = 30) -> dict[str, Any]:
        """The object's status once its `status.status` is `want`."""
        seen: list[Any] = []

        def probe() -> dict[str, Any] | None:
            seen[:] = [status := self.status(resource, name, ns)]
            return status if status.get("status") == want else None

        try:
            return until(probe, f"{name} {want}", timeout=timeout)
        except AssertionError as error:
            raise AssertionError(f"{error}; its status: {seen}") from None


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


FLAKY = SimulatedImage("silogen/aim-flaky", "1", SIMULATED_IMAGES[0].labels)
"""aim-dummy's labels under another name, which only the registry-retry test reads (the client keeps what it read)."""
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
    public = SimulatedRegistry((*SIMULATED_IMAGES, FLAKY), anonymous_tokens=True)  # aim-base:0.9 among them
    private = SimulatedRegistry([SimulatedImage("team/aim", "1", PRIVATE_LABELS)], credentials=PRIVATE_CREDENTIALS)
    with (
        serving(public, private) as (public_url, private_url),
        running_fleet(
            tmp_path_factory.mktemp("aimmtpl"),
            1,
            "aimmtpl-",
            simulator=simulator,
            image_registry_mirrors={
                "ghcr.io": public_url,
                "docker.io": public_url,
                "hub.docker.com": public_url,
                "private.example.io": private_url,
            },
        ) as fleet,
    ):
        env = Env(fleet, public, private)
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
    # here: upstream's events for the model's condition transitions, Normal on the way to Ready
    ready = ("Normal", "AllComponentsReady", "All components are ready")
    seen = until(lambda: e if ready in (e := env.events(name, ns)) else None, "the model's Ready event")
    assert ("Normal", "AllTemplatesReady", "All templates are ready") in seen
    assert ("Normal", "ImageMetadataFound", found["ImageMetadataReady"]["message"]) in seen
    assert all(kind == "Normal" for kind, _, _ in seen), seen
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
    # here: the cluster template's model component has upstream's cluster reasons
    model_ready = until(
        lambda: env.conditions(CLUSTER_TEMPLATES, CLUSTER_TEMPLATE).get("ClusterModelReady"), "ClusterModelReady"
    )
    assert (model_ready["status"], model_ready["reason"], model_ready["message"]) == (
        "True",
        "ClusterModelFound",
        "AIMClusterModel found with valid image",
    )


def test_upstreams_spec_provided_metadata_scenario_reads_no_image_and_makes_its_template(env: Env) -> None:
    """Ported: aimmodel/spec-provided-metadata."""
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
    # chainsaw: imageMetadata (the spec's, in status)
    assert env.status(MODELS_V1, name, ns)["imageMetadata"] == model["spec"]["imageMetadata"]
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
    """Ported: aimmodel/additive-custom-templates."""
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
    # chainsaw: Assert model becomes ready (an image model)
    assert env.reaches(MODELS_V1, name, ns, "Ready", timeout=60)["sourceType"] == "Image"


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


def test_a_spec_written_in_v1alpha2_moves_a_v1alpha1_model_to_omectls_discovery_and_a_label_does_not(env: Env) -> None:
    """docs/aim-versions.md, "Written in v1alpha1": the mark holds while the spec is the one the last v1alpha1 write
    stored (the API server stores what the conversion wrote: its digest matches); a label written in v1alpha2 keeps
    it, a spec written in v1alpha2 ends it (omectl's discovery Job, as for any v1alpha2 model), a v1alpha1 write
    marks it again."""
    ns = "mtpl-v2-write"
    env.apply(namespace(ns))
    env.apply(v1_model("moved", ns, "ghcr.io/silogen/aim-dummy:0.1.10"))
    until(lambda: env.listed(TEMPLATES, "aim.eai.amd.com/model=moved", ns), "upstream's template of the model")

    def stored() -> dict[str, Any]:
        found = env.get(MODELS_V2, "moved", ns)
        assert found is not None
        return found

    written = stored()
    annotations = written["metadata"]["annotations"]
    assert annotations["aim.eai.amd.com/v1alpha1-written-spec"] == spec_digest(written["spec"])
    assert written_in_v1alpha1(written) and env.get("jobs", "moved-discovery", ns) is None
    env.k("label", "aimmodels", "moved", "-n", ns, "team=ml")  # the preferred version: v1alpha2
    assert written_in_v1alpha1(stored()), "a label written in v1alpha2 keeps it"
    patch = json.dumps({"spec": {"env": [{"name": "A", "value": "1"}]}})
    env.k("patch", "aimmodels", "moved", "-n", ns, "--type=merge", "-p", patch)
    assert not written_in_v1alpha1(stored()), "a spec written in v1alpha2 ends it"
    job = until(lambda: env.get("jobs", "moved-discovery", ns), "omectl's discovery Job, as for a v1alpha2 model")
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "ghcr.io/silogen/aim-dummy:0.1.10"
    env.apply(v1_model("moved", ns, "ghcr.io/silogen/aim-dummy:0.1.10", env=[{"name": "A", "value": "1"}]))
    assert written_in_v1alpha1(stored()), "written in v1alpha1 again"


def test_a_registry_failing_for_a_while_is_read_again_with_backoff(env: Env) -> None:
    """Upstream counts a registry error other than 401, 403 or 404 as an infrastructure error and requeues the model
    with backoff: ImageMetadataReady is False / ImagePullBackOff while the registry answers 503, and once it answers
    again the model reads its image and makes its template, with no change to the model."""
    ns = "mtpl-flaky"
    env.apply(namespace(ns))
    assert env.public is not None
    env.public.unavailable.add(FLAKY.repository)
    try:
        env.apply(v1_model("flaky", ns, f"ghcr.io/{FLAKY.repository}:{FLAKY.tag}"))
        failing = metadata_condition(env, "flaky", ns, "False")
        assert failing["reason"] == "ImagePullBackOff" and "503" in failing["message"]
        assert env.listed(TEMPLATES, "aim.eai.amd.com/model=flaky", ns) == [], "no templates while it is unreadable"
    finally:
        env.public.unavailable.discard(FLAKY.repository)
    generation = env.get(MODELS_V1, "flaky", ns)["metadata"]["generation"]  # type: ignore[index]
    assert metadata_condition(env, "flaky", ns, "True")["reason"] == "ImageMetadataFound"
    until(lambda: env.listed(TEMPLATES, "aim.eai.amd.com/model=flaky", ns), "flaky's template")
    assert env.get(MODELS_V1, "flaky", ns)["metadata"]["generation"] == generation  # type: ignore[index]


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


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def test_upstreams_invalid_image_pull_secret_scenario_fails_the_model_on_its_missing_secret(env: Env) -> None:
    """Ported: aimmodel/invalid-image-pull-secret."""
    ns = "mtpl-bad-secret"
    env.apply(namespace(ns))
    name = env.apply_file("invalid-image-pull-secret/model.yaml", ns)["metadata"]["name"]
    # chainsaw: Assert model is Failed with ConfigValid=False and Ready=False
    status = env.reaches(MODELS_V1, name, ns, "Failed")
    conditions = by_type(status)
    assert (conditions["ConfigValid"]["status"], conditions["ConfigValid"]["reason"]) == ("False", "ReferenceNotFound")
    assert conditions["Ready"]["status"] == "False"
    # here: why, the model's source type, and no discovery Job of omectl's for a model written in v1alpha1
    assert (conditions["ImageMetadataReady"]["status"], conditions["ImageMetadataReady"]["reason"]) == (
        "False",
        "SecretNotFound",
    )
    assert status["sourceType"] == "Image"
    assert env.get("jobs", f"{name}-discovery", ns) is None
    # here: upstream's Warning events for the failing conditions
    secret = ("Warning", "SecretNotFound", conditions["ImageMetadataReady"]["message"])
    seen = until(lambda: e if secret in (e := env.events(name, ns)) else None, "the missing secret's Warning")
    assert ("Warning", "ReferenceNotFound", conditions["Ready"]["message"]) in seen


def test_upstreams_custom_model_nonexistent_image_scenario_degrades_the_model_and_not_a_template_failing_it(
    env: Env,
) -> None:
    """Ported: aimmodel/custom-models/nonexistent-image (both phases; `apply-with-status.sh --status-only --freeze`
    as upstream's script does it: the model paused, then its status written)."""
    ns = "mtpl-nonexistent"
    env.apply(namespace(ns))
    name = env.apply_file("custom-models/nonexistent-image/model.yaml", ns)["metadata"]["name"]
    template = env.apply_file("custom-models/nonexistent-image/template.yaml", ns)["metadata"]["name"]
    # chainsaw: Assert AIMModel transitions to Degraded with ImageMetadataReady=False
    status = env.reaches(MODELS_V1, name, ns, "Degraded")
    assert status["sourceType"] == "Custom"
    metadata = by_type(status)["ImageMetadataReady"]
    assert (metadata["status"], metadata["reason"]) == ("False", "ImageNotFound")
    # chainsaw: Assert AIMServiceTemplate also transitions to Degraded
    env.reaches(TEMPLATES, template, ns, "Degraded")
    # here: the model's own templates are not made while its image cannot be read (upstream's apply is blocked)
    assert env.listed(TEMPLATES, f"aim.eai.amd.com/origin=auto-generated,aim.eai.amd.com/model={name}", ns) == []
    # chainsaw: Freeze model and patch status to template-only failure
    frozen: dict[str, Any] = yaml.safe_load(
        (UPSTREAM / "custom-models/nonexistent-image/model-template-only-failure.yaml").read_text()
    )
    env.k("annotate", MODELS_V1, name, "-n", ns, "aim.eai.amd.com/reconciliation-paused=true")
    body = json.dumps({"status": frozen["status"]})
    env.k("patch", MODELS_V1, name, "-n", ns, "--type=merge", "--subresource=status", "-p", body)
    # chainsaw: Assert AIMServiceTemplate recovers (ignores template-only model failure)
    env.reaches(TEMPLATES, template, ns, "Ready")


def test_upstreams_custom_model_valid_image_scenario_is_ready_with_its_template(env: Env) -> None:
    """Ported: aimmodel/custom-models/valid-image; here also its image's metadata in status, in both versions."""
    ns = "mtpl-valid-image"
    env.apply(namespace(ns))
    name = env.apply_file("custom-models/valid-image/model.yaml", ns)["metadata"]["name"]
    # chainsaw: Assert AIMModel becomes Ready with ImageMetadataReady=True
    status = env.reaches(MODELS_V1, name, ns, "Ready", timeout=60)
    assert status["sourceType"] == "Custom"
    metadata = by_type(status)["ImageMetadataReady"]
    assert (metadata["status"], metadata["reason"]) == ("True", "ImageFound")
    # chainsaw: Assert AIMServiceTemplate becomes Ready
    (template,) = env.listed(TEMPLATES, f"aim.eai.amd.com/model={name}", ns)
    assert template["status"]["status"] == "Ready"
    # here: the labels read, kept in status as upstream keeps them; the same object read in v1alpha2
    assert status["imageMetadata"]["oci"]["title"] == "aim-base"
    v2 = env.status(MODELS_V2, name, ns)
    assert (v2["imageMetadata"], v2["sourceType"], v2["status"]) == (status["imageMetadata"], "Custom", "Ready")


def test_upstreams_clone_templates_for_gpu_scenario_clones_a_ready_cluster_models_templates(env: Env) -> None:
    """Ported: aimmodel/clone-templates-for-gpu; its step `hack/clone-templates-for-gpu.sh MI300X MI308X | kubectl
    apply -f -` done here as the script does it, for this model's templates."""
    name = env.apply_simulated("clone-templates-for-gpu/cluster-model.yaml")["metadata"]["name"]
    # chainsaw: Wait for cluster model to be ready
    status = env.reaches(CLUSTER_MODELS_V1, name, None, "Ready", timeout=90)
    assert by_type(status)["ClusterServiceTemplatesReady"]["reason"] == "AllTemplatesReady"
    assert env.get("jobs", f"{name}-cluster-discovery", "aim-system") is None, "no discovery Job of omectl's"
    # chainsaw: Clone templates to MI308X (the script: each MI300X template, renamed, its GPU and env changed)
    selector = f"aim.eai.amd.com/model={name}"
    for template in env.listed(CLUSTER_TEMPLATES, selector):
        gpu = (template.get("status", {}).get("resolvedHardware") or template["spec"]["hardware"])["gpu"]["model"]
        if gpu != "MI300X":
            continue
        meta = template["metadata"]
        for field in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"):
            meta.pop(field, None)
        meta.get("annotations", {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
        template.pop("status", None)
        meta["name"] = meta["name"].replace("mi300x", "mi308x")
        template["spec"]["hardware"]["gpu"]["model"] = "MI308X"
        env_vars = [e for e in template["spec"].get("env", []) if e["name"] != "AIM_GPU_MODEL"]
        template["spec"]["env"] = [*env_vars, {"name": "AIM_GPU_MODEL", "value": "MI300X"}]
        env.k("apply", "-f", "-", stdin=yaml.safe_dump(template))
    # chainsaw: Verify cloned MI308X templates exist
    cloned = [
        t
        for t in env.listed(CLUSTER_TEMPLATES, f"aim.eai.amd.com/origin=auto-generated,{selector}")
        if t["spec"]["hardware"]["gpu"]["model"] == "MI308X"
    ]
    assert [t["spec"]["modelName"] for t in cloned] == [name]
    # here: a clone for a GPU the fleet lacks is NotAvailable, and the model stays Ready beside its Ready template
    env.reaches(CLUSTER_TEMPLATES, cloned[0]["metadata"]["name"], None, "NotAvailable")
    found = until(
        lambda: (
            (c := by_type(env.status(CLUSTER_MODELS_V1, name)))["ClusterServiceTemplatesReady"]["reason"]
            == "SomeTemplatesReady"
            and c
        ),
        "the model's templates some Ready, some not available",
    )
    assert found["Ready"]["status"] == "True"


# --- AIMClusterModelSource: upstream's registry scan (docs/aim-versions.md, "What a v1alpha1 source scans") ----------

SOURCES_V1 = "aimclustermodelsources.v1alpha1.aim.eai.amd.com"
SOURCES_V2 = "aimclustermodelsources.v1alpha2.aim.eai.amd.com"
SOURCE_SCENARIOS = UPSTREAM.parent / "aimclustermodelsource"
FIRST_FIVE = {  # Docker Hub's amdenterpriseai/aim-* at 0.8.4 but aim-base (omectl.sim.registry.RELEASE_084), in order
    "amdenterpriseai-aim-google-gemma-3-1b-it-0-8-4-35dd38": "aim-google-gemma-3-1b-it",
    "amdenterpriseai-aim-meta-llama-llama-3-1-8b-instru-0-8-4-590b84": "aim-meta-llama-llama-3-1-8b-instruct",
    "amdenterpriseai-aim-meta-llama-llama-3-2-1b-instru-0-8-4-69ec89": "aim-meta-llama-llama-3-2-1b-instruct",
    "amdenterpriseai-aim-mistralai-mistral-7b-instruct-0-8-4-4cbac6": "aim-mistralai-mistral-7b-instruct-v0-3",
    "amdenterpriseai-aim-qwen-qwen3-32b-0-8-4-c3c81a": "aim-qwen-qwen3-32b",
}
"""Their models' names, upstream's: repository and tag, the longest part shortened to fit 63 characters, and the hash
(`scanned_name`)."""


def scanned_name(registry: str, repository: str, tag: str) -> str:
    """Upstream's name of a source's model (short enough not to be shortened): repository and tag as a DNS label, and
    6 hex digits of the SHA-256 of the three parts as Go's JSON writes them, joined by `|`."""
    digest = hashlib.sha256("|".join(json.dumps(p) for p in (registry, repository, tag)).encode()).hexdigest()
    return f"{repository.replace('/', '-').replace('.', '-')}-{tag.replace('.', '-')}-{digest[:6]}"


def apply_source(env: Env, path: str) -> str:
    env.k("apply", "-f", str(SOURCE_SCENARIOS / path))
    name: str = yaml.safe_load((SOURCE_SCENARIOS / path).read_text())["metadata"]["name"]
    return name


def test_upstreams_auto_sourcing_and_wildcard_scenarios_make_five_models_of_docker_hubs_images(env: Env) -> None:
    """Ported: aimclustermodelsource/auto-sourcing, then aimclustermodelsource/wildcard (both scan Docker Hub for
    amdenterpriseai/aim-* at 0.8.4 without aim-base, at most five; chainsaw deletes the first before the second)."""
    source = apply_source(env, "auto-sourcing/cluster-model-source.yaml")
    # chainsaw: Wait for source to become Ready
    status = env.reaches(SOURCES_V1, source, None, "Ready")
    assert by_type(status)["Ready"]["status"] == "True"
    # chainsaw: Verify models were created with correct labels
    models = env.listed(CLUSTER_MODELS_V1, f"aim.eai.amd.com/model-source={source}")
    assert {m["metadata"]["labels"]["aim.eai.amd.com/origin"] for m in models} == {"auto-generated"}
    # here: which five, as upstream builds them, and the source's counts and conditions
    uid = env.get(SOURCES_V1, source)["metadata"]["uid"]  # type: ignore[index]
    expected = FIRST_FIVE
    assert scanned_name("docker.io", "amdenterpriseai/aim-qwen-qwen3-32b", "0.8.4") in expected
    assert {m["metadata"]["name"] for m in models} == set(expected)
    for model in models:
        repository = f"amdenterpriseai/{expected[model['metadata']['name']]}"
        assert model["spec"]["image"] == f"{repository}:0.8.4"
        assert model["metadata"]["annotations"]["aim.eai.amd.com/source-repository"] == repository
        assert model["metadata"]["annotations"]["aim.eai.amd.com/source-registry"] == "docker.io"
        assert model["metadata"]["annotations"]["aim.eai.amd.com/source-tag"] == "0.8.4"
        (owner,) = model["metadata"]["ownerReferences"]
        assert (owner["apiVersion"], owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            V1,
            "AIMClusterModelSource",
            source,
            uid,
            True,
        )
    assert (status["discoveredModels"], status["availableModels"], status["modelsLimitReached"]) == (5, 6, True)
    conditions = by_type(status)
    assert (conditions["FiltersReady"]["reason"], conditions["ExistingModelsReady"]["status"]) == (
        "AllFiltersSucceeded",
        "True",
    )
    assert conditions["MaxModelsLimitReached"]["message"] == "Limit reached: 5 created, 6 available"
    env.k("delete", SOURCES_V1, source)
    env.k("delete", CLUSTER_MODELS_V1, "-l", f"aim.eai.amd.com/model-source={source}", "--ignore-not-found")

    source = apply_source(env, "wildcard/cluster-model-source-dockerhub.yaml")
    # chainsaw: Wait for source to be Ready with maxModels limit reached
    status = until(
        lambda: (s := env.status(SOURCES_V1, source)).get("status") == "Ready" and s.get("discoveredModels") == 5 and s,
        "the wildcard source Ready with five models",
    )
    assert status["modelsLimitReached"] is True
    conditions = by_type(status)
    assert (conditions["MaxModelsLimitReached"]["status"], conditions["MaxModelsLimitReached"]["reason"]) == (
        "True",
        "LimitReached",
    )
    assert conditions["Ready"]["status"] == "True"
    # chainsaw: Verify models were created with correct labels
    models = env.listed(
        CLUSTER_MODELS_V1, f"aim.eai.amd.com/model-source={source},aim.eai.amd.com/origin=auto-generated"
    )
    assert {m["metadata"]["name"] for m in models} == set(expected)
    env.k("delete", SOURCES_V1, source)
    env.k("delete", CLUSTER_MODELS_V1, "-l", f"aim.eai.amd.com/model-source={source}", "--ignore-not-found")


def test_upstreams_auth_failure_scenario_fails_the_source_with_its_events_and_a_pull_secret_finds_images_until_v1alpha2(
    env: Env,
) -> None:
    """Ported: aimclustermodelsource/auth-failure (ghcr.io gives its catalog to no anonymous reader), with upstream's
    events for the source's transitions; here also a private registry's catalog read with the source's pull secret,
    an image pushed later found by the resync, and a spec written in v1alpha2 ending the scan (the models stay)."""
    source = apply_source(env, "auth-failure/cluster-model-source-ghcr.yaml")
    # chainsaw: Wait for source to reach Failed status
    status = env.reaches(SOURCES_V1, source, None, "Failed")
    conditions = by_type(status)
    assert conditions["Ready"]["status"] == "False"
    # chainsaw: Verify no models were created
    assert env.listed(CLUSTER_MODELS_V1, f"aim.eai.amd.com/model-source={source}") == []
    # here: upstream's words
    assert (conditions["FiltersReady"]["reason"], conditions["FiltersReady"]["message"]) == (
        "AllFiltersFailed",
        "All 1 filters failed",
    )
    assert conditions["Ready"]["message"] == "Component Filters is not ready: All 1 filters failed"
    assert (status["discoveredModels"], status["modelsLimitReached"]) == (0, False)
    # here: upstream's events for the conditions' transitions, a failing component's as Warnings
    failing = ("Warning", "AllFiltersFailed", "Component Filters is not ready: All 1 filters failed")
    events = until(lambda: e if failing in (e := env.events(source)) else None, "the source's Warning events")
    assert {
        ("Warning", "AllFiltersFailed", "All 1 filters failed"),
        ("Normal", "Listed", "Found 0 existing models"),
    } < set(events)

    auth = base64.b64encode(":".join(PRIVATE_CREDENTIALS).encode()).decode()
    config = json.dumps({"auths": {"private.example.io": {"auth": auth}}})
    env.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "scan-pull", "namespace": "aim-system"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()},
        },
        {
            "apiVersion": V1,
            "kind": "AIMClusterModelSource",
            "metadata": {"name": "private-scan"},
            "spec": {
                "registry": "private.example.io",
                "syncInterval": "300ms",
                "imagePullSecrets": [{"name": "scan-pull"}],
                "filters": [{"image": "team/*"}],
            },
        },
    )
    first = scanned_name("private.example.io", "team/aim", "1")
    (model,) = until(lambda: env.listed(CLUSTER_MODELS_V1, "aim.eai.amd.com/model-source=private-scan"), "team/aim")
    assert model["metadata"]["name"] == first
    assert model["spec"]["image"] == "private.example.io/team/aim:1"
    assert model["spec"]["imagePullSecrets"] == [{"name": "scan-pull"}]
    assert env.private is not None
    env.private.add(SimulatedImage("team/aim-late", "2.0.0", {"org.opencontainers.image.title": "aim-late"}))
    late = scanned_name("private.example.io", "team/aim-late", "2.0.0")
    found = until(
        lambda: (
            {m["metadata"]["name"] for m in env.listed(CLUSTER_MODELS_V1, "aim.eai.amd.com/model-source=private-scan")}
            == {first, late}
        ),
        "the image pushed later, found by the resync",
        timeout=10,
    )
    assert found
    assert env.status(SOURCES_V1, "private-scan")["status"] == "Ready"
    # here: a spec written in v1alpha2 (an empty model list) ends the scan, as it ends any kind's v1alpha1 mark; the
    # source then lists its models as omectl's v1alpha2 source does, and deletes none it does not list
    stored = env.get(SOURCES_V2, "private-scan")
    assert stored is not None and written_in_v1alpha1(stored)
    env.k("patch", SOURCES_V2, "private-scan", "--type=merge", "-p", '{"spec": {"models": []}}')
    ready = until(
        lambda: (c := env.conditions(SOURCES_V1, "private-scan").get("Ready")) and c["reason"] == "ModelsCreated" and c,
        "the source listing its models",
    )
    assert ready["message"] == "0/0 models created"
    remaining = env.listed(CLUSTER_MODELS_V1, "aim.eai.amd.com/model-source=private-scan")
    assert {m["metadata"]["name"] for m in remaining} == {first, late}, "the models its scans made stay"
    env.k("delete", SOURCES_V1, source, "private-scan")  # its resync every 300 ms would outlive the test
