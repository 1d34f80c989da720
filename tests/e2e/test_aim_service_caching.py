"""An AIMService's template cache (docs/aim-versions.md, "What a v1alpha1 service gets reconciled": caching), end to
end with the real kubectl on one simulated cluster (AMD MI300X nodes; the simulator completes download Jobs and
binds claims) whose controller runs: upstream's own service YAML, pinned under tests/fixtures/upstream/aim
(aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87, SOURCE beside it), and upstream's chainsaw assertions ported
from the scenarios' chainsaw-test.yaml (pinned beside their documents).

Upstream's cache-deleted and label-propagation services name only an image, whose model upstream creates and whose
template it selects among the model's; here each also names its template by `spec.template.name` (a template with
inline model sources, Ready without discovery), so the caching is what is tested.

- aimservice/common/caching-mode-never (`caching.mode: Dedicated`): the model's default template resolved, the service
  Starting until its Dedicated cache is Ready, then its InferenceService, Running; here also the cache's name,
  owner, labels, env and the mounted artifact.
- aimservice/common/cache-deleted-shared: the Shared cache Ready, `CacheReady=True`, the claim mounted; the cache and
  its artifacts deleted, the InferenceService keeps its claim volumes, the service leaves Running (`CacheLost`), the
  cache is made again and the service runs again; here also a second Shared service reusing the cache.
- aimservice/common/cache-deleted-dedicated: the same with a Dedicated cache, `CacheReady=False` / `CacheCreating`
  while it is made again.
- aimservice/common/label-propagation (with a named template): the matched labels reach the AIMTemplateCache, its
  AIMArtifact, the artifact's PVC and download Job and the InferenceService; a label no pattern matches does not.
- aimservice/frozen/env-propagation-to-cache: the cache's env, the template's caching env under the service's.
- The cleanup of upstream's cache-cleanup scenarios: a cache that is not Ready goes with its service, a Ready one
  stays.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet
from tests.support import ClusterKubectl, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "aimcache-1"
V1 = "aim.eai.amd.com/v1alpha1"
SERVICES_V1 = "aimservices.v1alpha1.aim.eai.amd.com"
ARTIFACTS = "aimartifacts.aim.eai.amd.com"
KSERVE = "inferenceservices.serving.kserve.io"
UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimservice" / "common"
FROZEN = UPSTREAM.parent / "frozen"
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


def test_the_matched_labels_of_a_service_reach_its_template_cache_chain(env: Env) -> None:
    """Ported: aimservice/common/label-propagation (with a named template, and a namespaced default config with
    upstream's patterns): AIMService → AIMTemplateCache → AIMArtifact → PVC and download Job, and the
    InferenceService."""
    ns = "cache-labels"
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
    env.apply(model(ns), template(ns))
    doc = env.upstream_service("label-propagation/service.yaml", ns)
    name = doc["metadata"]["name"]
    assert doc["metadata"]["labels"] == {"team-alpha": "frontend", "cost-center": "cc-12345", "env": "test"}
    matched = {"team-alpha": "frontend", "cost-center": "cc-12345"}
    cache = cache_ready(env, name, ns)
    running_with_cache(env, name, ns)
    # chainsaw: Verify AIMTemplateCache has propagated labels
    assert cache["metadata"]["labels"] == {"aim.eai.amd.com/service.name": name, **matched}
    # chainsaw: Verify AIMArtifact, PVC, download Job and InferenceService have propagated labels, and not `env`
    (artifact,) = env.items(ARTIFACTS, ns)
    pvc = env.get("persistentvolumeclaims", artifact["status"]["persistentVolumeClaim"], ns)
    (job,) = env.items("jobs", ns)
    isvc = env.get(KSERVE, name, ns)
    assert pvc is not None and isvc is not None
    for child in (artifact, pvc, job, isvc):
        labels = child["metadata"]["labels"]
        assert {k: labels.get(k) for k in matched} == matched, child["kind"]
        assert "env" not in labels, child["kind"]
    assert artifact["metadata"]["labels"]["aim.eai.amd.com/service.name"] == name
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    assert {k: pod_labels.get(k) for k in matched} == matched and "env" not in pod_labels


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


def test_a_deleted_service_takes_its_caches_that_are_not_ready_and_leaves_the_ready_ones(env: Env) -> None:
    """As upstream's cache-cleanup scenarios (failed-deleted, ready-preserved): a cache whose artifact cannot be
    sized never becomes Ready, and goes with the service that made it; a Ready one stays for others."""
    ns = "cache-cleanup"
    env.apply(namespace(ns), model(ns), template(ns))
    unsized = template(ns)
    unsized["metadata"]["name"] = "unsized-template"
    unsized["spec"]["modelSources"] = [{"modelId": "org/unsized", "sourceUri": "hf://org/unsized"}]
    env.apply(unsized)
    for name, template_name in (("cleanup-ready", TEMPLATE), ("cleanup-not-ready", "unsized-template")):
        service = {
            "apiVersion": V1,
            "kind": "AIMService",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "model": {"name": "cached-model"},
                "template": {"name": template_name},
                "caching": {"mode": "Shared"},
            },
        }
        env.apply(service)
    ready = cache_ready(env, "cleanup-ready", ns)
    running_with_cache(env, "cleanup-ready", ns)
    (pending,) = until(lambda: env.caches_of("cleanup-not-ready", ns), "the cache that cannot become Ready")
    status = until(lambda: (s := env.service("cleanup-not-ready", ns).get("status") or {}).get("conditions") and s, "")
    assert status["status"] == "Starting" and env.get(KSERVE, "cleanup-not-ready", ns) is None, "waits for the cache"
    env.k("delete", SERVICES_V1, "cleanup-not-ready", "cleanup-ready", "-n", ns)
    until(lambda: env.get("aimtemplatecaches", pending["metadata"]["name"], ns) is None, "the cache not Ready deleted")
    assert env.get("aimtemplatecaches", ready["metadata"]["name"], ns) is not None, "the Ready cache preserved"


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
