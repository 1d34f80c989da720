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

import datetime
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

FLEET_RUNTIME_LABEL: Final = "fleet.omectl.io/fleetruntime"
MANAGED_BY_LABEL: Final = "fleet.omectl.io/managed-by"
MANAGED_BY: Final = "omectl-fleet"
REVISION_ANNOTATION: Final = "fleet.omectl.io/revision"
PROMOTE_ANNOTATION: Final = "fleet.omectl.io/promote"
ABORT_ANNOTATION: Final = "fleet.omectl.io/abort"
ROLLBACK_ANNOTATION: Final = "fleet.omectl.io/rollback"
ROLLBACK_TO_ANNOTATION: Final = "fleet.omectl.io/rollback-to"
"""Requests on a FleetRuntime (`omectl rollout promote|abort|rollback`): each annotation's value is a token; a value
the controller has not acted on yet is a new request, acted on once (the handled values go to `status.rollout`).
`rollback-to` is read with a new `rollback` token: the revision to go back to (unset: the stable one)."""
REQUEST_ANNOTATIONS: Final = {
    "promote": PROMOTE_ANNOTATION,
    "abort": ABORT_ANNOTATION,
    "rollback": ROLLBACK_ANNOTATION,
}

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
    parts = [f"{counts[p]} {p}" for p in (FAILED, CONFLICT, DRIFTED, PENDING) if counts[p]]
    if counts[APPLIED] > applied:  # a later wave's, or rolled back
        parts.append(f"{counts[APPLIED] - applied} at another revision")
    summary = ", ".join(parts)
    message = f"revision {revision} applied to {applied} of {placed} clusters ({summary})"
    if bad:
        return RollUp("Degraded", placed, applied, False, bad[0], message)
    return RollUp("Progressing", placed, applied, False, "Progressing", message)


# --- waves -------------------------------------------------------------------------------------------------------
#
# With `spec.rollout.waves`, a new revision goes to one wave of clusters at a time. The rollout's state lives in the
# FleetRuntime's status (`status.rollout`, `RolloutState`), so a restarted controller goes on where it was:
#
#   a new revision ──▶ wave 1 Progressing ──(every engine it reaches at the revision and Ready)──▶ Soaking
#        ▲               │  ▲ (an engine falls back: Progressing again, the soak starts over)        │ soakSeconds
#        │               │  └──────────────────────────────────────────────────────────────────────┘
#        │               ├─ progressDeadlineSeconds passed ──▶ Failed ──(autoRollback)──▶ RolledBack
#        │               ├─ spec.rollout.paused ──▶ Paused (held; the deadline starts again on resume)
#        │               ├─ a promote request: the gate (and soak) skipped, the next wave starts
#        │               └─ an abort request ──▶ Aborted (the changed clusters keep the revision)
#        │          wave 2 ... the last wave passes ──▶ Succeeded
#        ├─ a rollback request (any phase but Pending) ──▶ RolledBack (the stable revision, or `rollback-to`)
#        └─ a template edit in any phase starts again from wave 1 with the newest revision.
#
# A wave's gate tolerates `maxUnavailableClusters` of its clusters not passing (Rancher Fleet's maxUnavailable):
# the wave passes when every other cluster does; the tolerated ones keep being applied in later reconciles.
#
# The clusters of the waves up to the current one get the revision being rolled out; those of later waves keep the
# copy they have (the previous revision, or none). After a rollback the changed clusters get the stable revision:
# the one the last rollout that Succeeded left everywhere.

WavePhase = Literal["Pending", "Progressing", "Soaking", "Succeeded", "Failed", "RolledBack", "Paused", "Aborted"]
PROGRESSING: Final = "Progressing"
SOAKING: Final = "Soaking"
SUCCEEDED: Final = "Succeeded"
ROLLED_BACK: Final = "RolledBack"
PAUSED: Final = "Paused"
ROLLOUT_FAILED: Final = "Failed"
ABORTED: Final = "Aborted"
ACTIVE_PHASES: Final = frozenset({PROGRESSING, SOAKING, PAUSED})
DONE_PHASES: Final = frozenset({SUCCEEDED, ROLLOUT_FAILED, ROLLED_BACK, ABORTED})
REMAINING_WAVE: Final = "remaining"
"""The name of the implicit last wave: the placed clusters no wave of `spec.rollout.waves` takes."""
DEFAULT_PROGRESS_DEADLINE_SECONDS: Final = 600  # a wave without one (a Deployment's default)


@dataclass(frozen=True)
class WavePlan:
    """One wave as it applies to the clusters placed now."""

    name: str
    clusters: tuple[str, ...]
    soak_seconds: float = 0
    progress_deadline_seconds: float = DEFAULT_PROGRESS_DEADLINE_SECONDS


def plan_waves(
    waves: Sequence[Mapping[str, Any]], placed: Sequence[str], labels: Mapping[str, Mapping[str, str]]
) -> list[WavePlan]:
    """The waves' clusters, in order: each takes, of the placed clusters no earlier wave took, those its
    `clusters` names or its `clusterSelector` selects, or (`percent`) that share of them rounded up, by name.
    Clusters no wave takes form one more wave after the last, `remaining` (`remaining-<n>` if a wave has that
    name: the status lists waves by name)."""
    left = sorted(placed)
    plans = []
    for index, wave in enumerate(waves):
        if wave.get("percent") is not None:
            chosen = left[: math.ceil(len(left) * int(wave["percent"]) / 100)]
        else:
            named = set(wave.get("clusters") or ())
            selector = wave.get("clusterSelector")
            chosen = [
                c
                for c in left
                if c in named or (selector is not None and selector_matches(selector, labels.get(c, {})))
            ]
        left = [c for c in left if c not in chosen]
        deadline = wave.get("progressDeadlineSeconds") or DEFAULT_PROGRESS_DEADLINE_SECONDS
        name = str(wave.get("name") or f"wave-{index + 1}")
        plans.append(WavePlan(name, tuple(chosen), float(wave.get("soakSeconds") or 0), float(deadline)))
    if left:
        taken = {plan.name for plan in plans}
        name = REMAINING_WAVE if REMAINING_WAVE not in taken else f"{REMAINING_WAVE}-{len(plans) + 1}"
        plans.append(WavePlan(name, tuple(left)))
    return plans


# --- the gate ----------------------------------------------------------------------------------------------------

EngineState = Literal["pinned", "behind", "updated", "ready"]


def engine_state(isvc: Mapping[str, Any], expected_hash: str | None, problem: str = "") -> tuple[EngineState, str]:
    """Where one InferenceService the change reaches stands: `pinned` (`spec.runtime.autoSync: false` or a pinned
    `spec.runtime.revision`: never moved, never holds the gate), `behind` (its status does not record the merged
    runtime `expected_hash` yet; a RuntimeValidationError or a broken chain keeps it there, `problem` says which),
    `updated` (at it, but not Ready, or Ready while a component's workload has not rolled the revision out:
    `latestReadyRevision` behind `latestCreatedRevision`, omectl.core.ome.engine_status) or `ready`; and why it is
    not ready."""
    spec_runtime = (isvc.get("spec") or {}).get("runtime") or {}
    if spec_runtime.get("autoSync") is False or spec_runtime.get("revision"):
        return "pinned", ""
    status = isvc.get("status") or {}
    if problem or expected_hash is None:
        return "behind", problem or "its runtime cannot be resolved"
    recorded = (status.get("runtime") or {}).get("hash")
    if recorded != expected_hash:
        return "behind", f"not at the new runtime revision yet (its status records {recorded or 'none'})"
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        why = (ready or {}).get("message") or (ready or {}).get("reason") or "no Ready condition yet"
        return "updated", f"not Ready: {why}"
    for component, entry in sorted((status.get("components") or {}).items()):
        created = (entry or {}).get("latestCreatedRevision")
        if created and (entry or {}).get("latestReadyRevision") != created:
            # Ready (it serves) but its workload still runs pods of an older revision beside the new one's, which
            # are not available (an image that cannot be pulled, say): on a real cluster `Available` stays True
            return "updated", f"not rolled out: its {component} has not made revision {created} available yet"
    return "ready", ""


@dataclass(frozen=True)
class Engines:
    """The InferenceServices a change reaches in a cluster (or a wave): how many, and how far they are."""

    reached: int = 0
    updated: int = 0
    """At the new runtime revision (Ready or not)."""
    ready: int = 0
    """At the new runtime revision and Ready."""
    pinned: int = 0
    """Pinned ones (reported, never moved; they do not hold the gate)."""
    waiting: tuple[str, ...] = ()
    """`namespace/name: why` of those that hold the gate."""

    @classmethod
    def of(cls, states: Sequence[tuple[str, EngineState, str]]) -> Engines:
        """From `(namespace/name, state, why)` per InferenceService."""
        return cls(
            reached=len(states),
            updated=sum(1 for _, s, _ in states if s in ("updated", "ready")),
            ready=sum(1 for _, s, _ in states if s == "ready"),
            pinned=sum(1 for _, s, _ in states if s == "pinned"),
            waiting=tuple(f"{name}: {why}" for name, s, why in states if s in ("behind", "updated")),
        )

    def __add__(self, other: Engines) -> Engines:
        return Engines(
            self.reached + other.reached,
            self.updated + other.updated,
            self.ready + other.ready,
            self.pinned + other.pinned,
            self.waiting + other.waiting,
        )

    def to_dict(self) -> dict[str, int]:
        return {"reached": self.reached, "updated": self.updated, "ready": self.ready, "pinned": self.pinned}


@dataclass(frozen=True)
class ClusterGate:
    """One cluster of the current wave: whether its copies are at the wave's revision (applied, and seen so in its
    caches), and its engines."""

    name: str
    at_revision: bool
    engines: Engines = Engines()
    message: str = ""
    """Why the copies are not at the revision."""

    @property
    def passing(self) -> bool:
        return self.at_revision and not self.engines.waiting

    @property
    def why(self) -> str:
        if not self.at_revision:
            return f"{self.name}: {self.message or 'the copy is not at the revision yet'}"
        return f"{self.name}: {self.engines.waiting[0]}" if self.engines.waiting else ""


@dataclass(frozen=True)
class RolloutState:
    """`status.rollout`: which revision is being rolled out, from which stable one, and where it is."""

    revision: int
    hash: str
    stable_revision: int | None
    """The revision to roll back to: what the last rollout that Succeeded left everywhere (None: none did)."""
    stable_hash: str | None
    wave: int
    """Index of the current wave in the plan (the last one once Succeeded)."""
    phase: str
    wave_start: float
    """When the current wave started (or resumed), in the clock's seconds since the epoch."""
    soak_start: float | None = None
    message: str = ""
    requests: tuple[tuple[str, str], ...] = ()
    """(kind, token) of the last request of each kind acted on (`REQUEST_ANNOTATIONS`), carried across rollouts."""

    def handled(self, kind: str) -> str | None:
        return dict(self.requests).get(kind)

    def with_handled(self, kind: str, token: str) -> RolloutState:
        return replace(self, requests=tuple(sorted({**dict(self.requests), kind: token}.items())))

    def to_dict(self, plan: Sequence[WavePlan]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "revision": self.revision,
            "hash": self.hash,
            "wave": plan[self.wave].name if self.wave < len(plan) else "",
            "waveIndex": self.wave,
            "phase": self.phase,
            "waveStartTime": _timestamp(self.wave_start),
        }
        if self.stable_revision is not None:
            out["stableRevision"] = self.stable_revision
            out["stableHash"] = self.stable_hash
        if self.soak_start is not None:
            out["soakStartTime"] = _timestamp(self.soak_start)
        if self.message:
            out["message"] = self.message
        if self.requests:
            out["requests"] = dict(self.requests)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RolloutState | None:
        try:
            return cls(
                revision=int(data["revision"]),
                hash=str(data.get("hash") or ""),
                stable_revision=int(data["stableRevision"]) if data.get("stableRevision") is not None else None,
                stable_hash=data.get("stableHash"),
                wave=int(data.get("waveIndex") or 0),
                phase=str(data["phase"]),
                wave_start=_parse_timestamp(str(data["waveStartTime"])),
                soak_start=_parse_timestamp(str(data["soakStartTime"])) if data.get("soakStartTime") else None,
                message=str(data.get("message") or ""),
                requests=tuple(sorted((str(k), str(v)) for k, v in (data.get("requests") or {}).items())),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(int(seconds), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_timestamp(value: str) -> float:
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC).timestamp()


Event = tuple[Literal["Normal", "Warning"], str, str]


def start_rollout(
    old: RolloutState | None,
    revision: int,
    digest: str,
    now: float,
    *,
    settled: tuple[int, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> tuple[RolloutState, list[Event]]:
    """A rollout of `revision` from wave 1. The stable revision: the old rollout's when it Succeeded, else the one
    it had; without a rollout yet, `settled` (the revision every cluster had, when the status says so). The
    requests acted on are the old rollout's; without one, those in `annotations` now count as acted on (a request
    is for a rollout under way, not for one that had not started)."""
    stable: tuple[int | None, str | None]
    if old is not None:
        stable = (old.revision, old.hash) if old.phase == SUCCEEDED else (old.stable_revision, old.stable_hash)
    else:
        stable = settled or (None, None)
    if old is not None and old.phase in ACTIVE_PHASES:
        events: list[Event] = [
            (
                "Normal",
                "RolloutRestarted",
                f"revision {revision} replaces revision {old.revision} mid-rollout: starting again from wave 1",
            )
        ]
    else:
        events = [("Normal", "RolloutStarted", f"rolling out revision {revision} from wave 1")]
    requests = old.requests if old is not None else request_tokens(annotations or {})
    state = RolloutState(revision, digest, stable[0], stable[1], 0, PROGRESSING, now, requests=requests)
    return state, events


@dataclass(frozen=True)
class Step:
    state: RolloutState
    events: list[Event]
    roll_back: bool = False
    """The gate failed under autoRollback: re-apply the stable revision to the changed clusters, then RolledBack."""
    wake_in: float | None = None
    """Seconds until the state can change by time alone (the soak's end or the deadline)."""
    advanced: bool = False
    """A wave passed: the next one's clusters are to be applied now."""


def step(
    state: RolloutState,
    plan: Sequence[WavePlan],
    gates: Sequence[ClusterGate],
    now: float,
    *,
    paused: bool,
    auto_rollback: bool,
    max_unavailable: int = 0,
    promote: bool = False,
) -> Step:
    """The rollout's next state from the current wave's gates (one per cluster of the wave): up to
    `max_unavailable` of them may fail while the wave passes; `promote` passes the wave now (a promote request;
    the caller refuses one while paused)."""
    if state.phase in DONE_PHASES:
        return Step(state, [])
    if not plan:
        return Step(replace(state, phase=SUCCEEDED, message="no cluster placed"), [])
    wave = plan[min(state.wave, len(plan) - 1)]
    position = f"wave {state.wave + 1} ({wave.name})"
    if paused:
        if state.phase == PAUSED:
            return Step(state, [])
        message = f"paused at {position}"
        return Step(replace(state, phase=PAUSED, soak_start=None, message=message), [("Normal", "Paused", message)])
    events: list[Event] = []
    if state.phase == PAUSED:  # resumed: the wave's deadline and soak start again
        state = replace(state, phase=PROGRESSING, wave_start=now, soak_start=None)
        events.append(("Normal", "Resumed", f"resumed at {position}"))
    failing = [g for g in gates if not g.passing]
    if promote:
        events.append(("Normal", "Promoted", f"{position} promoted at revision {state.revision}: its gate skipped"))
    elif len(failing) <= max_unavailable:
        failing = []
    if not failing or promote:
        soak_start = state.soak_start if state.soak_start is not None else now
        if now - soak_start < wave.soak_seconds and not promote:
            left = wave.soak_seconds - (now - soak_start)
            message = f"{position}: every engine ready at revision {state.revision}; soaking for {wave.soak_seconds:g}s"
            if state.phase != SOAKING:
                events.append(("Normal", "Soaking", message))
            return Step(replace(state, phase=SOAKING, soak_start=soak_start, message=message), events, wake_in=left)
        events.append(("Normal", "WaveSucceeded", f"{position} passed its gate at revision {state.revision}"))
        if state.wave + 1 >= len(plan):
            message = f"revision {state.revision} rolled out to every wave"
            events.append(("Normal", "RolloutSucceeded", message))
            return Step(replace(state, phase=SUCCEEDED, soak_start=None, message=message), events)
        nxt = plan[state.wave + 1]
        message = f"wave {state.wave + 2} ({nxt.name}) started at revision {state.revision}"
        events.append(("Normal", "WaveStarted", message))
        advanced = replace(
            state, wave=state.wave + 1, phase=PROGRESSING, wave_start=now, soak_start=None, message=message
        )
        return Step(advanced, events, advanced=True)
    why = failing[0].why
    if max_unavailable:
        why = f"{why} ({len(failing)} of {len(gates)} clusters not passing, maxUnavailableClusters {max_unavailable})"
    elapsed = now - state.wave_start
    if elapsed >= wave.progress_deadline_seconds:
        message = (
            f"{position} did not pass its gate within {wave.progress_deadline_seconds:g}s "
            f"(progressDeadlineSeconds): {why}"
        )
        events.append(("Warning", "WaveFailed", message))
        failed = replace(state, phase=ROLLOUT_FAILED, soak_start=None, message=message)
        if auto_rollback and state.stable_revision is not None:
            return Step(failed, events, roll_back=True)
        if auto_rollback:
            failed = replace(failed, message=f"{message}; no earlier revision to roll back to")
        return Step(failed, events)
    if state.phase == SOAKING:
        events.append(("Warning", "SoakInterrupted", f"{position}: {why}; the soak starts over"))
    message = f"{position} at revision {state.revision}: waiting for {why}"
    left = wave.progress_deadline_seconds - elapsed
    return Step(replace(state, phase=PROGRESSING, soak_start=None, message=message), events, wake_in=left)


def due_clusters(state: RolloutState, plan: Sequence[WavePlan]) -> list[str]:
    """The clusters the rollout has reached: those of the waves up to the current one (every wave once
    Succeeded). They hold the rollout's revision, or after a rollback the stable one."""
    last = len(plan) - 1 if state.phase == SUCCEEDED else state.wave
    return [c for wave in plan[: last + 1] for c in wave.clusters]


def wave_phases(state: RolloutState, plan: Sequence[WavePlan]) -> list[str]:
    """Each wave's phase: the passed ones Succeeded, the current one the rollout's phase, later ones Pending;
    after a rollback every wave it reached is RolledBack."""
    phases = []
    for index in range(len(plan)):
        if state.phase == SUCCEEDED or index < state.wave:
            phases.append(ROLLED_BACK if state.phase == ROLLED_BACK else SUCCEEDED)
        elif index == state.wave:
            phases.append(state.phase)
        else:
            phases.append(PENDING)
    return phases


# --- requests ----------------------------------------------------------------------------------------------------


def max_unavailable(value: int | str | None, clusters: int) -> int:
    """`maxUnavailableClusters` as a count of a wave's `clusters`: a number, or a percentage of them rounded down
    (as a Deployment's maxUnavailable is); 0 when unset or not a number."""
    if value is None:
        return 0
    text = str(value).strip()
    try:
        if text.endswith("%"):
            return max(0, math.floor(clusters * int(text[:-1]) / 100))
        return max(0, int(text))
    except ValueError:
        return 0


@dataclass(frozen=True)
class Request:
    """A request read from the FleetRuntime's annotations that the rollout has not acted on yet."""

    kind: Literal["promote", "abort", "rollback"]
    token: str
    to: int | None = None
    """For a rollback: the revision `rollback-to` names (None: the stable revision)."""
    problem: str = ""
    """Why it cannot be read (a `rollback-to` that is not a revision number)."""


def request_tokens(annotations: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The (kind, token) of each request annotation present (`RolloutState.requests`' form)."""
    return tuple(sorted((k, annotations[a]) for k, a in REQUEST_ANNOTATIONS.items() if annotations.get(a)))


def pending_requests(annotations: Mapping[str, str], state: RolloutState) -> list[Request]:
    """The requests whose token differs from the last one acted on, in a fixed order: abort, rollback, promote (a
    rollback after an abort is meant; a promote after either finds the rollout stopped)."""
    out: list[Request] = []
    for kind in ("abort", "rollback", "promote"):
        token = annotations.get(REQUEST_ANNOTATIONS[kind])
        if not token or token == state.handled(kind):
            continue
        if kind != "rollback":
            out.append(Request(kind, token))
            continue
        to = annotations.get(ROLLBACK_TO_ANNOTATION)
        if not to:
            out.append(Request("rollback", token))
        elif to.strip().isdigit() and int(to) > 0:
            out.append(Request("rollback", token, int(to)))
        else:
            out.append(Request("rollback", token, problem=f"{ROLLBACK_TO_ANNOTATION} {to!r} is not a revision number"))
    return out


def _refused(state: RolloutState, request: Request, message: str) -> tuple[RolloutState, list[Event], bool]:
    return state.with_handled(request.kind, request.token), [("Warning", "RequestRefused", message)], False


def act_on(
    state: RolloutState,
    plan: Sequence[WavePlan],
    request: Request,
    *,
    paused: bool,
    target: tuple[int, str] | None = None,
) -> tuple[RolloutState, list[Event], bool]:
    """The rollout after an abort or a rollback request, its events, and whether the changed clusters are to get
    the rollback's revision now: `target`, the (number, hash) of the revision `request.to` names, or of the stable
    one without it; None when that revision is no longer kept. A promote is only checked here (`step` acts on
    it): True when it may go on. Every request is marked handled, a refused one with a Warning event."""
    position = f"wave {state.wave + 1} ({plan[min(state.wave, len(plan) - 1)].name})" if plan else "no wave"
    if request.kind == "promote":
        if state.phase in DONE_PHASES:
            return _refused(
                state, request, f"promote refused: the rollout of revision {state.revision} is {state.phase}"
            )
        if paused:
            return _refused(state, request, f"promote refused: the rollout is paused at {position}; resume it first")
        return state.with_handled(request.kind, request.token), [], True
    if request.kind == "abort":
        if state.phase in DONE_PHASES:
            return _refused(state, request, f"abort refused: the rollout of revision {state.revision} is {state.phase}")
        reached = "wave 1" if state.wave == 0 else f"waves 1-{state.wave + 1}"
        message = (
            f"aborted at {position}: the clusters of {reached} keep revision {state.revision}, "
            "later waves keep what they had"
        )
        aborted = replace(state, phase=ABORTED, soak_start=None, message=message)
        return aborted.with_handled(request.kind, request.token), [("Warning", "RolloutAborted", message)], False
    if request.problem:
        return _refused(state, request, f"rollback refused: {request.problem}")
    number = request.to if request.to is not None else state.stable_revision
    if number is None or (number == state.revision and request.to is None):
        return _refused(state, request, f"rollback refused: no revision before {state.revision} to roll back to")
    if number == state.revision:
        return _refused(state, request, f"rollback refused: revision {number} is the one being rolled out")
    if state.phase == ROLLED_BACK and number == state.stable_revision:
        return _refused(state, request, f"rollback refused: already rolled back to revision {number}")
    if target is None:
        return _refused(state, request, f"rollback refused: revision {number} is no longer kept")
    goal = target
    message = f"rollback of revision {state.revision} to revision {goal[0]} requested at {position}"
    back = replace(
        state, phase=ROLLED_BACK, stable_revision=goal[0], stable_hash=goal[1], soak_start=None, message=message
    )
    return back.with_handled(request.kind, request.token), [("Normal", "RollbackRequested", message)], True
