"""Upstream's legacy template path end to end (docs/aim-resources.md, "The legacy template path") through the real
kubectl: AIMServiceTemplate, AIMClusterServiceTemplate and AIMTemplateCache at aim.eai.amd.com/v1alpha1, reconciled
by the controller on one simulated cluster (AMD MI300X nodes).

Runtime config resolution for the three kinds, as every AIM consumer of omectl does it, in upstream's status shape
(metav1 conditions, `status.status` Pending|Progressing|Ready|Degraded|Failed|NotAvailable).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import yaml

from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ControlledFleet, running_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]
T = TypeVar("T")

CLUSTER = "aimleg-1"
V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
PLURALS = {
    "AIMServiceTemplate": "aimservicetemplates",
    "AIMClusterServiceTemplate": "aimclusterservicetemplates",
    "AIMTemplateCache": "aimtemplatecaches",
}
STATUSES = {"Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable"}


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

    def events(self, name: str, reason: str, namespace: str = "default") -> list[dict[str, Any]]:
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
    simulator = SimulatorConfig(pools=(NodePool(count=2, gpus_per_node=8, gpu_resource="amd.com/gpu"),))
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
    assert (conditions["ConfigValid"]["status"], conditions["ConfigValid"]["reason"]) == ("True", "ConfigurationValid")
    assert recovered["status"] in STATUSES - {"Failed"} or conditions["Ready"]["reason"] != "ReferenceNotFound"


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
    assert "resolvedRuntimeConfig" not in status and "ConfigValid" not in {c["type"] for c in status["conditions"]}
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
