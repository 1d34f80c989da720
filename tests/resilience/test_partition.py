"""One cluster partitioned for 60 s while the other two keep reconciling, then healed.

The partition lasts the 60 s the issue names (it runs once, in an xdist group of its own, so the rest of the suite
runs beside it). During it the healthy clusters get a profile edit every 3 s; the latency of each is measured from
the edit's commit to the commit of the last of the cluster's 10 engine Deployments carrying the new image (store
listeners, so the time is taken at the commits) and printed: every such rollout on a healthy cluster completes
(unloaded in ~0.1-0.3 s; the deadline of each wait is 10 s), so a partitioned cluster does not stall the others (its
reconciles fail fast and back off; the queue is fair across clusters). After healing, the partitioned cluster,
which got the same edits in-process (invisible to the controller), converges; the deadline is `HEAL_BOUND` (40 s:
after 60 s of refused connections its informers' backoff is at its 30 s cap, as client-go's reflector's is).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import pytest

from tests.resilience.workload import ISVCS_PER_NAMESPACE, RolloutClock, images, mixed_fleet, until

pytestmark = [pytest.mark.xdist_group("resilience-partition"), pytest.mark.long(70)]
PARTITION_SECONDS = 60.0
EDIT_EVERY = 3.0
HEAL_BOUND = 40.0  # the informers' reconnect backoff is capped at 30 s (client-go's 0.8 s -> 30 s), plus 10 s
ENGINES = 2 * ISVCS_PER_NAMESPACE


async def test_a_cluster_partitioned_for_60_s_does_not_slow_the_others_and_converges_after_healing(
    tmp_path: Path,
) -> None:
    async with mixed_fleet(tmp_path, "pt-") as fleet:
        cut, *healthy = fleet.servers
        clocks = {s.name: RolloutClock(s, ENGINES) for s in healthy}
        latencies: list[float] = []
        await cut.partition()
        partitioned_at = time.monotonic()
        try:
            round_ = 0
            while time.monotonic() - partitioned_at < PARTITION_SECONDS - EDIT_EVERY:
                image = f"sglang:part-{round_}"
                edited = time.monotonic()
                await fleet.rollout(image)  # on every cluster; the partitioned one cannot tell the controller
                await until(healthy, lambda i=image: all(i in c.done for c in clocks.values()), 10, f"{image} rolled")
                latencies += [clocks[s.name].done[image] - edited for s in healthy]
                round_ += 1
                await asyncio.sleep(max(0.0, edited + EDIT_EVERY - time.monotonic()))  # the next edit's time
            assert not images(cut).get(image), "the partitioned cluster cannot have been reached"
            await asyncio.sleep(max(0.0, partitioned_at + PARTITION_SECONDS - time.monotonic()))
        finally:
            await cut.heal()
            for clock in clocks.values():
                clock.close()
        healed_at = time.monotonic()
        print(
            f"partition {healed_at - partitioned_at:.1f} s; {len(latencies)} rollouts on healthy clusters: "
            f"median {statistics.median(latencies):.3f} s, max {max(latencies):.3f} s"
        )
        await fleet.converged(HEAL_BOUND)
        print(f"the partitioned cluster converged {time.monotonic() - healed_at:.2f} s after healing")
        assert healed_at - partitioned_at >= PARTITION_SECONDS
        # every round's rollout reached every healthy cluster while the partition lasted (the until above waited
        # for each; their latencies are printed, not bounded: a test under load is no stopwatch)
        assert round_ >= 2 and len(latencies) == round_ * len(healthy)
        await fleet.healthy()
