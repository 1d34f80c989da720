"""Helpers of the observability tests: a controller on an embedded fleet, scraping, waiting."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import apply_document

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
OME_SAMPLES = ROOT / "deploy" / "samples" / "ome"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as reply:
        return reply.status, await reply.text()


async def scrape(base_url: str) -> Samples:
    """Every sample of `/metrics`, keyed by (sample name, labels)."""
    status, text = await get(base_url + "/metrics")
    assert status == 200, text
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


async def until(check: Callable[[], Awaitable[Any]], what: str, timeout: float = 60, interval: float = 0.05) -> Any:
    """Poll an endpoint (another server's state can only be polled) until `check()` returns something truthy."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                found = await check()
                if found:
                    return found
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(f"never {what} within {timeout}s") from None


async def apply_all(server: EmbeddedAPIServer, *docs: dict[str, Any]) -> None:
    for doc in docs:
        await apply_document(server, doc)


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def serving_runtime(name: str, namespace: str, parent: str, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    runner: dict[str, Any] = {"name": "ome-container", "args": ["--tp-size=1"]}
    if env is not None:
        runner["env"] = env
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"ome.io/inherit-from": parent}},
        "spec": {"disabled": False, "engineConfig": {"runner": runner}},
    }


def inference_service(name: str, namespace: str, runtime: str, model: str = "llama-3-2-3b-instruct") -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "model": {"name": model},
            "runtime": {"name": runtime},
            "engine": {"minReplicas": 1, "maxReplicas": 1},
        },
    }
