"""The fleet applier: every FleetRuntime of the hub (`fleet.omectl.io/v1alpha1`, omectl.api.fleet) applied to the
member clusters its placement selects, with server-side apply under the field manager `omectl-fleet`.

```
hub: FleetRuntimes (informer) ──▶ dirty set ──▶ reconcile one FleetRuntime:
                                                  template checked (omectl.api.fleet.template_problem)
                                                  revision: a ControllerRevision in the hub namespace per template
                                                  per placed cluster run here: decide (omectl.core.fleet_runtimes)
                                                     → apply / correct / Conflict / Drifted / Failed / Pending
                                                  status written to the FleetRuntime
members: runtime informers (the controller's own) ─▶ an event on a copy (or a same-named runtime) marks it dirty
sweep: copies whose FleetRuntime is gone, or that it no longer places, are deleted (only labelled copies, by uid)
```

Only copies labelled as a FleetRuntime's are ever updated or deleted. A cluster the controller does not run (not
reached, or its caches still syncing) is Pending. Waves, gates, pause and rollback (`spec.rollout`) are not acted
on yet: every placed cluster gets a new revision at once (docs/fleet-rollouts.md).

Runs in `omectl run` when a hub is configured and `--ha` is off: with several replicas each runs only some
clusters, and which one would own a FleetRuntime's status is not decided yet (the issue's "holder of the hub
Lease").
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from omectl.api.fleet import template_problem
from omectl.core.conditions import transition_time
from omectl.core.fleet_runtimes import (
    APPLIED,
    CONFLICT,
    DRIFTED,
    FAILED,
    FLEET_RUNTIME_LABEL,
    PENDING,
    ClusterResult,
    combine,
    copy_owner,
    copy_targets,
    decide,
    desired_copy,
    next_revision,
    placed_clusters,
    revisions_to_prune,
    roll_up,
    template_hash,
)
from omectl.kube.client import ClusterClient, KubeAPIError, KubeError
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.field_managers import FLEET_FIELD_MANAGER
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    CLUSTER_SERVING_RUNTIMES,
    CONTROLLER_REVISIONS,
    FLEET_RUNTIMES,
    SERVING_RUNTIMES,
    ResourceRef,
)
from omectl.kube.writer import write_status

if TYPE_CHECKING:
    from omectl.controller.runtime.manager import ClusterRuntime, FleetController
    from omectl.fleet.registration import ClusterRegistration

log = logging.getLogger(__name__)

HISTORY_LIMIT = 10  # ControllerRevisions kept per FleetRuntime (the newest; the current one always)
RESYNC_SECONDS = 60.0  # every FleetRuntime is reconciled at least this often (a safety net for missed events)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _one_line(exc: Exception) -> str:
    if isinstance(exc, KubeAPIError):
        return f"{exc.status} {exc.reason}: {' '.join(exc.message.split())}"
    return " ".join(str(exc).split()) or type(exc).__name__


class FleetRuntimeApplier:
    """Applies the hub's FleetRuntimes to the member clusters `controller` runs."""

    def __init__(
        self,
        hub: ClusterClient,
        namespace: str,
        controller: FleetController,
        registrations: Callable[[], Mapping[str, ClusterRegistration]],
        *,
        owns_hub: bool = False,
        resync_seconds: float = RESYNC_SECONDS,
    ) -> None:
        self.hub = hub
        self.namespace = namespace
        self.controller = controller
        self.registrations = registrations
        self.owns_hub = owns_hub
        self.resync_seconds = resync_seconds
        # optional: a hub without the FleetRuntime CRD has none (deploy/base installs it)
        self.informer = Informer(hub, FLEET_RUNTIMES, handlers=[self._on_fleet_runtime], optional=True)
        self._dirty: set[str] = set()
        self._all_dirty = True
        self._wake = asyncio.Event()
        self._revisions: dict[str, dict[str, tuple[str, int]]] = {}  # FleetRuntime -> CR name -> (hash, number)
        self._template_names: dict[str, set[str]] = {}  # template name -> FleetRuntimes applying one of that name
        self._tasks: list[asyncio.Task[Any]] = []
        self._spawned: set[asyncio.Task[Any]] = set()
        self.passes = 0  # reconcile passes ended (each over the dirty FleetRuntimes, or all of them)
        controller.on_cluster_added.append(self._cluster_added)
        controller.on_cluster_removed.append(self._cluster_removed)

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
            if meta.get("generation") == old_meta.get("generation") and meta.get("deletionTimestamp") == old_meta.get(
                "deletionTimestamp"
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

    async def _cluster_added(self, cluster: ClusterRuntime) -> None:
        cluster.serving.add_handler(self._on_member_runtime)
        cluster.cluster_serving.add_handler(self._on_member_runtime)
        self._spawn(self._when_synced(cluster))

    async def _when_synced(self, cluster: ClusterRuntime) -> None:
        await cluster.wait_synced()
        self.mark_all()

    async def _cluster_removed(self, cluster: ClusterRuntime) -> None:
        self.mark_all()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    # --- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        for cluster in self.controller.clusters.values():  # clusters added before the applier
            await self._cluster_added(cluster)
        self._tasks.append(asyncio.create_task(self.informer.run(), name="informer-hub-fleetruntimes"))
        self._tasks.append(asyncio.create_task(self._run(), name="fleet-runtimes"))
        self._tasks.append(asyncio.create_task(self._resync(), name="fleet-runtimes-resync"))

    async def stop(self) -> None:
        for task in [*self._tasks, *self._spawned]:
            task.cancel()
        for task in [*self._tasks, *self._spawned]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.owns_hub:
            await self.hub.close()

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            self.mark_all()

    async def _run(self) -> None:
        await self.informer.synced.wait()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._all_dirty:
                self._all_dirty = False
                self._dirty.clear()
                names = {obj["metadata"]["name"] for obj in self.informer.cache.list()}
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

    # --- one FleetRuntime ----------------------------------------------------------------------------------

    async def reconcile(self, name: str) -> None:
        fr = self.informer.cache.get(None, name)
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
        results = await asyncio.gather(
            *(self._apply_cluster(name, spec, revision, cluster, previous.get(cluster) or {}) for cluster in placed)
        )
        await self._write_status(fr, revision, list(results), None)

    def _forget(self, name: str) -> None:
        self._revisions.pop(name, None)
        for owners in self._template_names.values():
            owners.discard(name)

    async def _apply_cluster(
        self, owner: str, spec: Mapping[str, Any], revision: int, name: str, previous: Mapping[str, Any]
    ) -> ClusterResult:
        cluster = self.controller.clusters.get(name)
        if cluster is None:
            why = self.controller.registry_errors.get(name) or "not run by this controller (not reached yet)"
            return ClusterResult(name, PENDING, message=why)
        if not cluster.health.synced and not all(i.synced.is_set() for i in cluster.informers):
            return ClusterResult(name, PENDING, message="the cluster's caches are syncing")
        template = spec["template"]
        ref = SERVING_RUNTIMES if template["kind"] == "ServingRuntime" else CLUSTER_SERVING_RUNTIMES
        cache = cluster.serving.cache if ref is SERVING_RUNTIMES else cluster.cluster_serving.cache
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
            applied = await cluster.client.patch(
                ref, runtime, body, namespace or None, patch_type="apply", field_manager=FLEET_FIELD_MANAGER, force=True
            )
            if decision.action == "correct":
                log.info("FleetRuntime %s: cluster %s: %s: put back", owner, cluster.name, decision.message)
            gens = {namespace: int((applied.get("metadata") or {}).get("generation") or 0)}
            return ClusterResult(cluster.name, APPLIED, revision, gens)
        except KubeAPIError as exc:
            return ClusterResult(cluster.name, FAILED, message=_one_line(exc))
        except KubeError as exc:  # unreachable, or fenced (its Lease is being handed over)
            return ClusterResult(cluster.name, PENDING, message=_one_line(exc))

    # --- revisions -----------------------------------------------------------------------------------------

    async def _known_revisions(self, owner: str) -> dict[str, tuple[str, int]]:
        known = self._revisions.get(owner)
        if known is None:
            items = await self.hub.list_all(
                CONTROLLER_REVISIONS, self.namespace, label_selector=f"{FLEET_RUNTIME_LABEL}={owner}"
            )
            known = {
                item["metadata"]["name"]: ((item.get("data") or {}).get("hash", ""), int(item.get("revision") or 0))
                for item in items
            }
            self._revisions[owner] = known
        return known

    async def _revision(self, fr: Mapping[str, Any], spec: Mapping[str, Any]) -> int:
        """The revision number of the FleetRuntime's current template: a ControllerRevision per distinct template
        (named `<name>-<hash>`); one that becomes current again is renumbered as the newest, as a Deployment's
        ReplicaSets are. The newest `HISTORY_LIMIT` are kept."""
        owner = fr["metadata"]["name"]
        digest = template_hash(spec)
        known = await self._known_revisions(owner)
        current = f"{owner}-{digest}"
        newest = max((n for _, n in known.values()), default=0)
        if current in known:
            number = known[current][1]
            if number != newest:
                number = next_revision(n for _, n in known.values())
                await self.hub.patch(CONTROLLER_REVISIONS, current, {"revision": number}, self.namespace)
                known[current] = (digest, number)
            return number
        number = next_revision(n for _, n in known.values())
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": current,
                "namespace": self.namespace,
                "labels": {FLEET_RUNTIME_LABEL: owner},
                "ownerReferences": [
                    {
                        "apiVersion": fr.get("apiVersion", "fleet.omectl.io/v1alpha1"),
                        "kind": "FleetRuntime",
                        "name": owner,
                        "uid": fr["metadata"].get("uid", ""),
                        "controller": True,
                    }
                ],
            },
            "revision": number,
            "data": {"hash": digest, "template": spec.get("template"), "namespaces": spec.get("namespaces") or []},
        }
        try:
            await self.hub.create(CONTROLLER_REVISIONS, body, self.namespace, field_manager=FLEET_FIELD_MANAGER)
        except Conflict:
            self._revisions.pop(owner, None)  # made by an earlier run: read them again
            return await self._revision(fr, spec)
        known[current] = (digest, number)
        for stale in revisions_to_prune({n: num for n, (_, num) in known.items()}, HISTORY_LIMIT, current):
            with contextlib.suppress(KubeAPIError):
                await self.hub.delete(CONTROLLER_REVISIONS, stale, self.namespace)
            known.pop(stale, None)
        return number

    async def _collect_revisions(self, owner: str) -> None:
        """A deleted FleetRuntime's revisions (a hub without garbage collection keeps them otherwise)."""
        items = await self.hub.list_all(
            CONTROLLER_REVISIONS, self.namespace, label_selector=f"{FLEET_RUNTIME_LABEL}={owner}"
        )
        for item in items:
            with contextlib.suppress(KubeAPIError):
                await self.hub.delete(CONTROLLER_REVISIONS, item["metadata"]["name"], self.namespace)

    # --- stale copies --------------------------------------------------------------------------------------

    def _wanted(self) -> dict[str, tuple[str, set[str], set[tuple[str, str]]]]:
        """FleetRuntime -> (kind, placed clusters, (namespace, name) targets); None-valued for one to leave alone."""
        registered = {n: dict(r.labels) for n, r in self.registrations().items()}
        out: dict[str, tuple[str, set[str], set[tuple[str, str]]]] = {}
        for fr in self.informer.cache.list():
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
        if not self.informer.synced.is_set() or not self.informer.served:
            return  # a hub that does not serve FleetRuntimes is not a hub whose FleetRuntimes were all deleted
        wanted = self._wanted()
        for cluster in list(self.controller.clusters.values()):
            if not all(i.synced.is_set() for i in (cluster.serving, cluster.cluster_serving)):
                continue
            kinds = (
                (SERVING_RUNTIMES, cluster.serving.cache),
                (CLUSTER_SERVING_RUNTIMES, cluster.cluster_serving.cache),
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
        self, fr: dict[str, Any], revision: int | None, results: list[ClusterResult], problem: str | None
    ) -> None:
        name = fr["metadata"]["name"]
        generation = fr["metadata"].get("generation")

        def desired(live: dict[str, Any]) -> dict[str, Any] | None:
            old = live.get("status") or {}
            return build_status(old, generation, revision, results, problem)

        with contextlib.suppress(NotFound):
            await write_status(
                self.hub, FLEET_RUNTIMES, None, name, desired, field_manager=FLEET_FIELD_MANAGER, cached=fr
            )


def _condition(old: Mapping[str, Any], type_: str, ready: bool, reason: str, message: str) -> dict[str, Any]:
    status = "True" if ready else "False"
    previous: Mapping[str, Any] = next((c for c in old.get("conditions") or [] if c.get("type") == type_), {})
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition_time(previous, status, _now()),
    }


def build_status(
    old: Mapping[str, Any],
    generation: int | None,
    revision: int | None,
    results: list[ClusterResult],
    problem: str | None,
) -> dict[str, Any]:
    """The FleetRuntime's status from its clusters' results (or the template's problem); transition times kept."""
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
        before = previous.get(r.name) or {}
        entry["lastTransitionTime"] = transition_time(before, r.phase, _now(), field="phase")
        clusters.append(entry)
    summary = roll_up(results, revision)
    return {
        "observedGeneration": generation,
        "revision": revision,
        "placed": summary.placed,
        "applied": summary.applied,
        "phase": summary.phase,
        "clusters": clusters,
        "conditions": [_condition(old, "Ready", summary.ready, summary.reason, summary.message)],
    }
