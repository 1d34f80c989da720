"""The kopf peer of omectl's OME reconcilers: engine workloads and runtime status, as a kopf operator.

Run it as kopf requires, one process per cluster, with `KUBECONFIG` pointing at a kubeconfig whose current context
is that cluster (and the repository on `PYTHONPATH`)::

    KUBECONFIG=cluster-1.kubeconfig kopf run --standalone --all-namespaces --quiet benchmarks/peers/kopf_engine.py

It does the work of omectl's engine reconciler and runtime-status reconciler with the same pure code from
`omectl.core`: kopf `on.event` handlers feed its caches (runtimes, models, InferenceServices, and the Deployments and
Services it rendered); each InferenceService is rendered (model, runtime, chain resolved from the caches and merged,
revision, render), its workloads server-side applied and its status written as omectl writes it; each runtime's
`status.inheritanceChain` and `InheritanceReady` condition are written as omectl words them; a runtime edit
reconciles exactly what it reaches (`benchmarks/peers/peer.py`).

Only `on.event` handlers are used, so kopf stores no progress annotations and adds no finalizers: the API writes are
the peer's own (`benchmarks/peers/api.py`). Kopf posts no Events (its logging would post them).

`BENCH_STATS_FILE` (optional): a JSON file rewritten every 0.2 s with the peer's counters (`Peer.stats`), which
`benchmarks.fleet_scale` reads to know what the peer has cached and whether it is idle.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kopf
import orjson

from benchmarks.peers.api import Api
from benchmarks.peers.cache import ISVC_LABEL
from benchmarks.peers.peer import CONCURRENCY, Peer
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME

OME = ("ome.io", "v1beta1")
PEER = Peer()
_background: list[asyncio.Task[None]] = []


@kopf.on.event(*OME, "servingruntimes")
async def serving_runtime_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.runtime_event(SERVING_RUNTIME, event)


@kopf.on.event(*OME, "clusterservingruntimes")
async def cluster_serving_runtime_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.runtime_event(CLUSTER_SERVING_RUNTIME, event)


@kopf.on.event(*OME, "inferenceservices")
async def inference_service_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.isvc_event(event)


@kopf.on.event(*OME, "basemodels")
async def base_model_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.model_event(PEER.cache.base_models, event)


@kopf.on.event(*OME, "clusterbasemodels")
async def cluster_base_model_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.model_event(PEER.cache.cluster_base_models, event)


@kopf.on.event("apps", "v1", "deployments", labels={ISVC_LABEL: kopf.PRESENT})
async def deployment_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.workload_event("Deployment", event)


@kopf.on.event("v1", "services", labels={ISVC_LABEL: kopf.PRESENT})
async def service_event(event: Mapping[str, Any], **_: Any) -> None:
    PEER.workload_event("Service", event)


async def write_stats(path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    while True:
        tmp.write_bytes(orjson.dumps({"pid": os.getpid(), **PEER.stats()}))
        os.replace(tmp, path)
        await asyncio.sleep(0.2)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # no Kubernetes Events from kopf's own logging
    settings.peering.standalone = True
    settings.watching.server_timeout = 300
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    PEER.connect(Api(Path(os.environ["KUBECONFIG"]), CONCURRENCY))
    await PEER.prime()
    stats = os.environ.get("BENCH_STATS_FILE")
    if stats:
        _background.append(asyncio.get_running_loop().create_task(write_stats(Path(stats))))


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    for task in _background:
        task.cancel()
    await PEER.work.stop()
    if PEER.api is not None:
        await PEER.api.close()
