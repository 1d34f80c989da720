"""Resolution: namespace and cluster configs, the merge and its single reference, default vs explicit missing,
cluster-scoped consumers in the operator namespace, inline layers, events, and which consumers a change reaches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from omectl.core.aim.resolution import (
    CONFIG_VALID,
    DEFAULT_CONFIG_NOT_FOUND,
    DEFAULT_CONFIG_NOT_FOUND_MESSAGE,
    DEFAULT_MISSING,
    DEFAULT_OPERATOR_NAMESPACE,
    EVENT_NORMAL,
    EVENT_WARNING,
    EXPLICIT_MISSING,
    FOUND,
    REFERENCE_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    RUNTIME_CONFIG_RESOLVED,
    Event,
    config_change_reaches,
    default_missing_event_due,
    effective_config_name,
    resolve,
)


def namespaced_config(namespace: str, name: str, spec: dict[str, Any], uid: str) -> dict[str, Any]:
    return {"kind": "AIMRuntimeConfig", "metadata": {"name": name, "namespace": namespace, "uid": uid}, "spec": spec}


def cluster_config(name: str, spec: dict[str, Any], uid: str) -> dict[str, Any]:
    return {"kind": "AIMClusterRuntimeConfig", "metadata": {"name": name, "uid": uid}, "spec": spec}


def service(spec: dict[str, Any] | None = None, namespace: str = "ml-team") -> dict[str, Any]:
    return {
        "kind": "AIMService",
        "metadata": {"name": "qwen-chat", "namespace": namespace, "uid": "svc-uid"},
        "spec": spec or {"model": {"name": "qwen-qwen3-32b"}},
    }


class Store:
    """A lookup over a few config objects that records what was asked."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
        self.asked: list[tuple[str, str]] = []

    def __call__(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.asked.append((namespace, name))
        return self.objects.get((namespace, name))


NS_DEFAULT = namespaced_config("ml-team", "default", {"routing": {"enabled": True, "pathTemplate": "/ns"}}, "ns-uid")
CL_DEFAULT = cluster_config(
    "default",
    {"routing": {"enabled": False, "requestTimeout": "60s"}, "defaultStorageClassName": "fast-nvme"},
    "cl-uid",
)


def test_namespace_config_only() -> None:
    result = resolve(service(), Store(NS_DEFAULT))
    assert result.outcome == FOUND
    assert result.name == "default"
    assert result.resolved_ref == {
        "kind": "AIMRuntimeConfig",
        "name": "default",
        "namespace": "ml-team",
        "scope": "Namespace",
        "uid": "ns-uid",
    }
    assert result.config == {"routing": {"enabled": True, "pathTemplate": "/ns"}}
    assert result.conditions == (
        {
            "type": RUNTIME_CONFIG_READY,
            "status": "True",
            "reason": RUNTIME_CONFIG_RESOLVED,
            "message": "RuntimeConfig default resolved from AIMRuntimeConfig ml-team/default",
        },
    )
    assert result.event is None
    assert result.may_apply and result.status is None


def test_cluster_config_only() -> None:
    result = resolve(service(), Store(CL_DEFAULT))
    assert result.outcome == FOUND
    assert result.resolved_ref == {
        "kind": "AIMClusterRuntimeConfig",
        "name": "default",
        "namespace": "",
        "scope": "Cluster",
        "uid": "cl-uid",
    }
    assert result.config == {
        "routing": {"enabled": False, "requestTimeout": "60s"},
        "storage": {"defaultStorageClassName": "fast-nvme"},
    }


def test_both_merge_namespace_over_cluster_and_record_the_namespace_reference() -> None:
    result = resolve(service(), Store(NS_DEFAULT, CL_DEFAULT))
    assert result.outcome == FOUND
    assert result.config == {
        "routing": {"enabled": True, "requestTimeout": "60s", "pathTemplate": "/ns"},
        "storage": {"defaultStorageClassName": "fast-nvme"},
    }
    assert result.resolved_ref is not None
    assert (result.resolved_ref["kind"], result.resolved_ref["scope"], result.resolved_ref["uid"]) == (
        "AIMRuntimeConfig",
        "Namespace",
        "ns-uid",
    )
    assert result.layers == ("AIMClusterRuntimeConfig default", "AIMRuntimeConfig ml-team/default")
    assert result.provenance["routing.enabled"] == "AIMRuntimeConfig ml-team/default"
    assert result.provenance["routing.requestTimeout"] == "AIMClusterRuntimeConfig default"
    assert result.conditions[0]["message"] == (
        "RuntimeConfig default resolved from AIMRuntimeConfig ml-team/default over AIMClusterRuntimeConfig default"
    )


def test_a_config_in_another_namespace_is_not_used() -> None:
    other = namespaced_config("other-team", "default", {"routing": {"enabled": True}}, "x")
    result = resolve(service(), Store(other))
    assert result.outcome == DEFAULT_MISSING


def test_default_missing_is_not_an_error() -> None:
    store = Store()
    result = resolve(service(), store)
    assert result.outcome == DEFAULT_MISSING
    assert store.asked == [("ml-team", "default"), ("", "default")]
    assert result.resolved_ref is None
    assert result.config == {}
    assert result.conditions == (
        {
            "type": RUNTIME_CONFIG_READY,
            "status": "True",
            "reason": DEFAULT_CONFIG_NOT_FOUND,
            "message": DEFAULT_CONFIG_NOT_FOUND_MESSAGE,
        },
    )
    assert result.event == Event(EVENT_NORMAL, "DefaultConfigNotFound", "Default config was not found")
    assert result.may_apply and result.status is None


@pytest.mark.parametrize("name", ["non-existent", "default"])
def test_explicit_name_missing_fails(name: str) -> None:
    result = resolve(service({"runtimeConfigName": name}), Store())
    message = f"RuntimeConfig {name} not found"
    assert result.outcome == EXPLICIT_MISSING
    assert result.explicit
    assert result.resolved_ref is None
    assert result.conditions == (
        {"type": RUNTIME_CONFIG_READY, "status": "False", "reason": REFERENCE_NOT_FOUND, "message": message},
        {"type": CONFIG_VALID, "status": "False", "reason": REFERENCE_NOT_FOUND, "message": message},
    )
    assert result.event == Event(EVENT_WARNING, "ReferenceNotFound", message)
    assert not result.may_apply
    assert result.status == "Failed"


def test_explicit_name_found_in_cluster_scope() -> None:
    config = cluster_config("gpu-tuned", {"env": [{"name": "A", "value": "1"}]}, "g")
    result = resolve(service({"runtimeConfigName": "gpu-tuned"}), Store(config, NS_DEFAULT))
    assert result.outcome == FOUND
    assert result.name == "gpu-tuned"
    assert result.config == {"env": [{"name": "A", "value": "1"}]}


@pytest.mark.parametrize(("given", "expected"), [(None, "default"), ("", "default"), ("x", "x")])
def test_effective_name(given: str | None, expected: str) -> None:
    assert effective_config_name({"spec": {"runtimeConfigName": given}}) == expected


def test_cluster_scoped_consumer_resolves_namespaced_configs_in_the_operator_namespace() -> None:
    model = {"kind": "AIMClusterModel", "metadata": {"name": "qwen"}, "spec": {"runtimeConfigName": "discovery"}}
    in_operator_ns = namespaced_config("aim-ops", "discovery", {"env": [{"name": "X", "value": "ns"}]}, "ops-uid")
    store = Store(in_operator_ns, cluster_config("discovery", {"env": [{"name": "X", "value": "cl"}]}, "cl"))
    result = resolve(model, store, operator_namespace="aim-ops")
    assert store.asked == [("aim-ops", "discovery"), ("", "discovery")]
    assert result.config == {"env": [{"name": "X", "value": "ns"}]}
    assert result.resolved_ref is not None
    assert result.resolved_ref["namespace"] == "aim-ops"
    assert result.resolved_ref["scope"] == "Namespace"


def test_operator_namespace_defaults_to_aim_system() -> None:
    store = Store()
    resolve({"metadata": {"name": "m"}, "spec": {}}, store)
    assert DEFAULT_OPERATOR_NAMESPACE == "aim-system"
    assert store.asked[0] == ("aim-system", "default")


def test_inline_config_is_the_top_layer_and_service_routing_beats_it() -> None:
    spec = {
        "model": {"name": "qwen-qwen3-32b"},
        "runtimeConfig": {
            "routing": {"pathTemplate": "/inline", "requestTimeout": "30s"},
            "env": [{"name": "B", "value": "2"}],
        },
        "routing": {"pathTemplate": "/own"},
    }
    result = resolve(service(spec), Store(NS_DEFAULT, CL_DEFAULT))
    assert result.config["routing"] == {"enabled": True, "requestTimeout": "30s", "pathTemplate": "/own"}
    assert result.config["env"] == [{"name": "B", "value": "2"}]
    assert result.provenance["routing.pathTemplate"] == "AIMService ml-team/qwen-chat spec.routing"
    assert result.provenance["routing.requestTimeout"] == "AIMService ml-team/qwen-chat spec.runtimeConfig"
    assert result.resolved_ref is not None and result.resolved_ref["kind"] == "AIMRuntimeConfig"


def test_inline_config_applies_when_the_default_is_missing() -> None:
    result = resolve(service({"runtimeConfig": {"routing": {"enabled": True}}}), Store())
    assert result.outcome == DEFAULT_MISSING
    assert result.config == {"routing": {"enabled": True}}


def test_operator_defaults_are_the_lowest_layer() -> None:
    defaults = {"storage": {"pvcHeadroomPercent": 10}, "routing": {"enabled": False}}
    result = resolve(service(), Store(NS_DEFAULT), operator_defaults=defaults)
    assert result.config == {"storage": {"pvcHeadroomPercent": 10}, "routing": {"enabled": True, "pathTemplate": "/ns"}}
    assert result.provenance["storage.pvcHeadroomPercent"] == "operator defaults"


def test_default_missing_event_only_on_the_first_reconcile() -> None:
    result = resolve(service(), Store())
    assert default_missing_event_due(result, [])
    assert default_missing_event_due(
        result, [{"type": RUNTIME_CONFIG_READY, "status": "True", "reason": RUNTIME_CONFIG_RESOLVED}]
    )
    assert not default_missing_event_due(result, list(result.conditions))
    assert not default_missing_event_due(resolve(service(), Store(NS_DEFAULT)), [])


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "consumer", "reaches"),
    [
        ("AIMRuntimeConfig", "ml-team", "default", service(), True),
        ("AIMRuntimeConfig", "other", "default", service(), False),
        ("AIMRuntimeConfig", "ml-team", "tuned", service(), False),
        ("AIMRuntimeConfig", "ml-team", "tuned", service({"runtimeConfigName": "tuned"}), True),
        ("AIMRuntimeConfig", "ml-team", "default", service({"runtimeConfigName": "tuned"}), False),
        ("AIMClusterRuntimeConfig", "", "default", service(), True),
        ("AIMClusterRuntimeConfig", "", "default", service(namespace="elsewhere"), True),
        ("AIMClusterRuntimeConfig", "", "tuned", service(), False),
        ("AIMClusterRuntimeConfig", "", "default", {"metadata": {"name": "m"}, "spec": {}}, True),
        ("AIMRuntimeConfig", "aim-system", "default", {"metadata": {"name": "m"}, "spec": {}}, True),
        ("AIMRuntimeConfig", "ml-team", "default", {"metadata": {"name": "m"}, "spec": {}}, False),
    ],
)
def test_config_change_reaches(kind: str, namespace: str, name: str, consumer: dict[str, Any], reaches: bool) -> None:
    assert config_change_reaches(kind, namespace, name, consumer) is reaches


def test_config_change_reaches_refuses_another_kind() -> None:
    with pytest.raises(ValueError, match="not a runtime config kind"):
        config_change_reaches("ConfigMap", "ml-team", "default", service())
