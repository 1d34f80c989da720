"""What upstream AIM Engine's own YAML found (issue 18's defects), through the real kubectl on one simulated cluster
with the controller running: upstream's Helm values example, its kubebuilder scaffolds (a model or service with no
spec), Gateway API patterns on a gatewayRef, the reconciliation-paused annotation and the AIM_ENGINE_ARGS merge.

Upstream's documents are pinned under tests/fixtures/upstream/aim (commit in its SOURCE and in each rendered file's
header). A kind we serve only at v1alpha2 gets upstream's v1alpha1 document at that version, otherwise unchanged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import yaml

from omectl.api import aim, crdgen
from omectl.controller.aim.consumers_watch import CONSUMER_KEYS
from omectl.controller.runtime.queue import WorkKey
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]
T = TypeVar("T")

UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim"
CLUSTER = "aimup-1"
V1 = f"{aim.GROUP}/{aim.V1ALPHA1}"


class Env:
    def __init__(self, fleet: ControlledFleet) -> None:
        self.fleet = fleet

    def run(self, *args: str, stdin: str | None = None) -> Any:
        return self.fleet.kubectl.run(f"--context={CLUSTER}", *args, input=stdin, check=False)

    def k(self, *args: str, stdin: str | None = None) -> str:
        proc = self.run(*args, stdin=stdin)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout  # type: ignore[no-any-return]

    def apply(self, *docs: dict[str, Any]) -> None:
        self.k("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        proc = self.run("get", resource, name, "-o", "json", *(["-n", namespace] if namespace else []))
        if proc.returncode != 0:
            assert "NotFound" in proc.stderr, proc.stderr
            return None
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    def status(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return (self.get(resource, name, namespace) or {}).get("status") or {}

    def events(self, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
        items = json.loads(self.k("get", "events", "-n", namespace, "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def until(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"never: {what} (last: {last!r})")


def upstream_doc(path: str) -> dict[str, Any]:
    """A pinned upstream document, at v1alpha2 when we do not serve its kind at v1alpha1."""
    doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
    versions = next(d.versions for d in crdgen.CRDS if d.group == aim.GROUP and d.kind == doc["kind"])
    if aim.V1ALPHA1 not in versions:
        doc["apiVersion"] = f"{aim.GROUP}/{versions[0]}"
    return doc


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(pools=(NodePool(count=1, gpus_per_node=8, gpu_resource="amd.com/gpu"),))
    with running_fleet(tmp_path_factory.mktemp("aimup"), 1, "aimup-", simulator=simulator) as fleet:
        env = Env(fleet)
        env.apply(namespace("aim-system"))
        # admission as on a cluster with omectl installed: the AIM webhooks are there before anything is applied
        until(
            lambda: "aimservice" in env.k("get", "validatingwebhookconfigurations", "-o", "yaml"),
            "the AIM validating webhooks installed",
        )
        yield env


# --- spec.model.autoDiscovery: upstream's Helm values example --------------------------------------------------


@pytest.mark.parametrize("kind", ["AIMClusterRuntimeConfig", "AIMRuntimeConfig"])
def test_upstreams_helm_values_example_applies_and_is_stored_unchanged(env: Env, kind: str) -> None:
    example = upstream_doc("helm/clusterruntimeconfig-values-example.yaml")
    assert example["spec"]["model"] == {"autoDiscovery": True}
    doc = {**example, "kind": kind, "metadata": {"name": "helm-example"}}
    ns = None
    if kind == "AIMRuntimeConfig":
        ns = "helm-example"
        env.apply(namespace(ns))
        doc["metadata"]["namespace"] = ns
    plural = f"{kind.lower()}s"
    env.apply(doc)
    stored = env.get(plural, "helm-example", ns)
    assert stored is not None
    assert stored["spec"] == example["spec"]


# --- gatewayRef: the Gateway API's patterns, refused as kube-apiserver refuses them ----------------------------

NAMESPACE_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SECTION_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
KIND_PATTERN = "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"
GROUP_PATTERN = r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


GATEWAY_REF_PLACES = {
    "runtime config": ("AIMClusterRuntimeConfig", None, ("routing",)),
    "service routing": ("AIMService", "gw-refs", ("routing",)),
    "service inline config": ("AIMService", "gw-refs", ("runtimeConfig", "routing")),
}


def with_gateway_ref(place: str, name: str, ref: dict[str, Any]) -> dict[str, Any]:
    kind, ns, path = GATEWAY_REF_PLACES[place]
    spec: dict[str, Any] = {"gatewayRef": {"name": "gw", **ref}}
    for key in reversed(path):
        spec = {key: spec}
    if kind == "AIMService":
        spec["model"] = {"image": "registry.example/qwen:1"}
    version = f"{aim.GROUP}/{aim.V1ALPHA1 if kind.endswith('RuntimeConfig') else aim.V1ALPHA2}"
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": version, "kind": kind, "metadata": meta, "spec": spec}


@pytest.mark.parametrize("place", list(GATEWAY_REF_PLACES))
def test_a_gateway_ref_namespace_that_is_no_dns_label_is_refused_with_kube_apiservers_message(
    env: Env, place: str
) -> None:
    env.apply(namespace("gw-refs"))
    doc = with_gateway_ref(place, "bad-ns", {"namespace": "Bad_NS"})
    field = ".".join(("spec", *GATEWAY_REF_PLACES[place][2], "gatewayRef", "namespace"))
    proc = env.run("apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert proc.returncode == 1
    assert proc.stderr == (
        f'The {doc["kind"]} "bad-ns" is invalid: {field}: Invalid value: "Bad_NS": '
        f"{field} in body should match '{NAMESPACE_PATTERN}'\n"
    )
    assert env.get(f"{doc['kind'].lower()}s", "bad-ns", doc["metadata"].get("namespace")) is None


@pytest.mark.parametrize("place", list(GATEWAY_REF_PLACES))
def test_every_gateway_api_pattern_of_a_gateway_ref_is_enforced(env: Env, place: str) -> None:
    env.apply(namespace("gw-refs"))
    doc = with_gateway_ref(place, "bad-ref", {"kind": "", "sectionName": "HTTP_1", "group": "Bad_Group"})
    field = ".".join(("spec", *GATEWAY_REF_PLACES[place][2], "gatewayRef"))
    proc = env.run("apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert proc.returncode == 1
    header, *causes = proc.stderr.splitlines()
    assert header == f'The {doc["kind"]} "bad-ref" is invalid: '
    assert sorted(causes) == [
        f"* {field}.group: Invalid value: \"Bad_Group\": {field}.group in body should match '{GROUP_PATTERN}'",
        # too short, and so not matched against its pattern: kube's string validation stops at the first failure
        f'* {field}.kind: Invalid value: "": {field}.kind in body should be at least 1 chars long',
        f'* {field}.sectionName: Invalid value: "HTTP_1": {field}.sectionName in body should match '
        f"'{SECTION_NAME_PATTERN}'",
    ]
    doc = with_gateway_ref(place, "bad-kind", {"kind": "9Gateway"})
    proc = env.run("apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert proc.returncode == 1
    assert proc.stderr == (
        f'The {doc["kind"]} "bad-kind" is invalid: {field}.kind: Invalid value: "9Gateway": '
        f"{field}.kind in body should match '{KIND_PATTERN}'\n"
    )
    # what the patterns allow: an empty group (the core group), a listener name with dots, any Kind
    ok = with_gateway_ref(
        place, "good-ref", {"group": "", "kind": "Gateway", "namespace": "kgateway-system", "sectionName": "http.a-1"}
    )
    env.apply(ok)
    stored = env.get(f"{ok['kind'].lower()}s", "good-ref", ok["metadata"].get("namespace"))
    assert stored is not None and stored["spec"] == ok["spec"]


# --- a model with no spec: upstream's scaffold sample ---------------------------------------------------------


def work_key(kind: str, namespace: str | None, name: str) -> WorkKey:
    return WorkKey(CLUSTER, f"{aim.GROUP}/{kind}", namespace or "", name)


@pytest.mark.parametrize(
    ("sample", "ns"), [("aim_v1alpha1_aimmodel.yaml", "scaffold"), ("aim_v1alpha1_aimclustermodel.yaml", None)]
)
def test_upstreams_scaffold_model_fails_once_with_a_reason_and_one_warning_event(
    env: Env, caplog: pytest.LogCaptureFixture, sample: str, ns: str | None
) -> None:
    doc = upstream_doc(f"config/samples/{sample}")
    assert doc["spec"] is None, "the scaffold has an empty spec"
    kind, name = doc["kind"], doc["metadata"]["name"]
    plural = f"{kind.lower()}s"
    caplog.set_level(logging.DEBUG)
    if ns:
        env.apply(namespace(ns))
    env.k("apply", *(["-n", ns] if ns else []), "-f", "-", stdin=yaml.safe_dump(doc))
    status = until(lambda: env.status(plural, name, ns).get("status"), f"{kind} {name} gets a status")
    assert status == "Failed"
    ready = next(c for c in env.status(plural, name, ns)["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ImageNotSpecified")
    assert ready["message"] == f"{kind} '{name}' has no spec.image: there is nothing to discover"
    events = until(lambda: env.events(ns or "default", name, "ImageNotSpecified"), f"the Warning event of {name}")
    assert [(e["type"], e.get("count", 1)) for e in events] == [("Warning", 1)]
    # the reconcile succeeded: nothing to retry, no error counted, no traceback logged
    app = env.fleet.app
    assert app is not None
    assert app.controller.queue.num_requeues(work_key(kind, ns, name)) == 0
    assert name not in (app.controller.clusters[CLUSTER].health.last_reconcile_error or "")
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING] == []
    # a later write reconciles it again without another event
    env.k("annotate", kind.lower(), name, *(["-n", ns] if ns else []), "touched=1")
    until(lambda: app.reconcilers.aim_consumers.reconciles[(CLUSTER, kind, ns or "", name)] >= 2, "a re-reconcile")
    assert len(env.events(ns or "default", name, "ImageNotSpecified")) == 1


# --- aim.eai.amd.com/reconciliation-paused: "true" -----------------------------------------------------------

PAUSED = "aim.eai.amd.com/reconciliation-paused"
RECONCILED: dict[str, tuple[bool, dict[str, Any]]] = {
    "AIMService": (True, {"model": {"image": "registry.example/qwen:1"}}),
    "AIMModel": (True, {"image": "registry.example/qwen:1", "discovery": {"enabled": False}}),
    "AIMClusterModel": (False, {"image": "registry.example/qwen:1", "discovery": {"enabled": False}}),
    "AIMProfile": (True, {"modelName": "m"}),
    "AIMClusterProfile": (False, {"modelName": "m"}),
    "AIMProfileSet": (True, {"modelName": "m"}),
    "AIMProfileCache": (True, {"profileName": "p"}),
    "AIMArtifact": (True, {"sourceUri": "hf://org/repo", "size": "1Gi"}),
    "AIMClusterModelSource": (False, {"models": []}),
}
"""Every AIM kind the controller reconciles: namespaced, and a spec it accepts."""


def test_every_reconciled_aim_kind_is_listed() -> None:
    assert set(RECONCILED) == {"AIMService", *CONSUMER_KEYS.values()}


@pytest.mark.parametrize("kind", list(RECONCILED))
def test_a_paused_object_is_left_alone_status_included_until_the_annotation_goes(
    env: Env, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    namespaced, spec = RECONCILED[kind]
    ns = "paused" if namespaced else None
    name = f"paused-{kind.lower()}"
    plural = f"{kind.lower()}s"
    where = ["-n", ns] if ns else []
    version = next(d.versions for d in crdgen.CRDS if d.group == aim.GROUP and d.kind == kind)[0]
    meta: dict[str, Any] = {"name": name, "annotations": {PAUSED: "true"}, **({"namespace": ns} if ns else {})}
    doc = {"apiVersion": f"{aim.GROUP}/{version}", "kind": kind, "metadata": meta, "spec": spec}
    app = env.fleet.app
    assert app is not None
    key = str(work_key(kind, ns, name))

    def skips() -> int:
        return sum(
            1 for r in caplog.records if r.getMessage() == f"{key}: reconciliation paused by its {PAUSED} annotation"
        )

    def reconciles() -> int:
        if kind == "AIMService":
            return app.reconcilers.aim.reconciles[(CLUSTER, ns or "", name)]
        return app.reconcilers.aim_consumers.reconciles[(CLUSTER, kind, ns or "", name)]

    caplog.set_level(logging.DEBUG)
    if ns:
        env.apply(namespace(ns))
    env.apply(doc)
    until(skips, f"the controller skips the paused {kind}")
    assert reconciles() == 0
    assert env.status(plural, name, ns) == {}, "a paused object gets no status"
    # removing the annotation resumes
    env.k("annotate", kind.lower(), name, *where, f"{PAUSED}-")
    status = until(lambda: env.status(plural, name, ns), f"{kind} reconciled once unpaused")
    generation = status["observedGeneration"]
    # paused again, a spec change is not reconciled: the status stays the previous generation's
    env.k("annotate", kind.lower(), name, *where, f"{PAUSED}=true")
    until(skips, "the re-paused object skipped")
    before = skips()
    env.k("patch", kind.lower(), name, *where, "--type=merge", "-p", '{"spec":{"runtimeConfigName":"default"}}')
    until(lambda: skips() > before, "the spec change skipped")
    stored = env.get(plural, name, ns)
    assert stored is not None and stored["metadata"]["generation"] > generation
    assert stored["status"]["observedGeneration"] == generation
    env.k("annotate", kind.lower(), name, *where, f"{PAUSED}-")
    until(
        lambda: env.status(plural, name, ns).get("observedGeneration") == stored["metadata"]["generation"],
        "the spec change reconciled once unpaused",
    )


# --- an AIMService with no spec: upstream's scaffold sample --------------------------------------------------


def test_upstreams_scaffold_service_is_admitted_and_fails_naming_the_missing_model(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    doc = upstream_doc("config/samples/aim_v1alpha1_aimservice.yaml")
    assert doc["spec"] is None, "the scaffold has an empty spec"
    name, ns = doc["metadata"]["name"], "scaffold-svc"
    caplog.set_level(logging.DEBUG)
    env.apply(namespace(ns))
    env.k("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(doc))  # admitted, as upstream's CRD makes spec optional
    status = until(lambda: env.status("aimservices", name, ns), f"AIMService {name} gets a status")
    assert status["status"] == "Failed"
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert conditions["ModelReady"] == ("False", "ModelNotFound", "no model specified in service spec")
    assert conditions["Ready"] == ("False", "ModelNotFound", "no model specified in service spec")
    events = until(lambda: env.events(ns, name, "ModelNotFound"), f"the Warning event of {name}")
    assert [(e["type"], e.get("count", 1)) for e in events] == [("Warning", 1)]
    assert env.get("inferenceservices.serving.kserve.io", name, ns) is None, "nothing to serve, nothing applied"
    app = env.fleet.app
    assert app is not None
    assert app.controller.queue.num_requeues(WorkKey(CLUSTER, "aim.eai.amd.com/AIMService", ns, name)) == 0
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING] == []
    # a spec without its model is refused by the schema, naming the field
    proc = env.run("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump({**doc, "spec": {"replicas": 1}}))
    assert proc.returncode == 1
    # a missing required field keeps the CRD's validation rules from running, and kube says so
    assert proc.stderr == (
        f'The AIMService "{name}" is invalid: \n* spec.model: Required value\n* <nil>: Invalid value: null: '
        "some validation rules were not checked because the object was invalid; correct the existing errors to "
        "complete validation\n"
    )
    # naming a model later (the immutability rule applies once it is set) serves it
    env.k("patch", "aimservice", name, "-n", ns, "--type=merge", "-p", '{"spec":{"model":{"image":"example/m:1"}}}')
    until(
        lambda: env.get("inferenceservices.serving.kserve.io", name, ns), "the InferenceService once a model is named"
    )
    until(
        lambda: "ModelReady" not in {c["type"] for c in env.status("aimservices", name, ns)["conditions"]},
        "ModelReady gone",
    )
    assert len(env.events(ns, name, "ModelNotFound")) == 1


# --- AIM_ENGINE_ARGS: deep-merged across the cluster config, the namespace config and the service ---------------


def engine_args(value: dict[str, Any]) -> list[dict[str, str]]:
    return [{"name": "AIM_ENGINE_ARGS", "value": json.dumps(value)}]


def test_engine_args_of_the_cluster_config_namespace_config_and_service_deep_merge(env: Env) -> None:
    ns, config = "engine-args", "engine-args"
    env.apply(
        namespace(ns),
        {
            "apiVersion": V1,
            "kind": "AIMClusterRuntimeConfig",
            "metadata": {"name": config},
            "spec": {"env": engine_args({"tensor-parallel-size": 1, "max-model-len": 4096, "kv": {"block": 16}})},
        },
        {
            "apiVersion": V1,
            "kind": "AIMRuntimeConfig",
            "metadata": {"name": config, "namespace": ns},
            "spec": {"env": engine_args({"gpu-memory-utilization": 0.9, "kv": {"dtype": "fp8"}})},
        },
    )

    def service(**spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": f"{aim.GROUP}/{aim.V1ALPHA2}",
            "kind": "AIMService",
            "metadata": {"name": "merged", "namespace": ns},
            "spec": {"model": {"image": "registry.example/qwen:1"}, "runtimeConfigName": config, **spec},
        }

    def engine_args_of_the_inference_service() -> list[str]:
        isvc = env.get("inferenceservices.serving.kserve.io", "merged", ns)
        (container,) = isvc["spec"]["predictor"]["containers"] if isvc else [{}]
        return [e.get("value") for e in container.get("env") or [] if e["name"] == "AIM_ENGINE_ARGS"]

    # the issue's example: the service wins per key, the namespace over the cluster, nested objects recurse; written
    # as upstream's Go writes it (encoding/json: keys sorted, no spaces)
    env.apply(service(env=engine_args({"tensor-parallel-size": 2, "max-model-len": 8192})))
    want = [
        '{"gpu-memory-utilization":0.9,"kv":{"block":16,"dtype":"fp8"},"max-model-len":8192,"tensor-parallel-size":2}'
    ]
    until(lambda: engine_args_of_the_inference_service() == want, f"AIM_ENGINE_ARGS {want}")
    # the inline config is a layer between the namespace config and the service's own env
    env.apply(
        service(
            runtimeConfig={"env": engine_args({"max-model-len": 2048, "kv": {"block": 32}, "enforce-eager": True})},
            env=engine_args({"tensor-parallel-size": 2}),
        )
    )
    want = [
        '{"enforce-eager":true,"gpu-memory-utilization":0.9,"kv":{"block":32,"dtype":"fp8"},"max-model-len":2048,'
        '"tensor-parallel-size":2}'
    ]
    until(lambda: engine_args_of_the_inference_service() == want, f"AIM_ENGINE_ARGS {want}")


# --- AIMTemplateCache: upstream's legacy kind, served at v1alpha1 (not yet reconciled) ------------------------


def test_upstreams_template_cache_sample_applies_at_v1alpha1_and_is_stored_as_upstream_would(env: Env) -> None:
    """The scaffold's empty `spec:` is null, which kube-apiserver prunes from a non-nullable field: stored with no
    spec, everything else as written."""
    doc = upstream_doc("config/samples/aim_v1alpha1_aimtemplatecache.yaml")
    assert (doc["apiVersion"], doc["spec"]) == (V1, None)
    env.apply(namespace("legacy-cache"))
    env.k("apply", "-n", "legacy-cache", "-f", "-", stdin=yaml.safe_dump(doc))
    stored = env.get("aimtemplatecaches", doc["metadata"]["name"], "legacy-cache")
    assert stored is not None
    assert stored["apiVersion"] == V1 and "spec" not in stored
    assert stored["metadata"]["labels"] == doc["metadata"]["labels"]


def test_a_template_cache_gets_upstreams_default_mode_and_its_patterns(env: Env) -> None:
    env.apply(namespace("legacy-cache-2"))
    spec = {
        "templateName": "qwen-mi300x",
        "templateScope": "Namespace",
        "modelSources": [{"modelId": "Qwen/Qwen3-32B", "sourceUri": "hf://Qwen/Qwen3-32B", "size": "65Gi"}],
    }
    cache = {"apiVersion": V1, "kind": "AIMTemplateCache", "metadata": {"name": "tc", "namespace": "legacy-cache-2"}}
    env.apply({**cache, "spec": spec})
    stored = env.get("aimtemplatecaches", "tc", "legacy-cache-2")
    assert stored is not None and stored["spec"] == {**spec, "mode": "Shared"}
    bad = {**spec, "modelSources": [{"modelId": "no-slash", "sourceUri": "ftp://x"}]}
    refused = env.run(
        "apply",
        "-f",
        "-",
        stdin=yaml.safe_dump({**cache, "metadata": {**cache["metadata"], "name": "tc-bad"}, "spec": bad}),
    )
    assert refused.returncode != 0
    assert "spec.modelSources[0].modelId" in refused.stderr and "spec.modelSources[0].sourceUri" in refused.stderr
