"""AIM's two API versions end to end (docs/aim-versions.md): upstream AIM Engine's own v1alpha1 YAML of a kind served
at both versions, applied with the real kubectl to a simulated cluster whose controller runs; read back in both
versions (one object, stored once, in v1alpha2); `kubectl get` in each version with that version's columns; the
controller reconciling it; an edit in v1alpha1 reaching v1alpha2.

Upstream's documents are pinned under tests/fixtures/upstream/aim (commit in its SOURCE): the e2e scenario
basic-lifecycle-hf's artifact, auto-sourcing's cluster model source, and the AIMServices of model-by-image,
basic-lifecycle, autoscaling and inline-custom-model (its model made from the annotation). With OMECTL_E2E_REAL=1
the same runs on a real kube-apiserver, which calls the controller's conversion webhook itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.api import crdgen
from omectl.core.aim.custom_models import custom_model_name
from omectl.core.aim.versions import carried_annotation
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet
from tests.e2e.test_aim_upstream_yaml import Env, namespace
from tests.support import until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim"
CLUSTER = "aimup-1"
NS = "two-versions"
V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
DOWNLOADER = "ghcr.io/silogen/aim-artifact-downloader:0.2.0"
KSERVE = "inferenceservices.serving.kserve.io"


def upstream(path: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
    return doc


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(pools=(NodePool(count=1, gpus_per_node=8, gpu_resource="amd.com/gpu"),))
    with running_fleet(tmp_path_factory.mktemp("aimver"), 1, "aimup-", simulator=simulator) as fleet:
        env = Env(fleet)
        env.apply(namespace(NS))
        until(lambda: converting(env), "every converted CRD points at the controller's conversion webhook")
        yield env


def converting(env: Env) -> bool:
    for definition in crdgen.converted_crds():
        url = env.k("get", "crd", definition.name, "-o", "jsonpath={.spec.conversion.webhook.clientConfig.url}")
        if f"/convert/{CLUSTER}" not in url:
            return False
    return True


def get(env: Env, resource: str, version: str, name: str, ns: str | None = None) -> dict[str, Any]:
    group_version = version.split("/")[1]
    where = ["-n", ns] if ns else []
    out = env.k("get", f"{resource}.{group_version}.aim.eai.amd.com", name, *where, "-o", "json")
    obj: dict[str, Any] = json.loads(out)
    return obj


def stored(fleet: ControlledFleet, plural: str, name: str, ns: str = "") -> dict[str, Any] | None:
    """The object as the embedded server stores it (None on a real server: etcd is not read here)."""
    if fleet.real_api_server or fleet.bg is None:
        return None
    server = fleet.bg.fleet[CLUSTER]

    async def read() -> dict[str, Any] | None:
        return server.api.store.get(("aim.eai.amd.com", plural), ns, name)

    obj: dict[str, Any] | None = fleet.bg.run(read())
    return obj


def one_revision(env: Env, plural: str, name: str, ns: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The object read in both versions at one resourceVersion (the controller may write its status between two
    reads)."""

    def read() -> tuple[dict[str, Any], dict[str, Any]] | None:
        v1, v2 = get(env, plural, V1, name, ns), get(env, plural, V2, name, ns)
        return (v1, v2) if v1["metadata"]["resourceVersion"] == v2["metadata"]["resourceVersion"] else None

    return until(read, f"{plural} {name} read in both versions at one resourceVersion")


def columns(env: Env, resource: str, name: str, ns: str | None = None) -> list[str]:
    where = ["-n", ns] if ns else []
    header = env.k("get", resource, name, *where).splitlines()[0]
    return header.split()


def test_upstreams_artifact_applied_in_v1alpha1_is_one_object_in_both_versions_and_is_reconciled(env: Env) -> None:
    doc = upstream("tests/e2e/aimartifact/basic-lifecycle-hf/artifact.yaml")
    assert doc["apiVersion"] == V1
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    name = doc["metadata"]["name"]

    def one_revision() -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The object read in both versions at one resourceVersion (the controller may write its status between
        two reads)."""
        v1, v2 = get(env, "aimartifacts", V1, name, NS), get(env, "aimartifacts", V2, name, NS)
        return (v1, v2) if v1["metadata"]["resourceVersion"] == v2["metadata"]["resourceVersion"] else None

    v1, v2 = until(one_revision, "both versions read at one resourceVersion")
    assert v1["apiVersion"] == V1 and v2["apiVersion"] == V2
    assert v1["spec"] == {**doc["spec"], "modelDownloadImage": DOWNLOADER}  # upstream's default, in v1alpha1
    assert v2["spec"] == {
        "sourceUri": doc["spec"]["sourceUri"],
        "size": doc["spec"]["size"],
        "downloadImage": DOWNLOADER,
    }
    assert v1["metadata"]["uid"] == v2["metadata"]["uid"], "one object"
    assert carried_annotation("v1alpha1") not in (v2["metadata"].get("annotations") or {}), "nothing lost"
    kept = stored(env.fleet, "aimartifacts", name, NS)
    if kept is not None:
        assert kept["apiVersion"] == V2 and kept["spec"] == v2["spec"], "stored once, in the storage version"

    # the controller reconciles it (in v1alpha2): its PVC and download Job; the status reads in both versions
    def ready() -> dict[str, Any] | None:
        status: dict[str, Any] = get(env, "aimartifacts", V2, name, NS).get("status") or {}
        return status if status.get("status") == "Ready" else None

    status = until(ready, f"artifact {name} Ready")
    pvc = status["persistentVolumeClaim"]
    assert env.get("persistentvolumeclaims", pvc, NS) is not None
    v1_status = get(env, "aimartifacts", V1, name, NS)["status"]
    assert v1_status["status"] == "Ready"
    assert v1_status["persistentVolumeClaim"] == pvc
    assert v1_status["download"]["protocolSequence"] == status["download"]["protocolSequence"]
    assert "job" not in v1_status["download"], "v1alpha1 has no download Job; it waits in the annotation"
    # kubectl get: the preferred version is v1alpha2 (omectl's columns); v1alpha1 shows upstream's
    assert columns(env, "aimartifacts", name, NS) == ["NAME", "STATUS", "MODELID", "SIZE", "PVC", "PROTOCOL", "AGE"]
    assert columns(env, "aimartifacts.v1alpha1.aim.eai.amd.com", name, NS) == [
        "NAME", "STATUS", "MODE", "MODEL", "SIZE", "PROGRESS", "PROTOCOL", "ATTEMPT", "AGE"
    ]  # fmt: skip


def test_an_edit_in_v1alpha1_reaches_v1alpha2_and_what_it_cannot_hold_is_kept(env: Env) -> None:
    doc = upstream("tests/e2e/aimartifact/basic-lifecycle-hf/artifact.yaml")
    doc["metadata"]["name"] = "edited-in-v1"
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    doc["spec"]["env"] = [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP"}]
    doc["spec"]["imagePullSecrets"] = [{"name": "pull"}]
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    v2 = get(env, "aimartifacts", V2, "edited-in-v1", NS)
    assert v2["spec"]["env"] == doc["spec"]["env"]
    assert json.loads(v2["metadata"]["annotations"][carried_annotation("v1alpha1")]) == {
        "spec": {"imagePullSecrets": [{"name": "pull"}]}
    }
    v1 = get(env, "aimartifacts", V1, "edited-in-v1", NS)
    assert v1["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert carried_annotation("v1alpha1") not in (v1["metadata"].get("annotations") or {})
    # upstream's CEL rule, in v1alpha1: the source cannot change
    doc["spec"]["sourceUri"] = "hf://other/model"
    proc = env.run("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    assert proc.returncode == 1
    assert "sourceUri is immutable" in proc.stderr


def test_upstreams_cluster_model_source_keeps_its_registry_scan_and_scans_it(env: Env) -> None:
    doc = upstream("tests/e2e/aimclustermodelsource/auto-sourcing/cluster-model-source.yaml")
    env.apply(doc)
    name = doc["metadata"]["name"]
    v1 = get(env, "aimclustermodelsources", V1, name)
    assert v1["spec"] == {**doc["spec"], "registry": "docker.io", "syncInterval": "1h"}  # upstream's defaults
    v2 = get(env, "aimclustermodelsources", V2, name)
    assert v2["spec"] == {}
    assert json.loads(v2["metadata"]["annotations"][carried_annotation("v1alpha1")]) == {"spec": v1["spec"]}
    # it scans the (simulated) Docker Hub as upstream's does (tests/e2e/test_aim_model_templates.py): five models
    status = until(
        lambda: (s := get(env, "aimclustermodelsources", V2, name).get("status") or {}).get("modelCount") == 5 and s,
        f"source {name} reconciled",
    )
    assert (status["status"], status["availableModels"], status["modelsLimitReached"]) == ("Ready", 6, True)
    v1_status = get(env, "aimclustermodelsources", V1, name)["status"]
    assert (v1_status["status"], v1_status["discoveredModels"], v1_status["availableModels"]) == ("Ready", 5, 6)
    assert "lastSyncTime" in v1_status
    assert columns(env, "aimclustermodelsources.v1alpha1.aim.eai.amd.com", name) == [
        "NAME", "STATUS", "MODELS", "LASTSYNC", "AGE"
    ]  # fmt: skip


def test_crds_applied_again_are_pointed_back_at_the_controller(env: Env) -> None:
    """Re-applying deploy/crds by server-side apply meets the owner's clientConfig: a conflict, unless forced (as
    `omectl doctor` suggests); forced, the placeholder lands and the owner puts its webhook back."""
    path = str(ROOT / "deploy" / "crds" / "aim.eai.amd.com_aimartifacts.yaml")
    proc = env.run("apply", "--server-side", "-f", path)
    assert proc.returncode == 1
    assert 'conflict with "omectl"' in proc.stderr and ".spec.conversion.webhook.clientConfig.url" in proc.stderr
    env.k("apply", "--server-side", "--force-conflicts", "-f", path)
    until(lambda: converting(env), "the owner's webhook put back")
    doc = upstream("tests/e2e/aimartifact/basic-lifecycle-s3/artifact.yaml")
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    assert get(env, "aimartifacts", V1, doc["metadata"]["name"], NS)["spec"]["sourceUri"] == doc["spec"]["sourceUri"]


# --- AIMModel and AIMClusterModel ---------------------------------------------------------------------------------

UPSTREAM_MODEL_COLUMNS = ["NAME", "STATUS", "SOURCE", "IMAGE", "MODEL", "AGE"]


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or ()}


def test_upstreams_error_recovery_scenario_in_v1alpha1_a_model_fails_on_a_missing_config_and_recovers(
    env: Env,
) -> None:
    """Upstream's e2e scenario aimmodel/error-recovery (its model.yaml and runtimeconfig.yaml, as its chainsaw test
    applies them), asserted in v1alpha1 as upstream asserts it; the controller reconciles the v1alpha2 object."""
    doc = upstream("tests/e2e/aimmodel/error-recovery/model.yaml")
    assert doc["apiVersion"] == V1
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    name = doc["metadata"]["name"]
    v1 = get(env, "aimmodels", V1, name, NS)
    v2 = get(env, "aimmodels", V2, name, NS)
    assert v1["spec"] == doc["spec"]
    assert v2["spec"] == {
        "image": doc["spec"]["image"],
        "runtimeConfigName": "recovery-test-config",
        "discovery": {"enabled": False},  # upstream neither extracts metadata nor creates templates
    }
    assert v1["metadata"]["uid"] == v2["metadata"]["uid"], "one object"
    assert v2["metadata"]["annotations"][carried_annotation("v1alpha1")] == "{}", "nothing lost; written in v1alpha1"
    kept = stored(env.fleet, "aimmodels", name, NS)
    if kept is not None:
        assert kept["apiVersion"] == V2 and kept["spec"] == v2["spec"], "stored once, in the storage version"

    def v1_status(want: str) -> dict[str, Any] | None:
        status: dict[str, Any] = get(env, "aimmodels", V1, name, NS).get("status") or {}
        return status if status.get("status") == want else None

    failed = until(lambda: v1_status("Failed"), f"model {name} Failed, read in v1alpha1")
    assert conditions(failed)["ConfigValid"] == ("False", "ReferenceNotFound")
    assert conditions(failed)["Ready"][0] == "False"
    env.apply(upstream("tests/e2e/aimmodel/error-recovery/runtimeconfig.yaml"))
    ready = until(lambda: v1_status("Ready"), f"model {name} recovered, read in v1alpha1")
    assert conditions(ready)["Ready"][0] == "True"
    assert conditions(ready)["ConfigValid"][0] == "True"
    # upstream's roll-up: nothing read (extraction off), no templates expected
    assert conditions(ready)["ImageMetadataReady"] == ("True", "ImageFound")
    assert conditions(ready)["ServiceTemplatesReady"] == ("True", "NoTemplatesExpected")
    assert ready["sourceType"] == "Image"
    assert ready["resolvedRuntimeConfig"]["name"] == "recovery-test-config"
    assert get(env, "aimmodels", V2, name, NS)["status"]["status"] == "Ready"
    # kubectl get: omectl's columns in v1alpha2, upstream's in v1alpha1
    assert columns(env, "aimmodels", name, NS) == ["NAME", "STATUS", "IMAGE", "PROFILES", "AGE"]
    assert columns(env, "aimmodels.v1alpha1.aim.eai.amd.com", name, NS) == UPSTREAM_MODEL_COLUMNS


def test_upstreams_custom_model_keeps_what_v1alpha2_cannot_hold_and_its_rules_hold_in_v1alpha1(env: Env) -> None:
    """Upstream's aimmodel/custom-models/template-creation model: its source named in v1alpha2, its custom templates
    (with upstream's schema defaults) kept in the annotation; a name given to the source in v1alpha2 survives an
    edit through v1alpha1; upstream's CEL rule on modelSources and hardware refuses a model without hardware."""
    doc = upstream("tests/e2e/aimmodel/custom-models/template-creation/model.yaml")
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    name = doc["metadata"]["name"]
    v1 = get(env, "aimmodels", V1, name, NS)
    gpu_default = {"resourceName": "amd.com/gpu"}
    assert v1["spec"]["custom"]["hardware"]["gpu"] == {**doc["spec"]["custom"]["hardware"]["gpu"], **gpu_default}
    assert [t.get("type") for t in v1["spec"]["customTemplates"]] == [
        "unoptimized", "unoptimized", "unoptimized", "optimized", "preview", "unoptimized"
    ]  # fmt: skip
    v2 = get(env, "aimmodels", V2, name, NS)
    source = doc["spec"]["modelSources"][0]
    assert v2["spec"] == {"image": doc["spec"]["image"], "modelSources": [{**source, "name": "sshleifer-tiny-gpt2"}]}
    carried = json.loads(v2["metadata"]["annotations"][carried_annotation("v1alpha1")])
    assert carried == {"spec": {"custom": v1["spec"]["custom"], "customTemplates": v1["spec"]["customTemplates"]}}
    # the source renamed in v1alpha2; an edit in v1alpha1 keeps that name and the custom templates
    renamed = [{**source, "name": "tiny"}]
    env.k("patch", "aimmodels", name, "-n", NS, "--type=merge", "-p", json.dumps({"spec": {"modelSources": renamed}}))
    doc["spec"]["image"] = "ghcr.io/silogen/aim-dummy:0.1.11"
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    v2 = get(env, "aimmodels", V2, name, NS)
    assert v2["spec"] == {"image": "ghcr.io/silogen/aim-dummy:0.1.11", "modelSources": renamed}
    assert get(env, "aimmodels", V1, name, NS)["spec"]["customTemplates"] == v1["spec"]["customTemplates"]
    # upstream's rule, in v1alpha1: model sources need hardware, on custom or on every template
    bad = upstream("tests/e2e/aimmodel/custom-models/template-creation/model.yaml")
    bad["metadata"]["name"] = "no-hardware"
    del bad["spec"]["custom"]
    proc = env.run("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(bad))
    assert proc.returncode == 1
    assert "when using modelSources, hardware must be specified" in proc.stderr, proc.stderr
    assert env.get("aimmodels", "no-hardware", NS) is None


def test_upstreams_cluster_model_in_v1alpha1_is_reconciled_as_upstreams_and_its_status_reads_in_both_versions(
    env: Env,
) -> None:
    """Upstream's aimmodel/clone-templates-for-gpu cluster model, written in v1alpha1: upstream's model (its image's
    metadata and templates, no discovery Job of omectl's); its status, upstream's `imageMetadata` and `sourceType`
    too, reads the same in both versions."""
    doc = upstream("tests/e2e/aimmodel/clone-templates-for-gpu/cluster-model.yaml")
    env.apply(namespace("aim-system"), doc)  # the operator namespace
    name = doc["metadata"]["name"]
    assert get(env, "aimclustermodels", V1, name)["spec"] == doc["spec"]
    v2 = get(env, "aimclustermodels", V2, name)
    assert v2["spec"] == {"image": doc["spec"]["image"], "discovery": {"enabled": True}}
    assert v2["metadata"]["annotations"][carried_annotation("v1alpha1")] == "{}", "nothing kept; written in v1alpha1"
    status = until(
        lambda: (s := get(env, "aimclustermodels", V2, name).get("status") or {}).get("imageMetadata") and s,
        f"cluster model {name} reconciled, its image read",
    )
    assert status["sourceType"] == "Image"
    assert status["imageMetadata"]["model"]["canonicalName"] == "HuggingFaceTB/SmolLM2-135M"
    v1_status = get(env, "aimclustermodels", V1, name)["status"]
    assert (v1_status["imageMetadata"], v1_status["sourceType"]) == (status["imageMetadata"], "Image")
    assert conditions(v1_status)["ImageMetadataReady"] == conditions(status)["ImageMetadataReady"]
    assert env.get("jobs", f"{name}-cluster-discovery", "aim-system") is None, "no discovery Job"
    assert columns(env, "aimclustermodels.v1alpha1.aim.eai.amd.com", name) == UPSTREAM_MODEL_COLUMNS


@pytest.mark.parametrize(
    ("sample", "ns"), [("aim_v1alpha1_aimmodel.yaml", NS), ("aim_v1alpha1_aimclustermodel.yaml", None)]
)
def test_upstreams_scaffold_model_in_v1alpha1_fails_with_a_reason_read_in_both_versions(
    env: Env, sample: str, ns: str | None
) -> None:
    """Upstream's kubebuilder scaffold, as written (v1alpha1, `spec:` null, which the API server drops): Failed /
    ImageNotSpecified with one Warning event (issue 18's defect), in both versions."""
    doc = upstream(f"config/samples/{sample}")
    assert doc["apiVersion"] == V1 and doc["spec"] is None
    kind, name = doc["kind"], doc["metadata"]["name"]
    plural = f"{kind.lower()}s"
    where = ["-n", ns] if ns else []
    env.k("apply", *where, "-f", "-", stdin=yaml.safe_dump(doc))
    status = until(lambda: get(env, plural, V2, name, ns).get("status"), f"{kind} {name} gets a status")
    assert status["status"] == "Failed"
    v1 = get(env, plural, V1, name, ns)
    assert "spec" not in v1
    assert v1["status"]["status"] == "Failed"
    assert conditions(v1["status"])["Ready"] == ("False", "ImageNotSpecified")
    events = until(lambda: env.events(ns or "default", name, "ImageNotSpecified"), f"the Warning event of {name}")
    assert [(e["type"], e.get("count", 1)) for e in events] == [("Warning", 1)]


# --- AIMService ---------------------------------------------------------------------------------------------------


def apply_upstream_service(env: Env, path: str) -> dict[str, Any]:
    doc = upstream(path)
    assert (doc["apiVersion"], doc["kind"]) == (V1, "AIMService")
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(doc))
    return doc


def carried(obj: dict[str, Any], version: str = "v1alpha1") -> Any:
    text = (obj["metadata"].get("annotations") or {}).get(carried_annotation(version))
    return None if text is None else json.loads(text)


PAUSED = {"aim.eai.amd.com/reconciliation-paused": "true"}


def frozen_model_and_template(env: Env, model: str, image: str = "ghcr.io/silogen/aim-dummy:0.1.10") -> str:
    """A service's dependencies as upstream's frozen scenarios write them (paused, their status set through /status):
    the model Ready and one optimized template of it Ready, so that a service written in v1alpha1 selects the template
    and is served. The template's name."""
    template = f"{model}-template"
    for doc in (
        {"kind": "AIMModel", "metadata": {"name": model}, "spec": {"image": image}},
        {"kind": "AIMServiceTemplate", "metadata": {"name": template}, "spec": {"modelName": model}},
    ):
        doc["apiVersion"] = V1
        doc["metadata"] |= {"namespace": NS, "annotations": PAUSED}
        env.k("apply", "-f", "-", stdin=yaml.safe_dump(doc))
    ready = {"status": {"status": "Ready"}}
    env.k("patch", "aimmodel", model, "-n", NS, "--type=merge", "--subresource=status", "-p", json.dumps(ready))
    ready["status"]["profile"] = {"metadata": {"type": "optimized"}}
    env.k(
        "patch",
        "aimservicetemplate",
        template,
        "-n",
        NS,
        "--type=merge",
        "--subresource=status",
        "-p",
        json.dumps(ready),
    )
    return template


def test_upstreams_service_applied_in_v1alpha1_is_one_object_in_both_versions_and_runs(env: Env) -> None:
    template = frozen_model_and_template(env, "by-image-model")  # upstream's model-by-image finds (or makes) one
    doc = apply_upstream_service(env, "tests/e2e/aimservice/common/model-by-image/service.yaml")
    name = doc["metadata"]["name"]
    v1, v2 = one_revision(env, "aimservices", name, NS)
    assert v1["spec"] == doc["spec"]
    assert v2["spec"] == {"model": {"image": "ghcr.io/silogen/aim-dummy:0.1.10"}, "replicas": 1}
    assert v1["metadata"]["uid"] == v2["metadata"]["uid"], "one object"
    assert carried(v2) == {}, "every field has a v1alpha2 counterpart; the annotation only marks a v1alpha1 write"
    assert carried(v1) is None, "a v1alpha1 read does not show it"
    kept = stored(env.fleet, "aimservices", name, NS)
    if kept is not None:
        assert kept["apiVersion"] == V2 and kept["spec"] == v2["spec"], "stored once, in the storage version"

    # the controller reconciles it in v1alpha2: the model found by its image, its template selected, the
    # InferenceService serves the image, the simulator makes it ready
    until(lambda: get(env, "aimservices", V2, name, NS).get("status", {}).get("status") == "Running", "Running")
    isvc = env.get(KSERVE, name, NS)
    assert isvc is not None
    predictor = isvc["spec"]["predictor"]
    assert predictor["containers"][0]["image"] == doc["spec"]["model"]["image"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (1, 1)
    v1, v2 = one_revision(env, "aimservices", name, NS)
    assert v1["status"]["status"] == "Running"
    assert v1["status"]["conditions"] == v2["status"]["conditions"]
    assert v1["status"]["observedGeneration"] == v2["status"]["observedGeneration"]
    runtime = {"currentReplicas": 1, "desiredReplicas": 1, "minReplicas": 1, "maxReplicas": 1, "replicas": "1"}
    assert v1["status"]["runtime"] == v2["status"]["runtime"] == runtime, "upstream's replica counts, in both"
    # kubectl get: the preferred version is v1alpha2 (omectl's columns); v1alpha1 shows upstream's
    assert columns(env, "aimservices", name, NS) == ["NAME", "STATUS", "MODEL", "PATH", "AGE"]
    v1_table = env.k("get", "aimservices.v1alpha1.aim.eai.amd.com", name, "-n", NS, "-o", "wide").splitlines()
    assert v1_table[0].split()[:5] == ["NAME", "STATUS", "MODEL", "TEMPLATE", "REPLICAS"]
    row = env.k(
        "get",
        "aimservices.v1alpha1.aim.eai.amd.com",
        name,
        "-n",
        NS,
        "--no-headers",
        "-o",
        "custom-columns=STATUS:.status.status,TEMPLATE:.status.resolvedTemplate.name,REPLICAS:.status.runtime.replicas",
    )
    assert row.split() == ["Running", template, "1"], "the model's template selected; REPLICAS reads status.runtime"


def test_a_services_v1alpha1_only_fields_wait_in_the_annotation_and_its_rules_hold(env: Env) -> None:
    doc = apply_upstream_service(env, "tests/e2e/aimservice/common/basic-lifecycle/service.yaml")
    name = doc["metadata"]["name"]
    v1, v2 = one_revision(env, "aimservices", name, NS)
    assert v1["spec"] == doc["spec"]
    assert v2["spec"] == {"model": {"name": "test-service-model"}, "replicas": 1}
    assert carried(v2) == {"spec": {"template": {"name": "test-service-template"}}}
    assert carried(v1) is None and carried(v1, "v1alpha2") is None
    # reconciled through v1alpha2: its model is looked up first, and there is none here (tests/e2e/
    # test_aim_service_templates.py runs upstream's scenario with it): Failed with upstream's ModelNotFound (as its
    # common/model-not-found, whose service names a template too), nothing applied
    status = until(lambda: get(env, "aimservices", V1, name, NS).get("status"), f"AIMService {name} gets a status")
    assert (status["status"], conditions(status)["ModelReady"]) == ("Failed", ("False", "ModelNotFound"))
    assert "TemplateReady" not in conditions(status)
    assert env.get(KSERVE, name, NS) is None
    # upstream's CEL rules, in v1alpha1: the template selection cannot change, the model is exactly one of three
    changed = {**doc, "spec": {**doc["spec"], "template": {"name": "another"}}}
    proc = env.run("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(changed))
    assert proc.returncode == 1
    assert "template selection is immutable after creation" in proc.stderr
    both = {**doc, "metadata": {"name": "two-models"}, "spec": {"model": {"name": "m", "image": "example/m:1"}}}
    proc = env.run("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(both))
    assert proc.returncode == 1
    assert "exactly one of name, image, or custom must be specified" in proc.stderr
    # an edit in v1alpha1 reaches v1alpha2, the annotation kept
    edited = {**doc, "spec": {**doc["spec"], "env": [{"name": "AIM_ENGINE_ARGS", "value": "{}"}], "replicas": 2}}
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(edited))
    v2 = get(env, "aimservices", V2, name, NS)
    assert (v2["spec"]["env"], v2["spec"]["replicas"]) == (edited["spec"]["env"], 2)
    assert carried(v2) == {"spec": {"template": {"name": "test-service-template"}}}
    generation = v2["metadata"]["generation"]
    until(
        lambda: get(env, "aimservices", V1, name, NS)["status"].get("observedGeneration") == generation,
        "the edit reconciled",
    )


def test_upstreams_autoscaling_is_kept_in_the_annotation_and_reconciled(env: Env) -> None:
    frozen_model_and_template(env, "test-autoscaling-model")
    doc = apply_upstream_service(env, "tests/e2e/aimservice/common/autoscaling/service.yaml")
    name = doc["metadata"]["name"]
    v1, v2 = one_revision(env, "aimservices", name, NS)
    assert v1["spec"] == {**doc["spec"], "replicas": 1}  # upstream's default, in v1alpha1
    assert v2["spec"] == {"model": {"name": "test-autoscaling-model"}, "replicas": 1}
    assert carried(v2) == {"spec": {k: doc["spec"][k] for k in ("minReplicas", "maxReplicas", "autoScaling")}}
    isvc = until(lambda: env.get(KSERVE, name, NS), f"InferenceService {name}")
    predictor = isvc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (1, 3), "autoscaled between upstream's bounds"
    assert predictor["autoScaling"]["metrics"][0]["podmetric"]["metric"]["query"] == "vllm:num_requests_running"
    assert isvc["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] == "keda"


def test_upstreams_autoscaling_update_scenario_moves_the_bounds_and_a_fixed_count_disables_the_autoscaler(
    env: Env,
) -> None:
    """Ported: aimservice/common/autoscaling-update (1-3, then 2-5), then the service rewritten with `replicas: 3`
    alone (aimservice/common/replicas' service): the InferenceService follows each edit; `status.runtime` is read from
    KEDA's HPA (the simulated cluster plays KEDA's part) as upstream reads it, `HPAReady` True, and once the
    autoscaler is off the HPA goes and `status.runtime` is the fixed count."""
    base = "tests/e2e/aimservice/common/autoscaling-update"
    doc = upstream(f"{base}/service.yaml")
    frozen_model_and_template(env, doc["spec"]["model"]["name"])
    doc = apply_upstream_service(env, f"{base}/service.yaml")
    name = doc["metadata"]["name"]

    def bounds() -> tuple[int, int, str]:
        isvc = env.get(KSERVE, name, NS) or {"metadata": {}, "spec": {"predictor": {}}}
        predictor = isvc["spec"]["predictor"]
        autoscaler = (isvc["metadata"].get("annotations") or {}).get("serving.kserve.io/autoscalerClass", "")
        return predictor.get("minReplicas", 0), predictor.get("maxReplicas", 0), autoscaler

    until(lambda: bounds() == (1, 3, "keda"), "the InferenceService autoscaled 1-3")
    apply_upstream_service(env, f"{base}/service-updated.yaml")
    until(lambda: bounds() == (2, 5, "keda"), "the InferenceService autoscaled 2-5 after the edit")
    # upstream: Verify service status reflects updated replicas (Running, runtime min 2, max 5)
    runtime = {"currentReplicas": 2, "desiredReplicas": 2, "minReplicas": 2, "maxReplicas": 5, "replicas": "2/2 (2-5)"}
    status = until(
        lambda: (s := get(env, "aimservices", V1, name, NS)["status"]).get("runtime") == runtime and s,
        "status.runtime read from KEDA's HPA after the edit",
    )
    assert status["status"] == "Running"
    hpa = next(c for c in status["conditions"] if c["type"] == "HPAReady")
    assert (hpa["status"], hpa["reason"]) == ("True", "HPAOperational")
    autoscaler = env.get("horizontalpodautoscalers", f"keda-hpa-{name}-predictor", NS) or {}
    assert (autoscaler["spec"]["minReplicas"], autoscaler["spec"]["maxReplicas"]) == (2, 5)
    fixed = {**doc, "spec": {"model": doc["spec"]["model"], "replicas": 3}}
    env.k("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(fixed))  # drops the autoscaling fields
    until(lambda: bounds() == (3, 3, "none"), "a fixed count of 3, the autoscaler off")
    assert "autoScaling" not in (env.get(KSERVE, name, NS) or {})["spec"]["predictor"]
    until(
        lambda: get(env, "aimservices", V1, name, NS)["status"]["runtime"].get("replicas") == "3",
        "status.runtime counts 3",
    )
    assert env.get("horizontalpodautoscalers", f"keda-hpa-{name}-predictor", NS) is None, "KEDA's HPA gone"
    conditions = get(env, "aimservices", V1, name, NS)["status"]["conditions"]
    assert "HPAReady" not in {c["type"] for c in conditions}


def test_upstreams_inline_custom_model_is_kept_in_the_annotation_and_its_model_is_made(env: Env) -> None:
    """v1alpha2 has no inline custom model: the service keeps it in its annotation, and the controller makes its
    AIMModel from there (tests/e2e/test_aim_service_templates.py ports the scenario whole)."""
    doc = apply_upstream_service(env, "tests/e2e/aimservice/common/custom-model/inline-custom-model/service.yaml")
    name = doc["metadata"]["name"]
    v1, v2 = one_revision(env, "aimservices", name, NS)
    custom = doc["spec"]["model"]["custom"]
    assert v1["spec"]["model"] == {
        "custom": {**custom, "hardware": {"gpu": {"requests": 1, "resourceName": "amd.com/gpu"}}}
    }
    assert "model" not in v2["spec"]
    assert carried(v2)["spec"]["model"] == v1["spec"]["model"]
    model = until(lambda: env.get("aimmodels", custom_model_name(custom), NS), "the custom model's AIMModel")
    assert model["metadata"]["labels"]["aim.eai.amd.com/service"] == name
    assert carried(model)["spec"]["custom"] == {"hardware": v1["spec"]["model"]["custom"]["hardware"]}
    status = until(lambda: get(env, "aimservices", V2, name, NS).get("status"), f"AIMService {name} gets a status")
    assert status["status"] != "Failed", "no longer refused for naming no model in v1alpha2"


def test_omectls_admission_judges_a_v1alpha1_service_in_v1alpha2(env: Env) -> None:
    """The AIMService webhook is registered for v1alpha2; the API server converts a v1alpha1 write for it
    (matchPolicy Equivalent), so upstream's YAML meets the same checks, and a spec-less one is admitted as upstream's
    CRD allows (issue 18)."""
    until(
        lambda: "aimservice" in env.k("get", "validatingwebhookconfigurations", "-o", "yaml"),
        "the AIM validating webhooks installed",
    )
    doc = upstream("tests/e2e/aimservice/common/model-by-image/service.yaml")
    bad = {**doc, "metadata": {"name": "bad-path"}, "spec": {**doc["spec"], "routing": {"pathTemplate": "/{.a[}"}}}
    proc = env.run("apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(bad))
    assert proc.returncode == 1
    assert 'admission webhook "aimservice.aim-webhook-server.validator" denied the request' in proc.stderr
    assert "spec.routing.pathTemplate: " in proc.stderr
    bare = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": "bare", "namespace": NS}}
    env.k("apply", "-f", "-", stdin=yaml.safe_dump(bare))
    assert "spec" not in get(env, "aimservices", V2, "bare", NS)
