"""What the two places `omectl rollout` finds FleetRuntimes in (a hub, `rollout.FleetRuntimeHub`; a clusters
directory, `rollout_files.FleetRuntimeDirectory`) check and order alike."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from omectl.cli.errors import CommandError

__all__ = ["newest_first", "require_waves"]


def require_waves(fleet_runtime: Mapping[str, Any], name: str, needs_waves: str) -> None:
    """A CommandError unless the FleetRuntime has `spec.rollout.waves` (`needs_waves`: what the command does)."""
    if not ((fleet_runtime.get("spec") or {}).get("rollout") or {}).get("waves"):
        raise CommandError(f"fleetruntime {name} has no spec.rollout.waves: nothing to {needs_waves}")


def newest_first(revisions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """ControllerRevisions, the highest `revision` first."""
    return sorted(revisions, key=lambda item: int(item.get("revision") or 0), reverse=True)
