"""Resolve the runtime config of an AIM consumer (the spec's "Resolution algorithm"), and decide which consumers a
config change reaches.

Resolution of a consumer (AIMService, AIMModel, AIMClusterModel, AIMProfile, AIMProfileCache, AIMArtifact, ...):

1. The name is `spec.runtimeConfigName`, or `default` when it is omitted or `""`. A name given explicitly is
   explicit even when it is `default` (the spec: "an explicitly-referenced name that doesn't exist is a hard
   error").
2. The AIMRuntimeConfig of that name is looked up in the consumer's namespace; a cluster-scoped consumer looks in
   the operator namespace (`AIM_SYSTEM_NAMESPACE`, default `aim-system`; the spec's "Operator namespace").
3. The AIMClusterRuntimeConfig of that name is looked up too. Both found: merged, namespace over cluster.
4. Layers, lowest first (`omectl.core.aim.layers`): operator defaults (when given) < cluster config < namespace
   config < the consumer's inline `spec.runtimeConfig` < the consumer's own `spec.routing`. Only AIMService has the
   last two fields; on other kinds they are absent and add nothing.
5. Outcome and status:
   - `found`: `RuntimeConfigReady=True`, reason `RuntimeConfigResolved`; `status.resolvedRuntimeConfig` is one typed
     reference, the namespace config's (scope `Namespace`) when there is one, else the cluster config's (scope
     `Cluster`, namespace `""`).
   - `default-missing` (name omitted, no config of that name): `RuntimeConfigReady=True`, reason
     `DefaultConfigNotFound`; one Normal event `DefaultConfigNotFound` on the first reconcile only
     (`default_missing_event_due`); no reference; reconciliation continues without config overrides.
   - `explicit-missing`: `RuntimeConfigReady=False` and `ConfigValid=False`, reason `ReferenceNotFound`, message
     `RuntimeConfig <name> not found`; `status.status: Failed`; a Warning event of that reason and message; nothing
     may be applied (`Resolution.may_apply`), and the controller retries with backoff.

Conditions are returned without `lastTransitionTime` / `observedGeneration`: the controller stamps them. For an
AIMService, `omectl.core.aim.status.roll_up` combines this outcome (`runtime_config_component`,
`runtime_config_error`) with the other components into the full condition set, `ConfigValid` and `Ready` included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from omectl.core.aim.layers import OPERATOR_DEFAULTS_LAYER, LayeredConfig, layer_name, merge_layers

RUNTIME_CONFIG_KIND: Final = "AIMRuntimeConfig"
CLUSTER_RUNTIME_CONFIG_KIND: Final = "AIMClusterRuntimeConfig"
DEFAULT_CONFIG_NAME: Final = "default"
OPERATOR_NAMESPACE_ENV: Final = "AIM_SYSTEM_NAMESPACE"
DEFAULT_OPERATOR_NAMESPACE: Final = "aim-system"

SCOPE_NAMESPACE: Final = "Namespace"
SCOPE_CLUSTER: Final = "Cluster"

Outcome = Literal["found", "default-missing", "explicit-missing"]
FOUND: Final = "found"
DEFAULT_MISSING: Final = "default-missing"
EXPLICIT_MISSING: Final = "explicit-missing"

RUNTIME_CONFIG_READY: Final = "RuntimeConfigReady"
CONFIG_VALID: Final = "ConfigValid"
RUNTIME_CONFIG_RESOLVED: Final = "RuntimeConfigResolved"
DEFAULT_CONFIG_NOT_FOUND: Final = "DefaultConfigNotFound"
REFERENCE_NOT_FOUND: Final = "ReferenceNotFound"

DEFAULT_CONFIG_NOT_FOUND_MESSAGE: Final = "Default config was not found"
"""Message of the `DefaultConfigNotFound` condition and of its Normal event (upstream's text)."""

EVENT_NORMAL: Final = "Normal"
EVENT_WARNING: Final = "Warning"
STATUS_FAILED: Final = "Failed"

ConfigLookup = Callable[[str, str], Mapping[str, Any] | None]
"""`(namespace, name)` → the AIMRuntimeConfig there, or with namespace `""` the AIMClusterRuntimeConfig; None when
there is none."""


def reference_not_found_message(name: str) -> str:
    """Message of `ReferenceNotFound` (conditions and Warning event) for an explicit name that does not exist."""
    return f"RuntimeConfig {name} not found"


@dataclass(frozen=True)
class Event:
    """An event for the controller to record on the consumer."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving one consumer's runtime config."""

    name: str
    """Effective config name (`default` when omitted)."""
    explicit: bool
    """Whether `spec.runtimeConfigName` named it."""
    outcome: Outcome
    config: dict[str, Any]
    """The effective config: every layer found merged (on `explicit-missing`, only the consumer's own layers)."""
    provenance: dict[str, str]
    """Leaf path of `config` → layer name (`omectl.core.aim.layers`)."""
    layers: tuple[str, ...]
    """Layers merged, lowest first."""
    resolved_ref: dict[str, str] | None
    """`status.resolvedRuntimeConfig`; None (absent) when no config resolved."""
    conditions: tuple[dict[str, str], ...] = field(default=())
    """`RuntimeConfigReady`, plus `ConfigValid=False` on `explicit-missing`."""
    event: Event | None = None
    """Normal `DefaultConfigNotFound` (emit only when `default_missing_event_due`) or Warning `ReferenceNotFound`
    (every reconcile); None when found."""

    @property
    def may_apply(self) -> bool:
        """Whether the consumer's children may be applied (not on a missing explicit reference)."""
        return self.outcome != EXPLICIT_MISSING

    @property
    def status(self) -> str | None:
        """`status.status` this outcome forces (`Failed`), or None when the other components decide."""
        return STATUS_FAILED if self.outcome == EXPLICIT_MISSING else None


def effective_config_name(consumer: Mapping[str, Any]) -> str:
    """`spec.runtimeConfigName`, or `default` when it is omitted or empty."""
    name = _spec(consumer).get("runtimeConfigName")
    return name if isinstance(name, str) and name else DEFAULT_CONFIG_NAME


def is_explicit(consumer: Mapping[str, Any]) -> bool:
    name = _spec(consumer).get("runtimeConfigName")
    return isinstance(name, str) and bool(name)


def lookup_namespace(consumer: Mapping[str, Any], operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE) -> str:
    """Where the consumer's namespaced config is looked up: its namespace, or the operator namespace when it is
    cluster-scoped."""
    namespace = _metadata(consumer).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else operator_namespace


def resolve(
    consumer: Mapping[str, Any],
    lookup: ConfigLookup,
    *,
    operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE,
    operator_defaults: Mapping[str, Any] | None = None,
) -> Resolution:
    """Resolve `consumer`'s runtime config (module docstring)."""
    name = effective_config_name(consumer)
    explicit = is_explicit(consumer)
    namespace = lookup_namespace(consumer, operator_namespace)
    if not namespace:
        raise ValueError("the operator namespace must not be empty")
    namespaced = lookup(namespace, name)
    cluster = lookup("", name)

    layers: list[tuple[str, Mapping[str, Any]]] = []
    if operator_defaults:
        layers.append((OPERATOR_DEFAULTS_LAYER, operator_defaults))
    if cluster is not None:
        layers.append((layer_name(CLUSTER_RUNTIME_CONFIG_KIND, "", name), _spec(cluster)))
    if namespaced is not None:
        layers.append((layer_name(RUNTIME_CONFIG_KIND, namespace, name), _spec(namespaced)))
    layers.extend(consumer_layers(consumer))
    merged = merge_layers(layers)

    if namespaced is not None or cluster is not None:
        return _found(name, explicit, merged, namespace, namespaced, cluster)
    if not explicit:
        return Resolution(
            name=name,
            explicit=False,
            outcome=DEFAULT_MISSING,
            config=merged.config,
            provenance=merged.provenance,
            layers=merged.layers,
            resolved_ref=None,
            conditions=(
                _condition(RUNTIME_CONFIG_READY, "True", DEFAULT_CONFIG_NOT_FOUND, DEFAULT_CONFIG_NOT_FOUND_MESSAGE),
            ),
            event=Event(EVENT_NORMAL, DEFAULT_CONFIG_NOT_FOUND, DEFAULT_CONFIG_NOT_FOUND_MESSAGE),
        )
    message = reference_not_found_message(name)
    return Resolution(
        name=name,
        explicit=True,
        outcome=EXPLICIT_MISSING,
        config=merged.config,
        provenance=merged.provenance,
        layers=merged.layers,
        resolved_ref=None,
        conditions=(
            _condition(RUNTIME_CONFIG_READY, "False", REFERENCE_NOT_FOUND, message),
            _condition(CONFIG_VALID, "False", REFERENCE_NOT_FOUND, message),
        ),
        event=Event(EVENT_WARNING, REFERENCE_NOT_FOUND, message),
    )


def consumer_layers(consumer: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The consumer's own layers above every config: inline `spec.runtimeConfig`, then `spec.routing` (AIMService)."""
    spec = _spec(consumer)
    metadata = _metadata(consumer)
    kind = consumer.get("kind") or "AIMService"
    namespace = str(metadata.get("namespace") or "")
    name = str(metadata.get("name") or "")
    layers: list[tuple[str, Mapping[str, Any]]] = []
    inline = spec.get("runtimeConfig")
    if isinstance(inline, Mapping):
        layers.append((layer_name(str(kind), namespace, name, "spec.runtimeConfig"), inline))
    routing = spec.get("routing")
    if isinstance(routing, Mapping):
        layers.append((layer_name(str(kind), namespace, name, "spec.routing"), {"routing": routing}))
    return layers


def default_missing_event_due(resolution: Resolution, previous_conditions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether to emit the Normal `DefaultConfigNotFound` event: on the first reconcile that finds the default
    missing, i.e. unless the consumer's status already says `RuntimeConfigReady` / `DefaultConfigNotFound`."""
    if resolution.outcome != DEFAULT_MISSING:
        return False
    for condition in previous_conditions:
        if condition.get("type") == RUNTIME_CONFIG_READY:
            return condition.get("reason") != DEFAULT_CONFIG_NOT_FOUND
    return True


def config_change_reaches(
    config_kind: str,
    namespace: str,
    config_name: str,
    consumer: Mapping[str, Any],
    *,
    operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE,
) -> bool:
    """Whether a change to the config `config_kind` `namespace/config_name` (namespace `""` for a cluster config)
    must re-reconcile `consumer`: the consumer's effective config name equals it, and for an AIMRuntimeConfig the
    consumer looks it up in that namespace (its own, or the operator namespace for a cluster-scoped consumer); an
    AIMClusterRuntimeConfig reaches every namespace and the cluster-scoped consumers."""
    if effective_config_name(consumer) != config_name:
        return False
    if config_kind == CLUSTER_RUNTIME_CONFIG_KIND:
        return True
    if config_kind == RUNTIME_CONFIG_KIND:
        return lookup_namespace(consumer, operator_namespace) == namespace
    raise ValueError(f"not a runtime config kind: {config_kind!r}")


def _found(
    name: str,
    explicit: bool,
    merged: LayeredConfig,
    namespace: str,
    namespaced: Mapping[str, Any] | None,
    cluster: Mapping[str, Any] | None,
) -> Resolution:
    sources: list[str] = []
    refs: list[dict[str, str]] = []
    if namespaced is not None:
        refs.append(_reference(RUNTIME_CONFIG_KIND, name, namespace, SCOPE_NAMESPACE, namespaced))
        sources.append(layer_name(RUNTIME_CONFIG_KIND, namespace, name))
    if cluster is not None:
        refs.append(_reference(CLUSTER_RUNTIME_CONFIG_KIND, name, "", SCOPE_CLUSTER, cluster))
        sources.append(layer_name(CLUSTER_RUNTIME_CONFIG_KIND, "", name))
    message = f"RuntimeConfig {name} resolved from " + " over ".join(sources)
    return Resolution(
        name=name,
        explicit=explicit,
        outcome=FOUND,
        config=merged.config,
        provenance=merged.provenance,
        layers=merged.layers,
        resolved_ref=refs[0],  # the more specific source only
        conditions=(_condition(RUNTIME_CONFIG_READY, "True", RUNTIME_CONFIG_RESOLVED, message),),
    )


def _reference(kind: str, name: str, namespace: str, scope: str, obj: Mapping[str, Any]) -> dict[str, str]:
    uid = _metadata(obj).get("uid")
    return {
        "kind": kind,
        "name": name,
        "namespace": namespace,
        "scope": scope,
        "uid": uid if isinstance(uid, str) else "",
    }


def _condition(condition_type: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": condition_type, "status": status, "reason": reason, "message": message}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}
