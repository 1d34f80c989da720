"""The field managers omectl writes as: the `fieldManager` of each write, what `managedFields` shows for it.

Server-side apply takes ownership of fields per manager, so these names are part of the contract with a cluster:
renaming one leaves its fields owned by the old name.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FIELD_MANAGER", "FLEET_FIELD_MANAGER", "PLAN_FIELD_MANAGER", "ROLLOUT_FIELD_MANAGER"]

FIELD_MANAGER: Final = "omectl"
"""The controller in a member cluster: rendered children, runtime revisions, statuses, the webhook configuration."""

FLEET_FIELD_MANAGER: Final = "omectl-fleet"
"""The FleetRuntime controller: the runtime copies it applies to members, its revisions and status in the hub."""

PLAN_FIELD_MANAGER: Final = "omectl-plan"
"""`omectl runtime plan`'s server-side dry-run apply of each edited runtime (it writes nothing)."""

ROLLOUT_FIELD_MANAGER: Final = "omectl-rollout"
"""`omectl runtime rollout`: the InferenceService's pinned revision cleared and its rollout annotation set."""
