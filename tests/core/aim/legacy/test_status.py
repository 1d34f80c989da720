"""The legacy kinds' status in upstream's shape: components to conditions, `ConfigValid`, `Ready` and
`status.status` (omectl/core/aim/legacy/status.py)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.legacy.status import Component, legacy_status, runtime_config_component
from omectl.core.aim.resolution import resolve


def by_type(conditions: Any) -> dict[str, dict[str, str]]:
    return {c["type"]: c for c in conditions}


def template(**spec: Any) -> dict[str, Any]:
    meta = {"name": "tpl", "namespace": "team", "uid": "u-1"}
    return {"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate", "metadata": meta, "spec": spec}


def config(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, "uid": f"uid-{name}", **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "spec": {}}


def lookup(*configs: dict[str, Any]) -> Any:
    found = {(c["metadata"].get("namespace", ""), c["metadata"]["name"]): c for c in configs}
    return lambda namespace, name: found.get((namespace, name))


def test_a_found_config_is_a_ready_component_with_omectls_reason() -> None:
    resolution = resolve(template(runtimeConfigName="gpu"), lookup(config("AIMClusterRuntimeConfig", "gpu")))
    component = runtime_config_component(resolution)
    assert (component.state, component.reason, component.missing_reference) == ("Ready", "RuntimeConfigResolved", False)
    rolled = legacy_status([component])
    assert rolled.status == "Ready"
    assert by_type(rolled.conditions)["Ready"] == {
        "type": "Ready",
        "status": "True",
        "reason": "AllComponentsReady",
        "message": "All components are ready",
    }


def test_a_missing_default_is_ready_with_default_config_not_found() -> None:
    component = runtime_config_component(resolve(template(), lookup()))
    assert (component.state, component.reason, component.message) == (
        "Ready",
        "DefaultConfigNotFound",
        "Default config was not found",
    )


def test_a_missing_explicit_config_fails_with_reference_not_found_everywhere() -> None:
    component = runtime_config_component(resolve(template(runtimeConfigName="nope"), lookup()))
    rolled = legacy_status([component, Component("GPU", "Ready", "GPUAvailable", "ok")])
    assert rolled.status == "Failed" and rolled.failed_on_reference
    conditions = by_type(rolled.conditions)
    for condition_type in ("RuntimeConfigReady", "ConfigValid", "Ready"):
        assert conditions[condition_type]["status"] == "False"
        assert conditions[condition_type]["reason"] == "ReferenceNotFound"
        assert conditions[condition_type]["message"] == "RuntimeConfig nope not found"


def test_config_valid_turns_true_once_the_reference_is_resolved_and_stays() -> None:
    ready = Component("RuntimeConfig", "Ready", "RuntimeConfigResolved", "found")
    assert "ConfigValid" not in by_type(legacy_status([ready]).conditions), "never failed: no ConfigValid"
    failed = [{"type": "ConfigValid", "status": "False", "reason": "ReferenceNotFound"}]
    recovered = by_type(legacy_status([ready], previous_conditions=failed).conditions)["ConfigValid"]
    assert (recovered["status"], recovered["reason"]) == ("True", "ConfigurationValid")
    again = by_type(legacy_status([ready], previous_conditions=[recovered]).conditions)["ConfigValid"]
    assert again["status"] == "True"


@pytest.mark.parametrize(
    ("states", "status"),
    [
        (("Ready", "Progressing", "Pending"), "Pending"),
        (("Ready", "Progressing"), "Progressing"),
        (("Ready", "NotAvailable", "Degraded"), "NotAvailable"),
        (("Degraded", "Failed", "NotAvailable"), "Failed"),
        (("Ready", "Ready"), "Ready"),
    ],
)
def test_the_worst_component_state_is_the_status(states: tuple[Any, ...], status: str) -> None:
    components = [Component(f"C{i}", state, f"Reason{i}", f"message {i}") for i, state in enumerate(states)]
    assert legacy_status(components).status == status


def test_ready_names_the_worst_failing_component_as_upstream_does() -> None:
    components = [
        Component("RuntimeConfig", "Ready", "RuntimeConfigResolved", "found"),
        Component("GPU", "NotAvailable", "GPUNotAvailable", "no MI355X"),
    ]
    ready = by_type(legacy_status(components).conditions)["Ready"]
    assert ready == {
        "type": "Ready",
        "status": "False",
        "reason": "GPUNotAvailable",
        "message": "Component GPU is not ready: no MI355X",
    }
    waiting = [Component("DiscoveryJob", "Progressing", "JobRunning", "running")]
    assert by_type(legacy_status(waiting).conditions)["Ready"]["reason"] == "Progressing"


def test_every_condition_has_a_reason_and_a_message_and_extra_conditions_come_before_ready() -> None:
    rolled = legacy_status(
        [Component("Model", "Pending", "ModelPending", "")],
        extra_conditions=[{"type": "Discovered", "status": "False", "reason": "AwaitingDiscovery", "message": "m"}],
    )
    assert [c["type"] for c in rolled.conditions] == ["ModelReady", "Discovered", "Ready"]
    assert all(c["reason"] and c["message"] for c in rolled.conditions)
    assert by_type(rolled.conditions)["ModelReady"]["message"] == "Model is Pending"
