"""An AIMService's template cache (docs/aim-versions.md, "What a v1alpha1 service gets reconciled": caching), end to
end with the real kubectl on one simulated cluster (AMD MI300X nodes; the simulator completes download Jobs and
binds claims) whose controller runs: upstream's own service YAML, pinned under tests/fixtures/upstream/aim
(aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87, SOURCE beside it), and upstream's chainsaw assertions ported
from the scenarios' chainsaw-test.yaml (pinned beside their documents).

Upstream's cache-deleted services name only an image, whose model upstream creates and whose template it selects
among the model's; here each also names its template by `spec.template.name` (a template with inline model sources,
Ready without discovery), so the caching is what is tested. The scenarios by image are ported whole (the last item).

- aimservice/common/caching-mode-never (`caching.mode: Dedicated`): the model's default template resolved, the service
  Starting until its Dedicated cache is Ready, then its InferenceService, Running; here also the cache's name,
  owner, labels, env and the mounted artifact.
- aimservice/common/cache-deleted-shared: the Shared cache Ready, `CacheReady=True`, the claim mounted; the cache and
  its artifacts deleted, the InferenceService keeps its claim volumes, the service leaves Running (`CacheLost`), the
  cache is made again and the service runs again; here also a second Shared service reusing the cache.
- aimservice/common/cache-deleted-dedicated: the same with a Dedicated cache, `CacheReady=False` / `CacheCreating`
  while it is made again; here also the cache deleted without its artifacts (as a kube-apiserver with no garbage
  collector leaves them): made again, it adopts its Ready artifact and turns Ready.
- aimservice/frozen/env-propagation-to-cache: the cache's env, the template's caching env under the service's.
- aimservice/common/cache-cleanup/{cache-cleanup-failed-deleted, cache-cleanup-ready-preserved}: a Failed cache
  (its download failed by upstream's AIM_DEBUG_CAUSE_FAILURE, which the simulated downloader honours) goes with its
  service, and its Failed artifact with it; a Ready cache and artifact stay. Here also a Shared cache deleted by
  hand: its Failed artifact goes, its Ready one stays and is reused when the cache is made again.
- The same cleanup for services deleted while no controller ran (embedded server only): caught up when the
  controller starts.
- aimservice/common/cache-cleanup/namespace-deletion-not-blocked: the namespace goes with its service, template
  cache and artifact (omectl puts no finalizer on them, so upstream's finalizer checks are not ported).
- aimtemplatecache/dedicated-ignores-shared-artifacts (with a named template): a Dedicated cache's artifacts are its
  own, a Ready Shared artifact of the same source beside them.
- Whole, each service naming only an image (its model made for it, the image's labels read from the simulated
  registry, its template discovered by the image's simulated dry run, selected): aimservice/common/label-propagation
  (its cluster runtime config: the matched labels reach the model, its template and discovery Job, the
  AIMTemplateCache, its AIMArtifact, the artifact's PVC and download Job, the InferenceService, its predictor Pod
  and the HTTPRoute; a label no pattern matches does not), common/model-by-image (Starting, then Running) and
  gpu/happy-path/{cached, non-cached} (the Shared or Dedicated cache Ready, Running, routed through upstream's
  gateway).
- Failed child writes (a 503 injected into a running service's InferenceService, a template's discovery Job and a
  template cache's artifact): `DependenciesReachable` False as upstream words it, each status otherwise as it was, then
  True / `Reachable` once the writes pass (embedded server only).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.core.aim.image_models import generated_model_name
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, restart_controller, running_fleet
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "aimcache-1"
V1 = "aim.eai.amd.com/v1alpha1"
SERVICES_V1 = "aimservices.v1alpha1.aim.eai.amd.com"
ARTIFACTS = "aimartifacts.aim.eai.amd.com"
KSERVE = "inferenceservices.serving.kserve.io"
UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimservice" / "common"
FROZEN = UPSTREAM.parent / "frozen"
GPU = UPSTREAM.parent / "gpu"
CLEANUP = UPSTREAM / "cache-cleanup"
TEMPLATE_CACHES = UPSTREAM.parent.parent / "aimtemplatecache"
TEMPLATE = "cached-template"
TIMEOUT = 60


class Env(ClusterKubectl):
    def __init__(self, fleet: ControlledFleet) -> None:
        super().__init__(fleet.kubectl, CLUSTER)
        self.fleet = fleet

    def upstream_service(self, path: str, ns: str, *, template: str | None = TEMPLATE) -> dict[str, Any]:
        """One of upstream's pinned services, applied in `ns`, naming `template` when given (module docstring)."""
        doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
        doc["metadata"]["namespace"] = ns
        if template is not None:
            doc["spec"]["template"] = {"name": template}
        self.apply(doc)
        return doc

    def service(self, name: str, ns: str) -> dict[str, Any]:
        """The service read in v1alpha1, as upstream's chainsaw tests read it."""
        return json.loads(self.k("get", SERVICES_V1, name, "-n", ns, "-o", "json"))  # type: ignore[no-any-return]

    def items(self, resource: str, ns: str, selector: str | None = None) -> list[dict[str, Any]]:
        args = ["get", resource, "-n", ns, "-o", "json", *(["-l", selector] if selector else [])]
        return json.loads(self.k(*args))["items"]  # type: ignore[no-any-return]

    def status(self, resource: str, name: str, ns: str | None = None) -> dict[str, Any]:
        return (self.get(resource, name, ns) or {}).get("status") or {}

    def caches_of(self, service: str, ns: str) -> list[dict[str, Any]]:
        return self.items("aimtemplatecaches", ns, f"aim.eai.amd.com/service.name={service}")

    def claim_volumes(self, service: str, ns: str) -> list[str]:
        """The claims the service's InferenceService mounts (chainsaw's jsonpath over `spec.predictor.volumes`)."""
        claims = []
        for isvc in self.items(KSERVE, ns, f"aim.eai.amd.com/service={service}"):
            for volume in isvc["spec"]["predictor"].get("volumes") or []:
                if volume.get("persistentVolumeClaim"):
                    claims.append(volume["persistentVolumeClaim"]["claimName"])
        return claims


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def model(ns: str, name: str = "cached-model", **spec: Any) -> dict[str, Any]:
    """A model whose discovery is off: Ready at once."""
    discovery = {"extractMetadata": False, "createServiceTemplates": False}
    return {
        "apiVersion": V1,
        "kind": "AIMModel",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"image": "ghcr.io/silogen/aim-dummy:0.1.10", "discovery": discovery, **spec},
    }


def template(ns: str, model: str = "cached-model", **spec: Any) -> dict[str, Any]:
    """A namespaced template with one inline model source (Ready without discovery on an MI300X node)."""
    return {
        "apiVersion": V1,
        "kind": "AIMServiceTemplate",
        "metadata": {"name": TEMPLATE, "namespace": ns},
        "spec": {
            "modelName": model,
            "metric": "latency",
            "precision": "fp16",
            "hardware": {"gpu": {"requests": 1, "model": "MI300X"}},
            "modelSources": [{"modelId": "org/tiny", "sourceUri": "hf://org/tiny", "size": "1Gi"}],
            **spec,
        },
    }


def cache_ready(env: Env, service: str, ns: str) -> dict[str, Any]:
    """Chainsaw's "Wait for template cache to become Ready": the cache labelled with the service's name, Ready."""
    caches: list[dict[str, Any]] = []

    def ready() -> dict[str, Any] | None:
        caches[:] = env.caches_of(service, ns)
        return next((c for c in caches if (c.get("status") or {}).get("status") == "Ready"), None)

    try:
        return until(ready, f"{service}'s template cache Ready", timeout=TIMEOUT)
    except AssertionError as error:
        found = [
            (c["metadata"]["name"], c["metadata"].get("uid"), (c.get("status") or {}).get("status")) for c in caches
        ]
        raise AssertionError(f"{error}: {found}, artifacts {env.items(ARTIFACTS, ns)}") from None


def running_with_cache(env: Env, service: str, ns: str) -> dict[str, Any]:
    """Chainsaw's "Verify AIMService reaches Running with cache ready"."""
    last: dict[str, Any] = {}

    def running() -> dict[str, Any] | None:
        last.update(env.service(service, ns).get("status") or {})
        return dict(last) if last.get("status") == "Running" else None

    try:
        status = until(running, f"{service} Running", timeout=TIMEOUT)
    except AssertionError as error:
        raise AssertionError(f"{error}: {service}'s last status {last}") from None
    cache = conditions(status)["CacheReady"]
    assert (cache["status"], cache["reason"], cache["message"]) == ("True", "CacheReady", "Template cache is ready")
    return status


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(
        pools=(NodePool(count=2, gpus_per_node=8, gpu_resource="amd.com/gpu", gpu_type="MI300X"),)
    )
    with running_fleet(tmp_path_factory.mktemp("aimcache"), 1, "aimcache-", simulator=simulator) as fleet:
        env = Env(fleet)
        env.apply(namespace("aim-system"))
        yield env


def test_upstreams_caching_mode_never_service_waits_for_its_dedicated_cache_and_runs(env: Env) -> None:
    """Ported: aimservice/common/caching-mode-never (its model's template given by the model's
    defaultServiceTemplate, since omectl's model makes no templates)."""
    ns = "cache-dedicated-mode"
    env.apply(namespace(ns))
    env.apply(model(ns, "test-no-cache-model", defaultServiceTemplate=TEMPLATE))
    env.apply(template(ns, "test-no-cache-model", env=[{"name": "FROM_TEMPLATE", "value": "t"}]))
    until(lambda: env.status("aimmodels", "test-no-cache-model", ns).get("status") == "Ready", "the model Ready")
    until(lambda: env.status("aimservicetemplates", TEMPLATE, ns).get("status") == "Ready", "the template Ready")
    name = "test-no-cache-service"
    with StatusWatch(env, ns) as watch:
        doc = env.upstream_service("caching-mode-never/service.yaml", ns, template=None)
        assert doc["spec"]["caching"] == {"mode": "Dedicated"} and "template" not in doc["spec"]
        # chainsaw: Verify service resolves and starts without cache (Starting, ModelReady and TemplateReady True)
        until(lambda: "Starting" in watch.states(name), "Starting", timeout=TIMEOUT)
        # chainsaw: Verify InferenceService is created; Verify service reaches Running status
        until(lambda: env.items(KSERVE, ns, f"aim.eai.amd.com/service={name}"), "the InferenceService", timeout=TIMEOUT)
        status = running_with_cache(env, name, ns)
    states = watch.states(name)
    assert states.index("Starting") < states.index("Running"), states
    assert status["resolvedModel"]["name"] == "test-no-cache-model" and status["resolvedTemplate"]["name"] == TEMPLATE
    found = conditions(status)
    assert (found["ModelReady"]["status"], found["TemplateReady"]["status"]) == ("True", "True")

    # the Dedicated cache: the service's own, named after the template and the service, owned by it
    (cache,) = env.caches_of(name, ns)
    uid = env.service(name, ns)["metadata"]["uid"]
    assert cache["metadata"]["name"].startswith(f"{TEMPLATE}-{name}-")
    owner = cache["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("AIMService", uid, True)
    assert cache["spec"] == {
        "templateName": TEMPLATE,
        "templateScope": "Namespace",
        "mode": "Dedicated",
        "env": [{"name": "FROM_TEMPLATE", "value": "t"}],
    }
    assert status["cache"]["templateCacheRef"] == {
        "name": cache["metadata"]["name"],
        "namespace": ns,
        "uid": cache["metadata"]["uid"],
    }
    assert env.status("aimservices", name, ns)["cache"] == status["cache"], "same in v1alpha2"
    # its Ready artifact mounted read-only into the InferenceService at upstream's cache path
    (entry,) = cache["status"]["artifacts"].values()
    isvc = env.get(KSERVE, name, ns)
    assert isvc is not None
    assert env.claim_volumes(name, ns) == [entry["persistentVolumeClaim"]]
    mounts = {m["mountPath"] for m in isvc["spec"]["predictor"]["containers"][0]["volumeMounts"]}
    assert "/workspace/cache/org/tiny" in mounts


def test_upstreams_cache_deleted_shared_scenario_makes_the_cache_again_and_keeps_the_volumes(env: Env) -> None:
    """Ported: aimservice/common/cache-deleted-shared (with a named template); and a second Shared service reuses
    the cache."""
    ns = "cache-deleted-shared"
    env.apply(namespace(ns))
    env.apply(model(ns), template(ns))
    name = env.upstream_service("cache-deleted-shared/service.yaml", ns)["metadata"]["name"]
    cache = cache_ready(env, name, ns)
    assert cache["spec"]["mode"] == "Shared" and "ownerReferences" not in cache["metadata"], "Shared: nobody's"
    running_with_cache(env, name, ns)
    assert len(env.claim_volumes(name, ns)) >= 1
    isvc = until(lambda: env.get(KSERVE, name, ns), "the InferenceService")
    assert isvc is not None

    # a second Shared service of the template reuses the cache: no second one
    other = {
        "apiVersion": V1,
        "kind": "AIMService",
        "metadata": {"name": "reuses-the-cache", "namespace": ns},
        "spec": {"model": {"image": "ghcr.io/silogen/aim-dummy:0.1.10"}, "template": {"name": TEMPLATE}},
    }
    env.apply(other)
    status = running_with_cache(env, "reuses-the-cache", ns)
    assert status["cache"]["templateCacheRef"]["name"] == cache["metadata"]["name"]
    assert [c["metadata"]["name"] for c in env.items("aimtemplatecaches", ns)] == [cache["metadata"]["name"]]
    # it goes, the Shared cache stays (nobody's); from here on the scenario's service alone makes it again
    env.k("delete", SERVICES_V1, "reuses-the-cache", "-n", ns)
    assert env.get("aimtemplatecaches", cache["metadata"]["name"], ns) is not None

    with StatusWatch(env, ns) as watch:
        # chainsaw: Delete the shared template cache and artifacts
        env.k("delete", ARTIFACTS, "-n", ns, "-l", f"aim.eai.amd.com/service.name={name}")
        env.k("delete", "aimtemplatecaches", "-n", ns, "-l", f"aim.eai.amd.com/service.name={name}")
        # chainsaw: Verify InferenceService still has PVC volumes after cache deletion
        assert len(env.claim_volumes(name, ns)) >= 1
        # chainsaw: Verify service transitions through non-Running status before recovery (seen on the watch: the
        # cache may be Ready again at once, its artifacts made again by then)
        lost = ("Degraded", "False", "CacheLost")
        until(lambda: lost in watch.seen(name), "Degraded with CacheLost", timeout=TIMEOUT)
    # chainsaw: Wait for shared cache to be recreated and become Ready; the service recovers
    again = cache_ready(env, name, ns)
    assert again["metadata"]["name"] == cache["metadata"]["name"], "the same derived name"
    running_with_cache(env, name, ns)
    # chainsaw: Verify InferenceService still has PVC volumes (workload not disrupted)
    assert len(env.claim_volumes(name, ns)) >= 1


def test_upstreams_cache_deleted_dedicated_scenario_says_the_cache_is_made_again(env: Env) -> None:
    """Ported: aimservice/common/cache-deleted-dedicated (with a named template)."""
    ns = "cache-deleted-dedicated"
    env.apply(namespace(ns))
    env.apply(model(ns), template(ns))
    name = env.upstream_service("cache-deleted-dedicated/service.yaml", ns)["metadata"]["name"]
    cache = cache_ready(env, name, ns)
    assert cache["spec"]["mode"] == "Dedicated"
    running_with_cache(env, name, ns)
    assert len(env.claim_volumes(name, ns)) >= 1
    with StatusWatch(env, ns) as watch:
        # chainsaw: Delete the template cache and artifacts
        env.k("delete", ARTIFACTS, "-n", ns, "-l", f"aim.eai.amd.com/service.name={name}")
        env.k("delete", "aimtemplatecaches", "-n", ns, "-l", f"aim.eai.amd.com/service.name={name}")
        assert len(env.claim_volumes(name, ns)) >= 1
        # chainsaw: Verify service status reflects cache recreating (not degraded): CacheReady False / CacheCreating
        recreating = ("False", "CacheCreating")
        until(lambda: recreating in [seen[1:] for seen in watch.seen(name)], "CacheCreating", timeout=TIMEOUT)
        # chainsaw: Wait for dedicated cache to be recreated and become Ready; the service recovers
        again = cache_ready(env, name, ns)
        running_with_cache(env, name, ns)
    assert again["metadata"]["uid"] != cache["metadata"]["uid"], "a new cache"
    assert len(env.claim_volumes(name, ns)) >= 1

    # A cache deleted without its artifacts (orphaned on the embedded server; a real kube-apiserver runs no garbage
    # collector here, and one that runs may not have collected them yet) is made again under its name and adopts its
    # Ready artifact of that name: only the artifact's owner changes, and the cache still turns Ready with it.
    (artifact,) = env.items(ARTIFACTS, ns, f"aim.eai.amd.com/service.name={name}")
    orphan = [] if env.fleet.real_api_server else ["--cascade=orphan"]  # an orphaning delete waits for the collector
    env.k("delete", "aimtemplatecaches", again["metadata"]["name"], "-n", ns, *orphan)
    uids = {cache["metadata"]["uid"], again["metadata"]["uid"]}
    third = until(
        lambda: next((c for c in env.caches_of(name, ns) if c["metadata"]["uid"] not in uids), None),
        "the cache made a third time",
    )
    assert cache_ready(env, name, ns)["metadata"]["uid"] == third["metadata"]["uid"]
    (adopted,) = env.items(ARTIFACTS, ns, f"aim.eai.amd.com/service.name={name}")
    assert adopted["metadata"]["uid"] == artifact["metadata"]["uid"], "the same artifact, not made again"
    assert [o["uid"] for o in adopted["metadata"]["ownerReferences"]] == [third["metadata"]["uid"]]
    running_with_cache(env, name, ns)


GATEWAY = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "kserve-ingress-gateway", "namespace": "kgateway-system"},
    "spec": {"gatewayClassName": "kgateway", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
}
"""The Gateway of upstream's e2e clusters, which its scenarios' runtime configs route through."""
MATCHED = {"team-alpha": "frontend", "cost-center": "cc-12345"}
BY_IMAGE_KINDS = (
    SERVICES_V1,
    "aimmodels.v1alpha1.aim.eai.amd.com",
    "aimservicetemplates",
    "aimtemplatecaches",
    ARTIFACTS,
    "jobs",
    "persistentvolumeclaims",
    KSERVE,
    "httproutes",
)


class Snapshot:
    """The objects of some namespaces, of `BY_IMAGE_KINDS`, read in one `kubectl get` (one revision of each)."""

    def __init__(self, env: Env, namespaces: set[str]) -> None:
        listed = json.loads(env.k("get", ",".join(BY_IMAGE_KINDS), "-A", "-o", "json"))["items"]
        self.items = [o for o in listed if o["metadata"].get("namespace") in namespaces]

    def of(self, kind: str, ns: str) -> list[dict[str, Any]]:
        return [o for o in self.items if o["kind"] == kind and o["metadata"]["namespace"] == ns]

    def one(self, kind: str, name: str, ns: str) -> dict[str, Any]:
        (found,) = [o for o in self.of(kind, ns) if o["metadata"]["name"] == name]
        return found

    def running(self, name: str, ns: str) -> bool:
        found = [o for o in self.of("AIMService", ns) if o["metadata"]["name"] == name]
        return bool(found) and (found[0].get("status") or {}).get("status") == "Running"

    def accepted(self, name: str, ns: str) -> bool:
        routes = [r for r in self.of("HTTPRoute", ns) if r["metadata"]["name"] == name]
        parents = [p for r in routes for p in (r.get("status") or {}).get("parents") or []]
        return any(c["type"] == "Accepted" and c["status"] == "True" for p in parents for c in p["conditions"])

    def by_image(self, name: str, ns: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """The service, its model (made for its image) and the template it selected: chainsaw's "Verify model is
        created and resolved", "Verify template is auto-selected" and "Verify service reaches Running status"."""
        service = self.one("AIMService", name, ns)
        status = service["status"]
        found = conditions(status)
        assert status["status"] == "Running", status
        assert (found["ModelReady"]["status"], found["TemplateReady"]["status"]) == ("True", "True")
        model = self.one("AIMModel", status["resolvedModel"]["name"], ns)
        template = self.one("AIMServiceTemplate", status["resolvedTemplate"]["name"], ns)
        image = service["spec"]["model"]["image"]
        assert model["metadata"]["name"] == generated_model_name(image) and model["spec"]["image"] == image
        assert model["metadata"]["labels"]["aim.eai.amd.com/origin"] == "auto-generated"
        assert model["status"]["status"] == "Ready"
        assert template["spec"]["modelName"] == model["metadata"]["name"]
        assert template["metadata"]["labels"]["aim.eai.amd.com/model"] == model["metadata"]["name"]
        assert (
            template["status"]["status"] == "Ready" and template["status"]["profile"]["metadata"]["type"] == "optimized"
        )
        (isvc,) = self.of("InferenceService", ns)
        assert isvc["metadata"]["labels"]["aim.eai.amd.com/service"] == name
        return service, model, template


def test_upstreams_services_named_by_their_image_make_their_model_and_template_and_run(env: Env) -> None:
    """Ported whole: aimservice/common/label-propagation (its cluster runtime config, removed afterwards),
    common/model-by-image and gpu/happy-path/{cached, non-cached}, each in its namespace, at once (as chainsaw runs
    them in parallel). Each service names only an image: its model is made for it and reads the image's labels
    (the simulated registry's), the model makes its template, whose discovery Job runs the image's dry run (the
    simulated node prints the image's profile), and the service selects that template and runs. Upstream's HTTP
    checks (gpu/_shared/validate-http.sh through the gateway) are not ported: the simulated cluster runs no model
    server (its predictor Pods run and serve nothing); the HTTPRoute they go through is checked instead."""
    labels_ns, image_ns, cached_ns, dedicated_ns = "by-image-labels", "by-image", "gpu-cached", "gpu-non-cached"
    services = {
        labels_ns: "test-label-propagation",
        image_ns: "test-image-service",
        cached_ns: "test-gpu-cached",
        dedicated_ns: "test-gpu-non-cached",
    }
    documents: list[dict[str, Any]] = [namespace(ns) for ns in (*services, GATEWAY["metadata"]["namespace"])]
    documents += [GATEWAY, yaml.safe_load((UPSTREAM / "label-propagation" / "runtimeconfig.yaml").read_text())]
    scenarios = [
        (labels_ns, UPSTREAM / "label-propagation" / "service.yaml"),
        (image_ns, UPSTREAM / "model-by-image" / "service.yaml"),
    ]
    for scenario, ns in (("cached", cached_ns), ("non-cached", dedicated_ns)):
        scenarios += [(ns, GPU / "happy-path" / scenario / f) for f in ("runtime-config.yaml", "service.yaml")]
    for ns, path in scenarios:  # as `kubectl apply -n <ns> -f <path>`
        doc = yaml.safe_load(path.read_text())
        documents.append({**doc, "metadata": {**doc["metadata"], "namespace": ns}})
    env.apply(*documents[:5])
    try:
        with StatusWatch(env, image_ns) as watch:
            env.apply(*documents[5:])
            every: Snapshot | None = None

            def settled() -> Snapshot | None:
                nonlocal every
                every = Snapshot(env, set(services))
                running = all(every.running(name, ns) for ns, name in services.items())
                return every if running and all(every.accepted(services[ns], ns) for ns in services) else None

            try:
                snap = until(settled, "the four services Running, their routes accepted", timeout=TIMEOUT)
            except AssertionError as error:
                states = (
                    {s["metadata"]["namespace"]: s.get("status") for s in every.items if s["kind"] == "AIMService"}
                    if every
                    else {}
                )
                raise AssertionError(f"{error}: {states}") from None
            # model-by-image: Starting with its template resolved, before Running
            states = watch.states(services[image_ns])
        assert "Starting" in states and states.index("Starting") < states.index("Running"), states
        snap.by_image(services[image_ns], image_ns)

        # label-propagation: the cache, its artifact, the artifact's PVC and download Job, the InferenceService and
        # the HTTPRoute, and here also the model made for the image and its template (and its discovery Job)
        name = services[labels_ns]
        service, model, template = snap.by_image(name, labels_ns)
        assert service["metadata"]["labels"] == {**MATCHED, "env": "test"} and "template" not in service["spec"]
        assert model["metadata"]["labels"] == {"aim.eai.amd.com/origin": "auto-generated", **MATCHED}
        (cache,) = snap.of("AIMTemplateCache", labels_ns)
        assert cache["status"]["status"] == "Ready" and cache["spec"]["templateName"] == template["metadata"]["name"]
        assert conditions(service["status"])["CacheReady"]["status"] == "True"
        # chainsaw: Verify AIMTemplateCache has propagated labels
        assert cache["metadata"]["labels"] == {
            "aim.eai.amd.com/service": name,
            "aim.eai.amd.com/service.name": name,
            "app.kubernetes.io/managed-by": "omectl",
            **MATCHED,
        }
        # chainsaw: Verify AIMArtifact, PVC, download Job, InferenceService and HTTPRoute have propagated labels; the
        # non-matching `env` is on none of them
        (artifact,) = snap.of("AIMArtifact", labels_ns)
        pvc = snap.one("PersistentVolumeClaim", artifact["status"]["persistentVolumeClaim"], labels_ns)
        jobs = snap.of("Job", labels_ns)
        assert sorted(j["metadata"]["labels"]["app.kubernetes.io/component"] for j in jobs) == ["discovery", "download"]
        isvc, route = snap.one("InferenceService", name, labels_ns), snap.one("HTTPRoute", name, labels_ns)
        for child in (template, artifact, pvc, *jobs, isvc, route):
            found = child["metadata"]["labels"]
            assert {k: found.get(k) for k in MATCHED} == MATCHED and "env" not in found, child["kind"]
        for job in jobs:
            pod = job["spec"]["template"]["metadata"]["labels"]
            assert {k: pod.get(k) for k in MATCHED} == MATCHED and "env" not in pod
        # chainsaw: Verify InferenceService Pod has propagated labels (the simulated KServe gives the predictor Pod
        # its InferenceService's labels); its `aim.eai.amd.com/service.name` is upstream's InferenceService's
        # `aim.eai.amd.com/service` (upstream's kserve.go sets no `service.name` on it)
        selector = f"serving.kserve.io/inferenceservice={name}"
        (pod,) = json.loads(env.k("get", "pods", "-n", labels_ns, "-l", selector, "-o", "json"))["items"]
        upstream = {"aim.eai.amd.com/service": name, "app.kubernetes.io/component": "inference", **MATCHED}
        assert {k: pod["metadata"]["labels"].get(k) for k in upstream} == upstream and "env" not in pod["metadata"][
            "labels"
        ]
        assert route["metadata"]["labels"]["aim.eai.amd.com/service"] == name
        assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == f"/integration/label-propagation/{name}"
    finally:
        env.k("delete", "aimclusterruntimeconfigs", "default")

    # gpu/happy-path/{cached, non-cached}: the Shared (Dedicated) cache Ready, Running; validate-http.sh's way in: the
    # route on upstream's gateway at its HTTP_BASE_PATH less `/v1`, with the config's request timeout
    for ns, mode in ((cached_ns, "Shared"), (dedicated_ns, "Dedicated")):
        name = services[ns]
        service, model, _ = snap.by_image(name, ns)
        assert model["spec"]["image"] == "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"
        (cache,) = snap.of("AIMTemplateCache", ns)
        assert (cache["spec"]["mode"], cache["status"]["status"]) == (mode, "Ready"), ns
        assert cache["metadata"]["labels"]["aim.eai.amd.com/service.name"] == name
        assert conditions(service["status"])["CacheReady"]["status"] == "True"
        route = snap.one("HTTPRoute", name, ns)
        (rule,) = route["spec"]["rules"]
        assert rule["matches"][0]["path"]["value"] == f"/integration/{ns}/{name}"
        assert rule["timeouts"] == {"request": "3m0s"}, "the config's 180s, as a Gateway API duration"
        assert route["spec"]["parentRefs"] == [{"name": "kserve-ingress-gateway", "namespace": "kgateway-system"}]


class StatusWatch:
    """A watch of a namespace's services at v1alpha1 (`kubectl get --watch`): every state the services are written
    in, with `CacheReady`'s status and reason; listening once it lists a marker service."""

    def __init__(self, env: Env, ns: str) -> None:
        self.env, self.ns = env, ns
        self.lines: list[str] = []
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> StatusWatch:
        marker = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": "watch-marker", "namespace": self.ns}}
        self.env.apply({**marker, "spec": {"model": {"name": "watch-marker-model"}}})
        output = (
            'jsonpath={.metadata.name} {.status.status} {.status.conditions[?(@.type=="CacheReady")].status}'
            ' {.status.conditions[?(@.type=="CacheReady")].reason}{"\\n"}'
        )
        argv = self.env.kubectl.argv(f"--context={CLUSTER}", "get", SERVICES_V1, "-n", self.ns, "--watch", "-o", output)
        self.process = subprocess.Popen(
            [arg for arg in argv if not arg.startswith("--request-timeout")],  # a watch runs until it is ended
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=self.env.kubectl.env(),
        )
        self.reader = threading.Thread(target=self._follow, daemon=True)
        self.reader.start()
        until(lambda: any(line.startswith("watch-marker") for line in self._read()), "the watch lists the marker")
        return self

    def _follow(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def _read(self) -> list[str]:
        return list(self.lines)

    def _fields(self, name: str) -> list[list[str]]:
        return [line.split() for line in self._read() if line.startswith(f"{name} ")]

    def states(self, name: str) -> list[str]:
        return [fields[1] for fields in self._fields(name) if len(fields) > 1]

    def seen(self, name: str) -> list[tuple[str, str, str]]:
        """`(status, CacheReady's status, its reason)` as the service was written."""
        return [(fields[1], fields[2], fields[3]) for fields in self._fields(name) if len(fields) > 3]

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(timeout=20)
        self.reader.join(timeout=20)


def test_upstreams_cache_cleanup_scenarios_delete_a_failed_cache_and_its_artifact_and_keep_a_ready_one(
    env: Env,
) -> None:
    """Ported: aimservice/common/cache-cleanup/{cache-cleanup-failed-deleted, cache-cleanup-ready-preserved} (each
    with a named template, in a namespace of its own: both services' Shared caches would otherwise be one). The
    failed download is upstream's: its runtime config sets AIM_DEBUG_CAUSE_FAILURE, which fails the downloader."""
    failing_ns, ready_ns = "cache-cleanup-failed", "cache-cleanup-ready"
    for ns in (failing_ns, ready_ns):
        env.apply(namespace(ns), model(ns), template(ns))
    env.k("apply", "-n", failing_ns, "-f", str(CLEANUP / "cache-cleanup-failed-deleted" / "runtimeconfig.yaml"))
    failing = env.upstream_service("cache-cleanup/cache-cleanup-failed-deleted/service.yaml", failing_ns)
    ready = env.upstream_service("cache-cleanup/cache-cleanup-ready-preserved/service.yaml", ready_ns)
    failing_name, ready_name = failing["metadata"]["name"], ready["metadata"]["name"]
    assert failing["spec"]["runtimeConfigName"] == "cache-cleanup-fail-config"
    made_by_failing = f"aim.eai.amd.com/service.name={failing_name}"

    # failed-deleted, chainsaw: Wait for template cache to be created; Verify AIMArtifact is created and reaches
    # Failed status; Verify template cache reflects failure
    (failed_artifact,) = until(
        lambda: [a for a in env.items(ARTIFACTS, failing_ns, made_by_failing) if a.get("status", {}).get("status")],
        "the failing service's artifact with a status",
        timeout=TIMEOUT,
    )
    failed_artifact = until(
        lambda: (
            (a := env.get(ARTIFACTS, failed_artifact["metadata"]["name"], failing_ns))
            and a["status"]["status"] == "Failed"
            and a
        ),
        "the artifact Failed",
    )
    (failed_cache,) = until(
        lambda: [c for c in env.caches_of(failing_name, failing_ns) if c.get("status", {}).get("status") == "Failed"],
        "the template cache Failed",
    )
    assert failed_cache["spec"]["runtimeConfigName"] == "cache-cleanup-fail-config"
    (job,) = env.items("jobs", failing_ns)
    assert {"name": "AIM_DEBUG_CAUSE_FAILURE", "value": "true"} in job["spec"]["template"]["spec"]["containers"][0][
        "env"
    ]
    failed_service = until(
        lambda: conditions(env.service(failing_name, failing_ns).get("status") or {}).get("CacheReady"), "CacheReady"
    )
    assert (failed_service["status"], failed_service["reason"]) == ("False", "CacheFailed")
    assert env.get(KSERVE, failing_name, failing_ns) is None, "the InferenceService waits for a Ready cache"

    # ready-preserved, chainsaw: Wait for template cache to become Ready; Verify artifact is Ready
    ready_cache = cache_ready(env, ready_name, ready_ns)
    running_with_cache(env, ready_name, ready_ns)
    (ready_artifact,) = env.items(ARTIFACTS, ready_ns, f"aim.eai.amd.com/service.name={ready_name}")
    assert ready_artifact["status"]["status"] == "Ready"

    # chainsaw (both): Delete the AIMService (the Ready one first: by the time the failed one's cache and artifact are
    # gone, the controller has seen both deletions)
    env.k("delete", SERVICES_V1, ready_name, "-n", ready_ns)
    env.k("delete", SERVICES_V1, failing_name, "-n", failing_ns)
    # failed-deleted: Verify AIMTemplateCache is deleted; Verify AIMArtifact is deleted
    until(lambda: not env.caches_of(failing_name, failing_ns), "the Failed cache deleted", timeout=TIMEOUT)
    until(lambda: not env.items(ARTIFACTS, failing_ns, made_by_failing), "its Failed artifact deleted", timeout=TIMEOUT)
    # ready-preserved: Wait for service deletion to complete; Verify template cache and artifact still exist, Ready
    assert env.get(SERVICES_V1, ready_name, ready_ns) is None
    assert env.status("aimtemplatecaches", ready_cache["metadata"]["name"], ready_ns)["status"] == "Ready"
    assert env.status(ARTIFACTS, ready_artifact["metadata"]["name"], ready_ns)["status"] == "Ready"


def test_a_services_caches_that_are_not_ready_go_when_it_was_deleted_while_no_controller_ran(env: Env) -> None:
    """Upstream's finalizer `aim.eai.amd.com/template-cache-cleanup` holds a service's deletion until its caches that
    are not Ready are deleted; omectl, with no finalizer, catches a deletion it did not see up when it starts: the
    Shared cache (nobody's, so no garbage collector takes it) of a service whose download fails goes, with its Failed
    artifact; the Ready Shared cache of another deleted service stays, with its Ready artifact."""
    if env.fleet.real_api_server:
        pytest.skip("the controller's start, not the server's behaviour: the embedded run covers it")
    ns = "cache-cleanup-restart"
    # a Shared cache per template, a Ready artifact per source: two of each
    fails_source = {"modelId": "org/fails", "sourceUri": "hf://org/fails", "size": "1Gi"}
    failing_template = template(ns, modelSources=[fails_source])
    failing_template["metadata"]["name"] = "failing-template"
    services = {"kept": TEMPLATE, "fails": "failing-template"}
    documents = [namespace(ns), model(ns), template(ns), failing_template]
    for name, template_name in services.items():
        env_vars = [{"name": "AIM_DEBUG_CAUSE_FAILURE", "value": "true"}] if name == "fails" else []  # its download
        spec = {"model": {"name": "cached-model"}, "template": {"name": template_name}, "env": env_vars}
        documents.append(
            {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": name, "namespace": ns}, "spec": spec}
        )
    env.apply(*documents)

    def states(selector: str) -> dict[str, str]:
        """The state of each cache and artifact `selector` selects, in one listing."""
        listed = env.items(f"aimtemplatecaches,{ARTIFACTS}", ns, selector)
        return {f"{o['kind']}/{o['metadata']['name']}": (o.get("status") or {}).get("status") or "" for o in listed}

    def all_in(service: str, state: str) -> dict[str, str]:
        """The service's cache and artifact, once both are in `state`."""
        found: dict[str, str] = {}

        def settled() -> bool:
            found.clear()
            found.update(states(f"aim.eai.amd.com/service.name={service}"))
            return len(found) == 2 and set(found.values()) == {state}

        try:
            until(settled, f"{service}'s cache and artifact {state}")
        except AssertionError as error:
            raise AssertionError(f"{error}: {found}, {env.items(SERVICES_V1, ns)}") from None
        return found

    all_in("fails", "Failed")
    kept = all_in("kept", "Ready")
    restart_controller(env.fleet, lambda: env.k("delete", SERVICES_V1, *services, "-n", ns))
    until(lambda: not states("aim.eai.amd.com/service.name=fails"), "the Failed cache and artifact gone")
    assert states("aim.eai.amd.com/service.name=kept") == kept, "the Ready cache and artifact stay for others"


def test_a_deleted_shared_cache_takes_its_artifacts_that_are_not_ready_and_leaves_the_ready_ones(env: Env) -> None:
    """As upstream's template cache finalizer (the artifact cleanup of cache-cleanup-failed-deleted): a Shared cache
    deleted by hand; its Failed artifact goes, so the cache made again downloads afresh, and a Ready one stays."""
    ns = "cache-artifact-cleanup"
    env.apply(namespace(ns), model(ns), template(ns))
    failing = {"name": "AIM_DEBUG_CAUSE_FAILURE", "value": "true"}
    sources = [
        {"modelId": "org/fails", "sourceUri": "hf://org/fails", "size": "1Gi", "env": [failing]},
        {"modelId": "org/tiny", "sourceUri": "hf://org/tiny", "size": "1Gi"},
    ]
    cache = {
        "apiVersion": V1,
        "kind": "AIMTemplateCache",
        "metadata": {"name": "by-hand", "namespace": ns},
        "spec": {"templateName": TEMPLATE, "templateScope": "Namespace", "modelSources": sources},
    }
    env.apply(cache)
    made = "aim.eai.amd.com/template-cache.name=by-hand"

    def states() -> dict[str, str]:
        found = {a["spec"]["sourceUri"]: (a.get("status") or {}).get("status") for a in env.items(ARTIFACTS, ns, made)}
        return found if set(found.values()) == {"Failed", "Ready"} else {}

    until(states, "one artifact Failed, one Ready", timeout=TIMEOUT)
    before = {a["spec"]["sourceUri"]: a["metadata"]["uid"] for a in env.items(ARTIFACTS, ns, made)}
    env.k("delete", "aimtemplatecaches", "by-hand", "-n", ns)
    until(lambda: len(env.items(ARTIFACTS, ns, made)) == 1, "the Failed artifact deleted", timeout=TIMEOUT)
    (kept,) = env.items(ARTIFACTS, ns, made)
    assert kept["spec"]["sourceUri"] == "hf://org/tiny" and kept["metadata"]["uid"] == before["hf://org/tiny"]
    # made again: its Failed source gets a new artifact (it fails again, as its env says), the Ready one is reused
    env.apply(cache)
    again = until(
        lambda: len(a := env.items(ARTIFACTS, ns, made)) == 2 and a, "the Failed source's artifact made again"
    )
    uids = {a["spec"]["sourceUri"]: a["metadata"]["uid"] for a in again}
    assert uids["hf://org/tiny"] == before["hf://org/tiny"] and uids["hf://org/fails"] != before["hf://org/fails"]


def test_upstreams_namespace_deletion_not_blocked_scenario_deletes_the_namespace_with_its_aim_objects(
    env: Env,
) -> None:
    """Ported: aimservice/common/cache-cleanup/namespace-deletion-not-blocked. omectl puts no finalizer on a service
    or a template cache (its cleanups follow the deletions it watches, docs/aim-versions.md), so upstream's checks of
    `aim.eai.amd.com/template-cache-cleanup` and `aim.eai.amd.com/artifactcleanup` are not ported; each object's
    first status is awaited instead (the controller at work in the namespace when it is deleted)."""
    scenario = CLEANUP / "namespace-deletion-not-blocked"
    ns = yaml.safe_load((scenario / "namespace.yaml").read_text())["metadata"]["name"]
    # chainsaw: Create isolated namespace; Create resources in isolated namespace
    env.k("apply", "-f", str(scenario / "namespace.yaml"))
    for document in ("service.yaml", "template-cache.yaml", "artifact.yaml"):
        env.k("apply", "-n", ns, "-f", str(scenario / document))
    until(lambda: env.status(SERVICES_V1, "ns-delete-finalizer-service", ns).get("status"), "the service's status")
    cache = until(lambda: env.status("aimtemplatecaches", "ns-delete-finalizer-cache", ns).get("status"), "a status")
    assert cache == "Failed", "its template does not exist"
    until(lambda: env.status(ARTIFACTS, "ns-delete-finalizer-artifact", ns).get("status"), "the artifact's status")
    # chainsaw: Delete namespace (--wait=false); Verify namespace entered terminating
    env.k("delete", "namespace", ns, "--wait=false")
    phase = (env.get("namespaces", ns) or {}).get("status", {}).get("phase")
    assert phase in ("Terminating", None), phase
    # chainsaw: Wait for namespace deletion
    until(lambda: env.get("namespaces", ns) is None, "the namespace deleted", timeout=TIMEOUT)
    for resource in (SERVICES_V1, "aimtemplatecaches", ARTIFACTS):
        assert env.items(resource, ns) == [], resource


def test_upstreams_dedicated_ignores_shared_artifacts_scenario_makes_the_dedicated_caches_own_artifacts(
    env: Env,
) -> None:
    """Ported: aimtemplatecache/dedicated-ignores-shared-artifacts (with a named template), and a Ready Shared
    artifact of the same source beside it, which the Dedicated cache does not take."""
    ns = "cache-dedicated-own"
    env.apply(namespace(ns), model(ns), template(ns))
    shared = {
        "apiVersion": V1,
        "kind": "AIMTemplateCache",
        "metadata": {"name": "shared-seed", "namespace": ns},
        "spec": {"templateName": TEMPLATE, "templateScope": "Namespace", "mode": "Shared"},
    }
    env.apply(shared)
    (seed,) = until(
        lambda: [a for a in env.items(ARTIFACTS, ns) if (a.get("status") or {}).get("status") == "Ready"],
        "the Shared artifact Ready",
        timeout=TIMEOUT,
    )
    assert "ownerReferences" not in seed["metadata"]
    doc = yaml.safe_load((TEMPLATE_CACHES / "dedicated-ignores-shared-artifacts" / "service.yaml").read_text())
    doc["metadata"]["namespace"] = ns
    doc["spec"]["template"] = {"name": TEMPLATE}
    env.apply(doc)
    name = doc["metadata"]["name"]
    # chainsaw: Wait for dedicated service cache ref
    ref = until(
        lambda: ((env.service(name, ns).get("status") or {}).get("cache") or {}).get("templateCacheRef"),
        "status.cache.templateCacheRef",
        timeout=TIMEOUT,
    )
    # chainsaw: Verify artifacts created for dedicated cache are owned (by that cache)
    owned = env.items(ARTIFACTS, ns, f"aim.eai.amd.com/template-cache.name={ref['name']}")
    assert len(owned) >= 1
    for artifact in owned:
        assert artifact["metadata"]["ownerReferences"][0]["name"] == ref["name"]
        assert artifact["metadata"]["uid"] != seed["metadata"]["uid"]
    cache = env.get("aimtemplatecaches", ref["name"], ns)
    assert cache is not None and cache["spec"]["mode"] == "Dedicated"
    assert [entry["name"] for entry in cache["status"]["artifacts"].values()] == [owned[0]["metadata"]["name"]]


def test_upstreams_env_propagation_to_cache_scenario_merges_the_service_env_over_the_templates(env: Env) -> None:
    """Ported: aimservice/frozen/env-propagation-to-cache (its frozen model: a model whose discovery is off)."""
    ns = "cache-env"
    env.apply(namespace(ns), model(ns, "test-model"))
    template_doc = FROZEN / "env-propagation-to-cache" / "template.yaml"
    env.k("apply", "-n", ns, "-f", str(template_doc))
    frozen_status = yaml.safe_load(template_doc.read_text())["status"]
    patch = json.dumps({"status": frozen_status})
    env.k("patch", "aimservicetemplate", "test-template", "-n", ns, "--type=merge", "--subresource=status", "-p", patch)
    service = yaml.safe_load((FROZEN / "env-propagation-to-cache" / "service.yaml").read_text())
    env.k("apply", "-n", ns, "-f", str(FROZEN / "env-propagation-to-cache" / "service.yaml"))
    name = service["metadata"]["name"]
    # chainsaw: Assert AIMTemplateCache is created with merged env vars
    (cache,) = until(lambda: env.caches_of(name, ns), "the template cache", timeout=TIMEOUT)
    assert (cache["spec"]["templateName"], cache["spec"]["templateScope"]) == ("test-template", "Namespace")
    assert cache["spec"]["env"] == [
        {"name": "HF_TOKEN", "value": "service-token-value"},
        {"name": "HTTP_PROXY", "value": "http://template-proxy:8080"},
        {"name": "HTTPS_PROXY", "value": "https://proxy.example.com:8080"},
    ]


def test_failed_child_writes_of_a_service_a_template_and_a_cache_say_unreachable_until_the_writes_pass(
    env: Env,
) -> None:
    """Upstream's pipeline on a failed apply: a 503 on a child's write sets `DependenciesReachable` False /
    `InfrastructureError` / `Failed to apply resources: ...` and keeps the rest of the status (a running v1alpha1
    service whose new label cannot reach its InferenceService stays Running, every other condition as it was; a new
    template whose discovery Job, and a new template cache whose artifact, cannot be made get that condition alone),
    retried with backoff; once the writes pass, True / `Reachable` / `All dependencies are reachable`."""
    if env.fleet.bg is None or env.fleet.real_api_server:
        pytest.skip("injects faults into the embedded API server")
    (server,) = env.fleet.bg.fleet.servers
    ns, name = "infra-writes", "svc"
    spec = {"model": {"name": "cached-model"}, "template": {"name": TEMPLATE}}
    service = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": name, "namespace": ns}, "spec": spec}
    env.apply(namespace(ns), model(ns), template(ns), service)
    running_with_cache(env, name, ns)

    def reachable(status: dict[str, Any]) -> tuple[str, str, str] | None:
        found = conditions(status).get("DependenciesReachable")
        return None if found is None else (found["status"], found["reason"], found["message"])

    discovering = template(ns)  # without model sources: it runs discovery
    discovering["metadata"]["name"] = "discovering"
    del discovering["spec"]["modelSources"]
    # another storage class: no artifact of the namespace holds its source
    cache = {
        "apiVersion": V1,
        "kind": "AIMTemplateCache",
        "metadata": {"name": "other-class", "namespace": ns},
        "spec": {"templateName": TEMPLATE, "templateScope": "Namespace", "storageClassName": "other"},
    }
    before = env.service(name, ns)["status"]
    for path in ("inferenceservices", "jobs", "aimartifacts"):
        server.faults.fail_next(10_000, 503, method="PATCH", path_contains=f"/namespaces/{ns}/{path}")
    try:
        env.k("label", SERVICES_V1, name, "-n", ns, "aim.eai.amd.com/infra-check=on")
        env.apply(discovering, cache)
        failed = {
            "service": until(lambda: reachable(s := env.service(name, ns)["status"]) and s, "the service's write"),
            "template": until(
                lambda: reachable(s := env.status("aimservicetemplates", "discovering", ns)) and s, "the Job's write"
            ),
            "cache": until(lambda: reachable(s := env.status("aimtemplatecaches", "other-class", ns)) and s, "cache"),
        }
        for what, status in failed.items():
            state, reason, message = reachable(status) or ("", "", "")
            assert (state, reason) == ("False", "InfrastructureError"), what
            assert message.startswith("Failed to apply resources: ") and "503" in message, (what, message)
        kept = dict(
            failed["service"],
            conditions=[c for c in failed["service"]["conditions"] if c["type"] != "DependenciesReachable"],
        )
        assert kept == before, "the service's status otherwise as it was"
        for what in ("template", "cache"):
            assert [c["type"] for c in failed[what]["conditions"]] == ["DependenciesReachable"], what
            assert failed[what].get("status") in (None, "Pending"), (what, "the CRD's default at most")
        assert not env.items(ARTIFACTS, ns, "aim.eai.amd.com/template-cache.name=other-class")
    finally:
        server.faults.clear()
    recovered = ("True", "Reachable", "All dependencies are reachable")
    until(lambda: reachable(env.service(name, ns)["status"]) == recovered, "the service reachable again")
    until(lambda: reachable(env.status("aimservicetemplates", "discovering", ns)) == recovered, "the template's")
    until(lambda: reachable(env.status("aimtemplatecaches", "other-class", ns)) == recovered, "the cache's")
    isvc = env.get(KSERVE, name, ns)
    assert isvc is not None and isvc["metadata"]["labels"]["aim.eai.amd.com/infra-check"] == "on"
    assert env.service(name, ns)["status"]["status"] == "Running"
