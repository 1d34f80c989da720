"""The Python peer of omectl's runtime-status reconcile, as a minimal kopf operator (one process per cluster).

Run it as kopf requires, one process per cluster, with `KUBECONFIG` pointing at a kubeconfig whose current context
is that cluster::

    KUBECONFIG=cluster-1.kubeconfig kopf run --standalone --all-namespaces --quiet \
        benchmarks/peers/kopf_runtime_status.py

It does what `omectl.controller.ome.runtime_status` does for ServingRuntimes and ClusterServingRuntimes, with the same
core code: kopf's event handlers feed an in-process cache of every runtime; each event resolves the runtime's
`ome.io/inherit-from` chain (`omectl.core.ome.inheritance.resolve_chain`: a ServingRuntime's parent
is the ServingRuntime of that name in its namespace, else the ClusterServingRuntime), merges it
(`omectl.core.ome.merge.merge_chain`), and writes `status.inheritanceChain`, the `InheritanceReady` condition and
`observedGeneration` through the status subresource, exactly as omectl words them (an unchanged status is not
written). A spec or annotation change, a create or a delete also re-reconciles every runtime that names the changed
one as its parent (recursively: the runtimes whose chain passes through it), as omectl's inherit-from index does.

Only `on.event` handlers are used, so kopf stores no progress annotations and adds no finalizers: the API writes
are the status writes alone, as with omectl. Writes go through one aiohttp session per process (16 in flight at
most, omectl's default concurrency), since kopf's handlers patch only the object they were called for.

`BENCH_STATS_FILE` (optional): a JSON file rewritten every 0.2 s with the cache size and the event, reconcile and
write counts, which `benchmarks.fleet_scale` reads to know when the peer has seen every runtime.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import orjson
import yaml

from omectl.core.ome.inheritance import ChainError, inherit_from, resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME

GROUP, VERSION = "ome.io", "v1beta1"
CONDITION = "InheritanceReady"
CONCURRENCY = 16

Key = tuple[str, str, str]  # (kind, namespace, name); namespace "" for a ClusterServingRuntime


class Peer:
    """The process's state: the runtime cache, who names whom as parent, the API session and the counters."""

    def __init__(self) -> None:
        self.cache: dict[Key, dict[str, Any]] = {}
        self.children: dict[str, set[Key]] = {}  # parent name -> runtimes naming it in ome.io/inherit-from
        self.session: aiohttp.ClientSession | None = None
        self.server = ""
        self.headers: dict[str, str] = {}
        self.semaphore = asyncio.Semaphore(CONCURRENCY)
        self.stats_task: asyncio.Task[None] | None = None
        self.counts = {"events": 0, "reconciles": 0, "writes": 0, "write_errors": 0, "merges": 0}

    # RuntimeLookup for resolve_chain
    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.cache.get((kind, namespace, name))


PEER = Peer()


def key_of(kind: str, obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return (kind, meta.get("namespace", "") if kind == SERVING_RUNTIME else "", meta["name"])


def load_kubeconfig() -> tuple[str, dict[str, str]]:
    """The current context's server URL and auth header (a token or none: the embedded servers need no more)."""
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    context_name = config["current-context"]
    context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next((u["user"] for u in config.get("users", []) if u["name"] == context.get("user")), {})
    headers = {"Content-Type": "application/merge-patch+json"}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    return cluster["server"].rstrip("/"), headers


def desired_status(live: Mapping[str, Any], chain: tuple[str, ...] | None, reason: str, message: str) -> Any:
    """The status omectl writes for this outcome (`omectl.controller.ome.runtime_status.desired_status`), or None when
    the live status already says it."""
    status = dict(live.get("status") or {})
    generation = int((live.get("metadata") or {}).get("generation", 0) or 0)
    new = dict(status)
    if chain is not None:
        new["inheritanceChain"] = list(chain)
    state = "True" if chain is not None else "False"
    conditions = [dict(c) for c in status.get("conditions") or []]
    prior = next((c for c in conditions if c.get("type") == CONDITION), None)
    condition = {
        "type": CONDITION,
        "status": state,
        "reason": reason,
        "message": message,
        "lastTransitionTime": (
            prior["lastTransitionTime"]
            if prior and prior.get("status") == state and prior.get("lastTransitionTime")
            else datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ),
        "observedGeneration": generation,
    }
    if prior is None:
        conditions.append(condition)
    else:
        conditions[conditions.index(prior)] = condition
    new["conditions"] = conditions
    new["observedGeneration"] = generation
    return None if status == new else new


async def reconcile(key: Key) -> None:
    """Resolve and merge one runtime's chain from the cache; write its status when it changes."""
    live = PEER.cache.get(key)
    if live is None:
        return
    PEER.counts["reconciles"] += 1
    try:
        chain = resolve_chain(live, PEER)
        merge_chain(spec_layers(chain))
        PEER.counts["merges"] += 1
        names: tuple[str, ...] | None = chain.names
        reason, message = "Resolved", f"inheritance chain resolved: [{' '.join(chain.names)}]"
    except ChainError as exc:
        names, reason, message = None, exc.reason, exc.message
    status = desired_status(live, names, reason, message)
    if status is None:
        return
    kind, namespace, name = key
    plural = "servingruntimes" if kind == SERVING_RUNTIME else "clusterservingruntimes"
    scope = f"/namespaces/{namespace}" if kind == SERVING_RUNTIME else ""
    url = f"{PEER.server}/apis/{GROUP}/{VERSION}{scope}/{plural}/{name}/status"
    assert PEER.session is not None
    async with PEER.semaphore, PEER.session.patch(url, data=orjson.dumps({"status": status})) as resp:
        await resp.read()
        if resp.status == 200:
            PEER.counts["writes"] += 1
        else:
            PEER.counts["write_errors"] += 1


def dependents(name: str) -> set[Key]:
    """Every cached runtime whose chain may pass through a runtime called `name` (children, grandchildren...)."""
    found: set[Key] = set()
    frontier = [name]
    for _ in range(8):  # a chain holds at most five runtimes; a cycle stops here too
        next_frontier = []
        for parent in frontier:
            for child in PEER.children.get(parent, ()):
                if child not in found:
                    found.add(child)
                    next_frontier.append(child[2])
        if not next_frontier:
            break
        frontier = next_frontier
    return found


async def on_runtime_event(kind: str, event: Mapping[str, Any]) -> None:
    obj = event["object"]
    key = key_of(kind, obj)
    PEER.counts["events"] += 1
    old = PEER.cache.get(key)
    old_parent = inherit_from(old) if old is not None else None
    if event.get("type") == "DELETED":
        PEER.cache.pop(key, None)
        if old_parent is not None:
            PEER.children.get(old_parent, set()).discard(key)
        changed = True
    else:
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        PEER.cache[key] = obj
        parent = inherit_from(obj)
        if old_parent != parent:
            if old_parent is not None:
                PEER.children.get(old_parent, set()).discard(key)
            if parent is not None:
                PEER.children.setdefault(parent, set()).add(key)
        changed = old is None or (
            old["metadata"].get("generation") != obj["metadata"].get("generation")
            or old["metadata"].get("annotations") != obj["metadata"].get("annotations")
        )
        await reconcile(key)
    if changed:
        await asyncio.gather(*(reconcile(child) for child in dependents(key[2]) if child != key))


@kopf.on.event(GROUP, VERSION, "servingruntimes")  # type: ignore[arg-type]
async def serving_runtime_event(event: Mapping[str, Any], **_: Any) -> None:
    await on_runtime_event(SERVING_RUNTIME, event)


@kopf.on.event(GROUP, VERSION, "clusterservingruntimes")  # type: ignore[arg-type]
async def cluster_serving_runtime_event(event: Mapping[str, Any], **_: Any) -> None:
    await on_runtime_event(CLUSTER_SERVING_RUNTIME, event)


async def write_stats(path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    while True:
        tmp.write_bytes(orjson.dumps({"pid": os.getpid(), "cached": len(PEER.cache), **PEER.counts}))
        os.replace(tmp, path)
        await asyncio.sleep(0.2)


@kopf.on.startup()  # type: ignore[arg-type]
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # no Kubernetes Events from kopf's own logging
    settings.peering.standalone = True
    settings.watching.server_timeout = 300
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    PEER.server, PEER.headers = load_kubeconfig()
    PEER.session = aiohttp.ClientSession(
        headers=PEER.headers, connector=aiohttp.TCPConnector(limit=CONCURRENCY), timeout=aiohttp.ClientTimeout(60)
    )
    stats = os.environ.get("BENCH_STATS_FILE")
    if stats:
        PEER.stats_task = asyncio.get_running_loop().create_task(write_stats(Path(stats)))


@kopf.on.cleanup()  # type: ignore[arg-type]
async def cleanup(**_: Any) -> None:
    if PEER.session is not None:
        await PEER.session.close()
