"""The status of a model written in v1alpha1 (AIMModel / AIMClusterModel), as upstream's model controller composes it
from its image metadata and its templates (docs/aim-resources.md, "Templates of a model"; upstream's state engine).

Components, each with a state of `Pending|Progressing|Ready|Degraded|Failed|NotAvailable` and its condition
`<Component>Ready` (True iff Ready); the runtime config's `RuntimeConfigReady` is the consumer's own, and Ready here
(a missing explicit config never reaches this: the model is refused before, `omectl.core.aim.consumers`):

- `ImageMetadata` (`image_metadata_component`): Ready / `ImageMetadataFound` when the metadata names a
  `canonicalName`, else Ready / `ImageFound` (also when extraction is off and the spec gives none: upstream reads
  nothing and reports the image found). Unreadable, its reason (`omectl.controller.aim.image_metadata`) and what
  upstream's error categories make of it: `SecretNotFound` a missing reference (Degraded), `SecretAccessFailed` an
  infrastructure error (Degraded), any other (the registry's answers, a reference or labels that do not parse:
  upstream's uncategorised errors, which its engine treats as infrastructure) Progressing.
- `ServiceTemplates` (`ClusterServiceTemplates` for a cluster model): the aggregate of the model's templates
  (`model_templates.template_health`).

A cluster model's components are upstream dependencies to upstream: not Ready and neither failing nor Pending, they
count as Pending (a namespaced model's as Progressing).

Roll-up (`model_status`), upstream's order:
1. a missing reference: `ConfigValid` False / `ReferenceNotFound` (`Referenced resource not found`), `Ready` False
   with the same, `status: Failed`, nothing applied;
2. else `status` is the worst component state (Failed < NotAvailable < Degraded < Pending < Progressing < Ready),
   Degraded instead when an infrastructure error leaves it not Ready; `Ready` True / `AllComponentsReady` when every
   component is Ready, else False with the first failing (Failed, NotAvailable, Degraded) component's reason and
   `Component <name> is not ready: <message>`, else `InfrastructureError` / `Infrastructure error - waiting for
   retry` on an infrastructure error, else `Progressing`;
3. `DependenciesReachable` False / `InfrastructureError` (`Cannot reach dependencies`) on an infrastructure error,
   and True / `Reachable` after one (nothing before); nothing is applied while it is False.

Upstream's grace period (an infrastructure error keeps a component's earlier condition status for 10 s) is not
kept: the model's image is read again on each reconcile and its registry client keeps what it read.

Events (`condition_events`), as upstream's pipeline records them on a status it writes: one per condition that is
new or whose status or reason changed, with the condition's reason and message. Warning for what upstream reports as
an error (a component Failed, NotAvailable or Degraded, `ConfigValid` or `DependenciesReachable` False, `Ready` False
for any reason but `Progressing`), Normal otherwise. Upstream repeats a Warning on every reconcile while the
condition holds; omectl records it once, on the transition, as for its other kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from omectl.core.aim.consumers import text
from omectl.core.aim.legacy.model_templates import (
    CLUSTER_SERVICE_TEMPLATES_READY,
    SERVICE_TEMPLATES_READY,
    ImageMetadata,
    is_custom_model,
    template_health,
)
from omectl.core.aim.legacy.status import ERROR_STATES, STATE_ORDER, LegacyState
from omectl.core.aim.resolution import CONFIG_VALID, REFERENCE_NOT_FOUND
from omectl.core.aim.status import (
    ALL_COMPONENTS_READY,
    ALL_COMPONENTS_READY_MESSAGE,
    PROGRESSING,
    PROGRESSING_MESSAGE,
    READY,
    condition,
)
from omectl.core.jsonish import as_mapping

ErrorKind = Literal["missing-reference", "infrastructure", "uncategorised"]
EventType = Literal["Normal", "Warning"]

DEPENDENCIES_REACHABLE: Final = "DependenciesReachable"
INFRASTRUCTURE_ERROR: Final = "InfrastructureError"
MISSING_REFERENCE_MESSAGE: Final = "Referenced resource not found"
INFRASTRUCTURE_MESSAGE: Final = "Infrastructure error - waiting for retry"
ERROR_KINDS: Final[Mapping[str, ErrorKind]] = {
    "SecretNotFound": "missing-reference",
    "SecretAccessFailed": "infrastructure",
}
"""The kind of error of each `ImageMetadataReady` reason upstream categorises; any other is uncategorised."""
WARNING_REASONS: Final = frozenset(
    (*ERROR_KINDS, "AllTemplatesFailed", "NoTemplatesAvailable", "SomeTemplatesDegraded", REFERENCE_NOT_FOUND)
)
"""The reasons of a component condition whose component is Failed, NotAvailable or Degraded (`ImageMetadata`'s
categorised errors, `template_health`'s failing aggregates): upstream reports them as errors."""
ERROR_WHEN_FALSE: Final = frozenset((CONFIG_VALID, DEPENDENCIES_REACHABLE))


@dataclass(frozen=True)
class ModelComponent:
    """One component of the model and how it stands (module docstring)."""

    name: str
    state: LegacyState
    reason: str
    message: str
    error: ErrorKind | None = None
    upstream: bool = False
    """A cluster model's component: not Ready counts as Pending."""

    @property
    def rolled_up(self) -> LegacyState:
        """The state the roll-up counts for it."""
        if self.state == "Ready" or self.state in ERROR_STATES or self.state == "Pending":
            return self.state
        return "Pending" if self.upstream else "Progressing"


@dataclass(frozen=True)
class ModelStatus:
    """`status.status` and the conditions (unstamped) of one reconcile, and whether it may apply the templates."""

    status: LegacyState
    conditions: tuple[dict[str, str], ...]
    applies: bool


def image_metadata_component(metadata: ImageMetadata, *, cluster: bool) -> ModelComponent:
    """The `ImageMetadata` component (module docstring)."""
    if metadata.source in ("invalid", "unreadable"):
        kind = ERROR_KINDS.get(metadata.reason, "uncategorised")
        state: LegacyState = "Progressing" if kind == "uncategorised" else "Degraded"
        message = metadata.error or f"the image's metadata could not be read: {metadata.reason}"
        return ModelComponent("ImageMetadata", state, metadata.reason, message, kind, cluster)
    if metadata.value is None:
        message = "Metadata extraction is disabled (spec.discovery.extractMetadata)"
        return ModelComponent("ImageMetadata", "Ready", "ImageFound", message, upstream=cluster)
    named = text(as_mapping(metadata.value.get("model")).get("canonicalName"))
    reason = "ImageMetadataFound" if named else "ImageFound"
    return ModelComponent("ImageMetadata", "Ready", reason, f"Image metadata from the {metadata.source}", None, cluster)


def templates_component(expects: bool | None, statuses: Iterable[Any], *, cluster: bool) -> ModelComponent:
    """The `(Cluster)ServiceTemplates` component: the aggregate of the model's templates' `status.status`."""
    health = template_health(expects, statuses)
    name = (CLUSTER_SERVICE_TEMPLATES_READY if cluster else SERVICE_TEMPLATES_READY).removesuffix("Ready")
    state: LegacyState = health.state if health.state in STATE_ORDER else "Progressing"
    return ModelComponent(name, state, health.reason, health.message, upstream=cluster)


def model_status(
    components: Sequence[ModelComponent], *, previous_conditions: Sequence[Mapping[str, Any]] = ()
) -> ModelStatus:
    """The model's own status part (module docstring): `DependenciesReachable` when due, the components'
    conditions in the order given, `ConfigValid` on a missing reference, then `Ready`."""
    errors = {c.error for c in components if c.error is not None}
    infrastructure = bool(errors & {"infrastructure", "uncategorised"})
    missing = "missing-reference" in errors
    conditions: list[dict[str, str]] = []
    if infrastructure:
        conditions.append(condition(DEPENDENCIES_REACHABLE, False, INFRASTRUCTURE_ERROR, "Cannot reach dependencies"))
    elif any(p.get("type") == DEPENDENCIES_REACHABLE for p in previous_conditions):
        conditions.append(condition(DEPENDENCIES_REACHABLE, True, "Reachable", "All dependencies are reachable"))
    conditions += [condition(f"{c.name}Ready", c.state == "Ready", c.reason, c.message) for c in components]
    if missing:
        conditions.append(condition(CONFIG_VALID, False, REFERENCE_NOT_FOUND, MISSING_REFERENCE_MESSAGE))
        conditions.append(condition(READY, False, REFERENCE_NOT_FOUND, MISSING_REFERENCE_MESSAGE))
        return ModelStatus("Failed", tuple(conditions), applies=False)
    worst: LegacyState = min((c.rolled_up for c in components), key=STATE_ORDER.index, default="Ready")
    failing = next((c for c in components if c.rolled_up in ERROR_STATES), None)
    if worst == "Ready":
        conditions.append(condition(READY, True, ALL_COMPONENTS_READY, ALL_COMPONENTS_READY_MESSAGE))
    elif failing is not None:
        message = f"Component {failing.name} is not ready: {failing.message}"
        conditions.append(condition(READY, False, failing.reason, message))
    elif infrastructure:
        conditions.append(condition(READY, False, INFRASTRUCTURE_ERROR, INFRASTRUCTURE_MESSAGE))
    else:
        conditions.append(condition(READY, False, PROGRESSING, PROGRESSING_MESSAGE))
    status: LegacyState = "Degraded" if infrastructure and worst != "Ready" else worst
    return ModelStatus(status, tuple(conditions), applies=not infrastructure)


def source_type(spec: Mapping[str, Any]) -> str:
    """`status.sourceType`: Custom for a custom model (its v1alpha1 `spec.modelSources`), else Image."""
    return "Custom" if is_custom_model(spec) else "Image"


@dataclass(frozen=True)
class ConditionEvent:
    """One event upstream records for a condition's transition (module docstring)."""

    type: EventType
    reason: str
    message: str


def condition_events(
    previous: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> list[ConditionEvent]:
    """The events of the model's status going from the `previous` conditions to the `current` ones, in the order of
    `current` (module docstring)."""
    before = {str(c.get("type")): c for c in previous}
    events = []
    for item in current:
        kind, status, reason = str(item.get("type")), str(item.get("status")), str(item.get("reason") or "")
        old = before.get(kind)
        if old is not None and (old.get("status"), old.get("reason")) == (status, reason):
            continue
        message = str(item.get("message") or "") or _default_message(kind, status, reason)
        events.append(ConditionEvent(_event_type(kind, status, reason), reason, message))
    return events


def _event_type(kind: str, status: str, reason: str) -> EventType:
    if status != "False":
        return "Normal"
    if kind in ERROR_WHEN_FALSE or (kind == READY and reason != PROGRESSING) or reason in WARNING_REASONS:
        return "Warning"
    return "Normal"


def _default_message(kind: str, status: str, reason: str) -> str:
    """Upstream's message for a condition without one: `<Component> is ready: <reason>`."""
    state = {"True": "is ready", "False": "is not ready"}.get(status, "status unknown")
    return f"{kind.removesuffix('Ready')} {state}: {reason}"
