"""Stopping the controller leaves no task running: every informer, worker, webhook keeper, Lease round and registry
loop it started has ended by the time `ControllerApp.stop` returns (omectl/background.py holds them in task groups)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.settings import Settings
from omectl.sim.fleet import EmbeddedFleet, apply_document

pytestmark = pytest.mark.xdist_group("e2e")
ROOT = Path(__file__).resolve().parents[2]


def runtime(name: str) -> dict[str, object]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {"engineConfig": {"runner": {"name": "ome-container"}}},
    }


def serves_a_request(task: asyncio.Task[object]) -> bool:
    """A task of the embedded API server's HTTP side (aiohttp's per-connection handlers): it ends with the server,
    or when it next notices the client gone, not with the controller."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and code.co_filename.endswith("aiohttp/web_protocol.py")


def names(tasks: set[asyncio.Task[object]]) -> list[str]:
    return sorted(f"{t.get_name()} ({getattr(t.get_coro(), '__qualname__', '?')})" for t in tasks)


async def test_stop_leaves_no_task_of_the_controller_running(tmp_path: Path) -> None:
    before_fleet = asyncio.all_tasks()
    fleet = await EmbeddedFleet(2, name_prefix="shut-").start()
    try:
        await fleet.apply([ROOT / "deploy" / "crds"])
        kubeconfig = fleet.write_kubeconfig(tmp_path / "kc")
        write_registrations(tmp_path / "clusters", kubeconfig, ["shut-1", "shut-2"])
        settings = Settings.load(webhook_port=0, clusters_dir=tmp_path / "clusters", metrics_port=0)
        before_app = asyncio.all_tasks()
        app = ControllerApp(settings, status_file=tmp_path / "status.json")
        await app.start()
        try:
            await app.wait_synced(60)
            await apply_document(fleet["shut-1"], runtime("base"))
            async with asyncio.timeout(30):
                while not app.controller.clusters["shut-1"].health.reconciles:  # noqa: ASYNC110 - a counter, polled under a deadline
                    await asyncio.sleep(0.05)
            running = {t.get_name() for t in asyncio.all_tasks() - before_app}
        finally:
            await app.stop()
        left = {t for t in asyncio.all_tasks() - before_app if not t.done() and not serves_a_request(t)}
        assert names(left) == []
        started = {"registry", "workers", "ha-coordinator", "informer-shut-1-clusterservingruntimes", "status-file"}
        assert started | {"webhooks-shut-1", "webhooks-informer-shut-2"} <= running  # what the check above covered
    finally:
        await fleet.stop()
    assert names({t for t in asyncio.all_tasks() - before_fleet if not t.done()}) == []
