"""`omectl rollout` without a hub: the FleetRuntime files of the clusters directory and the state `omectl run` keeps
of them (omectl.fleet.runtime_files, omectl.fleet.runtime_state; docs/fleet-rollouts.md, "Without a hub").

A FleetRuntime is read as the controller holds it, with the status it last wrote; one it has not read yet as its
file has it, and one it refused (`problems.json`) is not found, with the reason. A request (pause,
resume, promote, abort, rollback) goes to the state directory's `requests.json`, which the controller reads at its
next poll of the directory: the files stay as the operator wrote them. Reads YAML and JSON only: no client, no API
models.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omectl.cli.errors import CommandError
from omectl.cli.fleet_runtime_reads import newest_first, require_waves
from omectl.fleet.runtime_files import FleetRuntimeFiles
from omectl.fleet.runtime_state import FleetRuntimeState, with_requests

__all__ = ["FleetRuntimeDirectory"]


class FleetRuntimeDirectory:
    """The FleetRuntimes of the files in `files`, their state in `state`."""

    def __init__(self, files: Path, state: Path) -> None:
        self.files = files
        self.state = FleetRuntimeState(state)

    def get(self, name: str) -> dict[str, Any]:
        """The FleetRuntime `name` as the controller holds it, its status included; one it has not read yet as its
        file has it."""
        return self._read(name)[0]

    def _read(self, name: str) -> tuple[dict[str, Any], Mapping[str, Any]]:
        """The FleetRuntime, and its spec as its file has it now (as the controller last read it, when the file
        does not have it)."""
        scan = FleetRuntimeFiles(self.files).scan()
        found = scan.runtimes.get(name)
        held = self.state.read(name)
        if held is not None:
            spec = found.document.get("spec") if found is not None else (held.get("source") or {}).get("spec")
            return {k: v for k, v in held.items() if k != "source"}, spec or {}
        refused = [m for source, m in self.state.problems().items() if source.endswith(f": {name}")]
        if found is not None and not refused:
            return with_requests(found.document, self.state.requests(name)), found.document.get("spec") or {}
        unread = [m for m in scan.errors.values() if not scan.complete]
        why = (refused or unread or [""])[0]
        raise CommandError(f'fleetruntime "{name}" not found in {self.files}' + (f" ({why})" if why else ""))

    def revisions(self, name: str) -> list[dict[str, Any]]:
        """Its kept revisions, newest first (ControllerRevision-shaped, as with a hub)."""
        return newest_first(self.state.revisions(name))

    def steer(
        self,
        name: str,
        *,
        needs_waves: str,
        paused: bool | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        """Make a request: `paused` (pause, resume) holds until the file's own `spec.rollout.paused` changes;
        `annotations` are request annotations (a None value removes one)."""
        obj, spec = self._read(name)
        require_waves(obj, name, needs_waves)
        own = (spec.get("rollout") or {}).get("paused")

        def change(requests: dict[str, Any]) -> None:
            if paused is not None:
                requests["paused"] = {"value": paused, "specValue": own}
            if annotations:
                requests["annotations"] = {**(requests.get("annotations") or {}), **annotations}

        self.state.update_requests(name, change)
