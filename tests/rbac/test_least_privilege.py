"""Least privilege, proven (issue 7 §2): the controller's flows against an embedded fleet, every request it sent
checked against the RBAC in deploy/, and every grant of that RBAC checked for use.

One hub (registrations as labelled Secrets, read under the hub Role of deploy/base/controller/rbac-hub.yaml) and
one member cluster with the workload simulator, every CRD of deploy/crds/ and the controller with its webhooks
installed. The test drives, in-process (so only the controller's requests reach the request logs), a
representative run of every end-to-end suite's features:

- OME: a denied runtime whose parent is missing (the webhook's live reads), the spec's sample chain and
  InferenceService (Deployment, Service, status, events), the chain broken and recovered, a pinned service drifting
  and rolled out (ControllerRevisions created, listed and collected), a multi-node runtime (LeaderWorkerSet), a
  PD-disaggregated service with a router (its ServiceAccount, Role and RoleBinding);
- AIM services: routing with a path template (HTTPRoute), then routing turned off (the route deleted), cost-tracking
  labels, a model cache PVC, a missing explicit config failing and recovering;
- AIM v1alpha2: the models-and-caching samples (a cluster model source, cluster and namespaced models with
  discovery Jobs and result ConfigMaps, profiles, a profile set, a service with caching -> profile cache ->
  artifact -> PVC and download Job), then a new model image (the stale discovery Job and ConfigMap deleted);
- AIM legacy template path: a template discovered (its Job and result ConfigMap, the Nodes' GPUs) and cached (its
  template cache), a cluster template and a template cache reconciled, a model and a cluster model making their
  templates;
- FleetRuntimes (the hub's): a template applied to the member (server-side apply), edited (a second revision),
  edited back (its revision renumbered), the copy edited by hand and put back (driftPolicy Correct), then the
  FleetRuntime deleted (its copy and revisions deleted);
- the registration Secret rotated: the member is rebuilt and its webhook configuration re-applied (a patch);
- ownership: the member's Lease taken and renewed, the webhook configuration watched (one name) and put back after
  someone deletes it, `omectl cluster status`'s check (webhook/health.py, with the registration's credentials),
  and the registration Secret deleted: the webhook configuration and the Lease are deleted from the member.

Then every request whose User-Agent is the controller's (`omectl/...`) is mapped to the authorizer's attributes
(omectl/kube/rbac.py) and must be allowed: member requests by the member ClusterRole, hub requests by the hub
Role in its namespace and the hub ClusterRole for FleetRuntimes. And every (group, resource, verb) any of these
roles grants must have been used by some request, unless the rule's comment says `not exercised: <verbs> - <why>`;
such a note must not name a verb the flows do use (the note would be stale). The member's roles are the
ClusterRole and the Lease Role in omectl-system. A failure prints a table: missing permission -> the requests,
unused grant -> the rule.
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from omectl.controller.app import ControllerApp
from omectl.controller.ome.revisions import RUNTIME_KIND_LABEL, RUNTIME_LABEL
from omectl.controller.ome.watch import ROLLOUT_ANNOTATION
from omectl.core.aim.legacy.model_templates import SIMULATED_IMAGE_METADATA
from omectl.core.aim.legacy.template_names import template_name
from omectl.fleet.providers import CLUSTER_LABEL, CLUSTER_NAME_LABEL
from omectl.fleet.sharding import LEASE_NAME
from omectl.kube.client import ClusterClient
from omectl.kube.rbac import Grant, PolicyRule, Request, Role, implied_requests
from omectl.settings import Settings
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.requestlog import RequestRecord
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet, apply_document
from omectl.sim.simulator import NodePool, SimulatorConfig
from omectl.webhook.health import check_member
from omectl.webhook.server import WEBHOOK_CONFIGURATION_NAME

ROOT = Path(__file__).resolve().parents[2]
OME = ROOT / "deploy" / "samples" / "ome"
AIM = ROOT / "deploy" / "samples" / "aim"
MEMBER_ROLE_FILE = ROOT / "deploy" / "member" / "rbac" / "clusterrole.yaml"
MEMBER_LEASE_ROLE_FILE = ROOT / "deploy" / "member" / "rbac" / "role-lease.yaml"
MEMBER_NAMESPACE_FILE = ROOT / "deploy" / "member" / "namespace.yaml"
HUB_ROLE_FILE = ROOT / "deploy" / "base" / "controller" / "rbac-hub.yaml"
HUB_FLEET_ROLE_FILE = ROOT / "deploy" / "base" / "controller" / "rbac-hub-fleet.yaml"
HUB_NAMESPACE = "omectl-system"
MEMBER = "lp-2"  # the fleet's second cluster; lp-1 is the hub
OPTS = WriteOptions(field_manager="least-privilege-test")
CONTROLLER_AGENT = "omectl/"
NOT_EXERCISED = "not exercised:"
DISCOVERY_ANNOTATION = "sim.omectl.io/discovery-result"
DISCOVERY_RESULT = """\
- id: vllm-mi300x-fp8-tp1-latency
  gpu: MI300X
  gpuCount: 1
  precision: fp8
  metric: latency
- id: vllm-mi300x-bf16-tp2-throughput
  gpu: MI300X
  gpuCount: 2
  precision: bf16
  metric: throughput
"""
pytestmark = pytest.mark.xdist_group("least-privilege")


# --- the roles and their comments ------------------------------------------------------------------------------

# Kubernetes binds system:discovery and system:public-info-viewer to every authenticated user: a non-resource
# request (discovery, /version) the controller sends is allowed by them, not by omectl's roles.
DEFAULT_NON_RESOURCE = Role(
    "system:discovery",
    (
        PolicyRule(
            ("get",),
            non_resource_urls=(
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/openapi",
                "/openapi/*",
                "/version",
                "/version/",
                "/healthz",
                "/livez",
                "/readyz",
            ),
        ),
    ),
)


def load_role(path: Path, kind: str, namespace: str | None = None) -> Role:
    doc = next(d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == kind)
    role = Role.from_manifest(doc)
    return Role(role.name, role.rules, namespace) if namespace is not None else role


@dataclass(frozen=True)
class RuleSource:
    line: int  # 1-based line of the rule's `- apiGroups:`
    comment: str

    def describe(self, path: Path) -> str:
        return f"{path.relative_to(ROOT)}:{self.line}"


def rule_sources(path: Path) -> list[RuleSource]:
    """Where each rule of the file's first role is and what its comments say, in rule order: the comment block
    right above its `- apiGroups:` line and the comments inside it (a comment block right before the next rule is
    that rule's); a rule with none shares the one before it (one comment above consecutive rules)."""
    lines = path.read_text().split("\n---")[0].splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip().startswith("- apiGroups:")]

    def is_comment(i: int) -> bool:
        return lines[i].strip().startswith("#")

    out: list[RuleSource] = []
    for n, start in enumerate(starts):
        first = start
        while first > 0 and is_comment(first - 1):
            first -= 1
        last = starts[n + 1] if n + 1 < len(starts) else len(lines)
        while n + 1 < len(starts) and last > start + 1 and is_comment(last - 1):
            last -= 1
        text = " ".join(lines[i].strip().lstrip("#").strip() for i in range(first, last) if is_comment(i))
        out.append(RuleSource(start + 1, text or (out[-1].comment if out else "")))
    return out


def not_exercised_verbs(comment: str) -> set[str] | None:
    """The verbs a rule's `not exercised: <verbs> - <why>` note names (None: no note)."""
    if NOT_EXERCISED not in comment:
        return None
    rest = comment.split(NOT_EXERCISED, 1)[1]
    head = re.split(r"\s[-—]\s|[.;(]", rest, maxsplit=1)[0]
    return {v for v in re.findall(r"[a-z]+", head)}


# --- the flows ------------------------------------------------------------------------------------------------


@dataclass
class Fleet:
    hub: EmbeddedAPIServer
    member: EmbeddedAPIServer
    app: ControllerApp
    sim: EmbeddedFleet
    tmp: Path
    stopped: bool = False

    async def stop(self) -> None:
        """Stop the controller, then the clusters: a request is logged when it ends, a watch when the server
        closes it."""
        self.stopped = True
        await self.app.stop()
        await self.sim.stop()


def docs_of(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


async def apply(server: EmbeddedAPIServer, *docs: dict[str, Any]) -> None:
    for doc in docs:
        await apply_document(server, doc)


def resource_type(server: EmbeddedAPIServer, api_version: str, kind: str) -> Any:
    group, _, version = api_version.rpartition("/")
    rt = next((t for t in server.api.types.all() if (t.group, t.version, t.kind) == (group, version, kind)), None)
    assert rt is not None, f"{api_version} {kind}"
    return rt


async def delete(server: EmbeddedAPIServer, api_version: str, kind: str, name: str, ns: str = "") -> None:
    await server.api.delete(resource_type(server, api_version, kind), ns, name, {}, OPTS)


async def merge_patch(
    server: EmbeddedAPIServer, api_version: str, kind: str, name: str, ns: str, body: Any, subresource: str = ""
) -> None:
    rt = resource_type(server, api_version, kind)
    await server.api.patch(rt, ns, name, "application/merge-patch+json", orjson.dumps(body), OPTS, subresource)


def get(server: EmbeddedAPIServer, group: str, plural: str, name: str, ns: str = "") -> dict[str, Any] | None:
    return server.api.store.get((group, plural), ns, name)


def status(server: EmbeddedAPIServer, group: str, plural: str, name: str, ns: str = "") -> dict[str, Any]:
    return (get(server, group, plural, name, ns) or {}).get("status") or {}


def condition(server: EmbeddedAPIServer, group: str, plural: str, name: str, ns: str, kind: str) -> dict[str, Any]:
    conditions = status(server, group, plural, name, ns).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), {})


async def until(predicate: Callable[[], object], what: str, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.05)


def controller_requests(server: EmbeddedAPIServer) -> list[RequestRecord]:
    return [r for r in server.request_log.records() if r.user_agent.startswith(CONTROLLER_AGENT)]


def registration_secret(kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": MEMBER,
            "namespace": HUB_NAMESPACE,
            "labels": {CLUSTER_LABEL: "true", CLUSTER_NAME_LABEL: MEMBER},
        },
        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
    }


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    pools = (
        NodePool(count=2, gpus_per_node=8),
        NodePool(count=2, gpus_per_node=8, gpu_resource="amd.com/gpu", gpu_type="MI300X", name="amd"),
    )
    simulators = {MEMBER: SimulatorConfig(pools)}
    sim = await EmbeddedFleet(2, name_prefix="lp-", simulator=lambda n: simulators.get(n)).start()
    hub, member = sim.servers
    app: ControllerApp | None = None
    fleet: Fleet | None = None
    try:
        await sim.apply([ROOT / "deploy" / "crds"])
        await apply(member, *docs_of(MEMBER_NAMESPACE_FILE))  # the member install's namespace (deploy/member)
        hub_kubeconfig = hub.write_kubeconfig(tmp_path / "hub.kubeconfig")
        member_kubeconfig = member.write_kubeconfig(tmp_path / "member.kubeconfig").read_text()
        await apply(hub, namespace(HUB_NAMESPACE), registration_secret(member_kubeconfig))
        settings = Settings.load(
            webhook_port=0,
            hub_kubeconfig=hub_kubeconfig,
            hub_namespace=HUB_NAMESPACE,
            trace_file=tmp_path / "traces.jsonl",
            concurrency=8,
            install_webhooks=True,
        )
        app = ControllerApp(settings)
        await app.start()
        await app.wait_synced(30)
        fleet = Fleet(hub, member, app, sim, tmp_path)
        yield fleet
    finally:
        if fleet is None or not fleet.stopped:
            if app is not None:
                await app.stop()
            await sim.stop()


async def ome_flows(f: Fleet) -> None:
    m = f.member
    vwc = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    await until(lambda: m.api.store.get(vwc, "", "omectl-ome-webhooks"), "the webhook configuration installed")
    await apply(m, namespace("llama-demo"))
    # a runtime whose parent does not exist: the webhook reads both kinds live before it denies
    orphan = yaml.safe_load((OME / "runtime.yaml").read_text())
    orphan["metadata"]["name"] = "orphan"
    with pytest.raises(APIError, match="not found"):
        await apply(m, orphan)
    for name in ("clusterbasemodel", "profile", "runtime", "isvc"):
        await apply(m, *docs_of(OME / f"{name}.yaml"))
    isvc = ("ome.io", "inferenceservices")
    await until(
        lambda: (
            get(m, "apps", "deployments", "llama-3-2-3b-instruct-engine", "llama-demo")
            and status(m, *isvc, "llama-3-2-3b-instruct", "llama-demo").get("runtime")
        ),
        "the sample InferenceService rendered",
    )
    # break the chain (ParentNotFound, RuntimeValidationError events) and recover
    await delete(m, "ome.io/v1beta1", "ClusterServingRuntime", "sglang-profile")
    sr = ("ome.io", "servingruntimes")
    await until(
        lambda: (
            condition(m, *sr, "sglang-llama-3-2-3b", "llama-demo", "InheritanceReady").get("reason") == "ParentNotFound"
        ),
        "the broken chain",
    )

    # the same warning again (the service reconciles again when its model changes) patches the Event's count
    def warning_count() -> int:
        return max(
            (
                e.get("count", 1)
                for e in m.api.store.items(("", "events"), "llama-demo")
                if e.get("reason") == "RuntimeValidationError"
                and e["involvedObject"]["name"] == "llama-3-2-3b-instruct"
            ),
            default=0,
        )

    await until(lambda: warning_count() == 1, "the RuntimeValidationError event")
    touch = {"metadata": {"annotations": {"touched": "yes"}}}
    await merge_patch(m, "ome.io/v1beta1", "ClusterBaseModel", "llama-3-2-3b-instruct", "", touch)
    await until(lambda: warning_count() == 2, "the event's count patched")
    await apply(m, *docs_of(OME / "profile.yaml"))
    await until(
        lambda: condition(m, *sr, "sglang-llama-3-2-3b", "llama-demo", "InheritanceReady").get("reason") == "Resolved",
        "the chain recovered",
    )
    # a pinned service drifts when the profile changes; older unreferenced revisions are collected; rollout
    for i in range(11):
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": f"sglang-llama-3-2-3b-old{i}",
                "namespace": "llama-demo",
                "labels": {RUNTIME_LABEL: "sglang-llama-3-2-3b", RUNTIME_KIND_LABEL: "ServingRuntime"},
            },
            "revision": 100 + i,
            "data": {"hash": f"old{i}", "chain": [], "resourceVersions": [], "spec": {}},
        }
        await apply(m, body)
    pinned = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "pinned", "namespace": "llama-demo"},
        "spec": {
            "model": {"name": "llama-3-2-3b-instruct"},
            "runtime": {"name": "sglang-llama-3-2-3b", "autoSync": False},
            "engine": {"minReplicas": 1},
        },
    }
    await apply(m, pinned)
    await until(
        lambda: condition(m, *isvc, "pinned", "llama-demo", "RuntimeDrifted").get("reason") == "UpToDate", "pinned"
    )
    profile = docs_of(OME / "profile.yaml")[0]
    profile["spec"]["engineConfig"]["runner"]["image"] = "sglang:ROLLED"
    await apply(m, profile)
    await until(
        lambda: condition(m, *isvc, "pinned", "llama-demo", "RuntimeDrifted").get("reason") == "RevisionMismatch",
        "the pinned service drifted",
    )

    def revisions() -> list[str]:
        return [r["metadata"]["name"] for r in m.api.store.items(("apps", "controllerrevisions"), "llama-demo")]

    await until(lambda: len([r for r in revisions() if "-old" in r]) < 11, "an unreferenced revision collected")
    await merge_patch(
        m,
        "ome.io/v1beta1",
        "InferenceService",
        "pinned",
        "llama-demo",
        {"status": {"runtime": {"revision": None}}},
        "status",
    )
    await merge_patch(
        m,
        "ome.io/v1beta1",
        "InferenceService",
        "pinned",
        "llama-demo",
        {"metadata": {"annotations": {ROLLOUT_ANNOTATION: "now"}}},
    )

    def pinned_image() -> str | None:
        dep = get(m, "apps", "deployments", "pinned-engine", "llama-demo")
        return dep["spec"]["template"]["spec"]["containers"][0]["image"] if dep else None

    await until(lambda: pinned_image() == "sglang:ROLLED", "the rollout")
    # multi-node: a LeaderWorkerSet
    runner = {"name": "ome-container", "image": "lead", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    await apply(
        m,
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ServingRuntime",
            "metadata": {"name": "multi-node", "namespace": "llama-demo"},
            "spec": {"engineConfig": {"leader": {"runner": runner}, "worker": {"size": 1, "runner": runner}}},
        },
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "mn", "namespace": "llama-demo"},
            "spec": {"runtime": {"name": "multi-node"}, "engine": {"minReplicas": 1}},
        },
        # PD-disaggregated with a router: its ServiceAccount, Role and RoleBinding
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ServingRuntime",
            "metadata": {"name": "pd", "namespace": "llama-demo"},
            "spec": {
                "engineConfig": {"runner": {"name": "ome-container", "image": "prefill"}},
                "decoderConfig": {"runner": {"name": "ome-container", "image": "decode"}},
                "routerConfig": {"runner": {"name": "router", "image": "router"}},
            },
        },
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "pd", "namespace": "llama-demo"},
            "spec": {"runtime": {"name": "pd"}, "engine": {}, "decoder": {}, "router": {}},
        },
    )
    await until(
        lambda: (
            get(m, "leaderworkerset.x-k8s.io", "leaderworkersets", "lws-mn-engine", "llama-demo")
            and get(m, "rbac.authorization.k8s.io", "rolebindings", "pd-router", "llama-demo")
            and get(m, "apps", "deployments", "pd-router", "llama-demo")
        ),
        "the LeaderWorkerSet and the router's RBAC",
    )


async def aim_service_flows(f: Fleet) -> None:
    m = f.member
    svc = ("aim.eai.amd.com", "aimservices")
    await apply(m, *docs_of(AIM / "00-namespaces.yaml"), *docs_of(AIM / "gateway.yaml"), namespace("aim-system"))
    await apply(m, *docs_of(AIM / "cost-tracking" / "cluster-default.yaml"))
    # routing with a path template and cost-tracking labels
    await apply(m, *docs_of(AIM / "routing" / "ml-team-default.yaml"))
    (chat,) = docs_of(AIM / "routing" / "qwen-chat.yaml")
    chat["metadata"]["labels"]["org.example/cost-center"] = "eng-ml"
    await apply(m, chat)
    routes = ("gateway.networking.k8s.io", "httproutes")
    await until(lambda: get(m, *routes, "qwen-chat", "ml-team"), "the HTTPRoute")
    # routing off: the service's route is deleted
    chat["spec"]["routing"] = {"enabled": False}
    await apply(m, chat)
    await until(lambda: get(m, *routes, "qwen-chat", "ml-team") is None, "the HTTPRoute deleted")
    # a model cache PVC
    await apply(
        m,
        {
            "apiVersion": "aim.eai.amd.com/v1alpha2",
            "kind": "AIMService",
            "metadata": {"name": "cached", "namespace": "ml-team"},
            "spec": {"model": {"name": "qwen-qwen3-32b"}, "storage": {"size": "100Gi"}},
        },
    )
    await until(lambda: get(m, "", "persistentvolumeclaims", "cached-model-cache", "ml-team"), "the cache PVC")
    # a missing explicit config fails, then recovers
    await apply(m, *docs_of(AIM / "missing-config" / "qwen-chat-missing-config.yaml"))
    await until(lambda: status(m, *svc, "qwen-chat-missing-config", "ml-team").get("status") == "Failed", "Failed")
    await apply(
        m,
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMRuntimeConfig",
            "metadata": {"name": "non-existent", "namespace": "ml-team"},
            "spec": {},
        },
    )
    await until(
        lambda: get(m, "serving.kserve.io", "inferenceservices", "qwen-chat-missing-config", "ml-team"), "recovered"
    )


async def aim_model_flows(f: Fleet) -> None:
    m = f.member
    a = "aim.eai.amd.com"
    for path in sorted((AIM / "models-and-caching").glob("*.yaml")):
        docs = docs_of(path)
        for doc in docs:
            if doc["kind"] == "AIMClusterModel":  # the simulator's discovery result: AIMClusterProfiles
                doc["metadata"]["annotations"] = {DISCOVERY_ANNOTATION: DISCOVERY_RESULT}
        await apply(m, *docs)
    await until(lambda: status(m, a, "aimclustermodelsources", "amd-catalog").get("status") == "Ready", "source")
    await until(lambda: status(m, a, "aimmodels", "qwen", "ml-team").get("status") == "Ready", "the model discovered")
    await until(lambda: get(m, a, "aimprofilesets", "qwen-variants", "ml-team"), "the profile set")
    await until(
        lambda: status(m, a, "aimartifacts", "qwen3-32b-weights", "ml-team").get("status") == "Ready", "artifact"
    )
    await until(
        lambda: any(
            status(m, a, "aimartifacts", o["metadata"]["name"], "ml-team").get("status") == "Ready"
            for o in m.api.store.items((a, "aimartifacts"), "ml-team")
            if o["metadata"]["name"].startswith("qwen-chat-cached-")
        ),
        "the cached service's artifact",
    )
    await until(
        lambda: (
            len(
                [
                    p
                    for p in m.api.store.items((a, "aimclusterprofiles"))
                    if (p["metadata"].get("labels") or {}).get("aim.eai.amd.com/cluster-model") == "qwen-qwen3-32b"
                ]
            )
            == 2
        ),
        "the cluster model's discovered profiles",
    )
    # a new image: the stale discovery Job and its ConfigMap are deleted, discovery runs again
    job = get(m, "batch", "jobs", "qwen-discovery", "ml-team")
    assert job is not None and get(m, "", "configmaps", "qwen-discovery", "ml-team") is not None
    await merge_patch(m, f"{a}/v1alpha2", "AIMModel", "qwen", "ml-team", {"spec": {"image": "example/qwen:0.9"}})
    await until(
        lambda: (
            (j := get(m, "batch", "jobs", "qwen-discovery", "ml-team"))
            and j["metadata"]["uid"] != job["metadata"]["uid"]
        ),
        "a new discovery Job",
    )


async def aim_legacy_flows(f: Fleet) -> None:
    """Upstream's legacy template path: a template whose model's image is discovered (the discovery Job and its result
    ConfigMap, the Nodes' GPUs) and that caches its files (its template cache applied), a cluster template and a
    template cache reconciled (their informers, their status)."""
    m = f.member
    a = "aim.eai.amd.com"
    v1 = f"{a}/v1alpha1"
    dry_run = [
        {"profile": {"metadata": {"gpu": "MI300X", "gpu_count": 1}}, "models": [{"name": "o/m", "source": "hf://o/m"}]}
    ]
    await apply(m, namespace("legacy"))
    await apply(
        m,
        {
            "apiVersion": f"{a}/v1alpha2",
            "kind": "AIMModel",
            "metadata": {
                "name": "m",
                "namespace": "legacy",
                "annotations": {DISCOVERY_ANNOTATION: orjson.dumps(dry_run).decode()},
            },
            "spec": {"image": "example/m:1", "discovery": {"enabled": False}},
        },
        {
            "apiVersion": v1,
            "kind": "AIMServiceTemplate",
            "metadata": {"name": "tpl", "namespace": "legacy"},
            "spec": {
                "modelName": "m",
                "hardware": {"gpu": {"model": "MI300X", "requests": 1}},
                "caching": {"enabled": True},
            },
        },
        {
            "apiVersion": v1,
            "kind": "AIMClusterServiceTemplate",
            "metadata": {"name": "ctpl"},
            "spec": {"modelName": "m"},
        },
        {
            "apiVersion": v1,
            "kind": "AIMTemplateCache",
            "metadata": {"name": "tc", "namespace": "legacy"},
            "spec": {"templateName": "tpl", "templateScope": "Namespace"},
        },
    )
    await until(lambda: status(m, a, "aimservicetemplates", "tpl", "legacy").get("status") == "Ready", "discovered")
    await until(lambda: get(m, a, "aimtemplatecaches", "tpl", "legacy"), "the template's cache")
    await until(lambda: status(m, a, "aimclusterservicetemplates", "ctpl").get("conditions"), "cluster template status")
    await until(lambda: status(m, a, "aimtemplatecaches", "tc", "legacy").get("conditions"), "template cache status")
    # models making their templates from their (simulated) image metadata: a namespaced and a cluster one
    metadata = {"model": {"recommendedDeployments": [{"gpuModel": "MI300X", "gpuCount": 1, "metric": "latency"}]}}
    for kind, ns in (("AIMModel", "legacy"), ("AIMClusterModel", "")):
        meta = {"name": "made", "annotations": {SIMULATED_IMAGE_METADATA: orjson.dumps(metadata).decode()}}
        await apply(
            m,
            {
                "apiVersion": f"{a}/v1alpha2",
                "kind": kind,
                "metadata": {**meta, **({"namespace": ns} if ns else {})},
                "spec": {"image": "example/made:1"},
            },
        )
    made = template_name("made", "example/made:1", metadata["model"]["recommendedDeployments"][0])
    await until(lambda: get(m, a, "aimservicetemplates", made, "legacy"), "the model's template")
    await until(lambda: get(m, a, "aimclusterservicetemplates", made), "the cluster model's template")


async def fleet_runtime_flows(f: Fleet) -> None:
    """A FleetRuntime applied to the member, edited, edited back, its copy drifting and put back, rolled in a wave
    (paused, resumed, paused: its Events), then deleted."""
    h, m = f.hub, f.member
    csr = ("ome.io", "clusterservingruntimes")
    revisions = ("apps", "controllerrevisions")

    def body(image: str, kind: str = "ClusterServingRuntime", name: str = "lp-fleet") -> dict[str, Any]:
        runner = {"name": "ome-container", "image": image}
        return {
            "apiVersion": "fleet.omectl.io/v1alpha1",
            "kind": "FleetRuntime",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "apiVersion": "ome.io/v1beta1",
                    "kind": kind,
                    "metadata": {"name": name},
                    "spec": {"engineConfig": {"runner": runner}},
                },
                "placement": {"clusters": [MEMBER]},
                "driftPolicy": "Correct",
                **({"namespaces": ["llama-demo"]} if kind == "ServingRuntime" else {}),
            },
        }

    def image() -> str | None:
        copy = get(m, *csr, "lp-fleet")
        return copy["spec"]["engineConfig"]["runner"]["image"] if copy else None

    def revision() -> int | None:
        return status(h, "fleet.omectl.io", "fleetruntimes", "lp-fleet").get("revision")

    await apply(h, body("one"))
    await until(lambda: image() == "one" and revision() == 1, "the copy applied")
    await apply(h, body("two"))
    await until(lambda: image() == "two" and revision() == 2, "the second revision applied")
    await apply(h, body("one"))
    await until(lambda: image() == "one" and revision() == 3, "the first template renumbered as revision 3")
    edit = {"spec": {"engineConfig": {"runner": {"image": "by-hand"}}}}
    await merge_patch(m, "ome.io/v1beta1", "ClusterServingRuntime", "lp-fleet", "", edit)
    await until(lambda: image() == "by-hand", "the hand edit")
    await until(lambda: image() == "one", "the copy put back")
    # ten more templates: the oldest revisions beyond the newest ten are deleted
    for n in range(4, 14):
        await apply(h, body(f"v{n}"))
        await until(lambda n=n: revision() == n, f"revision {n}")
    await until(lambda: len(list(h.api.store.items(revisions, HUB_NAMESPACE))) == 10, "the newest ten kept")
    # a ServingRuntime template goes to its namespaces
    await apply(h, body("ns", "ServingRuntime", "lp-fleet-ns"))
    await until(lambda: get(m, "ome.io", "servingruntimes", "lp-fleet-ns", "llama-demo"), "the namespaced copy")
    await delete(h, "fleet.omectl.io/v1alpha1", "FleetRuntime", "lp-fleet-ns")
    await until(lambda: get(m, "ome.io", "servingruntimes", "lp-fleet-ns", "llama-demo") is None, "deleted")
    # waves: Events on the FleetRuntime, created, and patched when one repeats (paused, resumed, paused again)
    waved = body("waved")
    waved["spec"]["rollout"] = {"waves": [{"name": "only", "clusters": [MEMBER], "soakSeconds": 3600}]}

    def rollout_phase() -> str | None:
        return (status(h, "fleet.omectl.io", "fleetruntimes", "lp-fleet").get("rollout") or {}).get("phase")

    for paused, phase in ((True, "Paused"), (False, "Soaking"), (True, "Paused")):
        waved["spec"]["rollout"]["paused"] = paused
        await apply(h, waved)
        await until(lambda phase=phase: rollout_phase() == phase, f"the rollout {phase}")
    await until(lambda: any(r.resource == "events" and r.verb == "patch" for r in controller_requests(h)), "a repeat")
    await delete(h, "fleet.omectl.io/v1alpha1", "FleetRuntime", "lp-fleet")
    await until(
        lambda: get(m, *csr, "lp-fleet") is None and not list(h.api.store.items(revisions, HUB_NAMESPACE)),
        "the copy and the revisions deleted",
    )


async def rotate_registration(f: Fleet) -> None:
    """A rotated registration rebuilds the member: the webhook configuration is applied again (a patch)."""

    def installs() -> int:
        return sum(
            1
            for r in controller_requests(f.member)
            if r.resource == "validatingwebhookconfigurations" and r.verb == "patch"
        )

    before = installs()
    f.member.token = "rotated"
    kubeconfig = f.member.write_kubeconfig(f.tmp / "member.kubeconfig").read_text()
    await apply(f.hub, registration_secret(kubeconfig))
    await until(lambda: installs() > before, "the webhook configuration re-applied")


async def ownership_flows(f: Fleet) -> None:
    """The Lease held and renewed; the webhook configuration put back after a deletion; `cluster status`'s check;
    then the cluster leaves the registry: its webhook configuration and Lease are deleted."""
    m = f.member
    vwc = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    lease = ("coordination.k8s.io", "leases")
    assert get(m, *lease, LEASE_NAME, HUB_NAMESPACE) is not None
    await delete(m, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", WEBHOOK_CONFIGURATION_NAME)
    await until(lambda: get(m, *vwc, WEBHOOK_CONFIGURATION_NAME), "the webhook configuration put back")
    client = await ClusterClient.from_kubeconfig(f.tmp / "member.kubeconfig", name=MEMBER)
    try:
        found = await check_member(client, MEMBER)
    finally:
        await client.close()
    assert found.webhooks == "ok" and found.lease_fresh, found
    await delete(f.hub, "v1", "Secret", MEMBER, HUB_NAMESPACE)
    await until(
        lambda: get(m, *vwc, WEBHOOK_CONFIGURATION_NAME) is None and get(m, *lease, LEASE_NAME, HUB_NAMESPACE) is None,
        "the webhook configuration and the Lease deleted with the registration",
    )


# --- the proof --------------------------------------------------------------------------------------------------


def authorization_requests(records: list[RequestRecord]) -> Counter[tuple[Request, str]]:
    """Each request as the authorizer sees it (with the `create` an apply that created implies), counted, with
    one path that made it."""
    out: Counter[tuple[Request, str]] = Counter()
    for r in records:
        if not r.verb:
            out[(Request(r.method.lower(), path=r.path), r.path)] += 1
            continue
        base = Request(r.verb, r.group, r.resource, r.subresource, r.namespace, r.name)
        for request in implied_requests(base, r.code):
            out[(request, f"{r.method} {r.path} -> {r.code}")] += 1
    return out


def missing_permissions(roles: list[Role], requests: Counter[tuple[Request, str]]) -> list[str]:
    """One row per (verb, resource) no role allows: how many requests asked it, and one of them."""
    rows: dict[str, tuple[int, str]] = {}
    for (request, example), count in requests.items():
        if any(r.allows(request) for r in roles) or (not request.is_resource and DEFAULT_NON_RESOURCE.allows(request)):
            continue
        key = Request(request.verb, request.group, request.resource, request.subresource, path=request.path).describe()
        seen, first = rows.get(key, (0, example))
        rows[key] = (seen + count, first)
    return [f"  {key:<90} x{count:<4} e.g. {example}" for key, (count, example) in sorted(rows.items())]


def unused_grants(
    role: Role, sources: list[RuleSource], requests: list[Request], path: Path
) -> tuple[list[str], list[str]]:
    """(grants no request used and no `not exercised:` note covers; notes naming a verb the flows used on every
    resource of the rule, which may be stale)."""
    unused, stale = [], []
    used: dict[int, dict[str, set[str]]] = {}
    for grant in role.grants():
        if any(role.grant_allows(grant, r) for r in requests):
            used.setdefault(grant.rule, {}).setdefault(grant.verb, set()).add(f"{grant.group}/{grant.resource}")
            continue
        note = not_exercised_verbs(sources[grant.rule].comment)
        if note is None or grant.verb not in note:
            unused.append(f"  {grant.describe():<90} <- rule at {sources[grant.rule].describe(path)}")
    for i, rule in enumerate(role.rules):
        note = not_exercised_verbs(sources[i].comment) or set()
        everywhere = {f"{g}/{r}" for g in rule.api_groups for r in rule.resources}
        for verb in sorted(note & set(rule.verbs)):
            if used.get(i, {}).get(verb) == everywhere:
                stale.append(f"  `{NOT_EXERCISED} {verb}` at {sources[i].describe(path)}, but the flows used it")
    return unused, stale


def usage_table(requests: Counter[tuple[Request, str]]) -> str:
    per: Counter[str] = Counter()
    for (request, _), count in requests.items():
        group = f".{request.group}" if request.group else ""
        per[f"{request.combined_resource}{group} {request.verb}" if request.is_resource else request.path] += count
    return "\n".join(f"  {key:<80} {count}" for key, count in sorted(per.items()))


async def test_every_controller_request_is_allowed_and_every_grant_is_used(fleet: Fleet) -> None:
    await ome_flows(fleet)
    await aim_service_flows(fleet)
    await aim_model_flows(fleet)
    await aim_legacy_flows(fleet)
    await fleet_runtime_flows(fleet)
    await rotate_registration(fleet)
    await ownership_flows(fleet)
    await fleet.app.controller.queue.drain()
    await fleet.stop()

    member_role = load_role(MEMBER_ROLE_FILE, "ClusterRole")
    lease_role = load_role(MEMBER_LEASE_ROLE_FILE, "Role", namespace=HUB_NAMESPACE)  # kustomize sets omectl-system
    kustomization = yaml.safe_load((HUB_ROLE_FILE.parent / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == HUB_NAMESPACE  # the hub Role's namespace, set by kustomize
    hub_role = load_role(HUB_ROLE_FILE, "Role", namespace=HUB_NAMESPACE)
    hub_fleet_role = load_role(HUB_FLEET_ROLE_FILE, "ClusterRole")
    member_requests = authorization_requests(controller_requests(fleet.member))
    hub_requests = authorization_requests(controller_requests(fleet.hub))
    assert member_requests and hub_requests
    report = [
        f"member requests by resource and verb ({sum(member_requests.values())}):",
        usage_table(member_requests),
        f"hub requests ({sum(hub_requests.values())}):",
        usage_table(hub_requests),
    ]
    problems, notes = [], []
    for title, roles in (("member", [member_role, lease_role]), ("hub", [hub_role, hub_fleet_role])):
        requests = member_requests if title == "member" else hub_requests
        missing = missing_permissions(roles, requests)
        if missing:
            names = " and ".join(r.name for r in roles)
            problems += [f"{title}: requests the {names} roles do not allow (missing permission -> request):"]
            problems += missing
    for title, role, requests, path in (
        ("member", member_role, member_requests, MEMBER_ROLE_FILE),
        ("member", lease_role, member_requests, MEMBER_LEASE_ROLE_FILE),
        ("hub", hub_role, hub_requests, HUB_ROLE_FILE),
        ("hub", hub_fleet_role, hub_requests, HUB_FLEET_ROLE_FILE),
    ):
        sources = rule_sources(path)
        assert len(sources) == len(role.rules), path
        unused, stale = unused_grants(role, sources, [r for r, _ in requests], path)
        if unused:
            problems += [
                f"{title}: grants no request used (unused grant -> rule; drop it, or justify it with a "
                f"`{NOT_EXERCISED} <verbs> - <why>` comment on the rule):"
            ]
            problems += unused
        if stale:  # informational: a rare path (a 409's re-read) may use a noted verb in some runs
            notes += [f"{title}: `{NOT_EXERCISED}` notes whose verbs this run used (stale?):", *stale]
    print("\n".join(report + notes))
    assert not problems, "\n".join([*problems, "", *report])


# --- the proof's own helpers ----------------------------------------------------------------------------------


def test_notes_name_their_verbs() -> None:
    assert not_exercised_verbs("Pods. not exercised: get, list, watch - the router Role needs them") == {
        "get",
        "list",
        "watch",
    }
    assert not_exercised_verbs("not exercised: get (of a source) - after a 409. More text") == {"get"}
    assert not_exercised_verbs("reads and writes") is None


def test_every_rule_of_the_deployed_roles_has_its_comment() -> None:
    for path, kind in (
        (MEMBER_ROLE_FILE, "ClusterRole"),
        (MEMBER_LEASE_ROLE_FILE, "Role"),
        (HUB_ROLE_FILE, "Role"),
        (HUB_FLEET_ROLE_FILE, "ClusterRole"),
    ):
        sources = rule_sources(path)
        assert len(sources) == len(load_role(path, kind).rules)
        assert all(s.comment for s in sources), path
        lines = path.read_text().splitlines()
        assert all(lines[s.line - 1].strip().startswith("- apiGroups:") for s in sources)


def test_unused_grants_and_stale_notes_name_their_rule() -> None:
    path = ROOT / "tests" / "rbac" / "example-role.yaml"
    role = Role.from_manifest(
        {
            "kind": "ClusterRole",
            "metadata": {"name": "r"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            ],
        }
    )
    used = [Request("get", "", "pods", namespace="a", name="p")]
    sources = [RuleSource(3, "reads pods"), RuleSource(7, f"{NOT_EXERCISED} get - tests")]
    unused, stale = unused_grants(role, sources, used, path)
    assert unused == [f"  {'list pods':<90} <- rule at tests/rbac/example-role.yaml:3"]
    assert stale == []
    sources = [RuleSource(3, f"{NOT_EXERCISED} get, list - x"), RuleSource(7, "y")]
    unused, stale = unused_grants(role, sources, used, path)
    assert [u.split()[0:2] for u in unused] == [["get", "secrets"]]
    assert stale == ["  `not exercised: get` at tests/rbac/example-role.yaml:3, but the flows used it"]
    assert Grant(0, "", "pods", "get").describe() == "get pods"


def test_missing_permissions_name_the_request() -> None:
    role = Role.from_manifest(
        {
            "kind": "ClusterRole",
            "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
    )
    requests: Counter[tuple[Request, str]] = Counter()
    requests[(Request("get", "", "pods", namespace="a", name="p"), "GET /api/v1/namespaces/a/pods/p -> 200")] += 1
    requests[(Request("list", "", "pods", namespace="a"), "GET /api/v1/namespaces/a/pods -> 200")] += 2
    requests[(Request("list", "", "pods", namespace="b"), "GET /api/v1/namespaces/b/pods -> 200")] += 1
    assert missing_permissions([role], requests) == [
        f"  {'list pods':<90} x3    e.g. GET /api/v1/namespaces/a/pods -> 200"
    ]
