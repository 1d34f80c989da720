"""Upstream's legacy template path end to end (docs/aim-resources.md, "The legacy template path") through the real
kubectl: AIMServiceTemplate, AIMClusterServiceTemplate and AIMTemplateCache at aim.eai.amd.com/v1alpha1, reconciled
by the controller on one simulated cluster (AMD MI300X nodes).

Runtime config resolution for the three kinds, as every AIM consumer of omectl does it, in upstream's status shape
(metav1 conditions, `status.status` Pending|Progressing|Ready|Degraded|Failed|NotAvailable).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, restart_controller, running_fleet
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "aimleg-1"
V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
PLURALS = {
    "AIMServiceTemplate": "aimservicetemplates",
    "AIMClusterServiceTemplate": "aimclusterservicetemplates",
    "AIMTemplateCache": "aimtemplatecaches",
}
STATUSES = {"Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable"}


class Env(ClusterKubectl):
    def __init__(self, fleet: ControlledFleet) -> None:
        super().__init__(fleet.kubectl, CLUSTER)
        self.fleet = fleet

    def items(self, resource: str, namespace: str | None = None, selector: str | None = None) -> list[dict[str, Any]]:
        args = ["get", resource, "-o", "json", *(["-n", namespace] if namespace else ["-A"])]
        if selector:
            args += ["-l", selector]
        return json.loads(self.k(*args))["items"]  # type: ignore[no-any-return]

    def status(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return (self.get(resource, name, namespace) or {}).get("status") or {}

    def condition(self, resource: str, name: str, namespace: str | None, condition_type: str) -> dict[str, Any]:
        conditions = self.status(resource, name, namespace).get("conditions") or []
        return next((c for c in conditions if c["type"] == condition_type), {})

    def apply_frozen(self, path: Path, ns: str | None) -> None:
        """As upstream's e2e tests apply a frozen dependency (its hack/apply-with-status.sh): `kubectl apply`, then
        the document's status merge-patched onto the status subresource (the document is paused)."""
        where = ["-n", ns] if ns else []
        self.k("apply", *where, "-f", str(path))
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and "status" in doc:
                kind, name = doc["kind"].lower(), doc["metadata"]["name"]
                body = json.dumps({"status": doc["status"]})
                self.k("patch", kind, name, *where, "--type=merge", "--subresource=status", "-p", body)

    def events(self, name: str, reason: str, namespace: str = "default") -> list[dict[str, Any]]:
        items = json.loads(self.k("get", "events", "-n", namespace, "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def legacy(kind: str, name: str, ns: str | None, **spec: Any) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns and kind != "AIMClusterServiceTemplate" else {})}
    return {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": spec}


def config(kind: str, name: str, ns: str | None = None, **spec: Any) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": spec}


def minimal_spec(kind: str) -> dict[str, Any]:
    """A spec each kind accepts (a template names a model; a cache names a template)."""
    if kind == "AIMTemplateCache":
        return {"templateName": "some-template", "templateScope": "Namespace"}
    return {"modelName": "some-model"}


def where(kind: str, ns: str) -> str | None:
    return None if kind == "AIMClusterServiceTemplate" else ns


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(
        pools=(NodePool(count=2, gpus_per_node=8, gpu_resource="amd.com/gpu", gpu_type="MI300X"),)
    )
    with running_fleet(tmp_path_factory.mktemp("aimleg"), 1, "aimleg-", simulator=simulator) as fleet:
        env = Env(fleet)
        env.apply(namespace("aim-system"))
        yield env


# --- runtime config resolution, as every AIM consumer ----------------------------------------------------------


@pytest.mark.parametrize("kind", list(PLURALS))
def test_a_missing_explicit_config_fails_each_legacy_kind_until_the_config_appears(env: Env, kind: str) -> None:
    ns = f"rc-missing-{kind.lower()}"
    name = f"missing-{kind.lower()}"
    env.apply(namespace(ns))
    env.apply(legacy(kind, name, ns, runtimeConfigName="team-config", **minimal_spec(kind)))
    plural, at = PLURALS[kind], where(kind, ns)
    status = until(lambda: env.status(plural, name, at).get("conditions") and env.status(plural, name, at), "failed")
    assert status["status"] == "Failed"
    conditions = {c["type"]: c for c in status["conditions"]}
    for condition_type in ("RuntimeConfigReady", "ConfigValid", "Ready"):
        assert conditions[condition_type]["status"] == "False"
        assert conditions[condition_type]["reason"] == "ReferenceNotFound"
        assert conditions[condition_type]["message"] == "RuntimeConfig team-config not found"
        assert conditions[condition_type]["lastTransitionTime"]
    assert "resolvedRuntimeConfig" not in status
    events_ns = at or "default"
    until(lambda: env.events(name, "ReferenceNotFound", events_ns), "a Warning event")
    # the config appears: the object is reconciled at once (no backoff wait) and recovers
    config_ns = at or "aim-system"  # a cluster template looks the namespaced config up in the operator namespace
    env.apply(config("AIMRuntimeConfig", "team-config", config_ns))
    recovered = until(
        lambda: (s := env.status(plural, name, at)).get("resolvedRuntimeConfig") and s, "resolved", timeout=10
    )
    ref = recovered["resolvedRuntimeConfig"]
    assert (ref["kind"], ref["name"], ref["namespace"], ref["scope"]) == (
        "AIMRuntimeConfig",
        "team-config",
        config_ns,
        "Namespace",
    )
    conditions = {c["type"]: c for c in recovered["conditions"]}
    assert (conditions["RuntimeConfigReady"]["status"], conditions["RuntimeConfigReady"]["reason"]) == (
        "True",
        "RuntimeConfigResolved",
    )
    # no longer failed by the config (a template still misses its model, a cache its template: their own story)
    assert conditions["ConfigValid"]["message"] != "RuntimeConfig team-config not found"
    assert conditions["Ready"]["message"] != "RuntimeConfig team-config not found"


@pytest.mark.parametrize("kind", list(PLURALS))
def test_a_missing_default_config_is_no_error_and_says_so_once(env: Env, kind: str) -> None:
    ns = f"rc-default-{kind.lower()}"
    name = f"default-{kind.lower()}"
    env.apply(namespace(ns))
    env.apply(legacy(kind, name, ns, **minimal_spec(kind)))
    plural, at = PLURALS[kind], where(kind, ns)
    ready = until(lambda: env.condition(plural, name, at, "RuntimeConfigReady"), "RuntimeConfigReady")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True",
        "DefaultConfigNotFound",
        "Default config was not found",
    )
    status = env.status(plural, name, at)
    assert status["status"] in STATUSES and status["observedGeneration"] == 1
    assert "resolvedRuntimeConfig" not in status
    assert all(
        "RuntimeConfig" not in c["message"] for c in status["conditions"] if c["type"] in ("ConfigValid", "Ready")
    )
    events = until(lambda: env.events(name, "DefaultConfigNotFound", at or "default"), "the Normal event")
    assert [e["type"] for e in events] == ["Normal"] and events[0].get("count", 1) == 1


def test_a_cluster_config_change_re_reconciles_exactly_the_legacy_objects_naming_it(env: Env) -> None:
    ns = "rc-change"
    env.apply(namespace(ns), config("AIMClusterRuntimeConfig", "shared"), config("AIMClusterRuntimeConfig", "another"))
    env.apply(
        legacy("AIMServiceTemplate", "named", ns, runtimeConfigName="shared", modelName="m"),
        legacy("AIMClusterServiceTemplate", "named-cluster", None, runtimeConfigName="shared", modelName="m"),
        legacy(
            "AIMTemplateCache", "named", ns, runtimeConfigName="shared", templateName="t", templateScope="Namespace"
        ),
        legacy("AIMServiceTemplate", "other", ns, runtimeConfigName="another", modelName="m"),
    )
    keys = [
        ("AIMServiceTemplate", ns, "named"),
        ("AIMClusterServiceTemplate", "", "named-cluster"),
        ("AIMTemplateCache", ns, "named"),
    ]
    for kind, at, name in keys:
        until(lambda k=kind, a=at, n=name: env.status(PLURALS[k], n, a or None).get("resolvedRuntimeConfig"), kind)
    until(lambda: env.status("aimservicetemplates", "other", ns).get("resolvedRuntimeConfig"), "the other resolved")
    app = env.fleet.app
    assert app is not None
    counts = app.reconcilers.aim_legacy.reconciles

    def snapshot() -> dict[tuple[str, str, str], int]:
        return {k: counts[(CLUSTER, *k)] for k in [*keys, ("AIMServiceTemplate", ns, "other")]}

    before = snapshot()
    env.apply(config("AIMClusterRuntimeConfig", "shared", env=[{"name": "HF_HOME", "value": "/hf"}]))
    until(lambda: all(snapshot()[k] > before[k] for k in keys), "every object naming the config reconciled")
    assert snapshot()[("AIMServiceTemplate", ns, "other")] == before[("AIMServiceTemplate", ns, "other")]
    ref = env.status("aimclusterservicetemplates", "named-cluster")["resolvedRuntimeConfig"]
    assert (ref["kind"], ref["namespace"], ref["scope"]) == ("AIMClusterRuntimeConfig", "", "Cluster")


# --- templates: model, GPUs, inline model sources, discovery, cache (upstream's scenarios) -----------------------

UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim" / "tests" / "e2e"
"""Upstream's e2e YAML, pinned at aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87 (SOURCE beside it). Its
chainsaw tests are ported below from tests/e2e/<suite>/chainsaw-test.yaml at that commit; their models are written
here (upstream's model.yaml files are v1alpha1 AIMModels, served here at v1alpha2 with the same fields)."""
DRY_RUN = [
    {
        "filename": "vllm-mi300x-fp8-tp1-latency.yaml",
        "profile": {
            "model": "HuggingFaceTB/SmolLM2-135M",
            "quantized_model": "",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI300X",
                "precision": "fp8",
                "gpu_count": 1,
                "metric": "latency",
                "type": "optimized",
            },
            "engine_args": {
                "distributed_executor_backend": "mp",
                "gpu-memory-utilization": 0.95,
                "tensor-parallel-size": 1,
            },
            "env_vars": {"HIP_FORCE_DEV_KERNARG": "1", "VLLM_USE_V1": "0"},
        },
        "models": [{"name": "HuggingFaceTB/SmolLM2-135M", "source": "hf://HuggingFaceTB/SmolLM2-135M", "size_gb": 0.5}],
    }
]
"""The dry-run output an AIM image prints for upstream's discovery happy path (its chainsaw test's expectations)."""


def model(
    kind: str, name: str, ns: str | None, image: str = "ghcr.io/amd/aim-dummy:0.1", **annotations: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"namespace": ns} if ns and kind == "AIMModel" else {})}
    if annotations:
        meta["annotations"] = annotations
    # discovery of the v1alpha2 model itself is off: the template's discovery is what these tests look at
    return {"apiVersion": V2, "kind": kind, "metadata": meta, "spec": {"image": image, "discovery": {"enabled": False}}}


def apply_upstream(env: Env, path: str, ns: str) -> None:
    env.k("apply", "-n", ns, "-f", str(UPSTREAM / path))


def test_inline_model_sources_skip_discovery_and_the_template_is_ready(env: Env) -> None:
    """Ported: aimservicetemplate/inline-model-sources."""
    ns = "tpl-inline"
    env.apply(namespace(ns), model("AIMModel", "test-model-inline", ns))
    apply_upstream(env, "aimservicetemplate/inline-model-sources/template.yaml", ns)
    name = "test-template-inline-modelsources"
    status = until(lambda: (s := env.status("aimservicetemplates", name, ns)).get("status") == "Ready" and s, "Ready")
    assert status["modelSources"] == [
        {
            "modelId": "amd/Llama-3.1-8B-Instruct-FP8-KV",
            "sourceUri": "hf://amd/Llama-3.1-8B-Instruct-FP8-KV",
            "size": "9094593249",
        }
    ]
    discovered = env.condition("aimservicetemplates", name, ns, "Discovered")
    assert (discovered["status"], discovered["reason"], discovered["message"]) == (
        "True",
        "InlineModelSources",
        "Model sources provided in-line in spec",
    )
    assert env.items("jobs", ns, f"aim.eai.amd.com/template={name}") == []
    assert status["resolvedModel"] == {"name": "test-model-inline", "namespace": ns}
    assert status["profile"] == {"metadata": {"gpuCount": 1, "gpu": "MI300X"}}
    assert status["hardwareSummary"] == "1 x MI300X"
    assert status["resolvedHardware"] == {"gpu": {"requests": 1, "model": "MI300X", "resourceName": "amd.com/gpu"}}
    terms = status["resolvedNodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "amd.com/gpu.device-id", "operator": "In", "values": ["74a1", "74a9", "74b5", "74bd"]}
            ]
        }
    ]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["ModelReady"]["reason"], conditions["GPUReady"]["reason"]) == ("ModelFound", "GPUAvailable")
    table = env.k("get", "aimtpl", name, "-n", ns).split()
    assert table[6:] == [name, "test-model-inline", "Ready", "1", "x", "MI300X"]


def test_a_minimum_vram_is_matched_against_the_nodes_labels(env: Env) -> None:
    """Ported: aimservicetemplate/min-vram (MI300X nodes: 192G each, by the AMD GPU operator's label)."""
    ns = "tpl-vram"
    env.apply(namespace(ns), model("AIMModel", "test-min-vram-model", ns))
    apply_upstream(env, "aimservicetemplate/min-vram/template.yaml", ns)
    status = until(
        lambda: (s := env.status("aimservicetemplates", "test-min-vram-template", ns)).get("status") == "Ready" and s,
        "Ready",
    )
    assert status["resolvedHardware"]["gpu"] == {"requests": 1, "minVram": "64Gi", "resourceName": "amd.com/gpu"}
    gpu = env.condition("aimservicetemplates", "test-min-vram-template", ns, "GPUReady")
    assert (gpu["status"], gpu["reason"]) == ("True", "GPUAvailable")
    apply_upstream(env, "aimservicetemplate/min-vram/template-vram-too-high.yaml", ns)
    too_high = until(
        lambda: (
            (s := env.status("aimservicetemplates", "test-min-vram-too-high", ns)).get("status") == "NotAvailable" and s
        ),
        "NotAvailable",
    )
    gpu = next(c for c in too_high["conditions"] if c["type"] == "GPUReady")
    assert (gpu["status"], gpu["reason"]) == ("False", "VRAMNotAvailable")
    assert gpu["message"] == "Required minimum VRAM (1024Gi) exceeds available GPUs. Highest available: MI300X (192Gi)"
    ready = next(c for c in too_high["conditions"] if c["type"] == "Ready")
    assert (ready["reason"], ready["message"]) == ("VRAMNotAvailable", f"Component GPU is not ready: {gpu['message']}")
    until(lambda: env.events("test-min-vram-too-high", "VRAMNotAvailable", ns), "one Warning event")


def test_discovery_fills_the_profile_and_model_sources_of_a_namespaced_template(env: Env) -> None:
    """Ported: aimservicetemplate/discovery/happy-path-namespace. The simulated image prints upstream's dry-run
    output, given as the model's sim.omectl.io/discovery-result annotation."""
    ns = "tpl-discovery"
    env.apply(namespace(ns), config("AIMRuntimeConfig", "default", ns, env=[{"name": "HF_HOME", "value": "/hf"}]))
    env.apply(
        model(
            "AIMModel", "test-model-discovery-namespace", ns, **{"sim.omectl.io/discovery-result": json.dumps(DRY_RUN)}
        )
    )
    apply_upstream(env, "aimservicetemplate/discovery/happy-path-namespace/template.yaml", ns)
    name = "test-template-discovery-namespace"
    (job,) = until(lambda: env.items("jobs", ns, f"aim.eai.amd.com/template={name}"), "the discovery Job")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/amd/aim-dummy:0.1" and container["args"] == ["dry-run", "--format=json"]
    env_vars = {e["name"]: e["value"] for e in container["env"]}
    assert env_vars["HF_HOME"] == "/hf", "the runtime config's env"
    assert (env_vars["AIM_GPU_MODEL"], env_vars["AIM_GPU_COUNT"]) == ("MI300X", "1")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "AIMServiceTemplate"
    assert job["metadata"]["name"].startswith(f"discover-{name}-")
    status = until(lambda: (s := env.status("aimservicetemplates", name, ns)).get("status") == "Ready" and s, "Ready")
    assert status["profile"] == {
        "metadata": {
            "engine": "vllm",
            "gpu": "MI300X",
            "gpuCount": 1,
            "precision": "fp8",
            "metric": "latency",
            "type": "optimized",
        },
        "engine_args": {
            "distributed_executor_backend": "mp",
            "gpu-memory-utilization": 0.95,
            "tensor-parallel-size": 1,
        },
        "env_vars": {"HIP_FORCE_DEV_KERNARG": "1", "VLLM_USE_V1": "0"},
    }
    assert status["modelSources"] == [
        {"modelId": "HuggingFaceTB/SmolLM2-135M", "sourceUri": "hf://HuggingFaceTB/SmolLM2-135M", "size": "512Mi"}
    ]
    assert status["resolvedModel"] == {"name": "test-model-discovery-namespace", "namespace": ns}
    assert status["discoveryJob"] == {"name": job["metadata"]["name"], "namespace": ns}
    assert status["hardwareSummary"] == "1 x MI300X"
    discovered = env.condition("aimservicetemplates", name, ns, "Discovered")
    assert (discovered["status"], discovered["reason"]) == ("True", "DiscoveryComplete")
    table = env.k("get", "aimtpl", name, "-n", ns).split()
    assert table[-2:] == ["latency", "fp8"], "the printer columns read the discovered profile"


def test_a_cluster_template_runs_discovery_in_the_operator_namespace(env: Env) -> None:
    """Ported: aimservicetemplate/discovery/happy-path-cluster."""
    env.apply(
        model(
            "AIMClusterModel",
            "test-model-discovery-cluster",
            None,
            **{"sim.omectl.io/discovery-result": json.dumps(DRY_RUN)},
        )
    )
    env.k("apply", "-f", str(UPSTREAM / "aimservicetemplate/discovery/happy-path-cluster/cluster-template.yaml"))
    name = "test-template-discovery-cluster"
    (job,) = until(lambda: env.items("jobs", "aim-system", f"aim.eai.amd.com/template={name}"), "the Job in aim-system")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "AIMClusterServiceTemplate"
    status = until(
        lambda: (s := env.status("aimclusterservicetemplates", name)).get("status") == "Ready" and s, "Ready"
    )
    assert status["resolvedModel"] == {"name": "test-model-discovery-cluster"}
    assert status["modelSources"][0]["modelId"] == "HuggingFaceTB/SmolLM2-135M"


def test_a_template_waits_for_its_model_and_an_image(env: Env) -> None:
    ns = "tpl-model"
    env.apply(namespace(ns))
    env.apply(
        legacy(
            "AIMServiceTemplate",
            "waits",
            ns,
            modelName="later",
            modelSources=[{"modelId": "org/m", "sourceUri": "hf://org/m"}],
        )
    )
    status = until(lambda: (s := env.status("aimservicetemplates", "waits", ns)).get("status") and s, "a status")
    assert status["status"] == "Failed"
    conditions = {c["type"]: c for c in status["conditions"]}
    for condition_type in ("ModelReady", "ConfigValid", "Ready"):
        assert (conditions[condition_type]["reason"], conditions[condition_type]["message"]) == (
            "ReferenceNotFound",
            "AIMModel later not found",
        )
    # the model appears without an image (upstream's scaffold: no spec at all): Failed / ImageNotSpecified
    env.apply({"apiVersion": V2, "kind": "AIMModel", "metadata": {"name": "later", "namespace": ns}})
    until(
        lambda: env.condition("aimservicetemplates", "waits", ns, "ModelReady").get("reason") == "ImageNotSpecified",
        "imageless",
    )
    assert env.status("aimservicetemplates", "waits", ns)["status"] == "Failed"
    env.apply(model("AIMModel", "later", ns))
    status = until(
        lambda: (s := env.status("aimservicetemplates", "waits", ns)).get("status") == "Ready" and s, "Ready"
    )
    assert {c["type"]: c for c in status["conditions"]}["ConfigValid"]["reason"] == "ConfigurationValid"


def test_a_template_becomes_ready_when_a_node_with_its_gpu_appears(env: Env) -> None:
    """Ported: aimservicetemplate/node-gpu-label-changes (skipped upstream on real clusters: it relabels a Node)."""
    ns = "tpl-nodes"
    env.apply(namespace(ns), model("AIMModel", "node-gpu-test-model", ns))
    apply_upstream(env, "aimservicetemplate/node-gpu-label-changes/service-template.yaml", ns)
    until(
        lambda: env.status("aimservicetemplates", "node-gpu-test", ns).get("status") == "NotAvailable", "NotAvailable"
    )
    gpu = env.condition("aimservicetemplates", "node-gpu-test", ns, "GPUReady")
    assert gpu["message"] == "Required GPU model 'MI355X' not available in cluster. Available: MI300X"
    node = sorted(n["metadata"]["name"] for n in env.items("nodes"))[0]
    env.k("label", "node", node, "amd.com/gpu.device-id=75a3", "--overwrite")
    try:
        until(
            lambda: env.status("aimservicetemplates", "node-gpu-test", ns).get("status") == "Ready", "Ready", timeout=10
        )
    finally:
        env.k("label", "node", node, "amd.com/gpu.device-id=74a1", "--overwrite")
    until(
        lambda: env.status("aimservicetemplates", "node-gpu-test", ns).get("status") == "NotAvailable",
        "NotAvailable again",
    )


def test_a_template_with_caching_gets_its_template_cache_once_ready_with_its_labels(env: Env) -> None:
    ns = "tpl-caching"
    propagation = {"enabled": True, "match": ["org.example/*"]}
    env.apply(namespace(ns), config("AIMRuntimeConfig", "cached", ns, labelPropagation=propagation))
    env.apply(model("AIMModel", "m", ns))
    doc = legacy(
        "AIMServiceTemplate",
        "cached-tpl",
        ns,
        modelName="m",
        runtimeConfigName="cached",
        caching={"enabled": True, "env": [{"name": "HF_TOKEN", "value": "t"}]},
        modelSources=[{"modelId": "org/m", "sourceUri": "hf://org/m", "size": "1Gi"}],
    )
    doc["metadata"]["labels"] = {"org.example/team": "ml", "other": "x"}
    env.apply(doc)
    cache = until(lambda: env.get("aimtemplatecaches", "cached-tpl", ns), "the template cache")
    assert env.status("aimservicetemplates", "cached-tpl", ns)["status"] == "Ready"
    assert cache["spec"] == {
        "templateName": "cached-tpl",
        "templateScope": "Namespace",
        "env": [{"name": "HF_TOKEN", "value": "t"}],
        "runtimeConfigName": "cached",
        "mode": "Shared",
    }
    owner = cache["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("AIMServiceTemplate", "cached-tpl", True)
    assert cache["metadata"]["labels"]["org.example/team"] == "ml" and "other" not in cache["metadata"]["labels"]


# --- template caches: their template, their artifacts (upstream's scenarios) ------------------------------------


def artifacts_of(env: Env, ns: str, cache: str) -> list[dict[str, Any]]:
    items = env.items("aimartifacts.aim.eai.amd.com", ns, f"aim.eai.amd.com/template-cache.name={cache}")
    return sorted(items, key=lambda a: a["metadata"]["labels"]["aim.eai.amd.com/template.index"])


def test_a_template_cache_makes_one_artifact_per_model_source_of_its_template_and_turns_ready(env: Env) -> None:
    """Ported: aimtemplatecache/happy-path-namespace, and its TODO (the cache becomes Ready once its artifacts are:
    the simulator completes their download Jobs and binds their PVCs)."""
    ns = "tc-happy"
    env.apply(namespace(ns))
    env.apply_frozen(UPSTREAM / "aimtemplatecache/happy-path-namespace/service-template.yaml", ns)
    apply_upstream(env, "aimtemplatecache/happy-path-namespace/template-cache.yaml", ns)
    name = "happy-path-namespace"
    first, second = until(lambda: len(a := artifacts_of(env, ns, name)) == 2 and a, "two artifacts")
    for index, artifact in enumerate((first, second)):
        labels = artifact["metadata"]["labels"]
        assert labels["aim.eai.amd.com/template.index"] == str(index)
        assert labels["aim.eai.amd.com/template.scope"] == "Namespace"
        assert labels["aim.eai.amd.com/template.name"] == name
        assert artifact["apiVersion"] == V2 and "ownerReferences" not in artifact["metadata"], "Shared: nobody's"
    assert (first["spec"]["sourceUri"], first["spec"]["size"]) == ("hf://sshleifer/tiny-gpt2", "2Gi")
    assert first["spec"]["env"] == [{"name": "HF_TOKEN", "value": "my-token"}]
    assert (second["spec"]["sourceUri"], second["spec"]["size"]) == ("hf://HuggingFaceTB/SmolLM-135M", "4Gi")
    status = until(lambda: (s := env.status("aimtemplatecaches", name, ns)).get("status") == "Ready" and s, "Ready")
    assert status["resolvedTemplateKind"] == "AIMServiceTemplate"
    assert sorted(status["artifacts"]) == sorted(a["metadata"]["name"] for a in (first, second))
    entry = status["artifacts"][first["metadata"]["name"]]
    assert (entry["model"], entry["status"], entry["uid"]) == ("sshleifer/tiny-gpt2", "Ready", first["metadata"]["uid"])
    assert entry["persistentVolumeClaim"].startswith(first["metadata"]["name"] + "-cache-")
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["ArtifactsReady"]["reason"], conditions["ServiceTemplateReady"]["status"]) == (
        "AllCachesReady",
        "True",
    )
    # a second Shared cache of the same sources reuses the artifacts instead of making its own
    env.apply(
        legacy(
            "AIMTemplateCache",
            "second",
            ns,
            templateName=name,
            templateScope="Namespace",
            env=[{"name": "HF_TOKEN", "value": "my-token"}],
        )
    )
    reused = until(lambda: (s := env.status("aimtemplatecaches", "second", ns)).get("status") == "Ready" and s, "Ready")
    assert sorted(reused["artifacts"]) == sorted(status["artifacts"])
    assert artifacts_of(env, ns, "second") == []


def test_a_cluster_template_cache_labels_its_artifacts_with_the_cluster_scope(env: Env) -> None:
    """Ported: aimtemplatecache/happy-path-cluster; a Dedicated cache owns its artifacts."""
    ns = "tc-cluster"
    env.apply(namespace(ns))
    env.apply_frozen(UPSTREAM / "aimtemplatecache/happy-path-cluster/cluster-service-template.yaml", None)
    doc = yaml.safe_load((UPSTREAM / "aimtemplatecache/happy-path-cluster/template-cache.yaml").read_text())
    doc["metadata"]["namespace"] = ns
    doc["spec"]["mode"] = "Dedicated"
    env.apply(doc)
    artifacts = until(lambda: len(a := artifacts_of(env, ns, "happy-path-cluster")) == 2 and a, "two artifacts")
    cache = env.get("aimtemplatecaches", "happy-path-cluster", ns)
    assert cache is not None
    for artifact in artifacts:
        assert artifact["metadata"]["labels"]["aim.eai.amd.com/template.scope"] == "Cluster"
        owner = artifact["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == (
            "AIMTemplateCache",
            cache["metadata"]["uid"],
            True,
        )
    status = until(
        lambda: (s := env.status("aimtemplatecaches", "happy-path-cluster", ns)).get("status") == "Ready" and s, "Ready"
    )
    assert status["resolvedTemplateKind"] == "AIMClusterServiceTemplate"


def test_a_caches_artifacts_that_are_not_ready_go_when_it_was_deleted_while_no_controller_ran(env: Env) -> None:
    """Upstream's finalizer `aim.eai.amd.com/artifactcleanup` deletes a cache's artifacts that are not Ready whenever
    the cache goes; omectl, with no finalizer, catches a deletion it did not see up when it starts: the failing
    cache's Failed artifacts go, the other cache's Ready ones stay."""
    if env.fleet.real_api_server:
        pytest.skip("the controller's start, not the server's behaviour: the embedded run covers it")
    ns = "tc-orphans"
    env.apply(namespace(ns))
    env.apply_frozen(UPSTREAM / "aimtemplatecache/happy-path-namespace/service-template.yaml", ns)
    spec = {"templateName": "happy-path-namespace", "templateScope": "Namespace"}
    failure = [{"name": "AIM_DEBUG_CAUSE_FAILURE", "value": "true"}]  # the simulated downloader fails at once
    env.apply(
        legacy("AIMTemplateCache", "failing", ns, **spec, env=failure), legacy("AIMTemplateCache", "ready", ns, **spec)
    )

    def states(cache: str) -> list[str]:
        return [a.get("status", {}).get("status", "") for a in artifacts_of(env, ns, cache)]

    until(lambda: states("failing") == ["Failed", "Failed"], "the failing cache's artifacts Failed")
    until(lambda: states("ready") == ["Ready", "Ready"], "the other cache's artifacts Ready")
    restart_controller(env.fleet, lambda: env.k("delete", "aimtemplatecaches", "failing", "ready", "-n", ns))
    until(lambda: artifacts_of(env, ns, "failing") == [], "the Failed artifacts of the deleted cache gone")
    assert states("ready") == ["Ready", "Ready"], "Ready artifacts stay for other caches"


def test_a_template_cache_fails_while_its_template_is_missing(env: Env) -> None:
    """Ported: aimtemplatecache/fails-if-service-template-not-found."""
    ns = "tc-missing"
    env.apply(namespace(ns))
    apply_upstream(env, "aimtemplatecache/fails-if-service-template-not-found/template-cache.yaml", ns)
    name = "failure-service-template-not-found"
    status = until(lambda: (s := env.status("aimtemplatecaches", name, ns)).get("status") and s, "a status")
    assert status["status"] == "Failed"
    conditions = {c["type"]: c for c in status["conditions"]}
    for condition_type in ("Ready", "ServiceTemplateReady"):
        assert (conditions[condition_type]["status"], conditions[condition_type]["reason"]) == (
            "False",
            "ReferenceNotFound",
        )
    # here: no source to hold, as upstream words it
    artifacts = conditions["ArtifactsReady"]
    assert (artifacts["status"], artifacts["reason"], artifacts["message"]) == (
        "False",
        "NoCaches",
        "No artifacts to track",
    )
    assert env.items("aimartifacts.aim.eai.amd.com", ns) == []


def test_a_template_cache_fails_with_its_failed_template(env: Env) -> None:
    """Ported: aimtemplatecache/fails-if-service-template-failed (the frozen template is paused: its model is not
    read, so upstream's model.yaml is not applied)."""
    ns = "tc-template-failed"
    env.apply(namespace(ns))
    env.apply_frozen(UPSTREAM / "aimtemplatecache/fails-if-service-template-failed/service-template.yaml", ns)
    apply_upstream(env, "aimtemplatecache/fails-if-service-template-failed/template-cache.yaml", ns)
    name = "fails-if-service-template-failed"
    # chainsaw: Ensure the template cache is also failed
    status = until(lambda: (s := env.status("aimtemplatecaches", name, ns)).get("status") and s, "a status")
    assert status["status"] == "Failed"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["ServiceTemplateReady"]["status"], conditions["ServiceTemplateReady"]["reason"]) == (
        "False",
        "Failed",
    )
    assert conditions["Ready"]["status"] == "False" and status["resolvedTemplateKind"] == "AIMServiceTemplate"
    assert env.items("aimartifacts.aim.eai.amd.com", ns) == [], "nothing cached from a failed template"


def test_a_template_cache_of_the_wrong_scope_does_not_find_the_template_of_the_other(env: Env) -> None:
    """Ported: aimtemplatecache/fails-if-service-template-has-wrong-scope: a Cluster cache naming a namespaced
    template, a Namespace cache naming a cluster one."""
    ns = "tc-wrong-scope"
    env.apply(namespace(ns))
    suite = "aimtemplatecache/fails-if-service-template-has-wrong-scope"
    apply_upstream(env, f"{suite}/service-template.yaml", ns)
    env.k("apply", "-f", str(UPSTREAM / suite / "cluster-service-template.yaml"))
    for document in ("template-cache-cluster.yaml", "template-cache-namespace.yaml"):
        apply_upstream(env, f"{suite}/{document}", ns)
    # chainsaw: Ensure the both caches are in a Failed state (Ready and ServiceTemplateReady False, ReferenceNotFound)
    for name, missing in (
        (
            "failure-service-template-not-found-cluster",
            "AIMClusterServiceTemplate service-template-wrong-scope-namespace",
        ),
        ("failure-service-template-not-found-namespace", "AIMServiceTemplate service-template-wrong-scope-cluster"),
    ):
        status = until(lambda n=name: (s := env.status("aimtemplatecaches", n, ns)).get("status") and s, "a status")
        assert status["status"] == "Failed", name
        conditions = {c["type"]: c for c in status["conditions"]}
        for condition_type in ("Ready", "ServiceTemplateReady"):
            found = conditions[condition_type]
            assert (found["status"], found["reason"]) == ("False", "ReferenceNotFound"), (name, condition_type)
        assert conditions["ServiceTemplateReady"]["message"] == f"{missing} not found"
    assert env.items("aimartifacts.aim.eai.amd.com", ns) == []
    # the templates themselves exist, each in the scope the other cache did not look in
    assert env.get("aimservicetemplates", "service-template-wrong-scope-namespace", ns) is not None
    assert env.get("aimclusterservicetemplates", "service-template-wrong-scope-cluster") is not None


def test_a_template_cache_is_not_available_while_its_templates_gpu_is_not(env: Env) -> None:
    """Ported: aimtemplatecache/not-available-when-gpu-unavailable."""
    ns = "tc-no-gpu"
    env.apply(namespace(ns), model("AIMModel", "template-cache-not-available-model", ns))
    apply_upstream(env, "aimtemplatecache/not-available-when-gpu-unavailable/service-template.yaml", ns)
    name = "not-available-due-to-gpu"
    until(
        lambda: env.status("aimservicetemplates", name, ns).get("status") == "NotAvailable", "the template NotAvailable"
    )
    apply_upstream(env, "aimtemplatecache/not-available-when-gpu-unavailable/template-cache.yaml", ns)
    status = until(lambda: (s := env.status("aimtemplatecaches", name, ns)).get("status") and s, "a status")
    assert status["status"] == "NotAvailable"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "False" and conditions["ServiceTemplateReady"]["status"] == "False"


def test_labels_propagate_from_template_to_cache_to_artifacts_and_their_pvcs_and_jobs(env: Env) -> None:
    """The spec's legacy edges, AIMServiceTemplate -> AIMTemplateCache -> AIMArtifact, then the artifact's own
    (-> PVC, download Job and its pods); each hop under the parent's config."""
    ns = "tc-labels"
    cost = {"org.example/cost-center": "eng-ml", "org.example/team": "chat"}
    propagation = {"enabled": True, "match": ["org.example/*"]}
    env.apply(namespace(ns), config("AIMRuntimeConfig", "default", ns, labelPropagation=propagation))
    env.apply(model("AIMModel", "m", ns))
    doc = legacy(
        "AIMServiceTemplate",
        "labelled",
        ns,
        modelName="m",
        caching={"enabled": True},
        modelSources=[{"modelId": "org/m", "sourceUri": "hf://org/m", "size": "1Gi"}],
    )
    doc["metadata"]["labels"] = {**cost, "env": "test"}
    env.apply(doc)
    (artifact,) = until(lambda: artifacts_of(env, ns, "labelled"), "the cache's artifact")
    cache = env.get("aimtemplatecaches", "labelled", ns)
    assert cache is not None
    for obj in (cache, artifact):
        labels = obj["metadata"]["labels"]
        assert {k: labels.get(k) for k in cost} == cost and "env" not in labels, obj["kind"]
    name = artifact["metadata"]["name"]
    (job,) = until(lambda: env.items("jobs", ns, f"aim.eai.amd.com/artifact={name}"), "the download Job")
    (claim,) = until(lambda: env.items("pvc", ns, f"aim.eai.amd.com/artifact={name}"), "the PVC")
    for labels in (
        job["metadata"]["labels"],
        job["spec"]["template"]["metadata"]["labels"],
        claim["metadata"]["labels"],
    ):
        assert {k: labels.get(k) for k in cost} == cost and labels["aim.eai.amd.com/template-cache.name"] == "labelled"
