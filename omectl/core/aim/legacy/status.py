"""The status of upstream's legacy kinds (AIMServiceTemplate, AIMClusterServiceTemplate, AIMTemplateCache) as
upstream's state engine writes it: metav1 conditions, one `<Component>Ready` per component, `ConfigValid`, `Ready`,
and `status.status` in `Pending|Progressing|Ready|Degraded|Failed|NotAvailable`.

Components, each in one of those states (`Component`): `RuntimeConfig` first (`runtime_config_component`, from
omectl's resolution, the reasons and messages every AIM consumer of omectl publishes), then the kind's own (a
template's `Model`, `GPU`, `DiscoveryJob`; a cache's `ServiceTemplate`, `Artifacts`). A component's condition is True
iff it is `Ready`.

- A component that names a missing object (`missing_reference`: an explicit runtime config, the template's model,
  the cache's template) fails the object: `ConfigValid=False` and `Ready=False` with reason `ReferenceNotFound` and
  that component's message, `status: Failed`, and nothing is applied.
- Otherwise `status` is the worst component state, worst first: Failed < NotAvailable < Degraded < Pending <
  Progressing < Ready. `Ready` is True / `AllComponentsReady` when every component is Ready; False with the worst
  failing component's reason and `Component <name> is not ready: <message>` when one is Failed, NotAvailable or
  Degraded; else False / `Progressing`.
- `ConfigValid` is written only when False, then kept True (`ConfigurationValid`) once that is resolved.

Every condition has a non-empty reason and message (upstream's CRD requires them); the controller stamps
`lastTransitionTime` (kept while a condition's status is unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from omectl.core.aim.resolution import (
    CONFIG_VALID,
    EXPLICIT_MISSING,
    REFERENCE_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    Resolution,
)
from omectl.core.aim.status import (
    ALL_COMPONENTS_READY,
    ALL_COMPONENTS_READY_MESSAGE,
    CONFIGURATION_VALID,
    CONFIGURATION_VALID_MESSAGE,
    PROGRESSING,
    PROGRESSING_MESSAGE,
    READY,
    RUNTIME_CONFIG,
    condition,
)

LegacyState = Literal["Failed", "NotAvailable", "Degraded", "Pending", "Progressing", "Ready"]
STATE_ORDER: Final[tuple[LegacyState, ...]] = ("Failed", "NotAvailable", "Degraded", "Pending", "Progressing", "Ready")
"""Worst first."""
ERROR_STATES: Final = frozenset(("Failed", "NotAvailable", "Degraded"))


@dataclass(frozen=True)
class Component:
    """One thing the object depends on or makes, and how it stands."""

    name: str
    state: LegacyState
    reason: str
    message: str
    missing_reference: bool = False
    """It names an object that does not exist: the object fails with `ReferenceNotFound`."""

    @property
    def condition_type(self) -> str:
        return f"{self.name}Ready"


@dataclass(frozen=True)
class LegacyStatus:
    """`status.status` and the conditions (unstamped) of one reconcile."""

    status: LegacyState
    conditions: tuple[dict[str, str], ...]

    @property
    def failed_on_reference(self) -> bool:
        """Whether a missing reference failed it (nothing may be applied)."""
        return any(c["type"] == CONFIG_VALID and c["status"] == "False" for c in self.conditions)


def runtime_config_component(resolution: Resolution) -> Component:
    """The `RuntimeConfig` component, from omectl's resolution: Ready (`RuntimeConfigResolved`, or
    `DefaultConfigNotFound` when the implicit `default` is missing), or a missing reference (`ReferenceNotFound`,
    `RuntimeConfig <name> not found`)."""
    ready = next(c for c in resolution.conditions if c["type"] == RUNTIME_CONFIG_READY)
    if resolution.outcome == EXPLICIT_MISSING:
        return Component(RUNTIME_CONFIG, "Failed", REFERENCE_NOT_FOUND, ready["message"], missing_reference=True)
    return Component(RUNTIME_CONFIG, "Ready", ready["reason"], ready["message"])


def legacy_status(
    components: Sequence[Component],
    *,
    extra_conditions: Sequence[Mapping[str, str]] = (),
    previous_conditions: Sequence[Mapping[str, Any]] = (),
) -> LegacyStatus:
    """The object's status (module docstring): component conditions in the order given, the kind's
    `extra_conditions` (e.g. a template's `Discovered`), `ConfigValid` when due, then `Ready`."""
    conditions = [condition(c.condition_type, c.state == "Ready", c.reason, _text(c.message, c)) for c in components]
    conditions += [dict(c) for c in extra_conditions]
    missing = next((c for c in components if c.missing_reference), None)
    if missing is not None:
        message = _text(missing.message, missing)
        conditions.append(condition(CONFIG_VALID, False, REFERENCE_NOT_FOUND, message))
        conditions.append(condition(READY, False, REFERENCE_NOT_FOUND, message))
        return LegacyStatus("Failed", tuple(conditions))
    if any(p.get("type") == CONFIG_VALID for p in previous_conditions):
        conditions.append(condition(CONFIG_VALID, True, CONFIGURATION_VALID, CONFIGURATION_VALID_MESSAGE))
    status: LegacyState = min((c.state for c in components), key=STATE_ORDER.index, default="Ready")
    if status == "Ready":
        conditions.append(condition(READY, True, ALL_COMPONENTS_READY, ALL_COMPONENTS_READY_MESSAGE))
    elif status in ERROR_STATES:
        worst = next(c for c in components if c.state == status)
        message = f"Component {worst.name} is not ready: {_text(worst.message, worst)}"
        conditions.append(condition(READY, False, worst.reason, message))
    else:
        conditions.append(condition(READY, False, PROGRESSING, PROGRESSING_MESSAGE))
    return LegacyStatus(status, tuple(conditions))


def _text(message: str, component: Component) -> str:
    """A condition's message: upstream's CRD requires one, so an empty message says the state."""
    return message or f"{component.name} is {component.state}"
