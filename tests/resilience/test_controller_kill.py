"""The controller process SIGKILLed in the middle of a rollout, and started again.

The clusters run on this test's event loop; the controller is a real `omectl run` process. A profile edit starts
a rollout (one reconcile at a time, engine writes slowed by 0.3 s, to keep it under way), the process is SIGKILLed
once some but not all engines of a cluster carry the new image, the profile is edited once more while no
controller runs, and a new process starts. Work resumes: every cluster converges on the expected render of the
newest profile, and no write of the new process renders from a stale view: every engine Deployment it commits
carries the newest image.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from omectl.cli.dev import write_registrations
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.fleet import EmbeddedFleet
from tests.resilience.workload import (
    CRDS,
    DEPLOYMENTS,
    ISVCS_PER_NAMESPACE,
    MixedFleet,
    images,
    until,
)

pytestmark = pytest.mark.xdist_group("resilience")
ROOT = Path(__file__).resolve().parents[2]
ENGINES = 2 * ISVCS_PER_NAMESPACE


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OMECTL_"))}
    return dict(env, PYTHONPATH=str(ROOT))


@contextlib.asynccontextmanager
async def controller_process(
    base: Path, name: str, concurrency: int = 16
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Path]]:
    status_file = base / f"{name}.status.json"
    config = base / "leases.yaml"  # short leases: the restart takes the killed process's clusters over sooner
    config.write_text("lease_duration: 3\nlease_renew_deadline: 2\nlease_retry_period: 0.5\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "omectl", "run", "--clusters-dir", str(base / "clusters"), "--no-install-webhooks",
        "--config", str(config), "--webhook-port", "0", "--metrics-port", "0", "--concurrency", str(concurrency),
        "--status-file", str(status_file), "--trace-file", str(base / f"{name}.jsonl"),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=_env(),
    )  # fmt: skip
    try:
        yield proc, status_file
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def status_of(proc: asyncio.subprocess.Process, status_file: Path, timeout: float = 30) -> dict[str, Any]:
    """The process's status file once every cluster is synced (another process's file can only be polled)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.returncode is not None:
            raise AssertionError(f"omectl run exited {proc.returncode}")
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            doc: dict[str, Any] = json.loads(await asyncio.to_thread(status_file.read_text))
            if doc["clusters"] and all(c.get("synced") for c in doc["clusters"]):
                return doc
        if time.monotonic() > deadline:
            raise AssertionError("omectl run never synced")
        await asyncio.sleep(0.1)


async def test_the_controller_killed_mid_rollout_resumes_without_rendering_from_a_stale_cache(tmp_path: Path) -> None:
    sim = await EmbeddedFleet(3, name_prefix="kl-").start()
    try:
        await sim.apply([CRDS])
        for server in sim.servers:
            write_registrations(
                tmp_path / "clusters", server.write_kubeconfig(tmp_path / f"{server.name}.kc"), [server.name]
            )
        fleet = MixedFleet(sim, None, tmp_path, tmp_path / "clusters", {})  # type: ignore[arg-type]
        async with controller_process(tmp_path, "first", concurrency=1) as (first, first_status):
            await status_of(first, first_status)
            await fleet.seed()
            await fleet.converged(60)
            victim = sim.servers[0]
            for server in sim.servers:
                server.faults.delay_next(100, 0.3, method="PATCH", path_contains="/deployments/")
            await fleet.rollout("sglang:v2")
            await until([victim], lambda: images(victim)["sglang:v2"] >= 2, 20, "the rollout under way")
            first.send_signal(signal.SIGKILL)
            await first.wait()
        assert 2 <= images(victim)["sglang:v2"] < ENGINES, images(victim)
        for server in sim.servers:
            server.faults.clear()
        await fleet.rollout("sglang:v3")  # while no controller runs
        written: list[tuple[str, str]] = []

        def record(event: WatchEvent) -> None:
            if event.key == DEPLOYMENTS and event.type != "DELETED":
                image = event.obj["spec"]["template"]["spec"]["containers"][0]["image"]
                written.append((event.obj["metadata"]["name"], image))

        for server in sim.servers:
            server.api.store.listeners.append(record)
        restarted = time.monotonic()
        async with controller_process(tmp_path, "second") as (second, second_status):
            doc = await status_of(second, second_status)
            await fleet.converged(30)
            print(f"converged {time.monotonic() - restarted:.2f} s after the restart ({len(written)} engine writes)")
            assert written and {image for _, image in written} == {"sglang:v3"}, written
            assert all(images(s) == {"sglang:v3": ENGINES} for s in sim.servers)
            async with aiohttp.ClientSession() as session:
                for probe in ("/healthz", "/readyz"):
                    async with session.get(doc["metricsUrl"] + probe) as reply:
                        assert reply.status == 200, (probe, await reply.text())
            deadline = time.monotonic() + 10
            while json.loads(await asyncio.to_thread(second_status.read_text))["queueDepth"]:
                assert time.monotonic() < deadline, "the queue never drained"
                await asyncio.sleep(0.1)
            assert second.returncode is None
    finally:
        await sim.stop()
