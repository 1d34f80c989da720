"""The fleet applier: every FleetRuntime (`fleet.omectl.io/v1alpha1`, omectl.api.fleet) of its store applied to the
member clusters its placement selects, with server-side apply under the field manager `omectl-fleet`. The store is
a hub, or the FleetRuntime files of the clusters directory without one (omectl.controller.fleet_runtime_stores):
it is watched, and keeps the revisions, the status, the events and the requests; the applier does not know which.

```
store: FleetRuntimes (watched) ──▶ dirty set ──▶ reconcile one FleetRuntime:
                                                  template checked (omectl.api.fleet.template_problem)
                                                  revision: one per template, kept by the store
                                                  per placed cluster run here: decide (omectl.core.fleet_runtimes)
                                                     → apply / correct / Conflict / Drifted / Failed / Pending
                                                  with spec.rollout.waves: only the waves reached so far, then
                                                     the current wave's gate and the rollout's next step
                                                  status written to the store (and events, with waves)
members: runtime informers (omectl.controller.fleet_members) ─▶ an event on a copy (or a same-named runtime) marks it
         dirty
         InferenceService informers ─▶ an event in a cluster of a wave in progress marks its FleetRuntime dirty
clock: a soak's end or a wave's deadline marks it dirty (`clock.sleep`)
sweep: copies whose FleetRuntime is gone, or that it no longer places, are deleted (only labelled copies, by uid)
```

Only copies labelled as a FleetRuntime's are ever updated or deleted. A member that cannot be read (not reached, or
its caches still syncing) is Pending. Without `spec.rollout.waves` every placed cluster gets a new
revision at once. With waves (the state machine is `omectl.core.fleet_runtimes.step`) a wave's gate is read from
the member's caches: the InferenceServices the change reaches (`OmeWatch.reach`, the
reverse index), each compared with the hash of its merged runtime as the shared resolver resolves it now (what
omectl.controller.ome.engine records in `status.runtime.hash`); the rollout's state is kept in the status.

Runs in `omectl run`: with a hub, without `--ha` over the clusters the controller runs (`LocalMembers`); under
`--ha` only in the replica holding the fleet Lease (omectl.controller.fleet_driver), over its own clusters and those
it observes for the other replicas (`HolderMembers`), every write fenced by that Lease. Without a hub (FleetRuntime
files), over the clusters the controller runs, and not under `--ha`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from omectl.api.fleet import template_problem
from omectl.background import cancel_and_wait
from omectl.controller.fleet_runtime_stores import FleetRuntimeStore, RevisionExists
from omectl.controller.ome.revisions import spec_hash
from omectl.controller.ome.watch import CSR_KEY, SR_KEY, OmeWatch
from omectl.controller.runtime.queue import Clock
from omectl.core.conditions import transition_time
from omectl.core.fleet_runtimes import (
    ACTIVE_PHASES,
    APPLIED,
    CONFLICT,
    DRIFTED,
    FAILED,
    PENDING,
    REQUEST_ANNOTATIONS,
    ROLLBACK_TO_ANNOTATION,
    ROLLED_BACK,
    SUCCEEDED,
    ClusterGate,
    ClusterResult,
    Engines,
    EngineState,
    Event,
    RolloutState,
    WavePlan,
    act_on,
    combine,
    copy_owner,
    copy_revision,
    copy_targets,
    decide,
    desired_copy,
    due_clusters,
    engine_state,
    max_unavailable,
    next_revision,
    pending_requests,
    placed_clusters,
    plan_waves,
    request_tokens,
    revisions_to_prune,
    roll_up,
    start_rollout,
    step,
    template_hash,
    wave_phases,
)
from omectl.core.ome.inheritance import ChainError
from omectl.core.ome.pipeline import CachedModels
from omectl.core.ome.runtimes import RuntimeRef
from omectl.core.ome.selection import (
    ModelError,
    RuntimeValidation,
    check_runtime_supports,
    lookup_named_runtime,
    resolve_model,
)
from omectl.kube import timestamps
from omectl.kube.client import KubeAPIError, KubeError
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.field_managers import FLEET_FIELD_MANAGER
from omectl.kube.resources import CLUSTER_SERVING_RUNTIMES, SERVING_RUNTIMES, ResourceRef
from omectl.tracing.spans import rollout_span, watch_event_context

if TYPE_CHECKING:
    from opentelemetry.trace import SpanContext, Tracer

    from omectl.controller.fleet_members import Members
    from omectl.controller.ome.resolver import ChainResolver
    from omectl.controller.runtime.manager import ClusterRuntime
    from omectl.fleet.registration import ClusterRegistration
    from omectl.fleet.sharding import WriteFence

log = logging.getLogger(__name__)

HISTORY_LIMIT = 10  # revisions kept per FleetRuntime (the newest; the current one always)
RESYNC_SECONDS = 60.0  # every FleetRuntime is reconciled at least this often (a safety net for missed events)


Transition = tuple[Event, list[tuple[str, "SpanContext"]], int]
"""One transition of a reconcile: its event, the (cluster, watch event) of the copies written after it, the wave
index it happened at."""


class WallClock:
    """The rollout's clock: seconds since the epoch (its times go into the status, read again after a restart) and
    `asyncio.sleep`; tests pass `omectl.controller.runtime.queue.FakeClock` started at an epoch second."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(seconds)


@dataclass(frozen=True)
class RolloutView:
    """What a reconcile with waves adds to the status: the rollout, each wave, and per cluster its wave, phase and
    engines."""

    rollout: dict[str, Any]
    waves: list[dict[str, Any]]
    clusters: Mapping[str, dict[str, Any]]
    phase: str
    condition: tuple[bool, str, str]
    """The Progressing condition: (status, reason, message)."""


def _requests(meta: Mapping[str, Any]) -> tuple[str | None, ...]:
    """The request annotations of a FleetRuntime's metadata (a change is a request: reconcile)."""
    annotations = meta.get("annotations") or {}
    return tuple(annotations.get(a) for a in (*REQUEST_ANNOTATIONS.values(), ROLLBACK_TO_ANNOTATION))


def _one_line(exc: Exception) -> str:
    if isinstance(exc, KubeAPIError):
        return f"{exc.status} {exc.reason}: {' '.join(exc.message.split())}"
    return " ".join(str(exc).split()) or type(exc).__name__


class FleetRuntimeApplier:
    """Applies the FleetRuntimes of `store` to the member clusters `members` reaches."""

    def __init__(
        self,
        store: FleetRuntimeStore,
        members: Members,
        registrations: Callable[[], Mapping[str, ClusterRegistration]],
        resolver: ChainResolver,
        *,
        resync_seconds: float = RESYNC_SECONDS,
        clock: Clock | None = None,
        tracer: Tracer | None = None,
        fence: WriteFence | None = None,
    ) -> None:
        self.store = store
        self.members = members  # the member clusters (omectl.controller.fleet_members): read and written through
        self.registrations = registrations
        self.resolver = resolver  # the controller's shared one: a gate resolves chains as the engines do
        self.resync_seconds = resync_seconds
        store.add_handler(self._on_fleet_runtime)
        self._dirty: set[str] = set()
        self._all_dirty = True
        self._wake = asyncio.Event()
        self._revisions: dict[str, dict[str, tuple[str, int]]] = {}  # FleetRuntime -> CR name -> (hash, number)
        self._template_names: dict[str, set[str]] = {}  # template name -> FleetRuntimes applying one of that name
        self._tasks: list[asyncio.Task[Any]] = []
        self._spawned: set[asyncio.Task[Any]] = set()
        self._retrying: set[str] = set()  # FleetRuntimes with a retry pending (`_retry_once`)
        self.passes = 0  # reconcile passes ended (each over the dirty FleetRuntimes, or all of them)
        self.clock: Clock = clock if clock is not None else WallClock()
        self._revision_data: dict[str, dict[str, dict[str, Any]]] = {}  # FleetRuntime -> hash -> template data
        self._rollouts: dict[str, RolloutState] = {}  # as last written (the informer's copy may lag our write)
        self._rolling: dict[str, set[str]] = {}  # FleetRuntime -> clusters of its current wave (mid-rollout)
        self._timers: dict[str, asyncio.Task[Any]] = {}
        self._recording = asyncio.Lock()  # one reconcile's events after the last one's (each is a task of its own)
        self.tracer = tracer  # a span per rollout transition (omectl.tracing.spans.rollout_span), when set
        self._written: list[tuple[str, SpanContext]] = []  # (cluster, watch event) of each copy the reconcile wrote
        self.fence = fence  # under --ha the fleet Lease: no copy is written or deleted once it is lost
        members.on_added.append(self._cluster_added)
        members.on_removed.append(self._cluster_removed)

    # --- events --------------------------------------------------------------------------------------------

    def mark(self, name: str) -> None:
        self._dirty.add(name)
        self._wake.set()

    def mark_all(self) -> None:
        self._all_dirty = True
        self._wake.set()

    def _on_fleet_runtime(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        meta = obj["metadata"]
        if event == "MODIFIED" and old is not None:
            old_meta = old.get("metadata") or {}
            if (
                meta.get("generation") == old_meta.get("generation")
                and meta.get("deletionTimestamp") == old_meta.get("deletionTimestamp")
                and _requests(meta) == _requests(old_meta)
            ):
                return  # our own status write
        self.mark(meta["name"])

    def _on_member_runtime(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        if initial:
            return  # the cluster's sync marks everything
        owner = copy_owner(obj) or (copy_owner(old) if old is not None else None)
        if owner:
            self.mark(owner)
        for name in self._template_names.get(obj["metadata"]["name"], ()):
            self.mark(name)

    def _on_member_isvc(
        self, cluster: str, event: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool
    ) -> None:
        """An InferenceService changed (its status: a render, readiness): the gates of the waves in that cluster."""
        if initial:
            return
        for name, clusters in self._rolling.items():
            if cluster in clusters:
                self.mark(name)

    async def _cluster_added(self, cluster: ClusterRuntime) -> None:
        ome = cluster.watch(OmeWatch)
        ome.serving.add_handler(self._on_member_runtime)
        ome.cluster_serving.add_handler(self._on_member_runtime)
        ome.inference_services.add_handler(functools.partial(self._on_member_isvc, cluster.name))
        self._spawn(self._when_synced(cluster))

    async def _when_synced(self, cluster: ClusterRuntime) -> None:
        await cluster.wait_synced()
        self.mark_all()

    async def _cluster_removed(self, cluster: ClusterRuntime) -> None:
        self.mark_all()

    def _writing(self, cluster: str) -> contextlib.AbstractContextManager[None]:
        """Around a copy's write or delete: under --ha refused (`Fenced`, a KubeError) once the fleet Lease is lost."""
        return self.fence.writing(cluster) if self.fence is not None else contextlib.nullcontext()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    # --- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        for cluster in self.members.values():  # clusters added before the applier
            await self._cluster_added(cluster)
        self._tasks.append(asyncio.create_task(self.store.run(), name="fleet-runtimes-store"))
        self._tasks.append(asyncio.create_task(self._run(), name="fleet-runtimes"))
        self._tasks.append(asyncio.create_task(self._resync(), name="fleet-runtimes-resync"))

    async def stop(self) -> None:
        await cancel_and_wait([*self._tasks, *self._spawned, *self._timers.values()])
        self._tasks.clear()
        await self.store.close()

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            self.mark_all()

    async def _run(self) -> None:
        await self.store.synced.wait()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._all_dirty:
                self._all_dirty = False
                self._dirty.clear()
                names = {obj["metadata"]["name"] for obj in self.store.objects()}
                sweep = True
            else:
                names, self._dirty = self._dirty, set()
                sweep = False
            for name in sorted(names):
                try:
                    await self.reconcile(name)
                except Exception:  # one FleetRuntime's failure must not stop the others: logged, retried in 2 s
                    log.exception("FleetRuntime %s: reconcile failed", name)
                    self._spawn(self._retry(name))
            try:
                await self._sweep(None if sweep else names)
            except Exception:  # the loop must survive a failed sweep: logged, and the pass is counted as done
                log.exception("FleetRuntimes: removing stale copies failed")
            self.passes += 1

    async def _retry(self, name: str) -> None:
        await asyncio.sleep(2.0)
        self.mark(name)

    def _retry_once(self, name: str) -> None:
        """Reconcile `name` again in 2 s, once however many of its copies could not be written: a member that comes
        back sends no event the applier would see (its copy did not change)."""
        if name in self._retrying:
            return
        self._retrying.add(name)

        async def retry() -> None:
            try:
                await self._retry(name)
            finally:
                self._retrying.discard(name)

        self._spawn(retry())

    # --- one FleetRuntime ----------------------------------------------------------------------------------

    async def reconcile(self, name: str) -> None:
        self._written = []
        fr = self.store.get(name)
        if fr is None:
            self._forget(name)
            await self._collect_revisions(name)
            return
        spec = fr.get("spec") or {}
        problem = template_problem(spec)
        if problem is not None:
            await self._write_status(fr, None, [], problem)
            return
        template = spec["template"]
        self._template_names.setdefault(template["metadata"]["name"], set()).add(name)
        revision = await self._revision(fr, spec)
        registered = self.registrations()
        placed = placed_clusters(spec.get("placement"), {n: dict(r.labels) for n, r in registered.items()})
        previous = {c.get("name"): c for c in (fr.get("status") or {}).get("clusters") or []}
        if ((spec.get("rollout") or {}).get("waves")) and placed:
            labels = {n: dict(r.labels) for n, r in registered.items()}
            await self._reconcile_waves(fr, spec, revision, placed, labels, previous)
            return
        self._rollouts.pop(name, None)
        self._rolling.pop(name, None)
        results = await asyncio.gather(
            *(self._apply_cluster(name, spec, revision, cluster, previous.get(cluster) or {}) for cluster in placed)
        )
        await self._write_status(fr, revision, list(results), None)

    def _forget(self, name: str) -> None:
        self._revisions.pop(name, None)
        self._revision_data.pop(name, None)
        self._rollouts.pop(name, None)
        self._rolling.pop(name, None)
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        for owners in self._template_names.values():
            owners.discard(name)

    # --- waves ---------------------------------------------------------------------------------------------

    async def _reconcile_waves(
        self,
        fr: dict[str, Any],
        spec: Mapping[str, Any],
        revision: int,
        placed: list[str],
        labels: Mapping[str, Mapping[str, str]],
        previous: Mapping[str, Mapping[str, Any]],
    ) -> None:
        """One reconcile of a FleetRuntime with `spec.rollout.waves` (omectl.core.fleet_runtimes, "waves"): the
        clusters the rollout has reached get its revision, the current wave's gate is read, and the rollout moves
        on (a passed wave's successor is applied in the same reconcile)."""
        name = fr["metadata"]["name"]
        rollout = spec.get("rollout") or {}
        plan = plan_waves(rollout.get("waves") or [], placed, labels)
        status = fr.get("status") or {}
        digest = template_hash(spec)
        now = self.clock.now()
        state = self._rollouts.get(name) or RolloutState.from_dict(status.get("rollout") or {})
        events: list[Event] = []
        if state is None and status.get("phase") == SUCCEEDED and status.get("revision") == revision:
            # waves turned on for the revision every cluster has: nothing to roll
            tokens = request_tokens(fr["metadata"].get("annotations") or {})
            state = RolloutState(revision, digest, revision, digest, len(plan) - 1, SUCCEEDED, now, requests=tokens)
        if state is None or state.revision != revision or state.hash != digest:
            settled = None
            if state is None and status.get("phase") == SUCCEEDED and status.get("revision") is not None:
                number = int(status["revision"])
                found = self._hash_of(name, number)
                settled = (number, found) if found else None
            annotations = fr["metadata"].get("annotations") or {}
            state, events = start_rollout(state, revision, digest, now, settled=settled, annotations=annotations)
        paused = bool(rollout.get("paused"))
        promote = rolling_back = False
        for request in pending_requests(fr["metadata"].get("annotations") or {}, state):
            target = self._rollback_target(name, spec, state, request.to) if request.kind == "rollback" else None
            state, said, go = act_on(state, plan, request, paused=paused, target=target)
            events += said
            promote = promote or (go and request.kind == "promote")
            rolling_back = rolling_back or (go and request.kind == "rollback")
        why = "a rollback was requested" if rolling_back else f"revision {state.revision} failed its gate"
        stable_spec = self._spec_of(name, spec, state.stable_hash)
        wake_in: float | None = None
        transitions: list[Transition] = [(event, [], state.wave) for event in events]
        while True:
            self._written = []
            results, gates = await self._apply_waves(name, spec, stable_spec, state, plan, previous)
            if transitions:  # the copies written now are the last transition's doing
                transitions[-1][1].extend(self._written)
            current = plan[min(state.wave, len(plan) - 1)].clusters
            moved = step(
                state,
                plan,
                [gates[c] for c in current],
                now,
                paused=paused,
                auto_rollback=bool(rollout.get("autoRollback")),
                max_unavailable=max_unavailable(rollout.get("maxUnavailableClusters"), len(current)),
                promote=promote,
            )
            promote = False  # the current wave only: the next one has its own gate
            events += moved.events
            transitions += [(event, [], moved.state.wave) for event in moved.events]
            state, wake_in = moved.state, moved.wake_in
            if rolling_back:
                state = replace(state, message=rolled_back_message(state, plan, results, why))
                events.append(("Warning", "RolledBack", state.message))
                transitions.append((events[-1], [], state.wave))
                break
            if moved.roll_back:
                if stable_spec is None:
                    kept = f"revision {state.stable_revision} is no longer kept: not rolled back"
                    state = replace(state, message=f"{state.message}; {kept}")
                    break
                state = replace(state, phase=ROLLED_BACK)
                rolling_back = True
                continue  # the next pass applies the stable revision to the changed clusters, last wave first
            if not moved.advanced:
                break
        self._rollouts[name] = state
        if state.phase in ACTIVE_PHASES:
            self._rolling[name] = set(plan[min(state.wave, len(plan) - 1)].clusters)
        else:
            self._rolling.pop(name, None)
        view = rollout_view(state, plan, gates)
        await self._write_status(fr, revision, [results[c] for c in placed], None, view)
        if events:
            self._spawn(self._record(fr, events))
            self._trace(name, state, plan, transitions)
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        if wake_in is not None and state.phase in ACTIVE_PHASES:
            self._timers[name] = asyncio.get_running_loop().create_task(self._wake_after(name, wake_in))

    async def _wake_after(self, name: str, seconds: float) -> None:
        await self.clock.sleep(max(seconds, 0.0))
        self._timers.pop(name, None)
        self.mark(name)

    async def _record(self, fr: dict[str, Any], events: list[Event]) -> None:
        """Events on the FleetRuntime, in order, after those of earlier reconciles (best effort, as every event of
        the controller)."""
        async with self._recording:
            for type_, reason, message in events:
                log.info("FleetRuntime %s: %s: %s", fr["metadata"]["name"], reason, message)
                await self.store.record_event(fr, type_, reason, message)

    def _note_written(self, cluster: str, ref: ResourceRef, applied: Mapping[str, Any]) -> None:
        """The member's watch event of a copy just written, as its reconciles will link to it (OmeWatch's key)."""
        meta = applied.get("metadata") or {}
        event = watch_event_context(
            cluster,
            SR_KEY if ref is SERVING_RUNTIMES else CSR_KEY,
            meta.get("namespace", ""),
            meta.get("name", ""),
            meta.get("resourceVersion", ""),
        )
        self._written.append((cluster, event))

    def _trace(self, name: str, state: RolloutState, plan: Sequence[WavePlan], transitions: list[Transition]) -> None:
        """A span per transition of this reconcile, linked to the watch events of the copies it caused to be
        written."""
        if self.tracer is None:
            return
        for (_, reason, message), written, wave in transitions:
            rollout_span(
                self.tracer,
                reason=reason,
                fleet_runtime=name,
                revision=state.revision,
                wave=plan[min(wave, len(plan) - 1)].name if plan else "",
                message=message,
                clusters=sorted({cluster for cluster, _ in written}),
                caused=[event for _, event in written],
            )

    def _rollback_target(
        self, owner: str, spec: Mapping[str, Any], state: RolloutState, to: int | None
    ) -> tuple[int, str] | None:
        """The revision a rollback request goes back to, (number, hash), when its template is kept: `to` by its
        number now (`omectl rollout history`), or the stable revision."""
        if to is None:
            if state.stable_revision is None or not state.stable_hash:
                return None
            found: tuple[int, str] = (state.stable_revision, state.stable_hash)
        else:
            digest = self._hash_of(owner, to)
            if digest is None:
                return None
            found = (to, digest)
        return found if self._spec_of(owner, spec, found[1]) is not None else None

    def _hash_of(self, owner: str, number: int) -> str | None:
        return next((h for h, n in (self._revisions.get(owner) or {}).values() if n == number), None)

    def _spec_of(self, owner: str, spec: Mapping[str, Any], digest: str | None) -> dict[str, Any] | None:
        """The FleetRuntime's spec with the template of the kept revision `digest` (None: not kept)."""
        data = (self._revision_data.get(owner) or {}).get(digest or "")
        if data is None or not data.get("template"):
            return None
        return {**spec, "template": data["template"], "namespaces": data.get("namespaces") or []}

    async def _apply_waves(
        self,
        owner: str,
        spec: Mapping[str, Any],
        stable_spec: Mapping[str, Any] | None,
        state: RolloutState,
        plan: Sequence[WavePlan],
        previous: Mapping[str, Mapping[str, Any]],
    ) -> tuple[dict[str, ClusterResult], dict[str, ClusterGate]]:
        """Apply the rollout's revision to the clusters it has reached (after a rollback: the stable revision, the
        last wave's clusters first), report the other clusters' copies as they are, and read the gate of every
        cluster reached."""
        due = due_clusters(state, plan)
        results: dict[str, ClusterResult] = {}
        target_spec: Mapping[str, Any] | None = spec
        target = state.revision
        if state.phase == ROLLED_BACK:
            target_spec, target = stable_spec, state.stable_revision or 0
            if stable_spec is not None:
                for wave in reversed(plan[: state.wave + 1]):
                    got = await asyncio.gather(
                        *(
                            self._apply_cluster(owner, stable_spec, target, c, previous.get(c) or {})
                            for c in wave.clusters
                        )
                    )
                    results.update((r.name, r) for r in got)
        else:
            got = await asyncio.gather(
                *(self._apply_cluster(owner, spec, target, c, previous.get(c) or {}) for c in due)
            )
            results.update((r.name, r) for r in got)
        for wave in plan:
            for cluster in wave.clusters:
                if cluster not in results:
                    seen = previous.get(cluster) or {}
                    results[cluster] = await self._observe_cluster(owner, spec, cluster, seen, wave)
        gates = {}
        for cluster in due:
            gates[cluster] = await self._gate(cluster, target_spec or spec, target, results[cluster])
        return results, gates

    async def _observe_cluster(
        self, owner: str, spec: Mapping[str, Any], name: str, previous: Mapping[str, Any], wave: WavePlan
    ) -> ClusterResult:
        """A cluster the rollout has not reached: its copy reported as it is (the previous revision, or none).

        The copy is read from the member's cache, unless the cache disagrees with the revision the status says the
        controller left there: then from the member (a renumbered revision changes only an annotation, and a cache
        whose watch is reconnecting can lag by seconds; the status must not report an older revision than the
        copy has)."""
        cluster = self.members.get(name)
        if cluster is None:
            return ClusterResult(name, PENDING, message=self.members.unavailable(name))
        template = spec["template"]
        ome = cluster.watch(OmeWatch)
        cache = ome.serving.cache if template["kind"] == "ServingRuntime" else ome.cluster_serving.cache
        recorded = {c.get("namespace") or "": c.get("generation") for c in previous.get("copies") or []}
        results = []
        for namespace in copy_targets(spec):
            live = cache.get(namespace, template["metadata"]["name"])
            lagging = previous.get("phase") == APPLIED and copy_revision(live or {}) != previous.get("revision")
            if live is not None and lagging:
                live = await self._read_copy(cluster, template, namespace, live)
            if live is None:
                results.append(ClusterResult(name, PENDING, message=f"waits for its wave ({wave.name})"))
                continue
            held = copy_revision(live) or 0
            decision = decide(
                live,
                owner=owner,
                revision=held,
                recorded_generation=recorded.get(namespace),
                recorded_revision=previous.get("revision"),
                drift_policy="Report",  # a cluster is only written in its wave
            )
            if decision.action == "conflict":
                results.append(ClusterResult(name, CONFLICT, message=decision.message))
            elif decision.action == "drifted":
                gens = {namespace: int(recorded.get(namespace) or 0)}
                results.append(ClusterResult(name, DRIFTED, held, gens, decision.message))
            else:
                gens = {namespace: int((live.get("metadata") or {}).get("generation") or 0)}
                results.append(ClusterResult(name, APPLIED, held, gens))
        return combine(name, results)

    async def _read_copy(
        self, cluster: ClusterRuntime, template: Mapping[str, Any], namespace: str, cached: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The copy as the member's API server has it (None: deleted); the cached one if the member cannot answer."""
        ref = SERVING_RUNTIMES if template["kind"] == "ServingRuntime" else CLUSTER_SERVING_RUNTIMES
        try:
            return await cluster.client.get(ref, template["metadata"]["name"], namespace or None)
        except NotFound:
            return None
        except KubeError:
            return cached

    async def _gate(self, name: str, spec: Mapping[str, Any], revision: int, result: ClusterResult) -> ClusterGate:
        """One reached cluster's gate: its copies at `revision` (in its caches too), and every InferenceService the
        change reaches there (the reverse index: `OmeWatch.reach`) where `engine_state` puts it."""
        if result.phase != APPLIED or result.revision != revision:
            return ClusterGate(name, False, message=f"{result.phase}: {result.message}" if result.message else "")
        cluster = self.members.get(name)
        if cluster is None:
            return ClusterGate(name, False, message=self.members.unavailable(name))
        template = spec["template"]
        runtime, kind = template["metadata"]["name"], template["kind"]
        ome = cluster.watch(OmeWatch)
        cache = ome.serving.cache if kind == "ServingRuntime" else ome.cluster_serving.cache
        lookup = ome.lookup()
        states: list[tuple[str, EngineState, str]] = []
        seen: set[str] = set()
        for namespace in copy_targets(spec):
            live = cache.get(namespace, runtime)
            if live is None or copy_revision(live) != revision:
                return ClusterGate(name, False, message=f"its caches have not seen revision {revision} of the copy yet")
            for isvc in ome.reach(RuntimeRef(kind, namespace, runtime)).inference_services:
                meta = isvc.get("metadata") or {}
                key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
                if key in seen:
                    continue
                seen.add(key)
                expected, problem = await self._expected_hash(cluster.name, ome, isvc, lookup)
                state, why = engine_state(isvc, expected, problem)
                states.append((key, state, why))
        return ClusterGate(name, True, Engines.of(sorted(states)))

    async def _expected_hash(
        self, cluster: str, ome: OmeWatch, isvc: Mapping[str, Any], lookup: Any
    ) -> tuple[str | None, str]:
        """The hash of the merged runtime an InferenceService renders from now (what the engine reconciler of
        omectl.controller.ome.engine records in `status.runtime.hash`), or why there is none: a broken chain, or a
        RuntimeValidationError (the merged runtime does not support its model)."""
        namespace = (isvc.get("metadata") or {}).get("namespace", "")
        named = ((isvc.get("spec") or {}).get("runtime") or {}).get("name", "")
        try:
            ref, runtime = lookup_named_runtime(namespace, named, lookup)
            resolution = await self.resolver.resolve(cluster, runtime, lookup)
            models = CachedModels(ome.base_models.cache, ome.cluster_base_models.cache)
            model = resolve_model(isvc, models)
            if model is not None:
                check_runtime_supports(ref.name, resolution.result.spec, model, kind=ref.kind)
        except ChainError as exc:
            return None, f"its runtime's chain is broken: {exc.message}"
        except RuntimeValidation as exc:
            return None, f"RuntimeValidationError: {exc.message}"
        except ModelError as exc:
            return None, f"{exc.reason}: {exc.message}"
        return spec_hash(resolution.result.spec), ""

    async def _apply_cluster(
        self, owner: str, spec: Mapping[str, Any], revision: int, name: str, previous: Mapping[str, Any]
    ) -> ClusterResult:
        cluster = self.members.get(name)
        if cluster is None:
            return ClusterResult(name, PENDING, message=self.members.unavailable(name))
        if not cluster.health.synced and not all(i.synced.is_set() for i in cluster.informers):
            return ClusterResult(name, PENDING, message="the cluster's caches are syncing")
        template = spec["template"]
        ref = SERVING_RUNTIMES if template["kind"] == "ServingRuntime" else CLUSTER_SERVING_RUNTIMES
        ome = cluster.watch(OmeWatch)
        cache = ome.serving.cache if ref is SERVING_RUNTIMES else ome.cluster_serving.cache
        recorded = {c.get("namespace") or "": c.get("generation") for c in previous.get("copies") or []}
        results = []
        for namespace in copy_targets(spec):
            live = cache.get(namespace, template["metadata"]["name"])
            recorded_revision = previous.get("revision")
            result = await self._apply_copy(
                cluster, ref, live, owner, spec, revision, namespace, recorded.get(namespace), recorded_revision
            )
            results.append(result)
        return combine(name, results)

    async def _apply_copy(
        self,
        cluster: ClusterRuntime,
        ref: ResourceRef,
        live: dict[str, Any] | None,
        owner: str,
        spec: Mapping[str, Any],
        revision: int,
        namespace: str,
        recorded_generation: int | None,
        recorded_revision: int | None,
    ) -> ClusterResult:
        template = spec["template"]
        runtime = template["metadata"]["name"]
        try:
            if live is None:  # the cache may lag: never take over a user's runtime that is already there
                with contextlib.suppress(NotFound):
                    live = await cluster.client.get(ref, runtime, namespace or None)
            decision = decide(
                live,
                owner=owner,
                revision=revision,
                recorded_generation=recorded_generation,
                recorded_revision=recorded_revision,
                drift_policy=spec.get("driftPolicy") or "Report",
            )
            if decision.action == "conflict":
                return ClusterResult(cluster.name, CONFLICT, message=decision.message)
            if decision.action == "drifted":
                assert recorded_generation is not None
                gens = {namespace: recorded_generation}
                return ClusterResult(cluster.name, DRIFTED, revision, gens, decision.message)
            if decision.action == "in-sync":
                assert live is not None
                gens = {namespace: int((live.get("metadata") or {}).get("generation") or 0)}
                return ClusterResult(cluster.name, APPLIED, revision, gens)
            body = desired_copy(template, owner, revision, namespace)
            with self._writing(cluster.name):
                applied = await cluster.client.patch(
                    ref,
                    runtime,
                    body,
                    namespace or None,
                    patch_type="apply",
                    field_manager=FLEET_FIELD_MANAGER,
                    force=True,
                )
            self._note_written(cluster.name, ref, applied)
            if decision.action == "correct":
                log.info("FleetRuntime %s: cluster %s: %s: put back", owner, cluster.name, decision.message)
            gens = {namespace: int((applied.get("metadata") or {}).get("generation") or 0)}
            return ClusterResult(cluster.name, APPLIED, revision, gens)
        except KubeAPIError as exc:
            return ClusterResult(cluster.name, FAILED, message=_one_line(exc))
        except KubeError as exc:  # unreachable, or fenced (its Lease is being handed over): tried again soon
            self._retry_once(owner)
            return ClusterResult(cluster.name, PENDING, message=_one_line(exc))

    # --- revisions -----------------------------------------------------------------------------------------

    async def _known_revisions(self, owner: str) -> dict[str, tuple[str, int]]:
        known = self._revisions.get(owner)
        if known is None:
            items = await self.store.list_revisions(owner)
            known = {
                item["metadata"]["name"]: ((item.get("data") or {}).get("hash", ""), int(item.get("revision") or 0))
                for item in items
            }
            self._revisions[owner] = known
            data = self._revision_data.setdefault(owner, {})
            for item in items:
                content = item.get("data") or {}
                data[content.get("hash", "")] = content
        return known

    async def _revision(self, fr: Mapping[str, Any], spec: Mapping[str, Any]) -> int:
        """The revision number of the FleetRuntime's current template: a revision per distinct template (named
        `<name>-<hash>`, a ControllerRevision in a hub); one that becomes current again is renumbered as the newest,
        as a Deployment's ReplicaSets are. The newest `HISTORY_LIMIT` are kept."""
        owner = fr["metadata"]["name"]
        digest = template_hash(spec)
        known = await self._known_revisions(owner)
        current = f"{owner}-{digest}"
        newest = max((n for _, n in known.values()), default=0)
        if current in known:
            number = known[current][1]
            if number != newest:
                number = next_revision(n for _, n in known.values())
                await self.store.renumber_revision(owner, current, number)
                known[current] = (digest, number)
            return number
        number = next_revision(n for _, n in known.values())
        data = {"hash": digest, "template": spec.get("template"), "namespaces": spec.get("namespaces") or []}
        try:
            await self.store.create_revision(fr, current, number, data)
        except RevisionExists:
            self._revisions.pop(owner, None)  # made by an earlier run: read them again
            return await self._revision(fr, spec)
        known[current] = (digest, number)
        self._revision_data.setdefault(owner, {})[digest] = data
        for stale in revisions_to_prune({n: num for n, (_, num) in known.items()}, HISTORY_LIMIT, current):
            await self.store.delete_revision(owner, stale)
            known.pop(stale, None)
        return number

    async def _collect_revisions(self, owner: str) -> None:
        """A deleted FleetRuntime's revisions (a hub without garbage collection keeps them otherwise)."""
        for item in await self.store.list_revisions(owner):
            await self.store.delete_revision(owner, item["metadata"]["name"])

    # --- stale copies --------------------------------------------------------------------------------------

    def _wanted(self) -> dict[str, tuple[str, set[str], set[tuple[str, str]]]]:
        """FleetRuntime -> (kind, placed clusters, (namespace, name) targets); None-valued for one to leave alone."""
        registered = {n: dict(r.labels) for n, r in self.registrations().items()}
        out: dict[str, tuple[str, set[str], set[tuple[str, str]]]] = {}
        for fr in self.store.objects():
            spec = fr.get("spec") or {}
            name = fr["metadata"]["name"]
            if template_problem(spec) is not None:
                out[name] = ("", set(), set())  # invalid: its copies are left as they are
                continue
            runtime = spec["template"]["metadata"]["name"]
            targets = {(ns, runtime) for ns in copy_targets(spec)}
            out[name] = (spec["template"]["kind"], set(placed_clusters(spec.get("placement"), registered)), targets)
        return out

    async def _sweep(self, only: set[str] | None) -> None:
        """Delete the copies no FleetRuntime wants any more (its FleetRuntime deleted, the cluster no longer placed,
        the namespace or name no longer in the template); `only`: just those FleetRuntimes' copies."""
        if not self.store.synced.is_set() or not self.store.served:
            return  # a store that serves no FleetRuntimes is not one whose FleetRuntimes were all deleted
        wanted = self._wanted()
        for cluster in self.members.values():
            ome = cluster.watch(OmeWatch)
            if not all(i.synced.is_set() for i in (ome.serving, ome.cluster_serving)):
                continue
            kinds = (
                (SERVING_RUNTIMES, ome.serving.cache),
                (CLUSTER_SERVING_RUNTIMES, ome.cluster_serving.cache),
            )
            for ref, cache in kinds:
                for obj in cache.list():
                    owner = copy_owner(obj)
                    if owner is None or (only is not None and owner not in only):
                        continue
                    meta = obj["metadata"]
                    want = wanted.get(owner)
                    if want is not None:
                        kind, clusters, targets = want
                        if not kind:
                            continue  # an invalid template: leave its copies
                        key = (meta.get("namespace") or "", meta["name"])
                        if kind == ref.kind and cluster.name in clusters and key in targets:
                            continue
                    await self._delete_copy(cluster, ref, obj, owner)

    async def _delete_copy(self, cluster: ClusterRuntime, ref: ResourceRef, obj: dict[str, Any], owner: str) -> None:
        meta = obj["metadata"]
        try:
            with self._writing(cluster.name):
                await cluster.client.delete(
                    ref, meta["name"], meta.get("namespace") or None, preconditions={"uid": meta.get("uid", "")}
                )
            log.info("FleetRuntime %s: cluster %s: deleted its %s %s", owner, cluster.name, ref.kind, meta["name"])
        except (NotFound, Conflict):
            pass  # deleted or replaced since: the copy is gone either way
        except KubeAPIError as exc:
            log.warning("FleetRuntime %s: cluster %s: cannot delete its copy: %s", owner, cluster.name, exc)
        except KubeError as exc:
            log.info("FleetRuntime %s: cluster %s: copy not deleted yet: %s", owner, cluster.name, exc)

    # --- status --------------------------------------------------------------------------------------------

    async def _write_status(
        self,
        fr: dict[str, Any],
        revision: int | None,
        results: list[ClusterResult],
        problem: str | None,
        view: RolloutView | None = None,
    ) -> None:
        generation = fr["metadata"].get("generation")

        def desired(live: dict[str, Any]) -> dict[str, Any] | None:
            old = live.get("status") or {}
            return build_status(old, generation, revision, results, problem, view)

        await self.store.write_status(fr, desired)


def _condition(old: Mapping[str, Any], type_: str, ready: bool, reason: str, message: str) -> dict[str, Any]:
    status = "True" if ready else "False"
    previous: Mapping[str, Any] = next((c for c in old.get("conditions") or [] if c.get("type") == type_), {})
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition_time(previous, status, timestamps.now()),
    }


def build_status(
    old: Mapping[str, Any],
    generation: int | None,
    revision: int | None,
    results: list[ClusterResult],
    problem: str | None,
    view: RolloutView | None = None,
) -> dict[str, Any]:
    """The FleetRuntime's status from its clusters' results (or the template's problem), with the rollout's
    `view` when it has waves; transition times kept."""
    if problem is not None:
        status = {k: v for k, v in old.items() if k not in ("conditions", "phase", "observedGeneration")}
        status["observedGeneration"] = generation
        status["phase"] = "Invalid"
        status["conditions"] = [_condition(old, "Ready", False, "InvalidTemplate", problem)]
        return status
    assert revision is not None
    previous = {c.get("name"): c for c in old.get("clusters") or []}
    clusters = []
    for r in results:
        entry: dict[str, Any] = {"name": r.name, "phase": r.phase}
        if r.revision is not None:
            entry["revision"] = r.revision
        if r.generations:
            entry["copies"] = [
                {"namespace": ns, "generation": g} if ns else {"generation": g}
                for ns, g in sorted(r.generations.items())
            ]
        if r.message:
            entry["message"] = r.message
        if view is not None:
            entry.update(view.clusters.get(r.name) or {})
        before = previous.get(r.name) or {}
        entry["lastTransitionTime"] = transition_time(before, r.phase, timestamps.now(), field="phase")
        clusters.append(entry)
    summary = roll_up(results, revision)
    out: dict[str, Any] = {
        "observedGeneration": generation,
        "revision": revision,
        "placed": summary.placed,
        "applied": summary.applied,
        "phase": summary.phase,
        "clusters": clusters,
        "conditions": [_condition(old, "Ready", summary.ready, summary.reason, summary.message)],
    }
    if view is not None:
        # the rollout's phase, unless it is done and some cluster is not as it should be (Degraded)
        out["phase"] = summary.phase if view.phase == SUCCEEDED and summary.phase == "Degraded" else view.phase
        out["rollout"] = view.rollout
        out["waves"] = view.waves
        out["conditions"].append(_condition(old, "Progressing", *view.condition))
    return out


def rolled_back_message(
    state: RolloutState, plan: Sequence[WavePlan], results: Mapping[str, ClusterResult], why: str = ""
) -> str:
    """What a rollback did: the clusters given the stable revision again (last wave first), and those it could not
    reach yet (they get it when they can: a rolled-back rollout keeps applying the stable revision); `why` it did
    (default: the rollout's revision failed its gate)."""
    changed = list(reversed(due_clusters(state, plan)))
    done = [c for c in changed if results[c].phase == APPLIED and results[c].revision == state.stable_revision]
    message = (
        f"revision {state.stable_revision} re-applied to {', '.join(done) or 'no cluster'} "
        f"after {why or f'revision {state.revision} failed its gate'}"
    )
    missed = [c for c in changed if c not in done]
    return f"{message}; not yet to {', '.join(missed)}" if missed else message


_PROGRESSING_REASONS = {
    "Progressing": (True, "WaveProgressing"),
    "Soaking": (True, "WaveSoaking"),
    "Paused": (True, "RolloutPaused"),
    "Succeeded": (False, "RolloutSucceeded"),
    "Failed": (False, "ProgressDeadlineExceeded"),
    "RolledBack": (False, "RolledBack"),
    "Aborted": (False, "RolloutAborted"),
}


def rollout_view(state: RolloutState, plan: Sequence[WavePlan], gates: Mapping[str, ClusterGate]) -> RolloutView:
    """The rollout's part of the status: `status.rollout`, `status.waves[]` (phase, clusters, the revision they
    were given, engines) and per cluster its wave, that wave's phase and its engines."""
    waves = []
    clusters: dict[str, dict[str, Any]] = {}
    for wave, phase in zip(plan, wave_phases(state, plan), strict=True):
        engines = sum((gates[c].engines for c in wave.clusters if c in gates), Engines())
        entry: dict[str, Any] = {"name": wave.name, "phase": phase, "clusters": list(wave.clusters)}
        if phase == ROLLED_BACK and state.stable_revision is not None:
            entry["revision"] = state.stable_revision
        elif phase != "Pending":
            entry["revision"] = state.revision
        if phase != "Pending":
            entry["engines"] = engines.to_dict()
        waves.append(entry)
        for cluster in wave.clusters:
            extra: dict[str, Any] = {"wave": wave.name, "rolloutPhase": phase}
            if cluster in gates and gates[cluster].at_revision:
                extra["engines"] = gates[cluster].engines.to_dict()
            clusters[cluster] = extra
    ready, reason = _PROGRESSING_REASONS.get(state.phase, (True, "WaveProgressing"))
    return RolloutView(state.to_dict(plan), waves, clusters, state.phase, (ready, reason, state.message))
