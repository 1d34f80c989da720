"""What upstream AIM Engine's own YAML found (issue 18's defects), through the real kubectl on one simulated cluster
with the controller running: upstream's Helm values example, its kubebuilder scaffolds (a model or service with no
spec), Gateway API patterns on a gatewayRef, the reconciliation-paused annotation and the AIM_ENGINE_ARGS merge; and
upstream's legacy kinds served at v1alpha1 (AIMTemplateCache, AIMServiceTemplate, AIMClusterServiceTemplate): its
samples and e2e documents stored as its CRDs store them, its CEL rules and enums refused with kube-apiserver's words.

Upstream's documents are pinned under tests/fixtures/upstream/aim (commit in its SOURCE and in each rendered file's
header). A kind we serve only at v1alpha2 gets upstream's v1alpha1 document at that version, otherwise unchanged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.api import aim, crdgen
from omectl.controller.aim.consumers_watch import CONSUMER_KEYS
from omectl.controller.aim.legacy_watch import LEGACY_KEYS
from omectl.controller.runtime.queue import WorkKey
from omectl.core.aim.image_models import generated_model_name
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim"
CLUSTER = "aimup-1"
V1 = f"{aim.GROUP}/{aim.V1ALPHA1}"


class Env(ClusterKubectl):
    def __init__(self, fleet: ControlledFleet) -> None:
        super().__init__(fleet.kubectl, CLUSTER)
        self.fleet = fleet

    def patch_status(self, kind: str, name: str, namespace: str | None, status: dict[str, Any]) -> None:
        """Write a status as upstream's e2e tests write a frozen one (its hack/apply-with-status.sh): a merge patch
        of the status subresource."""
        where = ["-n", namespace] if namespace else []
        self.k(
            "patch",
            kind.lower(),
            name,
            *where,
            "--type=merge",
            "--subresource=status",
            "-p",
            json.dumps({"status": status}),
        )

    def status(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return (self.get(resource, name, namespace) or {}).get("status") or {}

    def events(self, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
        items = json.loads(self.k("get", "events", "-n", namespace, "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def upstream_doc(path: str) -> dict[str, Any]:
    """A pinned upstream document, at v1alpha2 when we do not serve its kind at v1alpha1."""
    doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
    versions = next(d.served_versions for d in crdgen.CRDS if d.group == aim.GROUP and d.kind == doc["kind"])
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
    "AIMServiceTemplate": (True, {"modelName": "m"}),
    "AIMClusterServiceTemplate": (False, {"modelName": "m"}),
    "AIMTemplateCache": (True, {"templateName": "t", "templateScope": "Namespace"}),
}
"""Every AIM kind the controller reconciles: namespaced, and a spec it accepts."""


def test_every_reconciled_aim_kind_is_listed() -> None:
    assert set(RECONCILED) == {"AIMService", *CONSUMER_KEYS.values(), *LEGACY_KEYS.values()}


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
        if kind in LEGACY_KEYS.values():
            return app.reconcilers.aim_legacy.reconciles[(CLUSTER, kind, ns or "", name)]
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
    assert doc["apiVersion"] == V1, "applied as upstream's, at v1alpha1"
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
    # naming a model later (the immutability rule applies once it is set; patched in v1alpha1, so the service stays
    # one written in v1alpha1: a spec patched in v1alpha2 would end that, docs/aim-versions.md) takes upstream's image
    # path: the model is made for the image
    patch = '{"spec":{"model":{"image":"example/m:1"}}}'
    env.k("patch", "aimservices.v1alpha1.aim.eai.amd.com", name, "-n", ns, "--type=merge", "-p", patch)
    until(lambda: env.get("aimmodels", generated_model_name("example/m:1"), ns), "the model made for the image")
    until(
        lambda: (
            {c["type"]: c["reason"] for c in env.status("aimservices", name, ns)["conditions"]}.get("ModelReady")
            != "ModelNotFound"
        ),
        "ModelNotFound gone",
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
            # an image no model of this module has: a model that is not Ready would hold the InferenceService
            "spec": {"model": {"image": "registry.example/engine-args:1"}, "runtimeConfigName": config, **spec},
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


# --- upstream's legacy kinds, served at v1alpha1: its samples and e2e YAML ----------------------------------------

LEGACY_KINDS = ("AIMTemplateCache", "AIMServiceTemplate", "AIMClusterServiceTemplate")
TEMPLATE_KINDS = LEGACY_KINDS[1:]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def upstream_legacy_files() -> list[str]:
    """Upstream's pinned samples and e2e files holding its legacy kinds, relative to the fixtures."""
    return sorted(
        str(path.relative_to(UPSTREAM))
        for path in UPSTREAM.rglob("*.yaml")
        if "crd" not in path.parts
        and any(doc and doc.get("kind") in LEGACY_KINDS for doc in yaml.safe_load_all(path.read_text()))
    )


def upstream_schema(kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of upstream's pinned CRD of `kind`."""
    path = UPSTREAM / "config" / "crd" / "bases" / f"aim.eai.amd.com_{kind.lower()}s.yaml"
    crd = yaml.safe_load(path.read_text())
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def stored_by_upstreams_crd(value: Any, schema: dict[str, Any]) -> Any:
    """`value` as kube-apiserver stores it under upstream's schema: a null of a non-nullable field dropped, absent
    fields with a schema default filled in (objects under x-kubernetes-preserve-unknown-fields kept as written). A
    field upstream's schema lacks raises KeyError: it would be pruned, and no upstream document has one."""
    if isinstance(value, list):
        return [stored_by_upstreams_crd(item, schema["items"]) for item in value]
    if not isinstance(value, dict) or "properties" not in schema:
        return value
    properties = schema["properties"]
    stored = {key: stored_by_upstreams_crd(item, properties[key]) for key, item in value.items() if item is not None}
    for key, field in properties.items():
        if key not in stored and "default" in field:
            stored[key] = field["default"]
    return stored


@pytest.mark.parametrize("path", upstream_legacy_files())
def test_upstreams_legacy_yaml_applies_and_is_stored_as_upstreams_crd_stores_it(env: Env, path: str) -> None:
    """Applied as upstream's e2e tests apply it: `kubectl apply -f FILE`, then a document's status (a frozen
    dependency, paused as upstream pauses every one) patched onto the status subresource. Stored: the document with
    upstream's schema defaults (a cache's mode, a GPU's resourceName, caching.enabled; a scaffold's null `spec:`
    dropped), its labels and annotations, and a paused document's status as applied."""
    ns = f"legacy-{upstream_legacy_files().index(path)}"
    env.apply(namespace(ns))
    docs = [doc for doc in yaml.safe_load_all((UPSTREAM / path).read_text()) if doc]
    assert {doc["kind"] for doc in docs} <= set(LEGACY_KINDS) and all(d["apiVersion"] == V1 for d in docs)
    env.k("apply", "-n", ns, "-f", str(UPSTREAM / path))
    for doc in docs:
        if "status" in doc:
            env.patch_status(doc["kind"], doc["metadata"]["name"], ns, doc["status"])
    listed = json.loads(env.k("get", "-n", ns, "-f", str(UPSTREAM / path), "-o", "json"))
    stored_docs = listed["items"] if listed["kind"] == "List" else [listed]
    assert len(stored_docs) == len(docs)
    for doc, stored in zip(docs, stored_docs, strict=True):
        schema = upstream_schema(doc["kind"])
        # the controller writes the status of what it reconciles; a paused (frozen) document keeps the one applied
        parts = ("spec", "status") if (doc["metadata"].get("annotations") or {}).get(PAUSED) == "true" else ("spec",)
        expected = stored_by_upstreams_crd({k: doc.get(k) for k in parts}, schema)
        assert {k: stored.get(k) for k in parts if k in stored} == expected, doc["metadata"]["name"]
        annotations = {k: v for k, v in (stored["metadata"].get("annotations") or {}).items() if k != LAST_APPLIED}
        assert annotations == (doc["metadata"].get("annotations") or {})
        assert stored["metadata"].get("labels") == doc["metadata"].get("labels")


def test_the_stored_form_expected_above_carries_upstreams_defaults() -> None:
    """The expectation of the test above is no copy of the document: upstream's schema defaults are in it, and a
    null `spec:` is not."""
    doc = upstream_doc("tests/e2e/aimservice/frozen/env-propagation-to-cache/template.yaml")
    expected = stored_by_upstreams_crd(doc["spec"], upstream_schema("AIMServiceTemplate")["properties"]["spec"])
    assert expected["hardware"]["gpu"]["resourceName"] == "amd.com/gpu"
    assert expected["caching"]["enabled"] is False and doc["spec"]["caching"]["enabled"] is False
    assert "resourceName" not in doc["spec"]["hardware"]["gpu"]
    cache = upstream_doc("tests/e2e/aimtemplatecache/happy-path-namespace/template-cache.yaml")
    assert "mode" not in cache["spec"]
    assert stored_by_upstreams_crd(cache, upstream_schema("AIMTemplateCache"))["spec"]["mode"] == "Shared"
    scaffold = upstream_doc("config/samples/aim_v1alpha1_aimtemplatecache.yaml")
    assert stored_by_upstreams_crd({"spec": scaffold["spec"]}, upstream_schema("AIMTemplateCache")) == {}


# --- AIMTemplateCache -------------------------------------------------------------------------------------------


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


def test_a_template_caches_status_is_stored_as_upstreams_controller_writes_it(env: Env) -> None:
    """A paused cache's status (the controller leaves it alone) is upstream's shape, kept whole (artifacts by model, a
    Merged runtime config, metav1 conditions), and `status` defaults to Pending, as upstream's CRD has it."""
    ns = "legacy-cache-3"
    env.apply(namespace(ns))
    spec = {"templateName": "qwen-mi300x", "templateScope": "Namespace"}
    meta = {"name": "tc", "namespace": ns, "annotations": {PAUSED: "true"}}
    env.apply({"apiVersion": V1, "kind": "AIMTemplateCache", "metadata": meta, "spec": spec})
    artifact = {"uid": "0c5d", "name": "tc-qwen", "model": "Qwen/Qwen3-32B", "status": "Ready", "mountPoint": "/cache"}
    status = {
        "artifacts": {"Qwen/Qwen3-32B": artifact},
        "resolvedRuntimeConfig": {"name": "default", "namespace": ns, "scope": "Merged", "kind": "AIMRuntimeConfig"},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "AllComponentsReady",
                "message": "All components are ready",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
    }
    env.patch_status("AIMTemplateCache", "tc", ns, status)
    stored = env.get("aimtemplatecaches", "tc", ns)
    assert stored is not None and stored["status"] == {**status, "status": "Pending"}


# --- AIMServiceTemplate / AIMClusterServiceTemplate ----------------------------------------------------------


def template(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": "templates"} if kind == "AIMServiceTemplate" else {})}
    return {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": {"modelName": "qwen", **spec}}


def refused(env: Env, *args: str, stdin: str | None = None) -> str:
    proc = env.run(*args, stdin=stdin)
    assert proc.returncode == 1, proc.stdout
    return proc.stderr  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", TEMPLATE_KINDS)
def test_a_templates_model_name_metric_precision_and_hardware_cannot_change(env: Env, kind: str) -> None:
    """Upstream's transition rules, refused with their messages as kube-apiserver words a CEL failure; a field that
    was absent may still be set once (a transition rule runs only where an old value exists)."""
    env.apply(namespace("templates"))
    name = "frozen-fields"
    doc = template(kind, name, precision="fp8", hardware={"gpu": {"model": "MI300X", "requests": 1}})
    env.apply(doc)
    where = ["-n", "templates"] if kind == "AIMServiceTemplate" else []
    header = f'The {kind} "{name}" is invalid: '

    def patch(**spec: Any) -> list[str]:
        return ["patch", kind.lower(), name, *where, "--type=merge", "-p", json.dumps({"spec": spec})]

    env.k(*patch(metric="latency"))  # absent until now
    for field, value, kind_of_value, message in (
        ("modelName", "llama", "string", "model name is immutable"),
        ("metric", "throughput", "string", "metric is immutable"),
        ("precision", "bf16", "string", "precision is immutable"),
        ("hardware", {"gpu": {"model": "MI300X", "requests": 2}}, "object", "hardware is immutable"),
    ):
        stderr = refused(env, *patch(**{field: value}))
        assert stderr == f'{header}spec.{field}: Invalid value: "{kind_of_value}": {message}\n'
    # several at once: one cause each (kube-apiserver walks a map of fields, so their order is not fixed)
    stderr = refused(
        env, *patch(modelName="llama", metric="throughput", precision="bf16", hardware={"cpu": {"requests": 1}})
    )
    first, *causes = stderr.splitlines()
    assert first == header and sorted(causes) == [
        '* spec.hardware: Invalid value: "object": hardware is immutable',
        '* spec.metric: Invalid value: "string": metric is immutable',
        '* spec.modelName: Invalid value: "string": model name is immutable',
        '* spec.precision: Invalid value: "string": precision is immutable',
    ]
    stored = env.get(f"{kind.lower()}s", name, "templates" if where else None)
    assert stored is not None
    assert stored["spec"] == {
        "modelName": "qwen",
        "metric": "latency",
        "precision": "fp8",
        "hardware": {"gpu": {"model": "MI300X", "requests": 1, "resourceName": "amd.com/gpu"}},
    }


@pytest.mark.parametrize("kind", TEMPLATE_KINDS)
def test_a_templates_nulls_are_dropped_as_upstreams_crd_drops_them(env: Env, kind: str) -> None:
    """Upstream's CRD allows null nowhere, so kube-apiserver drops a null field instead of storing it (and of
    checking it against the enum or running a rule on it); ours too. `kubectl create` sends the nulls as written."""
    env.apply(namespace("templates"))
    doc = template(kind, "nulls", metric=None, precision=None, hardware={"gpu": {"model": None, "requests": 1}})
    env.k("create", "-f", "-", stdin=json.dumps(doc))
    stored = env.get(f"{kind.lower()}s", "nulls", "templates" if kind == "AIMServiceTemplate" else None)
    assert stored is not None
    assert stored["spec"] == {"modelName": "qwen", "hardware": {"gpu": {"requests": 1, "resourceName": "amd.com/gpu"}}}


@pytest.mark.parametrize("kind", TEMPLATE_KINDS)
def test_a_templates_hardware_needs_a_gpu_or_a_cpu_and_a_gpu_model_or_a_minimum_vram(env: Env, kind: str) -> None:
    env.apply(namespace("templates"))
    stderr = refused(env, "apply", "-f", "-", stdin=json.dumps(template(kind, "no-hardware", hardware={})))
    assert stderr == (
        f'The {kind} "no-hardware" is invalid: spec.hardware: Invalid value: "object": at least one of gpu or cpu '
        "must be specified\n"
    )
    both = template(kind, "both", hardware={"gpu": {"model": "MI300X", "minVram": "64Gi"}})
    stderr = refused(env, "apply", "-f", "-", stdin=json.dumps(both))
    assert stderr == (
        f'The {kind} "both" is invalid: spec.hardware.gpu: Invalid value: "object": model and minVram are mutually '
        "exclusive; specify either a specific GPU model OR a minimum VRAM requirement, not both\n"
    )
    stderr = refused(env, "apply", "-f", "-", stdin=json.dumps(template(kind, "cpu", hardware={"cpu": {"limits": 2}})))
    assert stderr == (
        f'The {kind} "cpu" is invalid: \n* spec.hardware.cpu.requests: Required value\n* <nil>: Invalid value: null: '
        "some validation rules were not checked because the object was invalid; correct the existing errors to "
        "complete validation\n"
    )
    # an empty GPU model names no model, so a minimum VRAM may go with it (upstream's rule counts a non-empty one)
    env.apply(template(kind, "vram", hardware={"gpu": {"model": "", "minVram": "64Gi"}}))
    env.apply(template(kind, "cpu-only", hardware={"cpu": {"requests": "500m", "limits": 2}}))
    stored = env.get(f"{kind.lower()}s", "cpu-only", "templates" if kind == "AIMServiceTemplate" else None)
    assert stored is not None and stored["spec"]["hardware"] == {"cpu": {"requests": "500m", "limits": 2}}


@pytest.mark.parametrize("kind", TEMPLATE_KINDS)
def test_a_templates_enums_are_upstreams_and_refused_as_its_crd_refuses_them(env: Env, kind: str) -> None:
    """Upstream's CRD writes each enum twice under allOf (the Go type's and the field's); kube-apiserver refuses a
    value outside it for the enum and for the allOf, and then runs no CEL rule."""
    env.apply(namespace("templates"))
    stderr = refused(env, "apply", "-f", "-", stdin=json.dumps(template(kind, "fast", metric="fast")))
    assert stderr == (
        f'The {kind} "fast" is invalid: \n'
        '* spec.metric: Unsupported value: "fast": supported values: "latency", "throughput"\n'
        '* <nil>: Invalid value: "": "spec.metric" must validate all the schemas (allOf). None validated\n'
        "* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation\n"
    )
    stderr = refused(env, "apply", "-f", "-", stdin=json.dumps(template(kind, "odd", precision="fp64", type="best")))
    first, *causes = stderr.splitlines()
    assert first == f'The {kind} "odd" is invalid: '
    assert sorted(causes) == [
        '* <nil>: Invalid value: "": "spec.precision" must validate all the schemas (allOf). None validated',
        '* <nil>: Invalid value: "": "spec.type" must validate all the schemas (allOf). None validated',
        "* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation",
        '* spec.precision: Unsupported value: "fp64": supported values: "auto", "fp4", "fp8", "fp16", "fp32", '
        '"bf16", "int4", "int8"',
        '* spec.type: Unsupported value: "best": supported values: "optimized", "preview", "unoptimized"',
    ]
    env.apply(template(kind, "every-enum", metric="throughput", precision="bf16", type="preview"))


@pytest.mark.parametrize("kind", TEMPLATE_KINDS)
def test_a_templates_status_gets_upstreams_default_and_keeps_the_discovery_output_as_written(
    env: Env, kind: str
) -> None:
    """A status written by something else (the template paused, so the controller leaves it alone) gets upstream's
    schema: `status` defaults to Pending, and the profile's engine_args and originalDiscoveryOutput hold any JSON
    value."""
    env.apply(namespace("templates"))
    name = "status-writer"
    doc = template(kind, name)
    doc["metadata"]["annotations"] = {PAUSED: "true"}
    env.apply(doc)
    where = ["-n", "templates"] if kind == "AIMServiceTemplate" else []
    profile = {"engine_args": ["--max-model-len", 8192], "env_vars": {"A": "1"}, "originalDiscoveryOutput": "raw"}
    status = {"hardwareSummary": "1 x MI300X", "profile": profile}
    env.patch_status(kind, name, "templates" if where else None, status)
    stored = env.get(f"{kind.lower()}s", name, "templates" if where else None)
    assert stored is not None and stored["status"] == {**status, "status": "Pending"}
    table = env.k("get", "aimtpl" if kind == "AIMServiceTemplate" else "aimcltpl", name, *where)
    assert table.split() == [
        "NAME",
        "MODEL",
        "STATUS",
        "HARDWARE",
        "METRIC",
        "PRECISION",
        name,
        "qwen",
        "Pending",
        "1",
        "x",
        "MI300X",
    ]
