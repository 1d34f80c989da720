"""Benchmark of cluster ownership on real time: how long a dead holder's clusters go unowned, how soon a holder cut
off from a member fences itself, and how long a graceful hand-over to a joining replica takes.

Everything runs in this process, on one event loop: every member cluster and the coordination hub are embedded API
servers (`omectl.sim.apiserver.server.EmbeddedAPIServer`), each replica a `--ha` `ShardCoordinator` running its own
rounds (`ShardCoordinator.run`, the system clock) with the timings tests/ha/test_replicas.py gives `omectl run --ha`
(3 s leases, a 2 s renew deadline, a round every 0.5 s). tests/ha/ checks what happens (on fake time in
tests/ha/test_sharding.py, in the servers' own records in tests/ha/test_replicas.py); the times it takes are these
figures, not test assertions, since a loaded machine is no stopwatch.

`python -m benchmarks.ha_ownership` repeats each phase, prints a table, writes `benchmarks/results/ha_ownership.json`
and rewrites its section in `benchmarks/README.md`; `--quick` runs each phase once and leaves the README alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import (
    README,
    RESULTS_DIR,
    evaluate_targets,
    figure_rows,
    machine_info,
    markdown_rows,
    measured_on,
    publish,
    run_header,
    units_of,
)
from omectl.fleet.leases import Holder, LeaseTimings
from omectl.fleet.sharding import Membership, Replica, ShardCoordinator
from omectl.kube.client import ClusterClient
from omectl.sim.apiserver.server import EmbeddedAPIServer

DEFAULT_OUT = RESULTS_DIR / "ha_ownership.json"
README_BEGIN = "<!-- ha-ownership:begin -->"
README_END = "<!-- ha-ownership:end -->"
NAMESPACE = "omectl-system"
CLUSTERS = 4
TIMINGS = LeaseTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=0.5)
# A dead replica's clusters are free once its Lease has stood unchanged for a lease duration on the survivor's
# clock; the survivor sees that on one of its rounds (a retry period apart, with client-go's jitter), and its
# membership view of the dead replica lags by up to a round: the bound tests/ha/test_replicas.py used to assert.
TAKEOVER_BOUND = TIMINGS.lease_duration + 2 * TIMINGS.retry_period + 1.0
# A holder's writes stop at its renew deadline after the last renewal, whatever the rounds are doing; the figure
# is measured from the partition, so the last renewal can lie up to a round before it.
FENCE_BOUND = TIMINGS.renew_deadline + TIMINGS.retry_period
FIGURES: dict[str, tuple[str, str]] = {
    "takeover_after_death_s": ("s", "a dead replica's clusters owned by the survivor, after its death"),
    "takeover_after_death_max_s": ("s", "the same, slowest repeat"),
    "fenced_after_partition_s": ("s", "a holder cut off from its member fences itself, after the partition"),
    "fenced_after_partition_max_s": ("s", "the same, slowest repeat"),
    "fence_late_s": ("s", "the fence (the listener's `lost`) after the renew deadline, slowest repeat"),
    "handover_on_join_s": ("s", "a joining replica owns its share (graceful hand-over), after its membership"),
    "handover_on_join_max_s": ("s", "the same, slowest repeat"),
}
TARGETS: dict[str, tuple[str, float]] = {
    "takeover_after_death_max_s": ("<=", TAKEOVER_BOUND),
    "fenced_after_partition_max_s": ("<=", FENCE_BOUND),
    "handover_on_join_max_s": ("<=", TIMINGS.lease_duration),  # a hand-over waits for no lease to expire
}


@dataclass
class LostAt:
    """An `OwnershipListener` noting when each cluster's ownership was lost (monotonic time)."""

    at: dict[str, float] = field(default_factory=dict)

    def acquired(self, cluster: str) -> None:
        pass

    async def handing_over(self, cluster: str, successor: Replica | None, removed: bool) -> None:
        pass

    async def stopping(self, cluster: str) -> None:
        pass

    def lost(self, cluster: str) -> None:
        self.at.setdefault(cluster, time.monotonic())


@dataclass
class Fleet:
    hub: EmbeddedAPIServer
    members: list[EmbeddedAPIServer]
    tmp: Path
    running: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    coordinators: dict[str, ShardCoordinator] = field(default_factory=dict)

    async def client(self, server: EmbeddedAPIServer) -> ClusterClient:
        return await ClusterClient.from_kubeconfig(
            server.write_kubeconfig(self.tmp / f"{server.name}.kubeconfig"), name=server.name
        )

    async def start(self, replica: str) -> ShardCoordinator:
        """A `--ha` replica: its membership claimed, every member added, its rounds running."""
        holder = Holder.for_this_process(replica, ha=True)
        membership = Membership(
            await self.client(self.hub), holder, namespace=NAMESPACE, timings=TIMINGS, owns_client=True
        )
        await membership.claim()
        coordinator = ShardCoordinator(holder, namespace=NAMESPACE, timings=TIMINGS, membership=membership)
        for server in self.members:
            coordinator.add_member(server.name, await self.client(server))
        self.coordinators[replica] = coordinator
        self.running[replica] = asyncio.create_task(coordinator.run(), name=f"bench-{replica}")
        return coordinator

    async def kill(self, replica: str) -> None:
        """Stop a replica's rounds as a SIGKILL would: nothing renewed or released from here on."""
        task = self.running.pop(replica)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        coordinator = self.coordinators.pop(replica)
        for member in coordinator.members.values():
            await member.client.close()
        if coordinator.membership is not None:
            await coordinator.membership.client.close()

    async def stop(self) -> None:
        for replica in list(self.running):
            task = self.running.pop(replica)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await self.coordinators.pop(replica).close()


@contextlib.asynccontextmanager
async def fleet(tmp: Path) -> AsyncIterator[Fleet]:
    hub = EmbeddedAPIServer("hub")
    members = [EmbeddedAPIServer(f"c{i}") for i in range(CLUSTERS)]
    for server in [hub, *members]:
        await server.start()
    f = Fleet(hub, members, tmp)
    try:
        yield f
    finally:
        await f.stop()
        for server in [hub, *members]:
            await server.stop()


async def until(check: Any, what: str, timeout: float) -> float:
    """Poll `check` every 10 ms until it holds; the monotonic instant it did (a phase past `timeout` fails)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"never {what} within {timeout} s")
        await asyncio.sleep(0.01)
    return time.monotonic()


def settled(coordinators: list[ShardCoordinator]) -> bool:
    """Every member owned by exactly one replica, the one the assignment names."""
    owned = [(c, coordinator) for coordinator in coordinators for c in coordinator.owned()]
    return len(owned) == CLUSTERS == len({c for c, _ in owned}) and all(
        coordinator.desired.get(c) == coordinator.replica_id for c, coordinator in owned
    )


async def takeover_once(tmp: Path) -> float:
    async with fleet(tmp) as f:
        a = await f.start("a")
        b = await f.start("b")
        await until(lambda: settled([a, b]) and bool(a.owned()), "split between a and b", 30)
        victims = a.owned()
        await a.wait_rounds(a.rounds + 1, timeout=10)  # just after a round: its last renewal is fresh
        died = time.monotonic()
        await f.kill("a")
        taken = await until(lambda: set(victims) <= set(b.owned()), "taken over by b", 60)
        return taken - died


async def fence_once(tmp: Path) -> tuple[float, float]:
    async with fleet(tmp) as f:
        a = await f.start("a")
        listener = LostAt()
        a.listeners.append(listener)
        await until(lambda: len(a.owned()) == CLUSTERS, "a owning every member", 30)
        cut = f.members[0]
        partitioned = time.monotonic()
        await cut.partition()
        deadline = a.held[cut.name].deadline  # the last renewal that reached it, plus the renew deadline
        lost = await until(lambda: cut.name in listener.at, "fenced", 30)
        await cut.heal()
        return lost - partitioned, max(0.0, listener.at[cut.name] - deadline)


async def handover_once(tmp: Path) -> float:
    async with fleet(tmp) as f:
        a = await f.start("a")
        await until(lambda: len(a.owned()) == CLUSTERS, "a owning every member", 30)
        joined = time.monotonic()
        b = await f.start("b")
        await until(lambda: settled([a, b]) and bool(b.owned()), "b owning its share", 60)
        return time.monotonic() - joined


async def measure(repeats: int, tmp: Path) -> dict[str, Any]:
    takeovers, fences, lateness, handovers = [], [], [], []
    for i in range(repeats):  # interleaved, so a burst of other load touches every phase alike
        takeovers.append(await takeover_once(tmp / f"takeover-{i}"))
        fenced, late = await fence_once(tmp / f"fence-{i}")
        fences.append(fenced)
        lateness.append(late)
        handovers.append(await handover_once(tmp / f"handover-{i}"))
    return {"takeover": takeovers, "fence": fences, "fence_late": lateness, "handover": handovers}


def run_benchmark(repeats: int, quick: bool) -> dict[str, Any]:
    started = time.monotonic()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="omectl-bench-ha-") as tmp:
        for i in range(repeats):
            for phase in ("takeover", "fence", "handover"):
                (Path(tmp) / f"{phase}-{i}").mkdir()
        samples = asyncio.run(measure(repeats, Path(tmp)))
    figures = {
        "takeover_after_death_s": round(statistics.median(samples["takeover"]), 3),
        "takeover_after_death_max_s": round(max(samples["takeover"]), 3),
        "fenced_after_partition_s": round(statistics.median(samples["fence"]), 3),
        "fenced_after_partition_max_s": round(max(samples["fence"]), 3),
        # never 0 (a figure is positive): the fence cannot fall before the deadline, only at it or after
        "fence_late_s": max(round(max(samples["fence_late"]), 3), 0.001),
        "handover_on_join_s": round(statistics.median(samples["handover"]), 3),
        "handover_on_join_max_s": round(max(samples["handover"]), 3),
    }
    return {
        **run_header("ha_ownership", quick, started),
        "machine": machine_info(load),
        "layout": {
            "servers": f"{CLUSTERS} member clusters and a hub, embedded API servers in the benchmark process",
            "replicas": "--ha ShardCoordinators running their own rounds on the system clock",
        },
        "timings": {
            "lease_duration_s": TIMINGS.lease_duration,
            "renew_deadline_s": TIMINGS.renew_deadline,
            "retry_period_s": TIMINGS.retry_period,
        },
        "repeats": repeats,
        "samples": {name: [round(v, 3) for v in values] for name, values in samples.items()},
        "figures": figures,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(figures, quick, TARGETS),
    }


def markdown_table(results: dict[str, Any]) -> str:
    timings = results["timings"]
    return "\n".join(
        [
            "## HA ownership",
            "",
            "```sh",
            ".venv/bin/python -m benchmarks.ha_ownership           # the full run; rewrites this section",
            "```",
            "",
            f"{CLUSTERS} member clusters and a coordination hub (embedded API servers) and `--ha` replicas "
            "(`ShardCoordinator`s running their own rounds), all in one process, with "
            f"{timings['lease_duration_s']:g} s leases, a {timings['renew_deadline_s']:g} s renew deadline and a "
            f"round every {timings['retry_period_s']:g} s. *Takeover*: two replicas split the members, one stops "
            "dead (no renewal, no release); the time until the other owns its clusters. *Fence*: one replica owns "
            "every member, one member stops answering; the time until the replica has fenced its writes to it, "
            "and how late that was after the renew deadline. *Hand-over*: one replica owns every member, a second "
            "joins; the time from its membership until it owns its share (the first releases them gracefully). "
            f"Medians and the slowest of {results['repeats']} interleaved repeats. tests/ha/ checks the behaviour "
            "(on fake time in tests/ha/test_sharding.py); the times are these figures, not test assertions.",
            "",
            *markdown_rows(figure_rows(results, FIGURES)),
            "",
            measured_on(results),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ha_ownership", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="each phase once; the README is untouched")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    results = run_benchmark(1 if args.quick else 5, args.quick)
    section = None if args.quick else markdown_table(results)
    publish(args.out, results, figure_rows(results, FIGURES), section, README, (README_BEGIN, README_END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
