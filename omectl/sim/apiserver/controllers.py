"""The cluster's own background controllers: garbage collection, namespace termination and CRD cleanup.

They react to committed events through a store listener and run as one asyncio task, asynchronously like
kube-controller-manager, so a cascade is observable (and awaitable) rather than instantaneous.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from omectl.sim.apiserver.api import CRD_FINALIZER, CRD_KEY, NS_KEY, ClusterAPI, WriteOptions
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.store import DELETED, StorageKey, WatchEvent

log = logging.getLogger(__name__)

_GC_OPTS = WriteOptions(field_manager="generic-garbage-collector")
_NS_OPTS = WriteOptions(field_manager="namespace-controller")
_CRD_OPTS = WriteOptions(field_manager="apiextensions-apiserver")

ObjectRef = tuple[StorageKey, str, str]  # storage key, namespace, name


class ClusterControllers:
    def __init__(self, api: ClusterAPI) -> None:
        self.api = api
        self.store = api.store
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        # owner uid -> dependents naming it
        self.dependents: dict[str, set[ObjectRef]] = {}
        self._task: asyncio.Task[None] | None = None
        self.idle = asyncio.Event()
        self.idle.set()
        self._index_existing()
        self.store.listeners.append(self._on_event)

    # --- wiring ----------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"controllers-{self.api.name}")
            for ns in list(self.store.items(NS_KEY)):
                if ns["metadata"].get("deletionTimestamp"):
                    self._enqueue("namespace", ns["metadata"]["name"])
            for crd in list(self.store.items(CRD_KEY)):
                if crd["metadata"].get("deletionTimestamp"):
                    self._enqueue("crd", crd["metadata"]["name"])

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _index_existing(self) -> None:
        for key, bucket in self.store.buckets.items():
            for obj in bucket.values():
                self._index(key, obj)

    def _index(self, key: StorageKey, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ref = (key, meta.get("namespace", ""), meta["name"])
        for owner in meta.get("ownerReferences") or []:
            self.dependents.setdefault(owner.get("uid", ""), set()).add(ref)

    def _unindex(self, key: StorageKey, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ref = (key, meta.get("namespace", ""), meta["name"])
        for owner in meta.get("ownerReferences") or []:
            deps = self.dependents.get(owner.get("uid", ""))
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[owner.get("uid", "")]

    def _enqueue(self, kind: str, item: Any) -> None:
        self.idle.clear()
        self.queue.put_nowait((kind, item))

    def _on_event(self, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        if event.old is not None:
            self._unindex(event.key, event.old)
        if event.type != DELETED:
            self._index(event.key, event.obj)
            if meta.get("ownerReferences"):
                self._enqueue("dependent", (event.key, meta.get("namespace", ""), meta["name"]))
            if meta.get("deletionTimestamp"):
                finalizers = meta.get("finalizers") or []
                if "foregroundDeletion" in finalizers or "orphan" in finalizers:
                    self._enqueue("owner", meta["uid"])
                if event.key == NS_KEY:
                    self._enqueue("namespace", meta["name"])
                if event.key == CRD_KEY and CRD_FINALIZER in finalizers:
                    self._enqueue("crd", meta["name"])
            return
        uid = meta.get("uid", "")
        for dep in list(self.dependents.get(uid, ())):
            self._enqueue("dependent", dep)
        for owner in meta.get("ownerReferences") or []:
            self._enqueue("owner", owner.get("uid", ""))
        namespace = meta.get("namespace")
        if namespace:
            ns = self.store.get(NS_KEY, "", namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._enqueue("namespace", namespace)
        for crd in self.store.items(CRD_KEY):
            spec = crd.get("spec") or {}
            if (
                crd["metadata"].get("deletionTimestamp")
                and (spec.get("group"), spec.get("names", {}).get("plural")) == event.key
            ):
                self._enqueue("crd", crd["metadata"]["name"])

    async def wait_idle(self) -> None:
        """Wait until every queued cascade has been processed (tests and shutdown use it)."""
        await self.idle.wait()

    # --- the loop --------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            kind, item = await self.queue.get()
            try:
                if kind == "dependent":
                    await self._check_dependent(*item)
                elif kind == "owner":
                    await self._check_owner(item)
                elif kind == "namespace":
                    await self._check_namespace(item)
                elif kind == "crd":
                    await self._check_crd(item)
            except APIError as exc:
                if exc.code not in (404, 409):
                    log.warning("cluster %s: %s %s: %s", self.api.name, kind, item, exc.message)
            except Exception:
                log.exception("cluster %s: controller failure on %s %s", self.api.name, kind, item)
            if self.queue.empty():
                self.idle.set()

    # --- garbage collection ----------------------------------------------------------------------------

    def _owner_present(self, dependent_ns: str, ref: dict[str, Any]) -> dict[str, Any] | None:
        owner = self.store.lookup_uid(ref.get("uid", ""))
        if owner is None or owner["metadata"]["name"] != ref.get("name"):
            return None
        owner_ns = owner["metadata"].get("namespace", "")
        if owner_ns and owner_ns != dependent_ns:
            return None  # a namespaced dependent may only name owners of its own namespace
        return owner

    async def _check_dependent(self, key: StorageKey, namespace: str, name: str) -> None:
        obj = self.store.get(key, namespace, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs:
            return
        owners = [self._owner_present(namespace, ref) for ref in refs]
        alive = [o for o in owners if o is not None and not _being_deleted_in_foreground(o)]
        if alive:
            return
        foreground = any(o is not None for o in owners)
        rt = self.api.types.storage_version(key)
        if rt is None:
            return
        policy = "Foreground" if foreground else "Background"
        await self.api.delete(rt, namespace, name, {"propagationPolicy": policy}, _GC_OPTS)

    async def _check_owner(self, uid: str) -> None:
        owner = self.store.lookup_uid(uid)
        if owner is None or not owner["metadata"].get("deletionTimestamp"):
            return
        finalizers = list(owner["metadata"].get("finalizers") or [])
        deps = [d for d in self.dependents.get(uid, set()) if self.store.get(*d) is not None]
        if "orphan" in finalizers:
            for key, ns, name in deps:
                await self._strip_owner(key, ns, name, uid)
            await self._remove_finalizer(owner, "orphan")
        elif "foregroundDeletion" in finalizers:
            blocking = []
            for key, ns, name in deps:
                dep = self.store.get(key, ns, name)
                if dep is None:
                    continue
                if not dep["metadata"].get("deletionTimestamp"):
                    await self._check_dependent(key, ns, name)
                dep = self.store.get(key, ns, name)
                if dep is not None and any(
                    r.get("uid") == uid and r.get("blockOwnerDeletion")
                    for r in dep["metadata"].get("ownerReferences") or []
                ):
                    blocking.append(dep)
            if not blocking:
                await self._remove_finalizer(owner, "foregroundDeletion")

    async def _strip_owner(self, key: StorageKey, namespace: str, name: str, uid: str) -> None:
        rt = self.api.types.storage_version(key)
        if rt is None:
            return

        def produce(live: dict[str, Any]) -> dict[str, Any]:
            refs = [r for r in live["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            meta = dict(live["metadata"])
            if refs:
                meta["ownerReferences"] = refs
            else:
                meta.pop("ownerReferences", None)
            return dict(live, metadata=meta)

        await self.api._write_update(rt, namespace, name, produce, _GC_OPTS, "", precondition_rv=None)

    async def _remove_finalizer(self, obj: dict[str, Any], finalizer: str) -> None:
        meta = obj["metadata"]
        key = self.store.by_uid.get(meta["uid"])
        if key is None:
            return
        rt = self.api.types.storage_version(key[0])
        if rt is None:
            return

        def produce(live: dict[str, Any]) -> dict[str, Any]:
            fins = [f for f in live["metadata"].get("finalizers") or [] if f != finalizer]
            live_meta = dict(live["metadata"])
            if fins:
                live_meta["finalizers"] = fins
            else:
                live_meta.pop("finalizers", None)
            return dict(live, metadata=live_meta)

        await self.api._write_update(
            rt, meta.get("namespace", ""), meta["name"], produce, _GC_OPTS, "", precondition_rv=None
        )

    # --- namespaces ------------------------------------------------------------------------------------

    async def _check_namespace(self, name: str) -> None:
        ns = self.store.get(NS_KEY, "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for rt in self._namespaced_storage_types():
            for obj in list(self.store.items(rt.storage_key, name)):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    await self.api.delete(rt, name, obj["metadata"]["name"], {}, _NS_OPTS)
        if remaining and any(
            next(iter(self.store.items(rt.storage_key, name)), None) is not None
            for rt in self._namespaced_storage_types()
        ):
            return  # finalizers hold some content; a later DELETED event brings us back
        rt = self.api.types.lookup("", "v1", "namespaces")
        assert rt is not None
        await self.api._write_update(
            rt,
            "",
            name,
            lambda live: dict(live, spec={"finalizers": []}),
            _NS_OPTS,
            "finalize",
            precondition_rv=None,
        )

    def _namespaced_storage_types(self) -> list[Any]:
        seen: set[StorageKey] = set()
        out = []
        for rt in self.api.types.all():
            if rt.namespaced and rt.storage_key not in seen:
                seen.add(rt.storage_key)
                storage = self.api.types.storage_version(rt.storage_key)
                if storage is not None:
                    out.append(storage)
        return out

    # --- CRD cleanup -----------------------------------------------------------------------------------

    async def _check_crd(self, name: str) -> None:
        crd = self.store.get(CRD_KEY, "", name)
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        spec = crd.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        rt = self.api.types.storage_version(key)
        if rt is not None:
            for obj in list(self.store.items(key)):
                if not obj["metadata"].get("deletionTimestamp"):
                    await self.api.delete(
                        rt, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], {}, _CRD_OPTS
                    )
            if next(iter(self.store.items(key)), None) is not None:
                return
        await self._remove_finalizer(crd, CRD_FINALIZER)


def _being_deleted_in_foreground(obj: dict[str, Any]) -> bool:
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and "foregroundDeletion" in (meta.get("finalizers") or [])
