"""An AIMService written in v1alpha1 that selects its template by name (docs/aim-versions.md, "What a v1alpha1 service
gets reconciled"), end to end with the real kubectl on one simulated cluster (AMD MI300X nodes) whose controller
runs: upstream's own YAML, pinned under tests/fixtures/upstream/aim (aim-engine
9223504d74b01fec2e99d250933ea2884aef3b87, SOURCE beside it), and upstream's chainsaw assertions ported from the
scenarios' chainsaw-test.yaml (pinned beside their documents).

- aimservice/common/template-not-found: the service is Failed with `TemplateReady=False` / `TemplateNotFound`; here
  also one Warning event, nothing applied, and the recovery once the template appears.
- aimservice/common/basic-lifecycle: the named template discovered and Ready, the service resolves it
  (`status.resolvedTemplate`, `TemplateReady=True`), its InferenceService carries the template's metric and precision
  as env, and it runs; here also the template's GPU (upstream's resources for it), labels and node affinity on the
  InferenceService.
- aimservice/common/auto-template-selection: a service naming no template selects its model's
  `defaultServiceTemplate` (`status.resolvedModel`, `status.resolvedTemplate`, `ModelReady` and `TemplateReady`
  True), goes through Starting (seen on a watch of the service at v1alpha1) and runs; here also upstream's MODEL and
  TEMPLATE columns.
- The re-queues: a service naming no template follows its model appearing (its default template missing:
  TemplateNotFound) and then that template appearing (it recovers and runs with the template's env).
- A cluster template whose GPU no node has keeps the service waiting (Pending, `TemplateNotReady`) until it is Ready.
- aimservice/frozen/all-ready, template-ready, template-failed, cluster-model-ready: the model's only template
  selected automatically (namespaced, or cluster for a cluster model), or the service Pending while it is Failed.
- aimservice/frozen/model-ready, model-progressing, model-failed: a service naming no template selects its model's
  only template automatically (upstream's selection among the templates whose `spec.modelName` is the model) and
  starts; a service whose model is Progressing is Pending, one whose model is Failed is Failed, both with
  `ModelReady=False` / `ModelNotReady` and no InferenceService until the model is Ready.
- Automatic selection among several templates, following them: none Ready yet, only unoptimized ones, the preferred
  one of several (namespaced over cluster, latency over throughput), an ambiguous tie, each re-queued by the
  templates of the model appearing and changing.
- `spec.overrides` (no upstream scenario): the named template's derived template (upstream's name, spec, labels,
  owner) is made, resolved and served, and goes with the service.
- The v1alpha1 image path: two services naming an image no model has create one AIMModel (upstream's name, labelled
  `aim.eai.amd.com/origin: auto-generated`, unowned), with the services' labels the runtime config's
  `labelPropagation.match` selects, and both resolve it.
- aimservice/common/custom-model: a service's inline custom model (inline-custom-model, cpu-only-inline) makes its
  AIMModel (upstream's name and labels, unowned), whose one template the service selects and serves the base image
  with (a GPU, or none); services with the same custom model share one (model-deduplication), unless a source's
  AWS_ENDPOINT_URL differs (model-deduplication-s3-endpoint); a custom model's one template carries its hardware and
  sources, their env too (auto-generated-template, model-source-env). A custom model's own discovery (omectl's)
  finds no profile: its result is written by the test (`ready_model`). Its sources name no size: upstream's
  check-size Job finds it (`sized_by_check_size`).
- aimservice/gpu/custom-model, gpu/custom-model-env-propagation, gpu/custom-model-s3 and gpu/profile-id-propagation,
  on the simulated MI300X nodes: what upstream asserts on the inference Pod asserted on the predictor Pod the
  simulated cluster makes, running and ready (the model's image, `AIM_MODEL_ID`, the template's env,
  `AIM_PROFILE_ID`, the GPU limit; `InferenceServicePodsReady` True / `PodsReady`), the
  models, templates and artifacts, Running, and the HTTPRoute instead of the HTTP checks.
- aimartifact/size-discovery-and-verification, failure-auth-hf, failure-auth-s3, failure-missing-hf,
  failure-missing-s3, failure-storage, progress-and-verification and stall-detection: an AIMArtifact sized by its
  check-size Job, its download failing with upstream's reasons, its progress and verification followed, a hung
  download killed. The simulated downloader plays upstream's image (`omectl.sim.simulator.downloader`) against
  `SOURCES`, which stands in for the scenarios' HuggingFace, MinIO and Longhorn, its durations `TIME_SCALE` of theirs.
- aimservice/gpu/pending-resources, with them: a custom model asking for 20 GPUs (a node has 8) is `Pending` with
  `InferenceServicePodsReady` False / `FailedScheduling` (the scheduler's message), read from its predictor pod
  that the simulated scheduler leaves Pending, with its FailedScheduling Event.
"""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.core.aim.artifact_status_updater import RBAC_GROUP, STATUS_UPDATER
from omectl.core.aim.custom_models import custom_model_name
from omectl.core.aim.discovery import discovery_configmap, discovery_name
from omectl.core.aim.image_models import generated_model_name
from omectl.sim.registry import AIM_DUMMY_DRY_RUN
from omectl.sim.simulator import ModelSources, NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "aimtpl-1"
V1 = "aim.eai.amd.com/v1alpha1"
SERVICES_V1 = "aimservices.v1alpha1.aim.eai.amd.com"
ARTIFACTS_V1 = "aimartifacts.v1alpha1.aim.eai.amd.com"
KSERVE = "inferenceservices.serving.kserve.io"
UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimservice" / "common"
FROZEN = UPSTREAM.parent / "frozen"
DRY_RUN = AIM_DUMMY_DRY_RUN
"""What aim-dummy's dry run prints for basic-lifecycle's template (MI300X, fp16, latency), as the simulated
discovery Job prints it (the model's `sim.omectl.io/discovery-result`)."""
TINY_GPT2 = 2_530_000
"""Bytes of hf://sshleifer/tiny-gpt2, and of its copy in MinIO (size-discovery-and-verification uploads it)."""
TIME_SCALE = 0.05
"""The simulated downloader's seconds per second of upstream's durations (AIM_DEBUG_*_DURATION, STALL_TIMEOUT)."""
SOURCES = ModelSources(
    missing=("hf://meta-llama-definitely-doesnt-exist/*", "s3://meta-llama-definitely-doesnt-exist/*"),
    gated=("hf://meta-llama/*",),
    s3_credentials=(("minioadmin", "minioadmin"),),
    # failure-storage's files outgrow its 2Gi volume, as upstream's Longhorn quota makes them
    sizes=(("hf://sshleifer/tiny-gpt2", TINY_GPT2), ("s3://models/tiny-gpt2", TINY_GPT2), ("*SmolLM-135M", 3 << 30)),
    time_scale=TIME_SCALE,
)
"""The model repositories of upstream's aimartifact scenarios, as the simulated downloader finds them: HuggingFace
(a gated meta-llama, no such org), MinIO (its root credentials, no such bucket) and the files' sizes."""


class Env(ClusterKubectl):
    def __init__(self, fleet: ControlledFleet) -> None:
        super().__init__(fleet.kubectl, CLUSTER)
        self.fleet = fleet

    def apply_file(self, path: str, ns: str | None = None) -> dict[str, Any]:
        """One of upstream's pinned documents, applied as it is (in its namespace `ns`)."""
        where = ["-n", ns] if ns else []
        self.k("apply", *where, "-f", str(UPSTREAM / path))
        doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
        return doc

    def apply_frozen(self, path: str, ns: str | None = None) -> dict[str, Any]:
        """A frozen dependency of upstream's (paused), as its hack/apply-with-status.sh applies it: the document,
        then its status merge-patched onto the status subresource."""
        where = ["-n", ns] if ns else []
        self.k("apply", *where, "-f", str(FROZEN / path))
        doc: dict[str, Any] = yaml.safe_load((FROZEN / path).read_text())
        if "status" in doc:
            body = json.dumps({"status": doc["status"]})
            kind, name = doc["kind"].lower(), doc["metadata"]["name"]
            self.k("patch", kind, name, *where, "--type=merge", "--subresource=status", "-p", body)
        return doc

    def service(self, name: str, ns: str) -> dict[str, Any]:
        """The service read in v1alpha1, as upstream's chainsaw tests read it."""
        return json.loads(self.k("get", SERVICES_V1, name, "-n", ns, "-o", "json"))  # type: ignore[no-any-return]

    def status(self, resource: str, name: str, ns: str | None = None) -> dict[str, Any]:
        return (self.get(resource, name, ns) or {}).get("status") or {}

    def events(self, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
        items = json.loads(self.k("get", "events", "-n", ns, "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    # GPUs enough for every service the module's tests leave running, in any order (pytest-randomly): a service on a
    # template asks for the template's GPU and upstream's cpu/memory for it, and no test deletes its services
    simulator = SimulatorConfig(
        pools=(NodePool(count=4, gpus_per_node=8, gpu_resource="amd.com/gpu", gpu_type="MI300X"),), sources=SOURCES
    )
    with running_fleet(tmp_path_factory.mktemp("aimtpl"), 1, "aimtpl-", simulator=simulator) as fleet:
        env = Env(fleet)
        env.apply(namespace("aim-system"))
        yield env


def test_upstreams_template_not_found_scenario_fails_the_service_and_it_recovers_when_the_template_appears(
    env: Env,
) -> None:
    """Ported: aimservice/common/template-not-found."""
    ns = "tpl-not-found"
    env.apply(namespace(ns))
    env.apply_file("template-not-found/model.yaml", ns)
    service = env.apply_file("template-not-found/service.yaml", ns)
    name = service["metadata"]["name"]
    # chainsaw: status Failed, (conditions[?type == 'TemplateReady']) status "False", reason TemplateNotFound
    status = until(lambda: (s := env.service(name, ns).get("status") or {}).get("conditions") and s, "a status")
    assert status["status"] == "Failed"
    found = conditions(status)
    template_ready = found["TemplateReady"]
    assert (template_ready["status"], template_ready["reason"]) == ("False", "TemplateNotFound")
    assert template_ready["message"] == 'template "nonexistent-template" not found'
    for condition_type in ("ConfigValid", "Ready"):
        assert (found[condition_type]["status"], found[condition_type]["reason"]) == ("False", "ReferenceNotFound")
    assert "resolvedTemplate" not in status
    assert env.get(KSERVE, name, ns) is None, "nothing applied while the template is missing"
    (event,) = until(lambda: env.events(ns, name, "TemplateNotFound"), "one Warning event")
    assert (event["type"], event["message"]) == ("Warning", 'template "nonexistent-template" not found')

    # the template appears (inline model sources: Ready without discovery): the service is queued and recovers
    template = {
        "apiVersion": V1,
        "kind": "AIMServiceTemplate",
        "metadata": {"name": "nonexistent-template", "namespace": ns},
        "spec": {
            "modelName": "test-missing-tpl-model",
            "metric": "throughput",
            "precision": "bf16",
            "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
            "modelSources": [{"modelId": "org/model", "sourceUri": "hf://org/model", "size": "1Gi"}],
        },
    }
    env.apply(template)
    until(lambda: env.status("aimservicetemplates", "nonexistent-template", ns).get("status") == "Ready", "Ready")
    isvc = until(lambda: env.get(KSERVE, name, ns), "the InferenceService once the template is Ready")
    variables = {e["name"]: e.get("value") for e in isvc["spec"]["predictor"]["containers"][0]["env"]}
    assert (variables["AIM_METRIC"], variables["AIM_PRECISION"]) == ("throughput", "bf16")
    assert variables["AIM_MODEL_ID"] == "org/model", "the template's first model source"
    status = until(lambda: (s := env.service(name, ns)["status"]).get("status") == "Running" and s, "Running")
    found = conditions(status)
    assert (found["TemplateReady"]["status"], found["TemplateReady"]["reason"]) == ("True", "Resolved")
    assert found["TemplateReady"]["message"] == "AIMServiceTemplate nonexistent-template is ready"
    assert (found["ConfigValid"]["status"], found["Ready"]["status"]) == ("True", "True")
    template_uid = env.get("aimservicetemplates", "nonexistent-template", ns)["metadata"]["uid"]  # type: ignore[index]
    assert status["resolvedTemplate"] == {
        "kind": "AIMServiceTemplate",
        "name": "nonexistent-template",
        "namespace": ns,
        "scope": "Namespace",
        "uid": template_uid,
    }
    assert env.status("aimservices", name, ns)["resolvedTemplate"] == status["resolvedTemplate"], "same in v1alpha2"
    assert len(env.events(ns, name, "TemplateNotFound")) == 1, "one Warning event"
    # upstream's MODEL and TEMPLATE columns (v1alpha1) read status.resolvedModel and status.resolvedTemplate
    table = env.k("get", SERVICES_V1, name, "-n", ns).splitlines()
    assert table[0].split()[:4] == ["NAME", "STATUS", "MODEL", "TEMPLATE"]
    assert table[1].split()[:4] == [name, "Running", "test-missing-tpl-model", "nonexistent-template"]


def test_upstreams_basic_lifecycle_service_resolves_its_named_template_and_serves_with_its_env(env: Env) -> None:
    """Ported: aimservice/common/basic-lifecycle (its template discovered by the simulated aim-dummy)."""
    ns = "tpl-basic-lifecycle"
    env.apply(namespace(ns))
    model = env.apply_file("basic-lifecycle/model.yaml", ns)
    model_name = model["metadata"]["name"]
    env.k("annotate", "aimmodel", model_name, "-n", ns, f"sim.omectl.io/discovery-result={json.dumps(DRY_RUN)}")
    env.apply_file("basic-lifecycle/template.yaml", ns)
    # chainsaw: Wait for template discovery to complete
    until(lambda: env.status("aimservicetemplates", "test-service-template", ns).get("status") == "Ready", "Ready")
    service = env.apply_file("basic-lifecycle/service.yaml", ns)
    name = service["metadata"]["name"]
    # chainsaw: Verify service resolves model and template (the template part)
    status = until(lambda: (s := env.service(name, ns).get("status") or {}).get("resolvedTemplate") and s, "resolved")
    assert status["resolvedTemplate"]["name"] == "test-service-template"
    assert conditions(status)["TemplateReady"]["status"] == "True"
    # chainsaw: Verify InferenceService is created with correct env vars
    (isvc,) = until(
        lambda: json.loads(env.k("get", KSERVE, "-n", ns, "-l", f"aim.eai.amd.com/service={name}", "-o", "json"))[
            "items"
        ],
        "the InferenceService",
    )
    (container,) = [c for c in isvc["spec"]["predictor"]["containers"] if c["name"] == "kserve-container"]
    variables = {e["name"]: e.get("value") for e in container["env"]}
    assert variables["AIM_CACHE_PATH"] == "/workspace/cache"
    assert (variables["AIM_METRIC"], variables["AIM_PRECISION"]) == ("latency", "fp16")
    # the template's hardware (its resolved GPU, upstream's defaults for one GPU), labels and node affinity
    assert container["resources"] == {
        "requests": {"cpu": "4", "memory": "32Gi", "amd.com/gpu": "1"},
        "limits": {"memory": "48Gi", "amd.com/gpu": "1"},
    }
    labels = isvc["metadata"]["labels"]
    assert (labels["aim.eai.amd.com/template"], labels["aim.eai.amd.com/metric"]) == (
        "test-service-template",
        "latency",
    )
    assert labels["aim.eai.amd.com/precision"] == "fp16"
    template_status = env.status("aimservicetemplates", "test-service-template", ns)
    assert isvc["spec"]["predictor"]["affinity"] == {"nodeAffinity": template_status["resolvedNodeAffinity"]}
    # chainsaw: Verify service reaches Running status
    until(lambda: env.service(name, ns)["status"].get("status") == "Running", "Running")


def test_upstreams_auto_template_selection_service_selects_its_models_default_template_and_runs(env: Env) -> None:
    """Ported: aimservice/common/auto-template-selection (its template discovered by the simulated aim-dummy)."""
    ns = "tpl-auto-select"
    env.apply(namespace(ns))
    # chainsaw: Create model with defaultServiceTemplate
    model = env.apply_file("auto-template-selection/model.yaml", ns)
    model_name = model["metadata"]["name"]
    env.k("annotate", "aimmodel", model_name, "-n", ns, f"sim.omectl.io/discovery-result={json.dumps(DRY_RUN)}")
    # chainsaw: Create service template; Wait for template discovery to complete
    env.apply_file("auto-template-selection/template.yaml", ns)
    until(lambda: env.status("aimservicetemplates", "test-auto-select-template", ns).get("status") == "Ready", "Ready")
    # a watch of the namespace's services at v1alpha1 sees every state the service is written in: it is listening
    # once it lists a marker (another service)
    marker = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": "watch-marker", "namespace": ns}}
    env.apply({**marker, "spec": {"model": {"name": "watch-marker-model"}}})
    output = 'jsonpath={.metadata.name} {.status.status}{"\\n"}'
    argv = env.kubectl.argv(f"--context={CLUSTER}", "get", SERVICES_V1, "-n", ns, "--watch", "-o", output)
    watch = subprocess.Popen(
        [arg for arg in argv if not arg.startswith("--request-timeout")],  # a watch runs until it is ended
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env.kubectl.env(),
    )
    try:
        assert watch.stdout is not None
        ready, _, _ = select.select([watch.stdout], [], [], 30)
        assert ready and watch.stdout.readline().startswith("watch-marker"), "the watch lists the marker"
        # chainsaw: Create service without explicit template
        service = env.apply_file("auto-template-selection/service.yaml", ns)
        name = service["metadata"]["name"]
        assert "template" not in service["spec"]
        # chainsaw: Verify service auto-selects the template
        status = until(
            lambda: (
                (s := env.service(name, ns).get("status") or {}).get("resolvedModel")
                and s.get("resolvedTemplate")
                and s
            ),
            "the model and the template resolved",
        )
        assert status["resolvedModel"]["name"] == "test-auto-select-model"
        assert status["resolvedTemplate"]["name"] == "test-auto-select-template"
        found = conditions(status)
        assert found["ModelReady"]["status"] == "True"
        assert found["TemplateReady"]["status"] == "True"
        # chainsaw: Verify service reaches Running status
        until(lambda: env.service(name, ns)["status"].get("status") == "Running", "Running")
    finally:
        watch.terminate()
        seen, _ = watch.communicate(timeout=20)
    # chainsaw: Verify service starts (Starting, before Running)
    states = [line.split()[1] for line in seen.splitlines() if line.startswith(f"{name} ") and len(line.split()) > 1]
    assert "Starting" in states and states.index("Starting") < states.index("Running"), states

    status = env.service(name, ns)["status"]
    found = conditions(status)
    model_uid = env.get("aimmodels", model_name, ns)["metadata"]["uid"]  # type: ignore[index]
    assert status["resolvedModel"] == {
        "kind": "AIMModel",
        "name": model_name,
        "namespace": ns,
        "scope": "Namespace",
        "uid": model_uid,
    }
    assert (found["ModelReady"]["reason"], found["ModelReady"]["message"]) == (
        "ModelResolved",
        f"AIMModel {model_name} is ready",
    )
    assert found["TemplateReady"]["message"] == "AIMServiceTemplate test-auto-select-template is ready"
    v2 = env.status("aimservices", name, ns)
    assert (v2["resolvedModel"], v2["resolvedTemplate"]) == (status["resolvedModel"], status["resolvedTemplate"])
    assert env.get(KSERVE, name, ns) is not None
    # upstream's MODEL and TEMPLATE columns (v1alpha1) read status.resolvedModel and status.resolvedTemplate
    table = env.k("get", SERVICES_V1, name, "-n", ns).splitlines()
    assert table[0].split()[:4] == ["NAME", "STATUS", "MODEL", "TEMPLATE"]
    assert table[1].split()[:4] == [name, "Running", model_name, "test-auto-select-template"]


def test_a_service_waits_for_its_named_cluster_template_until_it_is_ready(env: Env) -> None:
    ns = "tpl-cluster"
    env.apply(namespace(ns))
    env.apply(
        {
            "apiVersion": "aim.eai.amd.com/v1alpha2",
            "kind": "AIMClusterModel",
            "metadata": {"name": "waiting-model"},
            "spec": {"image": "ghcr.io/amd/aim-dummy:0.1", "discovery": {"enabled": False}},
        },
        {
            "apiVersion": V1,
            "kind": "AIMClusterServiceTemplate",
            "metadata": {"name": "needs-mi355x"},
            "spec": {
                "modelName": "waiting-model",
                "hardware": {"gpu": {"requests": 1, "model": "MI355X"}},
                "modelSources": [{"modelId": "org/model", "sourceUri": "hf://org/model", "size": "1Gi"}],
            },
        },
        {
            "apiVersion": V1,
            "kind": "AIMService",
            "metadata": {"name": "waits", "namespace": ns},
            "spec": {"model": {"name": "waiting-model"}, "template": {"name": "needs-mi355x"}},
        },
    )
    until(lambda: env.status("aimclusterservicetemplates", "needs-mi355x").get("status") == "NotAvailable", "NA")
    message = "AIMClusterServiceTemplate needs-mi355x is not available (no matching GPUs)"
    status = until(
        lambda: (
            (s := env.service("waits", ns).get("status") or {})
            and conditions(s).get("TemplateReady", {}).get("message") == message
            and s
        ),
        "waiting for the template",
    )
    assert status["status"] == "Pending"
    assert conditions(status)["TemplateReady"]["reason"] == "TemplateNotReady"
    assert "resolvedTemplate" not in status
    assert env.get(KSERVE, "waits", ns) is None, "the InferenceService waits for the template"
    until(lambda: env.events(ns, "waits", "TemplateNotReady"), "a Warning event")

    # a node with the template's GPU appears: the template turns Ready, which queues the service
    node = sorted(n["metadata"]["name"] for n in json.loads(env.k("get", "nodes", "-o", "json"))["items"])[0]
    env.k("label", "node", node, "amd.com/gpu.device-id=75a3", "--overwrite")
    try:
        status = until(
            lambda: (s := env.service("waits", ns).get("status") or {}).get("resolvedTemplate") and s, "resolved"
        )
        assert status["resolvedTemplate"]["scope"] == "Cluster" and "namespace" not in status["resolvedTemplate"]
        until(lambda: env.get(KSERVE, "waits", ns), "the InferenceService")
    finally:
        env.k("label", "node", node, "amd.com/gpu.device-id=74a1", "--overwrite")


def test_a_models_default_template_is_followed_as_the_model_and_the_template_appear(env: Env) -> None:
    """The re-queues: a service naming no template, Failed while its model does not exist (upstream's ModelNotFound),
    is reconciled again when its model appears (its default template then missing: Failed, TemplateNotFound) and
    again when that template appears (it recovers)."""
    ns = "tpl-auto-late"
    env.apply(namespace(ns))
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMService",
            "metadata": {"name": "late", "namespace": ns},
            "spec": {"model": {"name": "late-model"}},
        }
    )
    status = until(lambda: (s := env.service("late", ns).get("status") or {}).get("status") == "Failed" and s, "Failed")
    assert conditions(status)["ModelReady"]["reason"] == "ModelNotFound" and "TemplateReady" not in conditions(status)
    assert "resolvedModel" not in status
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMModel",
            "metadata": {"name": "late-model", "namespace": ns},
            "spec": {
                "image": "ghcr.io/amd/aim-dummy:0.1",
                "defaultServiceTemplate": "late-template",
                "discovery": {"extractMetadata": False, "createServiceTemplates": False},
            },
        }
    )
    status = until(
        lambda: (
            (s := env.service("late", ns).get("status") or {}).get("status") == "Failed"
            and "TemplateReady" in conditions(s)
            and s
        ),
        "TemplateNotFound",
    )
    found = conditions(status)
    assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("True", "ModelResolved")
    assert (found["TemplateReady"]["reason"], found["TemplateReady"]["message"]) == (
        "TemplateNotFound",
        'template "late-template" not found',
    )
    assert status["resolvedModel"]["name"] == "late-model"
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMServiceTemplate",
            "metadata": {"name": "late-template", "namespace": ns},
            "spec": {
                "modelName": "late-model",
                "metric": "throughput",
                "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
                "modelSources": [{"modelId": "org/model", "sourceUri": "hf://org/model", "size": "1Gi"}],
            },
        }
    )
    status = until(lambda: (s := env.service("late", ns)["status"]).get("status") == "Running" and s, "Running")
    assert status["resolvedTemplate"] == {
        "kind": "AIMServiceTemplate",
        "name": "late-template",
        "namespace": ns,
        "scope": "Namespace",
        "uid": env.get("aimservicetemplates", "late-template", ns)["metadata"]["uid"],  # type: ignore[index]
    }
    isvc = env.get(KSERVE, "late", ns)
    assert isvc is not None
    variables = {e["name"]: e.get("value") for e in isvc["spec"]["predictor"]["containers"][0]["env"]}
    assert variables["AIM_METRIC"] == "throughput", "the default template's env"


def test_upstreams_frozen_model_scenarios_select_the_template_automatically_and_hold_for_the_model(env: Env) -> None:
    """Ported: aimservice/frozen/model-ready, model-progressing and model-failed (each in its namespace)."""
    for scenario in ("model-ready", "model-progressing", "model-failed"):
        env.apply(namespace(f"frozen-{scenario}"))
        env.apply_frozen(f"{scenario}/model.yaml", f"frozen-{scenario}")
        if scenario != "model-failed":
            env.apply_frozen(f"{scenario}/template.yaml", f"frozen-{scenario}")
        env.apply_file(f"../frozen/{scenario}/service.yaml", f"frozen-{scenario}")

    def settled(scenario: str, *states: str) -> dict[str, Any]:
        ns = f"frozen-{scenario}"
        return until(  # type: ignore[no-any-return]
            lambda: (s := env.service("test-service", ns).get("status") or {}).get("status") in states and s, states
        )

    # chainsaw (model-ready): status Starting, ModelReady True / ModelResolved, TemplateReady True / Resolved (the
    # simulated InferenceService may be ready at once: Running then)
    status = settled("model-ready", "Starting", "Running")
    found = conditions(status)
    assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("True", "ModelResolved")
    assert (found["TemplateReady"]["status"], found["TemplateReady"]["reason"]) == ("True", "Resolved")
    assert status["resolvedTemplate"]["name"] == "test-template", "selected by its spec.modelName"
    assert env.get(KSERVE, "test-service", "frozen-model-ready") is not None

    # chainsaw (model-progressing): status Pending, ModelReady False / ModelNotReady
    status = settled("model-progressing", "Pending")
    found = conditions(status)
    assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("False", "ModelNotReady")
    assert found["ModelReady"]["message"] == "AIMModel test-model is not ready yet"
    assert found["TemplateReady"]["status"] == "True" and status["resolvedTemplate"]["name"] == "test-template"
    assert "resolvedModel" not in status
    assert env.get(KSERVE, "test-service", "frozen-model-progressing") is None, "held for the model"

    # chainsaw (model-failed): status Failed, ModelReady False / ModelNotReady
    status = settled("model-failed", "Failed")
    found = conditions(status)
    assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("False", "ModelNotReady")
    assert found["ModelReady"]["message"] == "AIMModel test-model is in failed state"
    assert env.get(KSERVE, "test-service", "frozen-model-failed") is None, "held for the model"

    # the progressing model turns Ready: its status change queues the service, which creates its InferenceService
    ns = "frozen-model-progressing"
    env.k("patch", "aimmodel", "test-model", "-n", ns, "--type=merge", "--subresource=status", "-p", READY)
    status = settled("model-progressing", "Starting", "Running")
    assert conditions(status)["ModelReady"]["status"] == "True" and status["resolvedModel"]["name"] == "test-model"
    until(lambda: env.get(KSERVE, "test-service", ns), "the InferenceService")


READY = json.dumps({"status": {"status": "Ready"}})

FROZEN_TEMPLATE_SCENARIOS = {
    # scenario: (frozen documents, the service's states, TemplateReady status and reason, resolvedTemplate scope)
    "all-ready": (("model.yaml", "template.yaml"), ("Starting", "Running"), ("True", "Resolved"), "Namespace"),
    "template-ready": (("model.yaml", "template.yaml"), ("Starting", "Running"), ("True", "Resolved"), "Namespace"),
    "template-failed": (("model.yaml", "template.yaml"), ("Pending",), ("False", "TemplateNotReady"), None),
    "cluster-model-ready": (
        ("cluster-model.yaml", "cluster-template.yaml"),
        ("Starting", "Running"),
        ("True", "Resolved"),
        "Cluster",
    ),
}


def test_upstreams_frozen_template_scenarios_select_the_models_template_automatically(env: Env) -> None:
    """Ported: aimservice/frozen/all-ready, template-ready, template-failed and cluster-model-ready (each in its
    namespace; the chainsaw assertions below; the simulated InferenceService may be ready at once: Running)."""
    for scenario, (documents, _, _, _) in FROZEN_TEMPLATE_SCENARIOS.items():
        ns = f"frozen-{scenario}"
        env.apply(namespace(ns))
        for document in documents:
            env.apply_frozen(f"{scenario}/{document}", None if document.startswith("cluster-") else ns)
        env.apply_file(f"../frozen/{scenario}/service.yaml", ns)
    for scenario, (_, states, template_ready, scope) in FROZEN_TEMPLATE_SCENARIOS.items():
        ns = f"frozen-{scenario}"
        status = until(
            lambda ns=ns, states=states: (
                (s := env.service("test-service", ns).get("status") or {}).get("status") in states and s
            ),
            f"{scenario}: {states}",
        )
        found = conditions(status)
        assert (found["TemplateReady"]["status"], found["TemplateReady"]["reason"]) == template_ready, scenario
        assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("True", "ModelResolved"), scenario
        if scope is None:
            assert "resolvedTemplate" not in status, scenario
            assert found["TemplateReady"]["message"] == "Templates exist but are not ready yet"
            assert env.get(KSERVE, "test-service", ns) is None, "nothing to serve with"
        else:
            template = "test-cluster-template" if scope == "Cluster" else "test-template"
            assert (status["resolvedTemplate"]["name"], status["resolvedTemplate"]["scope"]) == (template, scope)


def frozen_template(kind: str, name: str, ns: str | None) -> dict[str, Any]:
    """A paused template for `sel-model` on MI300X, its status set by the test (as upstream's frozen ones are)."""
    meta: dict[str, Any] = {"name": name, "annotations": {"aim.eai.amd.com/reconciliation-paused": "true"}}
    if ns is not None:
        meta["namespace"] = ns
    spec = {"modelName": "sel-model", "hardware": {"gpu": {"model": "MI300X", "requests": 1}}}
    return {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": spec}


def test_automatic_selection_follows_the_templates_of_the_model_as_they_appear_and_change(env: Env) -> None:
    ns = "tpl-select"
    env.apply(namespace(ns))
    paused = {"aim.eai.amd.com/reconciliation-paused": "true"}
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMModel",
            "metadata": {"name": "sel-model", "namespace": ns, "annotations": paused},
            "spec": {"image": "ghcr.io/example/sel:v1"},
        }
    )
    env.k("patch", "aimmodel", "sel-model", "-n", ns, "--type=merge", "--subresource=status", "-p", READY)

    def put(kind: str, name: str, where: str | None, **profile: Any) -> None:
        env.apply(frozen_template(kind, name, where))
        body = json.dumps({"status": {"status": "Ready", "profile": {"metadata": {"gpu": "MI300X", **profile}}}})
        scope = ["-n", where] if where else []
        env.k("patch", kind.lower(), name, *scope, "--type=merge", "--subresource=status", "-p", body)

    def service(name: str) -> None:
        env.apply(
            {
                "apiVersion": V1,
                "kind": "AIMService",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"model": {"name": "sel-model"}},
            }
        )

    def template_ready(name: str, message: str) -> dict[str, Any]:
        return until(  # type: ignore[no-any-return]
            lambda: (
                (s := env.service(name, ns).get("status") or {})
                and conditions(s).get("TemplateReady", {}).get("message") == message
                and s
            ),
            message,
        )

    # only an unoptimized template: none selected, the service waits and says why
    put("AIMServiceTemplate", "sel-unopt", ns, type="unoptimized", metric="latency")
    service("first")
    status = template_ready(
        "first",
        'No available templates match requirements for model "sel-model": 1 unoptimized template(s) filtered out. '
        "Set allowUnoptimized to use them.",
    )
    assert (status["status"], conditions(status)["TemplateReady"]["reason"]) == ("Pending", "TemplateNotFound")
    assert "resolvedTemplate" not in status and env.get(KSERVE, "first", ns) is None
    # optimized templates appearing queue it: it selects one (whichever it sees first) and runs
    put("AIMServiceTemplate", "sel-a", ns, type="optimized", metric="throughput", precision="fp16")
    put("AIMServiceTemplate", "sel-b", ns, type="optimized", metric="throughput", precision="fp16")
    status = until(lambda: (s := env.service("first", ns).get("status") or {}).get("resolvedTemplate") and s, "one")
    first_choice = status["resolvedTemplate"]["name"]
    assert first_choice in ("sel-a", "sel-b")
    until(lambda: env.get(KSERVE, "first", ns), "the InferenceService")
    # a service arriving now sees two equally preferred: ambiguous, nothing applied
    service("second")
    status = template_ready("second", 'Multiple templates (2) satisfy model "sel-model"')
    assert (status["status"], conditions(status)["TemplateReady"]["reason"]) == (
        "Pending",
        "TemplateSelectionAmbiguous",
    )
    assert env.get(KSERVE, "second", ns) is None
    # a cluster template ranked higher does not count while namespaced ones remain; sel-b's profile changing to the
    # preferred metric (its status) decides it for the second; the first keeps its Ready template, as upstream keeps it
    put("AIMClusterServiceTemplate", "sel-cluster", None, type="optimized", metric="latency", precision="fp4")
    put("AIMServiceTemplate", "sel-b", ns, type="optimized", metric="latency", precision="fp16")
    status = template_ready("second", "AIMServiceTemplate sel-b is ready")
    assert status["resolvedTemplate"]["name"] == "sel-b"
    until(lambda: env.get(KSERVE, "second", ns), "the InferenceService")
    assert env.service("first", ns)["status"]["resolvedTemplate"]["name"] == first_choice


def test_a_services_overrides_derive_its_template_which_it_serves_and_which_goes_with_it(env: Env) -> None:
    """`spec.overrides` (upstream's aimservice template.go: generateDerivedTemplateName, buildDerivedTemplate): the
    service's named template is the base of a derived AIMServiceTemplate of upstream's name, the base's spec with the
    overrides, owned by the service; the service resolves, reports and serves the derived one, and it goes with the
    service. Upstream has no e2e scenario for overrides at the pinned commit: its services with overrides
    (aimservice/common and gpu/profile-id-propagation, not ported: their templates come from aim-dummy's image
    labels) assert only the InferenceService's AIM_PROFILE_ID, which a derived template keeps. This scenario is
    omectl's, checked against upstream's code."""
    ns = "tpl-overrides"
    env.apply(namespace(ns))
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMModel",
            "metadata": {"name": "ovr-model", "namespace": ns},
            "spec": {
                "image": "ghcr.io/amd/aim-dummy:0.1",
                "discovery": {"extractMetadata": False, "createServiceTemplates": False},
            },
        }
    )
    sources = [{"modelId": "org/model", "sourceUri": "hf://org/model", "size": "1Gi"}]
    base_spec = {
        "modelName": "ovr-model",
        "metric": "throughput",
        "precision": "bf16",
        "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
        "modelSources": sources,
    }
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMServiceTemplate",
            "metadata": {"name": "ovr-base", "namespace": ns},
            "spec": base_spec,
        }
    )
    overrides = {"metric": "latency", "precision": "fp8", "hardware": {"gpu": {"model": "MI300X", "requests": 2}}}
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMService",
            "metadata": {"name": "ovr-svc", "namespace": ns},
            "spec": {"model": {"name": "ovr-model"}, "template": {"name": "ovr-base"}, "overrides": overrides},
        }
    )
    derived_name = "ovr-base-ovr-mi300x-2gpu-fp8-latency-6be8"  # upstream's <base>-ovr-<gpu>-<n>gpu-<p>-<m>-<hash4>
    derived = until(lambda: env.get("aimservicetemplates", derived_name, ns), "the derived template")
    service_uid = env.service("ovr-svc", ns)["metadata"]["uid"]
    labels = derived["metadata"]["labels"]
    assert labels == {
        "app.kubernetes.io/managed-by": "omectl",
        "aim.eai.amd.com/origin": "derived",
        "aim.eai.amd.com/service.name": "ovr-svc",
    }
    (owner,) = derived["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "AIMService",
        "ovr-svc",
        service_uid,
        True,
    )
    spec = derived["spec"]
    assert (spec["modelName"], spec["metric"], spec["precision"]) == ("ovr-model", "latency", "fp8")
    assert (spec["hardware"]["gpu"]["model"], spec["hardware"]["gpu"]["requests"]) == ("MI300X", 2)
    assert (spec["modelSources"], spec["caching"]) == (sources, {"enabled": True})
    assert "runtimeConfigName" not in spec, "upstream's default, as omectl writes it: left out"

    # the service waits for the derived template, then resolves and serves it (not its base)
    status = until(
        lambda: (s := env.service("ovr-svc", ns).get("status") or {}).get("status") == "Running" and s, "Running"
    )
    uid = env.get("aimservicetemplates", derived_name, ns)["metadata"]["uid"]  # type: ignore[index]
    assert status["resolvedTemplate"] == {
        "kind": "AIMServiceTemplate",
        "name": derived_name,
        "namespace": ns,
        "scope": "Namespace",
        "uid": uid,
    }
    assert conditions(status)["TemplateReady"]["message"] == f"AIMServiceTemplate {derived_name} is ready"
    isvc = env.get(KSERVE, "ovr-svc", ns)
    assert isvc is not None and isvc["metadata"]["labels"]["aim.eai.amd.com/template"] == derived_name
    (container,) = isvc["spec"]["predictor"]["containers"]
    variables = {e["name"]: e.get("value") for e in container["env"]}
    assert (variables["AIM_METRIC"], variables["AIM_PRECISION"]) == ("latency", "fp8"), "the overrides"
    assert container["resources"]["limits"]["amd.com/gpu"] == "2", "the derived template's GPUs"
    assert env.get("aimservicetemplates", "ovr-base", ns) is not None, "the base stays as it is"

    # the derived template goes with the service (its owner)
    env.k("delete", "aimservices", "ovr-svc", "-n", ns)
    until(lambda: env.get("aimservicetemplates", derived_name, ns) is None, "the derived template deleted")


def test_a_v1alpha1_service_by_image_creates_one_shared_model_with_its_propagated_labels(env: Env) -> None:
    """The v1alpha1 image path (upstream's aimservice model.go; the spec's edge AIMService -> auto-created AIMModel)."""
    ns, image = "img-model", "ghcr.io/example/by-image:1.0"
    env.apply(namespace(ns))
    propagation = {"enabled": True, "match": ["team-*", "cost-center"]}
    env.apply(
        {
            "apiVersion": V1,
            "kind": "AIMRuntimeConfig",
            "metadata": {"name": "default", "namespace": ns},
            "spec": {"labelPropagation": propagation},
        }
    )
    labels = {"team-alpha": "frontend", "cost-center": "cc-12345", "env": "test"}
    for name in ("by-image", "by-image-too"):
        env.apply(
            {
                "apiVersion": V1,
                "kind": "AIMService",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"model": {"image": image}, "caching": {"mode": "Shared"}},
            }
        )
    model_name = generated_model_name(image)
    model = until(lambda: env.get("aimmodels", model_name, ns), "the model")
    assert model["metadata"]["labels"] == {
        "aim.eai.amd.com/origin": "auto-generated",
        "team-alpha": "frontend",
        "cost-center": "cc-12345",
    }, "the matching labels propagated, env not"
    assert "ownerReferences" not in model["metadata"], "shared, as upstream leaves it unowned"
    assert model["spec"]["image"] == image
    for name in ("by-image", "by-image-too"):
        status = until(
            lambda name=name: (
                (s := env.service(name, ns).get("status") or {})
                and model_name in conditions(s).get("ModelReady", {}).get("message", "")
                and s
            ),
            f"{name} resolves the model",
        )
        assert conditions(status)["ModelReady"]["reason"] in ("ModelResolved", "ModelNotReady")
    models = json.loads(env.k("get", "aimmodels", "-n", ns, "-o", "json"))["items"]
    assert [m["metadata"]["name"] for m in models] == [model_name], "one model for both services"


def test_upstreams_v1alpha1_services_with_only_shared_fields_get_upstreams_model_and_template_checks(env: Env) -> None:
    """Ported: aimservice/frozen/template-not-found, frozen/model-not-found, common/model-not-found and the first
    step of common/model-by-image (each in its namespace). Their services hold only fields v1alpha2 has too: what
    makes them upstream's is the mark every v1alpha1 write leaves on the stored object (the annotation
    `aim.eai.amd.com/v1alpha1-fields`, here `{}`), which a v1alpha1 read does not show. The same services written in
    v1alpha2 are reconciled as before; a v1alpha1 one whose mark is removed in v1alpha2 becomes one of them, and a
    v1alpha2 one patched in v1alpha1 becomes a v1alpha1 one."""
    for scenario in ("template-not-found", "model-not-found"):
        env.apply(namespace(f"frozen-{scenario}"))
    env.apply_frozen("template-not-found/model.yaml", "frozen-template-not-found")
    env.apply_file("../frozen/template-not-found/service.yaml", "frozen-template-not-found")
    env.apply_file("../frozen/model-not-found/service.yaml", "frozen-model-not-found")
    env.apply(namespace("common-model-not-found"))
    env.apply_file("model-not-found/service.yaml", "common-model-not-found")
    env.apply(namespace("common-model-by-image"))
    env.apply_file("model-by-image/service.yaml", "common-model-by-image")
    v2 = "aim.eai.amd.com/v1alpha2"
    for name, model in (("v2-by-name", {"name": "test-model"}), ("v2-missing", {"name": "nonexistent-model"})):
        ns = "frozen-template-not-found" if name == "v2-by-name" else "frozen-model-not-found"
        env.apply(
            {
                "apiVersion": v2,
                "kind": "AIMService",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"model": model},
            }
        )

    def settled(name: str, ns: str, *states: str) -> dict[str, Any]:
        return until(  # type: ignore[no-any-return]
            lambda: (s := env.service(name, ns).get("status") or {}).get("status") in states and s, (name, ns, states)
        )

    # chainsaw (frozen/template-not-found): Pending, ModelReady True / ModelResolved, TemplateReady False /
    # TemplateNotFound (upstream's selection message)
    ns = "frozen-template-not-found"
    status = settled("test-service", ns, "Pending")
    found = conditions(status)
    assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("True", "ModelResolved")
    ready = found["TemplateReady"]
    assert (ready["status"], ready["reason"]) == ("False", "TemplateNotFound")
    assert ready["message"] == 'No templates found for model "test-model"'
    assert env.get(KSERVE, "test-service", ns) is None, "held: no template to serve with"
    stored = env.get("aimservices", "test-service", ns)
    assert stored is not None and stored["metadata"]["annotations"]["aim.eai.amd.com/v1alpha1-fields"] == "{}"
    read = env.service("test-service", ns)["metadata"]["annotations"]
    assert "aim.eai.amd.com/v1alpha1-fields" not in read, "a v1alpha1 read shows no mark"
    # the same service written in v1alpha2: served from its model alone, as before
    until(lambda: env.get(KSERVE, "v2-by-name", ns), "the v1alpha2 service's InferenceService")
    assert "TemplateReady" not in conditions(env.status("aimservices", "v2-by-name", ns))

    # chainsaw (frozen/model-not-found and common/model-not-found, the latter naming a template too): Failed,
    # ModelReady False / ModelNotFound
    for name, ns in (
        ("test-service", "frozen-model-not-found"),
        ("test-missing-model-service", "common-model-not-found"),
    ):
        status = settled(name, ns, "Failed")
        missing = conditions(status)["ModelReady"]
        assert (missing["status"], missing["reason"]) == ("False", "ModelNotFound"), ns
        assert missing["message"] == f'model "nonexistent-model" not found in namespace {ns} or cluster scope'
        assert "TemplateReady" not in conditions(status), "the model is checked first"
        assert env.get(KSERVE, name, ns) is None, ns
    # written in v1alpha2, a missing model is rendered as before (docs/aim-resources.md)
    assert "ModelReady" not in conditions(
        until(
            lambda: env.status("aimservices", "v2-missing", "frozen-model-not-found"), "the v1alpha2 service's status"
        )
    )

    # chainsaw (common/model-by-image), first step: the model is created for the image and resolved
    ns, image = "common-model-by-image", "ghcr.io/silogen/aim-dummy:0.1.10"
    model_name = generated_model_name(image)
    model = until(lambda: env.get("aimmodels", model_name, ns), "the model made for the image")
    assert model["spec"]["image"] == image and model["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
    until(
        lambda: (
            model_name
            in conditions(env.service("test-image-service", ns).get("status") or {})
            .get("ModelReady", {})
            .get("message", "")
        ),
        "the service resolves the model",
    )

    # a status write keeps the mark (the frozen model's, patched through /status); removing it in v1alpha2 makes the
    # service a v1alpha2 one: served from its model alone
    ns = "frozen-template-not-found"
    frozen_model = env.get("aimmodels", "test-model", ns)
    assert frozen_model is not None and frozen_model["status"]["status"] == "Ready"
    assert "aim.eai.amd.com/v1alpha1-fields" in frozen_model["metadata"]["annotations"]
    env.k("annotate", "aimservices", "test-service", "-n", ns, "aim.eai.amd.com/v1alpha1-fields-")
    until(lambda: env.get(KSERVE, "test-service", ns), "the InferenceService of the unmarked service")
    assert "TemplateReady" not in conditions(env.status("aimservices", "test-service", ns))
    # and a patch in v1alpha1 (the API server reads the object in v1alpha1, patches it and converts it back) makes the
    # v1alpha2 service one written in v1alpha1: it waits for a template of its model as upstream's
    patch = json.dumps({"spec": {"replicas": 2}})
    env.k("patch", SERVICES_V1, "v2-by-name", "-n", ns, "--type=merge", "-p", patch)
    assert (env.get("aimservices", "v2-by-name", ns) or {})["metadata"]["annotations"][
        "aim.eai.amd.com/v1alpha1-fields"
    ] == "{}"
    held = until(
        lambda: conditions(env.status("aimservices", "v2-by-name", ns)).get("TemplateReady"), "the v1alpha1 hold"
    )
    assert held["reason"] == "TemplateNotFound"


# --- v1alpha1's inline custom model (aimservice/common/custom-model) ----------------------------------------------

MODELS_V1 = "aimmodels.v1alpha1.aim.eai.amd.com"
CUSTOM_LABEL = "aim.eai.amd.com/custom-model=true"


def listed(env: Env, resource: str, selector: str, ns: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(env.k("get", resource, "-n", ns, "-l", selector, "-o", "json"))["items"]
    return items


def ready_model(env: Env, name: str, ns: str) -> dict[str, Any]:
    """The model (read in v1alpha1) once Ready. Its own discovery (omectl's, docs/aim-versions.md) finds no profile
    for a custom model: the simulated node writes a result only from the model's `sim.omectl.io/discovery-result`,
    which a model the controller made cannot carry, so it is written here as the discovery container writes it."""
    job_name = discovery_name({"kind": "AIMModel", "metadata": {"name": name}})

    def probe() -> dict[str, Any] | None:
        model = env.get(MODELS_V1, name, ns) or {}
        if (model.get("status") or {}).get("status") == "Ready":
            return model
        job = env.get("jobs", job_name, ns)
        if job is not None and env.get("configmaps", job_name, ns) is None:
            env.apply(discovery_configmap(job, "[]"))
        return None

    return until(probe, f"AIMModel {ns}/{name} Ready")


def resolved(env: Env, name: str, ns: str) -> dict[str, Any]:
    """The service's status (v1alpha1) once its model and template are resolved."""

    def probe() -> dict[str, Any] | None:
        status: dict[str, Any] = env.service(name, ns).get("status") or {}
        return status if status.get("resolvedModel") and status.get("resolvedTemplate") else None

    return until(probe, f"{ns}/{name} resolves its model and template")


def sized_by_check_size(env: Env, ns: str) -> None:
    """The namespace's AIMArtifacts, whose sources name no size, sized by their check-size Jobs (upstream's; the
    simulated downloader finds the sizes `SOURCES` gives): `status.discoveredSizeBytes`."""
    selector = "aim.eai.amd.com/template-cache.name"
    artifacts = until(lambda: listed(env, ARTIFACTS_V1, selector, ns), f"{ns}: the template cache's artifacts")
    for artifact in artifacts:
        name = artifact["metadata"]["name"]
        assert "size" not in artifact["spec"], "the custom model's source names no size"
        status = until(
            lambda name=name: (s := env.status(ARTIFACTS_V1, name, ns)).get("discoveredSizeBytes") and s,
            f"{ns}/{name}: its size discovered",
        )
        assert status["discoveredSizeBytes"] == SOURCES.size_of(artifact["spec"]["sourceUri"])
        (job,) = listed(env, "jobs", f"aim.eai.amd.com/cache.name={name},aim.eai.amd.com/component=check-size", ns)
        assert job["spec"]["template"]["spec"]["containers"][0]["args"] == [artifact["spec"]["sourceUri"]]


def test_upstreams_inline_custom_model_services_make_their_model_and_template_and_start(env: Env) -> None:
    """Ported: aimservice/common/custom-model/inline-custom-model and cpu-only-inline (each in its namespace), here
    also upstream's name and labels of the model, unowned, and the InferenceService serving the base image."""
    scenarios = {"custom-inline": "inline-custom-model", "custom-cpu-only": "cpu-only-inline"}
    services = {}
    for ns, scenario in scenarios.items():
        env.apply(namespace(ns))
        services[ns] = env.apply_file(f"custom-model/{scenario}/service.yaml", ns)
    models = {}
    for ns, service in services.items():
        custom, service_name = service["spec"]["model"]["custom"], service["metadata"]["name"]
        # chainsaw: Assert AIMModel is auto-created with correct spec (CPU hardware)
        (model,) = until(lambda ns=ns: listed(env, MODELS_V1, CUSTOM_LABEL, ns), f"{ns}: the model")
        name = model["metadata"]["name"]
        assert name == custom_model_name(custom), "upstream's name"
        assert model["metadata"]["labels"] == {
            "aim.eai.amd.com/origin": "auto-generated",
            "aim.eai.amd.com/custom-model": "true",
            "aim.eai.amd.com/service": service_name,
        }
        assert "ownerReferences" not in model["metadata"], "upstream applies it without an owner"
        assert model["spec"]["image"] == custom["baseImage"] == "ghcr.io/silogen/aim-dummy:0.1.10"
        assert model["spec"]["modelSources"] == custom["modelSources"]
        hardware = model["spec"]["custom"]["hardware"]
        if ns == "custom-inline":
            assert hardware == {"gpu": {"requests": 1, "resourceName": "amd.com/gpu"}}  # the CRD's default
        else:
            assert hardware == {"cpu": {"requests": "500m"}}
        models[ns] = ready_model(env, name, ns)
        # (status.sourceType: Custom is v1alpha1-only status omectl does not write, docs/aim-versions.md)
    for ns, service in services.items():
        custom, service_name = service["spec"]["model"]["custom"], service["metadata"]["name"]
        name = models[ns]["metadata"]["name"]
        # chainsaw: Assert AIMServiceTemplate is auto-created (template has CPU hardware and summary)
        selector = f"aim.eai.amd.com/origin=auto-generated,aim.eai.amd.com/model={name}"
        (template,) = until(
            lambda ns=ns, selector=selector: [
                t
                for t in listed(env, "aimservicetemplates", selector, ns)
                if t.get("status", {}).get("status") == "Ready"
            ],
            f"{ns}: the model's template",
        )
        assert template["spec"]["modelSources"] == custom["modelSources"]
        if ns == "custom-inline":
            assert template["spec"]["hardware"]["gpu"]["requests"] == 1
        else:
            assert template["spec"]["hardware"] == {"cpu": {"requests": "500m"}}
            assert template["status"]["resolvedHardware"] == {"cpu": {"requests": "500m"}}
            assert template["status"]["hardwareSummary"] == "CPU"
        # chainsaw: Assert service resolves model and template; progresses to Starting
        status = resolved(env, service_name, ns)
        assert (status["resolvedModel"]["name"], status["resolvedTemplate"]["name"]) == (
            name,
            template["metadata"]["name"],
        )
        found = conditions(status)
        assert (found["ModelReady"]["status"], found["ModelReady"]["reason"]) == ("True", "ModelResolved")
        assert (found["TemplateReady"]["status"], found["TemplateReady"]["reason"]) == ("True", "Resolved")
        # its template cache's artifacts sized by check-size and downloaded, it starts (or runs already: the
        # simulated cluster starts the InferenceService at once)
        assert status["status"] in ("Starting", "Running")
        sized_by_check_size(env, ns)
        # chainsaw: Verify InferenceService is created (has no GPU resources)
        (isvc,) = until(
            lambda ns=ns, service_name=service_name: listed(env, KSERVE, f"aim.eai.amd.com/service={service_name}", ns),
            f"{ns}: the InferenceService",
        )
        (container,) = isvc["spec"]["predictor"]["containers"]
        assert container["image"] == custom["baseImage"], "the model's image"
        requests, limits = container["resources"].get("requests", {}), container["resources"].get("limits", {})
        if ns == "custom-inline":
            assert requests["amd.com/gpu"] == limits["amd.com/gpu"] == "1"
        else:
            assert "amd.com/gpu" not in requests and "amd.com/gpu" not in limits
            assert requests["cpu"] == "500m"
            assert "affinity" not in isvc["spec"]["predictor"], "no GPU node affinity"


def test_upstreams_custom_model_deduplication_shares_one_model_unless_the_s3_endpoint_differs(env: Env) -> None:
    """Ported: aimservice/common/custom-model/model-deduplication and model-deduplication-s3-endpoint (each in its
    namespace): a second service with the same custom model serves the first one's model; one whose source's
    AWS_ENDPOINT_URL differs makes its own."""
    scenarios = {"custom-dedup": "model-deduplication", "custom-dedup-s3": "model-deduplication-s3-endpoint"}
    first = {}
    for ns, scenario in scenarios.items():
        env.apply(namespace(ns))
        first[ns] = env.apply_file(f"custom-model/{scenario}/service-1.yaml", ns)["metadata"]["name"]
    models: dict[str, list[str]] = {}
    for ns, name in first.items():
        # chainsaw: Wait for first service to create (resolve) model
        (model,) = until(lambda ns=ns: listed(env, MODELS_V1, CUSTOM_LABEL, ns), f"{ns}: the first model")
        ready_model(env, model["metadata"]["name"], ns)
        status = resolved(env, name, ns)
        ready = conditions(status)["ModelReady"]
        assert (ready["status"], ready["reason"]) == ("True", "ModelResolved")
        models[ns] = [status["resolvedModel"]["name"]]
    second = {ns: env.apply_file(f"custom-model/{scenario}/service-2.yaml", ns) for ns, scenario in scenarios.items()}
    for ns, service in second.items():
        # chainsaw: Wait for second service to resolve model
        name = service["metadata"]["name"]
        if ns == "custom-dedup-s3":
            model_name = custom_model_name(service["spec"]["model"]["custom"])
            until(lambda ns=ns, model_name=model_name: env.get(MODELS_V1, model_name, ns), f"{ns}: the second model")
            ready_model(env, model_name, ns)
        status = resolved(env, name, ns)
        ready = conditions(status)["ModelReady"]
        assert (ready["status"], ready["reason"]) == ("True", "ModelResolved")
        models[ns].append(status["resolvedModel"]["name"])
    # chainsaw: Verify both services use the same model; only one AIMModel exists with the custom-model label
    dedup = models["custom-dedup"]
    assert dedup[0] == dedup[1], "both services share the first one's model"
    (shared,) = listed(env, MODELS_V1, CUSTOM_LABEL, "custom-dedup")
    assert shared["metadata"]["name"] == dedup[0]
    assert shared["metadata"]["labels"]["aim.eai.amd.com/service"] == first["custom-dedup"], "the one that made it"
    # chainsaw: Verify custom model for service-1 (service-2) preserves endpoint A (B)
    endpoints = models["custom-dedup-s3"]
    assert endpoints[0] != endpoints[1]
    for name, service, endpoint in zip(
        endpoints,
        (first["custom-dedup-s3"], second["custom-dedup-s3"]["metadata"]["name"]),
        ("https://minio-a.example.com", "https://minio-b.example.com"),
        strict=True,
    ):
        selector = f"{CUSTOM_LABEL},aim.eai.amd.com/service={service}"
        (model,) = listed(env, MODELS_V1, selector, "custom-dedup-s3")
        assert model["metadata"]["name"] == name and model["status"]["status"] == "Ready"
        (source,) = model["spec"]["modelSources"]
        assert (source["modelId"], source["sourceUri"]) == ("shared/s3-endpoint-model", "s3://test-bucket/model")
        assert source["env"] == [{"name": "AWS_ENDPOINT_URL", "value": endpoint}]


def test_upstreams_custom_models_make_one_template_from_their_hardware_and_sources(env: Env) -> None:
    """Ported: aimservice/common/custom-model/auto-generated-template and model-source-env (each in its namespace):
    a model with sources and `custom.hardware` but no custom templates makes exactly one template, with the model's
    hardware and its sources (their env too), in its spec and its status."""
    scenarios = {"custom-auto-template": "auto-generated-template", "custom-source-env": "model-source-env"}
    models = {}
    for ns, scenario in scenarios.items():
        env.apply(namespace(ns))
        models[ns] = env.apply_file(f"custom-model/{scenario}/model.yaml", ns)
    for ns, doc in models.items():
        name = doc["metadata"]["name"]
        # chainsaw: Assert model becomes ready (status.sourceType Custom: v1alpha1-only status omectl does not write)
        ready_model(env, name, ns)
        # chainsaw: Assert exactly one template is auto-generated; Verify only one template exists for this model
        selector = f"aim.eai.amd.com/model={name}"
        until(
            lambda ns=ns, selector=selector: [
                t for t in listed(env, "aimservicetemplates", selector, ns) if t.get("status", {}).get("modelSources")
            ],
            f"{ns}: the model's template",
        )
        (template,) = listed(env, "aimservicetemplates", selector, ns)
        assert template["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
        assert template["spec"]["modelName"] == name
        sources = [
            {k: v for k, v in source.items() if k in ("modelId", "sourceUri", "env")}
            for source in doc["spec"]["modelSources"]
        ]
        for where in (template["spec"], template["status"]):
            assert [
                {k: v for k, v in source.items() if k in ("modelId", "sourceUri", "env")}
                for source in where["modelSources"]
            ] == sources, "the model's sources, their env included"
        if ns == "custom-auto-template":
            gpu = {"requests": 1, "model": "MI300X"}
            assert {k: template["spec"]["hardware"]["gpu"][k] for k in gpu} == gpu, "the model's custom.hardware"
            assert {k: template["status"]["resolvedHardware"]["gpu"][k] for k in gpu} == gpu
            assert template["status"]["hardwareSummary"] == "1 x MI300X"
        else:
            env_names = [e["name"] for e in template["spec"]["modelSources"][0]["env"]]
            assert env_names == ["AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION"], "both, in order"


# --- upstream's GPU scenarios (aimservice/gpu), the simulated MI300X nodes standing in for the GPUs ----------------

GPU = UPSTREAM.parent / "gpu"
GATEWAY = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "kserve-ingress-gateway", "namespace": "kgateway-system"},
    "spec": {"gatewayClassName": "kgateway", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
}
"""The Gateway of upstream's e2e clusters, which its GPU scenarios' runtime configs route through."""


def secret(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "stringData": data}


def in_namespace(path: Any, ns: str) -> dict[str, Any]:
    """An upstream document as `kubectl apply -n <ns> -f <path>` applies it."""
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return {**doc, "metadata": {**doc["metadata"], "namespace": ns}}


def container_env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


SNAPSHOT_KINDS = (
    SERVICES_V1,
    MODELS_V1,
    "aimservicetemplates",
    "aimartifacts",
    KSERVE,
    "httproutes",
    "deployments",
    "jobs",
    "pods",
)


class Snapshot:
    """The objects of `SNAPSHOT_KINDS` in some namespaces, read in one `kubectl get`."""

    def __init__(self, env: Env, namespaces: set[str]) -> None:
        listed = json.loads(env.k("get", ",".join(SNAPSHOT_KINDS), "-A", "-o", "json"))["items"]
        self.items = [o for o in listed if o["metadata"].get("namespace") in namespaces]

    def of(self, kind: str, ns: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
        return [
            o
            for o in self.items
            if o["kind"] == kind
            and o["metadata"]["namespace"] == ns
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in (labels or {}).items())
        ]

    def get(self, kind: str, name: str, ns: str) -> dict[str, Any] | None:
        return next((o for o in self.of(kind, ns) if o["metadata"]["name"] == name), None)

    def state(self, kind: str, name: str, ns: str) -> str | None:
        return ((self.get(kind, name, ns) or {}).get("status") or {}).get("status")

    def one(self, kind: str, name: str, ns: str) -> dict[str, Any]:
        found = self.get(kind, name, ns)
        assert found is not None, (kind, name, ns)
        return found

    def predictor(self, name: str, ns: str) -> dict[str, Any]:
        """The inference container of the service's one predictor Pod, running and ready, which upstream reads its
        `InferenceServicePodsReady` from."""
        (pod,) = self.of("Pod", ns, {"serving.kserve.io/inferenceservice": name})
        isvc = self.one("InferenceService", name, ns)
        assert pod["metadata"]["ownerReferences"][0]["uid"] == isvc["metadata"]["uid"]
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        assert (pod["status"]["phase"], ready["status"]) == ("Running", "True"), name
        pods_ready = next(c for c in self.one("AIMService", name, ns)["status"]["conditions"] if "Pods" in c["type"])
        assert (pods_ready["type"], pods_ready["status"], pods_ready["reason"]) == (
            "InferenceServicePodsReady",
            "True",
            "PodsReady",
        )
        (container,) = pod["spec"]["containers"]
        assert container["name"] == "kserve-container"
        (rendered,) = isvc["spec"]["predictor"]["containers"]
        assert (container["image"], container.get("env")) == (rendered["image"], rendered.get("env")), "made from it"
        return container  # type: ignore[no-any-return]

    def routed(self, name: str, ns: str, prefix: str) -> None:
        route = self.one("HTTPRoute", name, ns)
        assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == f"/integration/{prefix}/{name}"
        assert route["spec"]["parentRefs"] == [{"name": "kserve-ingress-gateway", "namespace": "kgateway-system"}]


def test_upstreams_gpu_scenarios_serve_what_their_templates_say_and_a_service_no_node_fits_is_pending(env: Env) -> None:
    """Ported: aimservice/gpu/custom-model, gpu/custom-model-env-propagation, gpu/custom-model-s3 (its MinIO
    Deployment and Jobs run by the simulated cluster), gpu/profile-id-propagation and gpu/pending-resources, each in
    its namespace, at once;
    the GPU environment's secrets (hf-token, ghcr-regcred) and gateway made here. What upstream asserts on the
    inference Pod is asserted on the predictor Pod the simulated KServe and kubelet make, running and ready; the
    HTTP checks (gpu/_shared/validate-http.sh) are not ported, the
    HTTPRoute they go through is checked. The custom models' sources name no size: upstream's check-size Job finds
    it (`sized_by_check_size`)."""
    custom_ns, env_ns, profile_ns = "gpu-custom-model", "gpu-custom-model-env", "gpu-profile-id"
    s3_ns, s3, scenarios = "gpu-custom-model-s3", GPU / "custom-model-s3", GPU / "custom-model-env-propagation"
    pending_ns = "gpu-pending-resources"
    spaces = {custom_ns, env_ns, profile_ns, s3_ns, pending_ns}
    documents = [namespace(ns) for ns in (*sorted(spaces), GATEWAY["metadata"]["namespace"])]
    documents += [GATEWAY, secret("hf-token", profile_ns, **{"hf-token": "hf_simulated"})]
    documents += [secret("ghcr-regcred", ns, **{".dockerconfigjson": "{}"}) for ns in (custom_ns, env_ns, s3_ns)]
    # custom-model-s3: MinIO, its bucket and the model uploaded to it (the simulated Jobs succeed), the model
    s3_files = ("runtime-config.yaml", "minio-service.yaml", "minio-deployment.yaml", "minio-setup-job.yaml")
    documents += [in_namespace(s3 / f, s3_ns) for f in (*s3_files, "model-upload-job.yaml", "model.yaml")]
    documents += [
        in_namespace(GPU / "custom-model" / "runtime-config.yaml", custom_ns),
        in_namespace(GPU / "custom-model" / "service.yaml", custom_ns),
        in_namespace(scenarios / "runtime-config.yaml", env_ns),
        in_namespace(scenarios / "model.yaml", env_ns),
        in_namespace(GPU / "profile-id-propagation" / "runtime-config.yaml", profile_ns),
        in_namespace(GPU / "profile-id-propagation" / "service.yaml", profile_ns),
        # pending-resources: Create service with unschedulable GPU resources (20 GPUs; a node has 8)
        in_namespace(GPU / "pending-resources" / "service.yaml", pending_ns),
    ]
    env.apply(*documents)
    name, env_model, s3_model = "test-gpu-custom-model", "test-env-propagation-model", "test-gpu-s3-model"

    def first_steps() -> Snapshot | None:
        """Both models Ready (custom-model-env-propagation's and custom-model-s3's "Wait for model to be ready"),
        MinIO available and its Jobs done, and custom-model's service started with its artifact."""
        snap = Snapshot(env, spaces)
        ready = all(snap.state("AIMModel", m, ns) == "Ready" for m, ns in ((env_model, env_ns), (s3_model, s3_ns)))
        minio = (snap.one("Deployment", "minio", s3_ns).get("status") or {}).get("availableReplicas") == 1
        jobs = all(
            (snap.one("Job", j, s3_ns).get("status") or {}).get("succeeded") for j in ("minio-setup", "model-upload")
        )
        started = snap.state("AIMService", name, custom_ns) in ("Starting", "Running")
        waiting = started and snap.of("AIMArtifact", custom_ns)
        return snap if ready and minio and jobs and waiting else None

    snap = until(first_steps, "the models Ready, MinIO and its Jobs done, the custom model's service started")
    # custom-model-env-propagation: Verify template has correct profile metadata; Create service using the template
    (template,) = snap.of(
        "AIMServiceTemplate", env_ns, {"aim.eai.amd.com/model": env_model, "aim.eai.amd.com/template.alias": "env-test"}
    )
    assert snap.one("AIMModel", env_model, env_ns)["status"]["sourceType"] == "Custom"
    assert (template["spec"]["type"], template["spec"]["metric"], template["spec"]["precision"]) == (
        "optimized",
        "latency",
        "fp16",
    )
    assert template["spec"]["env"] == [
        {"name": "MAX_MODEL_LEN", "value": "2048"},
        {"name": "CUSTOM_TEST_VAR", "value": "custom-value-123"},
    ]
    assert template["status"]["status"] == "Ready"
    profile = template["status"]["profile"]["metadata"]
    assert (profile["metric"], profile["precision"], profile["type"]) == ("latency", "fp16", "optimized")
    # custom-model-s3: Wait for MinIO; Create MinIO bucket; Download from HF and upload to MinIO; Verify AIMModel is
    # ready (above); Create AIMService referencing model by name
    assert snap.one("AIMModel", s3_model, s3_ns)["status"]["sourceType"] == "Custom"
    env.apply(in_namespace(scenarios / "service.yaml", env_ns), in_namespace(s3 / "service.yaml", s3_ns))

    # custom-model: Verify service starts (Starting, or Running once its cache is); Verify AIMModel is
    # auto-created for custom model; Verify AIMServiceTemplate is auto-created from hardware spec
    status = snap.one("AIMService", name, custom_ns)["status"]
    (custom,) = snap.of("AIMModel", custom_ns, {"aim.eai.amd.com/custom-model": "true"})
    assert custom["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
    assert custom["spec"]["modelSources"] == [{"modelId": "Qwen/Qwen2-0.5B", "sourceUri": "hf://Qwen/Qwen2-0.5B"}]
    assert (custom["status"]["status"], custom["status"]["sourceType"]) == ("Ready", "Custom")
    (generated,) = snap.of("AIMServiceTemplate", custom_ns, {"aim.eai.amd.com/origin": "auto-generated"})
    assert generated["status"]["status"] == "Ready"
    assert status["resolvedTemplate"]["name"] == generated["metadata"]["name"]
    # custom-model: Verify artifact is created via template cache
    (artifact,) = snap.of("AIMArtifact", custom_ns)
    assert artifact["metadata"]["labels"]["aim.eai.amd.com/service"] == name
    sized_by_check_size(env, custom_ns)
    # custom-model-s3: Verify artifact is created for service (its S3 source names no size either: its check-size
    # Job finds it); the source's env (MinIO's endpoint and credentials) reaches the artifact
    sized_by_check_size(env, s3_ns)
    sized_by_check_size(env, pending_ns)  # its Dedicated cache's artifact, as custom-model's

    services = {custom_ns: name, env_ns: "test-env-propagation", profile_ns: "test-gpu-profile-id"}
    services[s3_ns] = "test-gpu-s3-service"

    def running() -> Snapshot | None:
        snap = Snapshot(env, spaces)
        return snap if all(snap.state("AIMService", svc, ns) == "Running" for ns, svc in services.items()) else None

    try:
        snap = until(running, "the four services Running", timeout=90)  # models made from images, under load
    except AssertionError as error:
        last = Snapshot(env, spaces)
        states = [
            (o["metadata"]["name"], o.get("status"))
            for o in last.items
            if o["kind"] in ("AIMService", "AIMModel", "AIMServiceTemplate")
        ]
        raise AssertionError(f"{error}: {states}") from None
    (s3_artifact,) = snap.of("AIMArtifact", s3_ns)
    assert s3_artifact["metadata"]["labels"]["aim.eai.amd.com/service"] == "test-gpu-s3-service"
    assert s3_artifact["spec"]["sourceUri"] == "s3://models/Qwen2-0.5B"
    assert {"name": "AWS_ENDPOINT_URL", "value": "http://minio:9000"} in s3_artifact["spec"]["env"]

    # custom-model and custom-model-s3: Verify Pod has correct image, env vars, and GPU resources; Verify service
    # reaches Running (above)
    for ns, prefix in ((custom_ns, "gpu-custom-model"), (s3_ns, "gpu-custom-model-s3")):
        container = snap.predictor(services[ns], ns)
        assert container["image"] == "amdenterpriseai/aim-base:0.9", "the model's image"
        assert container_env(container)["AIM_MODEL_ID"] == "Qwen/Qwen2-0.5B"
        assert container["resources"]["limits"]["amd.com/gpu"] == "1"
        snap.routed(services[ns], ns, prefix)

    # custom-model-env-propagation: Verify InferenceService has expected env vars
    container = snap.predictor("test-env-propagation", env_ns)
    assert container["image"] == "ghcr.io/silogen/aim-dummy:0.1.10", "the model's image"
    variables = container_env(container)
    assert {k: variables.get(k) for k in ("MAX_MODEL_LEN", "CUSTOM_TEST_VAR", "AIM_METRIC", "AIM_PRECISION")} == {
        "MAX_MODEL_LEN": "2048",
        "CUSTOM_TEST_VAR": "custom-value-123",
        "AIM_METRIC": "latency",
        "AIM_PRECISION": "fp16",
    }
    assert variables["AIM_MODEL_ID"] == "test/env-propagation"
    snap.routed("test-env-propagation", env_ns, "gpu-custom-model-env")

    # profile-id-propagation: Verify AIM_PROFILE_ID is set on inference pod
    status = snap.one("AIMService", "test-gpu-profile-id", profile_ns)["status"]
    selected = snap.one("AIMServiceTemplate", status["resolvedTemplate"]["name"], profile_ns)
    assert selected["spec"]["profileId"] == "vllm-mi300x-fp16-tp1-latency"
    assert selected["status"]["profile"]["metadata"]["type"] == "unoptimized", "allowUnoptimized selects it"
    variables = container_env(snap.predictor("test-gpu-profile-id", profile_ns))
    assert variables["AIM_PROFILE_ID"] == "vllm-mi300x-fp16-tp1-latency"
    assert variables["HF_TOKEN"] == {"secretKeyRef": {"name": "hf-token", "key": "hf-token"}}
    snap.routed("test-gpu-profile-id", profile_ns, "gpu-profile-id")

    # pending-resources: Verify pod is pending due to insufficient resources
    pending = "test-pending-resources"

    def pods_pending() -> dict[str, Any] | None:
        status = env.service(pending, pending_ns).get("status") or {}
        pods = conditions(status).get("InferenceServicePodsReady") or {}
        return status if (status.get("status"), pods.get("reason")) == ("Pending", "FailedScheduling") else None

    status = until(pods_pending, "the service Pending, its pods FailedScheduling")
    pods = conditions(status)["InferenceServicePodsReady"]
    scheduler = "0/4 nodes are available: 4 Insufficient amd.com/gpu."
    assert (pods["status"], pods["message"]) == ("False", scheduler)
    assert conditions(status)["Ready"]["reason"] == "Progressing"
    # the predictor pod the condition was read from, unscheduled, and the scheduler's Event on it
    # (the namespace also holds its artifact's check-size and download pods)
    predictor = f"serving.kserve.io/inferenceservice={pending}"
    (pod,) = json.loads(env.k("get", "pods", "-n", pending_ns, "-l", predictor, "-o", "json"))["items"]
    assert (pod["status"]["phase"], pod["spec"].get("nodeName")) == ("Pending", None)
    (event,) = env.events(pending_ns, pod["metadata"]["name"], "FailedScheduling")
    assert (event["type"], event["message"], event["source"]["component"]) == (
        "Warning",
        scheduler,
        "default-scheduler",
    )


# --- AIMArtifact: upstream's aimartifact scenarios ---------------------------------------------------------------

ARTIFACT_E2E = UPSTREAM.parents[1] / "aimartifact"


def apply_artifact_doc(env: Env, path: str, ns: str) -> None:
    env.k("apply", "-n", ns, "-f", str(ARTIFACT_E2E / path))


def reasons(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}


def test_upstreams_artifact_size_discovery_and_download_failure_scenarios(env: Env) -> None:
    """Ported: aimartifact/size-discovery-and-verification, failure-auth-hf, failure-auth-s3, failure-missing-hf,
    failure-missing-s3 and failure-storage, in one namespace (upstream's MinIO, HuggingFace and Longhorn are
    `SOURCES`). Here also the check-size Job's pod and the failed download pods' termination messages."""
    ns = "artifacts"
    env.apply(namespace(ns))
    paths = [
        "size-discovery-and-verification/artifact-hf.yaml",
        "size-discovery-and-verification/artifact-s3.yaml",
        *(f"{scenario}/artifact.yaml" for scenario in ("failure-auth-hf", "failure-auth-s3", "failure-missing-hf")),
        "failure-missing-s3/artifact.yaml",
        "failure-storage/artifact.yaml",
    ]
    env.k("apply", "-n", ns, *(arg for path in paths for arg in ("-f", str(ARTIFACT_E2E / path))))
    # chainsaw: Assert the cache failure is set correctly (each scenario's reasons)
    expected = {
        "failure-auth-hf": ("AuthError", "AuthError"),
        "failure-auth-s3": ("AuthError", "AuthError"),
        "failure-missing-hf": ("InvalidSpec", "SourceNotFound"),
        "failure-missing-s3": ("InvalidSpec", "SourceNotFound"),
        "failure-storage": ("StorageFull", "StorageFull"),
    }
    final = {"test-hf": "Ready", "test-s3": "Ready", **dict.fromkeys(expected, "Failed")}

    def settled_all() -> dict[str, dict[str, Any]] | None:
        items = json.loads(env.k("get", ARTIFACTS_V1, "-n", ns, "-o", "json"))["items"]
        found = {i["metadata"]["name"]: i.get("status") or {} for i in items}
        done = all(found.get(name, {}).get("status") == status for name, status in final.items())
        return found if done else None

    statuses = until(settled_all, "every artifact Ready or Failed")
    jobs = listed(env, "jobs", "aim.eai.amd.com/component=check-size", ns)
    pods = {p["metadata"]["name"]: p for p in json.loads(env.k("get", "pods", "-n", ns, "-o", "json"))["items"]}
    # chainsaw: Assert HF (S3) check-size job is created; artifact gets ready with discovered size
    for name in ("test-hf", "test-s3"):
        (job,) = [j for j in jobs if j["metadata"]["labels"]["aim.eai.amd.com/cache.name"] == name]
        status = statuses[name]
        assert status["discoveredSizeBytes"] == TINY_GPT2
        assert status["allocatedSize"] == "1Gi", "ceil_Gi(size + 10 %)"
        assert status["progress"]["percentage"] == 100
        (pod,) = [p for p in pods.values() if p["metadata"]["labels"]["job-name"] == job["metadata"]["name"]]
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert json.loads(terminated["message"])["sizeBytes"] == TINY_GPT2, "the size read from the pod"
    assert [s for s in statuses if s.startswith("failure-")] == sorted(expected), "only the HF and S3 ones check size"
    assert len(jobs) == 2
    # chainsaw (Verify models are identical): the S3 copy of the HF model is as large
    assert statuses["test-hf"]["discoveredSizeBytes"] == statuses["test-s3"]["discoveredSizeBytes"]
    # here also upstream's component conditions and Ready reason of a downloaded artifact
    for name in ("test-hf", "test-s3"):
        found = reasons(statuses[name])
        assert found["CachePvcReady"] == found["DownloadJobReady"] == ("True", "Ready"), name
        assert found["Ready"] == ("True", "AllComponentsReady"), name
        # the size known, upstream stops deriving the check-size Job's conditions and keeps them as they last were
        assert found["CheckSizeJobReady"] == ("True", "Ready"), name
        assert found["CheckSizeJobPodsReady"] == ("True", "PodsReady"), name
        assert found["DownloadComplete"] == ("True", "Verified"), name
    # here also the namespace's status-updater RoleBinding, as upstream makes it for the downloaders' progress;
    # deleted, the artifacts make it again
    binding = json.loads(env.k("get", "rolebinding", STATUS_UPDATER, "-n", ns, "-o", "json"))
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]
    assert binding["roleRef"] == {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": STATUS_UPDATER}
    assert binding["metadata"]["labels"]["aim.eai.amd.com/artifact.name"] in final
    assert "ownerReferences" not in binding["metadata"], "shared by the namespace's artifacts"
    env.k("delete", "rolebinding", STATUS_UPDATER, "-n", ns)

    def made_again() -> dict[str, Any] | None:
        found = env.get("rolebinding", STATUS_UPDATER, ns)
        return found if found and found["metadata"]["uid"] != binding["metadata"]["uid"] else None

    again = until(made_again, "the RoleBinding made again")
    assert again["roleRef"] == binding["roleRef"]
    for name, (ready, reason) in expected.items():
        status = statuses[name]
        assert status["progress"]["displayPercentage"] == "N/A"
        found = reasons(status)
        assert found["Ready"] == ("False", ready), name
        assert found["DownloadJobPodsReady"] == ("False", reason), name
        if ready == "AuthError":
            assert found["AuthValid"] == ("False", "AuthError"), name
        failed = [p for p in pods.values() if p["metadata"]["labels"]["aim.eai.amd.com/cache.name"] == name]
        assert failed and all(p["status"]["phase"] == "Failed" for p in failed)
    message = next(c for c in statuses["failure-missing-hf"]["conditions"] if c["type"] == "Ready")
    assert "Repository Not Found" in message["message"], "the log line that says why"
    # here also: one event as each artifact turned Failed (Warning, its Ready reason) or Ready (Normal, Verified),
    # besides the namespace's missing default runtime config's

    def events() -> dict[str, list[tuple[str, str]]] | None:
        items = json.loads(env.k("get", "events", "-n", ns, "-o", "json"))["items"]
        found: dict[str, list[tuple[str, str]]] = {}
        for event in items:
            if event["involvedObject"]["kind"] == "AIMArtifact" and event["reason"] != "DefaultConfigNotFound":
                found.setdefault(event["involvedObject"]["name"], []).append((event["type"], event["reason"]))
        return found if set(found) == set(final) else None

    recorded = until(events, "the artifacts' events")
    assert recorded == {
        "test-hf": [("Normal", "Verified")],
        "test-s3": [("Normal", "Verified")],
        **{name: [("Warning", ready)] for name, (ready, _) in expected.items()},
    }


def test_upstreams_artifact_progress_verification_and_stall_scenarios(env: Env) -> None:
    """Ported: aimartifact/progress-and-verification and stall-detection, in one namespace with their runtime config;
    every state is read from a watch of the artifacts at v1alpha1 (upstream polls: the simulated durations are
    `TIME_SCALE` of theirs)."""
    ns = "artifact-progress"
    env.apply(namespace(ns))
    env.k("apply", "-n", ns, "-f", str(ARTIFACT_E2E / "progress-and-verification" / "runtime.yaml"))
    output = (
        "jsonpath={.metadata.name}|{.status.status}|{.status.progress.percentage}|{.status.progress.displayPercentage}"
        '|{.status.conditions[?(@.type=="DownloadComplete")].status}'
        '|{.status.conditions[?(@.type=="DownloadComplete")].reason}{"\\n"}'
    )
    argv = env.kubectl.argv(f"--context={CLUSTER}", "get", ARTIFACTS_V1, "-n", ns, "--watch", "-o", output)
    watch = subprocess.Popen(
        [arg for arg in argv if not arg.startswith("--request-timeout")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env.kubectl.env(),
    )
    try:
        assert watch.stdout is not None
        # chainsaw (stall-detection): Create artifact with forced hang; it is the watch's first line
        apply_artifact_doc(env, "stall-detection/artifact.yaml", ns)
        ready, _, _ = select.select([watch.stdout], [], [], 30)
        first = watch.stdout.readline() if ready else ""
        assert first.startswith("stall-detection|"), "the watch lists the artifact"
        scenario = ARTIFACT_E2E / "progress-and-verification"
        env.k(
            "apply",
            "-n",
            ns,
            "-f",
            str(scenario / "artifact-success.yaml"),
            "-f",
            str(scenario / "artifact-verify-fail.yaml"),
        )

        def finished() -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]] | None:
            items = json.loads(env.k("get", ARTIFACTS_V1, "-n", ns, "-o", "json"))["items"]
            found = {i["metadata"]["name"]: i.get("status") or {} for i in items}
            ends = [("progress-success", "Ready"), ("progress-verify-fail", "Failed"), ("stall-detection", "Failed")]
            if any(found.get(name, {}).get("status") != status for name, status in ends):
                return None
            if reasons(found["progress-verify-fail"]).get("DownloadComplete") != ("False", "VerificationFailed"):
                return None
            jobs = listed(env, "jobs", "aim.eai.amd.com/component=download", ns)
            return (found, jobs) if len(jobs) == 3 and all(j["status"].get("conditions") for j in jobs) else None

        statuses, jobs = until(finished, "the three artifacts at their ends, their Jobs finished")
        # chainsaw: Assert reaches Ready after verification
        status = statuses["progress-success"]
        assert status["progress"] == {
            "percentage": 100,
            "displayPercentage": "100 %",
            "downloadedBytes": 10 << 20,
            "totalBytes": 10 << 20,
        }
        found = reasons(status)
        assert found["DownloadComplete"] == ("True", "Verified") and found["Ready"][0] == "True"
        # chainsaw: Assert verification failure artifact reaches Failed state (after the Job's backoff: 3 attempts)
        failed = {j["metadata"]["labels"]["aim.eai.amd.com/cache.name"]: j["status"].get("failed") for j in jobs}
        assert failed == {"progress-success": None, "progress-verify-fail": 3, "stall-detection": 3}
        status = statuses["progress-verify-fail"]
        assert status["progress"]["displayPercentage"] == "N/A" and reasons(status)["Ready"][0] == "False"
        # chainsaw (stall-detection): stall detection triggered (a failed pod), final failure after the backoff
        status = statuses["stall-detection"]
        assert status["progress"]["displayPercentage"] == "N/A"
        found = reasons(status)
        assert found["Ready"][0] == found["DownloadJobPodsReady"][0] == "False"
        pods = listed(env, "pods", "aim.eai.amd.com/cache.name=stall-detection", ns)
        logs = [p["status"]["containerStatuses"][0]["state"]["terminated"]["message"] for p in pods]
        assert len(logs) == 3 and all(m.endswith("Download stalled for 15s, killing") for m in logs)
    finally:
        watch.terminate()
        seen, _ = watch.communicate(timeout=20)
    lines = [line.split("|") for line in (first + seen).splitlines() if line.count("|") == 5]
    success = [line[1:] for line in lines if line[0] == "progress-success"]
    # chainsaw: Assert enters Progressing with download in progress (at most 99 %, DownloadComplete False/Downloading)
    downloading = [s for s in success if s[0] == "Progressing" and s[3:] == ["False", "Downloading"]]
    assert any(s[1] and int(s[1]) <= 99 for s in downloading), success
    # chainsaw: Assert download completes and enters verification phase (100 %, DownloadComplete True/Verifying)
    assert ["Progressing", "100", "100 %", "True", "Verifying"] in success, success
    # chainsaw (stall-detection): Verify download job starts progressing
    assert any(line[:2] == ["stall-detection", "Progressing"] for line in lines), lines
