"""The pure part of applying FleetRuntimes (`fleet.omectl.io`) to member clusters: which clusters a placement selects,
what copy each gets, what to do with the copy found there, and the FleetRuntime's status roll-up.

No I/O here: `omectl.controller.fleet_runtimes` reads the hub and the members and calls these.

A member's copy is the template with two labels and one annotation added:
- `fleet.omectl.io/fleetruntime: <name>` marks the copy as that FleetRuntime's (only such copies are ever updated
  or deleted: a runtime of the same name without it is a user's, a per-cluster Conflict);
- `fleet.omectl.io/managed-by: omectl-fleet` lets one label selector find every copy;
- `fleet.omectl.io/revision: <N>` says which template revision the copy is.
Drift: the controller records each copy's `metadata.generation` after it applied it; a spec edit by anyone else
bumps the generation, so a copy at the current revision whose generation differs from the recorded one drifted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

FLEET_RUNTIME_LABEL: Final = "fleet.omectl.io/fleetruntime"
MANAGED_BY_LABEL: Final = "fleet.omectl.io/managed-by"
MANAGED_BY: Final = "omectl-fleet"
REVISION_ANNOTATION: Final = "fleet.omectl.io/revision"

Phase = Literal["Pending", "Applied", "Conflict", "Drifted", "Failed"]
PENDING: Final = "Pending"
APPLIED: Final = "Applied"
CONFLICT: Final = "Conflict"
DRIFTED: Final = "Drifted"
FAILED: Final = "Failed"


# --- placement ---------------------------------------------------------------------------------------------------


def _requirement_met(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = requirement.get("key", "")
    operator = requirement.get("operator")
    values = set(requirement.get("values") or ())
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an unknown operator selects nothing, as Kubernetes refuses such a selector


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects `labels`; an empty one selects all."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement_met(r, labels) for r in selector.get("matchExpressions") or ())


def placed_clusters(placement: Mapping[str, Any] | None, clusters: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The registered clusters (name -> registration labels) a placement selects, sorted: those it names and those
    its selector matches. Without either, none. A named cluster that is not registered is not placed."""
    placement = placement or {}
    named = set(placement.get("clusters") or ())
    selector = placement.get("clusterSelector")
    out = []
    for name, labels in clusters.items():
        if name in named or (selector is not None and selector_matches(selector, labels)):
            out.append(name)
    return sorted(out)


# --- revisions and copies ----------------------------------------------------------------------------------------


def template_hash(spec: Mapping[str, Any]) -> str:
    """A short stable hash of what the copies are made of: the template and the namespaces."""
    material = {"template": spec.get("template"), "namespaces": sorted(spec.get("namespaces") or ())}
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return digest[:10]


def next_revision(revisions: Iterable[int]) -> int:
    return max(revisions, default=0) + 1


def revisions_to_prune(revisions: Mapping[str, int], keep: int, current: str) -> list[str]:
    """The ControllerRevision names (name -> revision number) beyond the newest `keep`; never `current`."""
    ordered = sorted(revisions, key=lambda n: revisions[n], reverse=True)
    return sorted(n for n in ordered[keep:] if n != current)


def copy_targets(spec: Mapping[str, Any]) -> list[str]:
    """The namespaces a copy goes to in each cluster: `spec.namespaces` for a ServingRuntime, `[""]` otherwise."""
    if (spec.get("template") or {}).get("kind") == "ServingRuntime":
        return sorted(set(spec.get("namespaces") or ()))
    return [""]


def desired_copy(template: Mapping[str, Any], owner: str, revision: int, namespace: str) -> dict[str, Any]:
    """The object applied to a member: the template's apiVersion, kind, name, labels, annotations and spec, marked
    as `owner`'s copy at `revision`."""
    meta = template.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), FLEET_RUNTIME_LABEL: owner, MANAGED_BY_LABEL: MANAGED_BY}
    annotations = {**(meta.get("annotations") or {}), REVISION_ANNOTATION: str(revision)}
    metadata: dict[str, Any] = {"name": meta["name"], "labels": labels, "annotations": annotations}
    if namespace:
        metadata["namespace"] = namespace
    body: dict[str, Any] = {"apiVersion": template["apiVersion"], "kind": template["kind"], "metadata": metadata}
    if template.get("spec") is not None:
        body["spec"] = template["spec"]
    return body


def copy_owner(obj: Mapping[str, Any]) -> str | None:
    """The FleetRuntime a member object is a copy of, if any."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(FLEET_RUNTIME_LABEL)


def copy_revision(obj: Mapping[str, Any]) -> int | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


# --- what to do with what is found -------------------------------------------------------------------------------

Action = Literal["apply", "correct", "conflict", "drifted", "in-sync"]


@dataclass(frozen=True)
class Decision:
    action: Action
    message: str = ""


def decide(
    live: Mapping[str, Any] | None,
    *,
    owner: str,
    revision: int,
    recorded_generation: int | None,
    recorded_revision: int | None,
    drift_policy: str,
) -> Decision:
    """What to do in one cluster for one copy: `live` is the object of the template's kind and name found there
    (None: absent); `recorded_*` are what the FleetRuntime's status says the controller left there."""
    if live is None:
        return Decision("apply")
    found_owner = copy_owner(live)
    if found_owner != owner:
        meta = live.get("metadata") or {}
        where = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
        whose = f"FleetRuntime {found_owner}'s copy" if found_owner else "not made by this FleetRuntime"
        return Decision("conflict", f"{live.get('kind')} {where}{meta.get('name')} exists and is {whose}")
    if copy_revision(live) != revision:
        return Decision("apply")
    generation = (live.get("metadata") or {}).get("generation")
    if recorded_revision != revision or recorded_generation is None or generation == recorded_generation:
        return Decision("in-sync")
    if drift_policy == "Correct":
        return Decision("correct", f"edited in the cluster (generation {recorded_generation} -> {generation})")
    return Decision(
        "drifted", f"edited in the cluster (generation {recorded_generation} -> {generation}); driftPolicy is Report"
    )


# --- status ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterResult:
    """The outcome in one cluster for one copy, or (`combine`) for all its copies together."""

    name: str
    phase: Phase
    revision: int | None = None
    generations: Mapping[str, int] | None = None
    """namespace ("" for a cluster-scoped copy) -> the copy's metadata.generation as the controller left it."""
    message: str = ""


_SEVERITY: Final = {APPLIED: 0, PENDING: 1, DRIFTED: 2, CONFLICT: 3, FAILED: 4}


def combine(name: str, results: Sequence[ClusterResult]) -> ClusterResult:
    """One cluster's result from its copies': the worst phase and its messages joined; the revision when every copy
    is at the same one; every copy's generation."""
    if not results:
        return ClusterResult(name, PENDING, message="no copy to apply")
    worst = max(results, key=lambda r: _SEVERITY[r.phase])
    messages = [r.message for r in results if r.phase == worst.phase and r.message]
    revisions = {r.revision for r in results}
    generations: dict[str, int] = {}
    for r in results:
        generations.update(r.generations or {})
    revision = revisions.pop() if len(revisions) == 1 else None
    return ClusterResult(name, worst.phase, revision, generations or None, "; ".join(messages))


@dataclass(frozen=True)
class RollUp:
    phase: str
    placed: int
    applied: int
    ready: bool
    reason: str
    message: str


def roll_up(results: Sequence[ClusterResult], revision: int) -> RollUp:
    """The FleetRuntime's phase and Ready condition from its clusters' results."""
    placed = len(results)
    applied = sum(1 for r in results if r.phase == APPLIED and r.revision == revision)
    counts = {phase: sum(1 for r in results if r.phase == phase) for phase in _SEVERITY}
    if placed == 0:
        return RollUp("Pending", 0, 0, False, "NoClusterPlaced", "the placement selects no registered cluster")
    if applied == placed:
        return RollUp(
            "Succeeded", placed, applied, True, "Applied", f"revision {revision} applied to {placed} clusters"
        )
    bad = [p for p in (FAILED, CONFLICT, DRIFTED) if counts[p]]
    summary = ", ".join(f"{counts[p]} {p}" for p in (FAILED, CONFLICT, DRIFTED, PENDING) if counts[p])
    message = f"revision {revision} applied to {applied} of {placed} clusters ({summary})"
    if bad:
        return RollUp("Degraded", placed, applied, False, bad[0], message)
    return RollUp("Progressing", placed, applied, False, "Progressing", message)
