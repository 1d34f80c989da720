"""The controller's Prometheus metrics (prometheus-client), in a registry of its own per `ControllerMetrics`.

Two kinds of series:

- **Recorded** on the reconcile path, one call per reconcile (`observe_reconcile`, a few microseconds: label
  children are cached, so no label lookup per call): `omectl_reconciles_total{cluster,kind,result}`,
  `omectl_reconcile_duration_seconds{cluster,kind}` and `omectl_queue_wait_seconds{cluster,kind}`; and, from
  `omectl.observability.loop_lag`, `omectl_event_loop_lag_seconds` (how late the event loop woke a sleeper); and
  `omectl_reconcile_longest_step_seconds{kind}`, each reconcile's longest hold of the loop between two suspensions
  (`omectl.observability.steps`), which names the kind of reconcile that makes the loop late.
- **Read at scrape time** from a `FleetSample` that the controller builds on demand (nothing per watch event beyond
  the counters the informers and clients already keep): queue depth, cached objects, resolver hits and misses,
  cluster health, watch restarts and API errors by code.

Every metric and its labels are listed in docs/operations.md ("Metrics, health and logs").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = [
    "RECONCILE_BUCKETS",
    "RESULT_ERROR",
    "RESULT_REQUEUE",
    "RESULT_SUCCESS",
    "ClusterSample",
    "ControllerMetrics",
    "FleetSample",
]

RESULT_SUCCESS = "success"
RESULT_REQUEUE = "requeue"  # the reconcile asked to be retried later (a broken chain, a missing pinned revision)
RESULT_ERROR = "error"  # the reconcile raised
# Reconciles take microseconds (warm resolver, nothing to write) to seconds (several applies on a slow server).
RECONCILE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
QUEUE_WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
# A healthy loop is a millisecond or two late; past a second the kubelet's liveness probe is at risk.
LOOP_LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(slots=True)
class ClusterSample:
    """One cluster as the metrics see it at a scrape."""

    name: str
    connected: bool
    synced: bool
    healthy: bool
    queue_depth: int
    objects: dict[str, int] = field(default_factory=dict)  # kind -> cached objects
    watch_restarts: dict[str, int] = field(default_factory=dict)  # kind -> list/watch restarts
    watch_failures: dict[str, int] = field(default_factory=dict)  # kind -> failed list/watch attempts
    api_errors: dict[int, int] = field(default_factory=dict)  # HTTP status -> non-2xx answers
    events_dropped: int = 0  # events not written because the cluster's event backlog was full


@dataclass(slots=True)
class FleetSample:
    clusters: list[ClusterSample]
    resolver_hits: int = 0
    resolver_misses: int = 0
    resolver_merges: int = 0
    resolver_entries: int = 0
    queue_in_flight: int = 0
    queue_delayed: int = 0
    registry_errors: int = 0


class _FleetCollector(Collector):
    def __init__(self, sample: Callable[[], FleetSample]) -> None:
        self.sample = sample

    def describe(self) -> list[Metric]:
        return []  # the families are built at collect time; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        fleet = self.sample()
        depth = GaugeMetricFamily("omectl_queue_depth", "Keys ready to reconcile, per cluster.", labels=["cluster"])
        connected = GaugeMetricFamily(
            "omectl_cluster_connected", "1 when every informer of the cluster is connected.", labels=["cluster"]
        )
        synced = GaugeMetricFamily(
            "omectl_cluster_synced", "1 when every informer of the cluster has listed once.", labels=["cluster"]
        )
        healthy = GaugeMetricFamily(
            "omectl_cluster_healthy",
            "0 when the cluster is marked unhealthy (disconnected longer than the readiness grace period).",
            labels=["cluster"],
        )
        objects = GaugeMetricFamily(
            "omectl_cache_objects", "Objects in the informer caches.", labels=["cluster", "kind"]
        )
        restarts = CounterMetricFamily(
            "omectl_watch_restarts",
            "List/watch cycles restarted (a watch's clean end, an expired resourceVersion or a failure).",
            labels=["cluster", "kind"],
        )
        failures = CounterMetricFamily(
            "omectl_watch_failures", "Failed list or watch attempts (each backs off).", labels=["cluster", "kind"]
        )
        api_errors = CounterMetricFamily(
            "omectl_api_errors",
            "Non-2xx answers of the clusters' API servers, by HTTP status.",
            labels=["cluster", "code"],
        )
        events_dropped = CounterMetricFamily(
            "omectl_events_dropped",
            "Events not written because the cluster's event backlog was full.",
            labels=["cluster"],
        )
        for cluster in fleet.clusters:
            name = cluster.name
            events_dropped.add_metric([name], cluster.events_dropped)
            depth.add_metric([name], cluster.queue_depth)
            connected.add_metric([name], 1 if cluster.connected else 0)
            synced.add_metric([name], 1 if cluster.synced else 0)
            healthy.add_metric([name], 1 if cluster.healthy else 0)
            for kind, count in sorted(cluster.objects.items()):
                objects.add_metric([name, kind], count)
            for kind, count in sorted(cluster.watch_restarts.items()):
                restarts.add_metric([name, kind], count)
            for kind, count in sorted(cluster.watch_failures.items()):
                failures.add_metric([name, kind], count)
            for code, count in sorted(cluster.api_errors.items()):
                api_errors.add_metric([name, str(code)], count)
        yield from (depth, connected, synced, healthy, objects, restarts, failures, api_errors, events_dropped)
        yield GaugeMetricFamily("omectl_clusters", "Registered clusters this controller runs.", len(fleet.clusters))
        yield GaugeMetricFamily(
            "omectl_registry_errors", "Registrations that cannot be used (see `omectl cluster status`).",
            fleet.registry_errors,
        )  # fmt: skip
        yield GaugeMetricFamily("omectl_queue_in_flight", "Reconciles running now.", fleet.queue_in_flight)
        yield GaugeMetricFamily(
            "omectl_queue_delayed", "Keys waiting for a backoff or requeue time.", fleet.queue_delayed
        )
        yield CounterMetricFamily(
            "omectl_resolver_hits", "Chain resolutions answered from the shared resolver's cache.", fleet.resolver_hits
        )
        yield CounterMetricFamily(
            "omectl_resolver_misses", "Chain resolutions that had to merge.", fleet.resolver_misses
        )
        yield CounterMetricFamily(
            "omectl_resolver_merges", "Chain layers merged by the resolver.", fleet.resolver_merges
        )
        yield GaugeMetricFamily(
            "omectl_resolver_entries", "Merges held in the resolver's cache.", fleet.resolver_entries
        )


class ControllerMetrics:
    """The metrics of one controller: a private `CollectorRegistry` (so several controllers can share a process)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
        self.reconciles = Counter(
            "omectl_reconciles",
            "Reconciles finished, by result: success, requeue (retry later) or error (raised).",
            ["cluster", "kind", "result"],
            registry=self.registry,
        )
        self.reconcile_duration = Histogram(
            "omectl_reconcile_duration_seconds",
            "Time spent in one reconcile.",
            ["cluster", "kind"],
            buckets=RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "omectl_queue_wait_seconds",
            "Time a key waited in the work queue between becoming ready and being taken by a worker.",
            ["cluster", "kind"],
            buckets=QUEUE_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.loop_lag = Histogram(
            "omectl_event_loop_lag_seconds",
            "How much later than asked the event loop woke a periodic sleeper (the loop was busy meanwhile).",
            buckets=LOOP_LAG_BUCKETS,
            registry=self.registry,
        )
        self.longest_step = Histogram(
            "omectl_reconcile_longest_step_seconds",
            "Each reconcile's longest synchronous step: how long it held the event loop between two suspensions.",
            ["kind"],
            buckets=LOOP_LAG_BUCKETS,
            registry=self.registry,
        )
        self._steps: dict[str, Any] = {}
        self._counters: dict[tuple[str, str, str], Any] = {}
        self._histograms: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._collector: _FleetCollector | None = None

    def observe_reconcile(self, cluster: str, kind: str, result: str, duration: float, queue_wait: float) -> None:
        """Count one finished reconcile and observe its duration and queue wait (the hot path: cached children)."""
        counter = self._counters.get((cluster, kind, result))
        if counter is None:
            counter = self._counters[(cluster, kind, result)] = self.reconciles.labels(cluster, kind, result)
        counter.inc()
        histograms = self._histograms.get((cluster, kind))
        if histograms is None:
            histograms = self._histograms[(cluster, kind)] = (
                self.reconcile_duration.labels(cluster, kind),
                self.queue_wait.labels(cluster, kind),
            )
        histograms[0].observe(duration)
        histograms[1].observe(queue_wait)

    def observe_loop_lag(self, lag: float) -> None:
        self.loop_lag.observe(lag)

    def observe_longest_step(self, kind: str, seconds: float) -> None:
        child = self._steps.get(kind)
        if child is None:
            child = self._steps[kind] = self.longest_step.labels(kind)
        child.observe(seconds)

    def watch_fleet(self, sample: Callable[[], FleetSample]) -> None:
        """Read the scrape-time series from `sample()` on every collection (replaces an earlier source)."""
        if self._collector is not None:
            self.registry.unregister(self._collector)
        self._collector = _FleetCollector(sample)
        self.registry.register(self._collector)

    def forget_cluster(self, cluster: str) -> None:
        """Drop the recorded series of a cluster that was unregistered."""
        for key in [k for k in self._counters if k[0] == cluster]:
            del self._counters[key]
            self.reconciles.remove(*key)
        for pair in [k for k in self._histograms if k[0] == cluster]:
            del self._histograms[pair]
            self.reconcile_duration.remove(*pair)
            self.queue_wait.remove(*pair)

    def exposition(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)
