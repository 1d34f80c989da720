"""Which runtime revision an InferenceService renders, and its `RuntimeDrifted` condition (the design's decision
12). Pure: the caller reads the revisions this names and passes them back.

- `spec.runtime.revision: <name>` renders that revision whatever `autoSync` says (`Pin.requested`);
- `autoSync: false` renders the revision the status records for this runtime, or, on the first reconcile (none
  recorded), the live one, which pins it (`Pin.pinned`);
- otherwise (`autoSync: true`, the default) the live merged spec, with `RuntimeDrifted=False` reason `AutoSync`.

A pinned or requested revision whose hash differs from the live one's is `RuntimeDrifted=True` reason
`RevisionMismatch`; the same hash is `RuntimeDrifted=False` reason `UpToDate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from omectl.core.jsonish import as_mapping
from omectl.core.ome.engine_status import drift_condition
from omectl.core.ome.revisions import Revision

__all__ = ["AUTOMATIC_SELECTION", "AUTO_SYNC", "Pin", "drift_from_live", "pin_of"]

AUTO_SYNC: Final[Mapping[str, str]] = MappingProxyType(
    drift_condition("False", "AutoSync", "the workload follows the live runtime")
)
AUTOMATIC_SELECTION: Final[Mapping[str, str]] = MappingProxyType(
    drift_condition("False", "AutoSync", "automatic selection follows the live runtime")
)


@dataclass(frozen=True, slots=True)
class Pin:
    """What an InferenceService asks of the revisions of its runtime."""

    requested: str | None
    """`spec.runtime.revision`: render that revision (missing: a `RuntimePinError`, the workload left alone)."""
    auto_sync: bool
    pinned: str | None
    """With `auto_sync` off: the revision the status records for this runtime (None: pin the live one now)."""

    @property
    def follows_live(self) -> bool:
        return not self.requested and self.auto_sync


def pin_of(isvc: Mapping[str, Any], runtime: str) -> Pin:
    """What `isvc`, rendered on `runtime`, asks of its revisions."""
    runtime_spec = as_mapping(as_mapping(isvc.get("spec")).get("runtime"))
    recorded = as_mapping(as_mapping(isvc.get("status")).get("runtime"))
    requested = runtime_spec.get("revision")
    pinned = recorded.get("revision") if recorded.get("name") == runtime else None
    return Pin(
        requested=requested if isinstance(requested, str) and requested else None,
        auto_sync=runtime_spec.get("autoSync", True) is not False,
        pinned=pinned if isinstance(pinned, str) and pinned else None,
    )


def drift_from_live(chosen: Revision, live: Revision) -> dict[str, str]:
    """The `RuntimeDrifted` condition of an InferenceService rendering `chosen` while its runtime is at `live`."""
    if chosen.hash != live.hash:
        message = f"pinned revision {chosen.name} differs from the live revision {live.name}"
        return drift_condition("True", "RevisionMismatch", message)
    return drift_condition("False", "UpToDate", f"pinned revision {chosen.name} is the live revision")
