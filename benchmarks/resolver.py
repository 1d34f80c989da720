"""Benchmark of the memoized chain resolver: a 5-deep chain resolved cold, warm and after a root edit, vs a full merge.

`python -m benchmarks.resolver` builds realistic runtimes in-process (the spec's SGLang profile as the root, two
ClusterServingRuntimes and a ServingRuntime below it, then many leaf ServingRuntimes like the spec's
`runtime.yaml` with varied args and resources), serves them from `ObjectCache`s through `CacheLookup` as the
controller does, and times `ChainResolver.resolve` per call. Every phase runs in 3 rounds; each figure is the
median of the rounds' figures, printed with their spread. It prints one line per phase and a final table, and a
full run writes `benchmarks/results/resolver.json` and rewrites its table in `benchmarks/README.md`. `--quick` runs
small counts (the smoke test) and leaves both alone, as do `--profile` (a cProfile of each phase of the first
round) and `--no-readme`; `--out` writes the results JSON where it says.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiocache import Cache
from aiocache.serializers import NullSerializer

from benchmarks.common import (
    README,
    RESULTS_DIR,
    evaluate_targets,
    machine_info,
    markdown_rows,
    rewrite_readme_section,
    run_header,
    text_table,
    units_of,
    write_results,
)
from benchmarks.output import not_written_note, results_path
from benchmarks.repeats import ROUNDS, median_and_spread
from omectl.controller.ome.lookup import INHERIT_INDEX, CacheLookup, inherit_index
from omectl.controller.ome.resolver import ChainResolver
from omectl.core.ome.inheritance import resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.kube.cache import ObjectCache

DEFAULT_OUT = RESULTS_DIR / "resolver.json"
WHAT_IF = "what_if_l2_default_timeout"
README_BEGIN = "<!-- resolver:begin -->"
README_END = "<!-- resolver:end -->"

API_VERSION = "ome.io/v1beta1"
PROFILE_NAME = "sglang-profile"
NAMESPACE = "llama-demo"
SPEEDUP_TARGET = 50.0
TARGETS: dict[str, tuple[str, float]] = {"warm_speedup": (">=", SPEEDUP_TARGET)}
# Every figure of a run: name -> (unit, label). Each one is a positive number in the results file.
FIGURES: dict[str, tuple[str, str]] = {
    "full_merge_us": ("µs", "full merge of the 5 layers (`merge_chain`, no cache)"),
    "uncached_resolve_us": ("µs", "chain lookup + full merge (what a resolve costs without the resolver)"),
    "cold_resolve_us": ("µs", "cold resolve (empty resolver)"),
    "warm_resolve_us": ("µs", "warm resolve (same resourceVersions)"),
    "edit_resolve_us": ("µs", "resolve after a root edit (a sibling re-merged the shared prefix)"),
    "edit_first_resolve_us": ("µs", "first resolve after a root edit (re-merges all 5 layers)"),
    "warm_speedup": ("x", "speed-up of a warm resolve over a full merge"),
    "edit_speedup": ("x", "speed-up of an after-edit resolve over a full merge"),
    "warm_over_full": ("", "warm / full"),
    "edit_over_full": ("", "after-edit / full"),
}


@dataclass(frozen=True)
class Sizes:
    """Counts of one run: `leaves` leaf runtimes below the shared 4-runtime prefix, each phase repeated."""

    leaves: int
    full_reps: int
    cold_reps: int
    warm_reps: int
    edit_reps: int


FULL = Sizes(leaves=200, full_reps=20, cold_reps=5, warm_reps=50, edit_reps=20)
QUICK = Sizes(leaves=20, full_reps=3, cold_reps=2, warm_reps=5, edit_reps=3)


# --- realistic runtimes (shared with benchmarks.fleet_convergence) -----------------------------------------------


def _metadata(name: str, namespace: str | None, index: int, annotations: dict[str, str]) -> dict[str, Any]:
    """Metadata as the API server stores it (without managedFields, which the informer drops)."""
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"6f1c2a4e-0000-4000-8000-{index:012d}",
        "resourceVersion": str(1000 + index),
        "generation": 1,
        "creationTimestamp": "2026-12-01T09:00:00Z",
        "annotations": annotations,
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def profile_spec(image_tag: str = "v0.5.5.post3-cu129-amd64") -> dict[str, Any]:
    """The spec's `profile.yaml` (the SGLang profile), verbatim but for the image tag."""
    return {
        "disabled": True,
        "engineConfig": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            "runner": {
                "name": "ome-container",
                "image": f"docker.io/lmsysorg/sglang:{image_tag}",
                "command": [
                    "python3",
                    "-m",
                    "sglang.launch_server",
                    "--host=0.0.0.0",
                    "--port=8080",
                    "--model-path=$(MODEL_PATH)",
                    "--served-model-name={{.Name}}",
                ],
                "ports": [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}],
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                "readinessProbe": {
                    "httpGet": {"path": "/health_generate", "port": 8080},
                    "periodSeconds": 60,
                    "timeoutSeconds": 200,
                },
                "startupProbe": {
                    "httpGet": {"path": "/health_generate", "port": 8080},
                    "initialDelaySeconds": 60,
                    "periodSeconds": 6,
                    "timeoutSeconds": 30,
                    "failureThreshold": 150,
                },
            },
        },
    }


def profile_runtime(image_tag: str = "v0.5.5.post3-cu129-amd64") -> dict[str, Any]:
    """The spec's SGLang profile as a ClusterServingRuntime (metadata as stored)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterServingRuntime",
        "metadata": _metadata(PROFILE_NAME, None, 0, {"ome.io/runtime-profile": "true"}),
        "spec": profile_spec(image_tag),
    }


def child_spec(index: int) -> dict[str, Any]:
    """A child like the spec's `runtime.yaml`: its own formats, size range, args and resources, varied by index."""
    tp = (1, 2, 4, 8)[index % 4]
    cpu = str(4 + (index % 7) * 2)
    memory = f"{16 + (index % 9) * 8}Gi"
    resources = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(tp)}
    return {
        "disabled": False,
        "supportedModelFormats": [
            {
                "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
                "modelArchitecture": ("LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM")[index % 3],
                "autoSelect": False,
            }
        ],
        "modelSizeRange": {"min": f"{1 + index % 8}B", "max": f"{2 + index % 8 * 2}B"},
        "engineConfig": {
            "runner": {
                "name": "ome-container",
                "args": [
                    f"--tp-size={tp}",
                    f"--mem-frac=0.{80 + index % 15}",
                    f"--context-length={4096 * (1 + index % 8)}",
                    *(["--enable-torch-compile"] if index % 2 else []),
                ],
                "resources": {"requests": dict(resources), "limits": dict(resources)},
            }
        },
    }


def child_runtime(name: str, namespace: str, parent: str, index: int) -> dict[str, Any]:
    """A ServingRuntime child (metadata as stored) that inherits from `parent`."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ServingRuntime",
        "metadata": _metadata(name, namespace, 100 + index, {"ome.io/inherit-from": parent}),
        "spec": child_spec(index),
    }


def middle_runtimes() -> list[dict[str, Any]]:
    """Layers 2-4 of the 5-deep chain: a CUDA flavour, a GPU type, a model family (each sets a few fields)."""
    cuda = {
        "apiVersion": API_VERSION,
        "kind": "ClusterServingRuntime",
        "metadata": _metadata("sglang-cuda", None, 1, {"ome.io/inherit-from": PROFILE_NAME}),
        "spec": {
            "disabled": True,
            "engineConfig": {
                "runner": {
                    "name": "ome-container",
                    "env": [
                        {"name": "NCCL_DEBUG", "value": "WARN"},
                        {"name": "NCCL_IB_DISABLE", "value": "0"},
                        {"name": "CUDA_DEVICE_MAX_CONNECTIONS", "value": "1"},
                    ],
                }
            },
        },
    }
    h100 = {
        "apiVersion": API_VERSION,
        "kind": "ClusterServingRuntime",
        "metadata": _metadata("sglang-h100", None, 2, {"ome.io/inherit-from": "sglang-cuda"}),
        "spec": {
            "disabled": True,
            "engineConfig": {
                "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "gpu-type", "operator": "Equal", "value": "h100", "effect": "NoSchedule"},
                ],
                "runner": {
                    "name": "ome-container",
                    "env": [{"name": "NCCL_IB_DISABLE", "value": "1"}, {"name": "SGLANG_H100", "value": "1"}],
                },
            },
        },
    }
    family = {
        "apiVersion": API_VERSION,
        "kind": "ServingRuntime",
        "metadata": _metadata("sglang-llama", NAMESPACE, 3, {"ome.io/inherit-from": "sglang-h100"}),
        "spec": {
            "disabled": True,
            "protocolVersions": ["openAI"],
            "engineConfig": {
                "labels": {"model-family": "llama"},
                "annotations": {"ome.io/owner": "llm-platform"},
                "runner": {
                    "name": "ome-container",
                    "env": [{"name": "HF_HUB_OFFLINE", "value": "1"}],
                    "volumeMounts": [{"name": "model-cache", "mountPath": "/mnt/models"}],
                },
                "volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": "models"}}],
            },
        },
    }
    return [cuda, h100, family]


# --- measurement -------------------------------------------------------------------------------------------------


class Chains:
    """The runtimes of the benchmark in informer caches, looked up as the controller does."""

    def __init__(self, leaves: int) -> None:
        self.serving = ObjectCache()
        self.cluster_serving = ObjectCache()
        for cache in (self.serving, self.cluster_serving):
            cache.add_index(INHERIT_INDEX, inherit_index)
        self.cluster_serving.upsert(profile_runtime())
        for runtime in middle_runtimes():
            (self.serving if runtime["kind"] == "ServingRuntime" else self.cluster_serving).upsert(runtime)
        self.leaves = [child_runtime(f"sglang-llama-{i:04d}", NAMESPACE, "sglang-llama", i) for i in range(leaves)]
        for leaf in self.leaves:
            self.serving.upsert(leaf)
        self.lookup = CacheLookup(self.serving, self.cluster_serving)
        self.root_edits = 0

    def edit_root(self) -> None:
        """A spec edit of the profile: a new image tag, a new resourceVersion and generation (as the server does)."""
        self.root_edits += 1
        root = profile_runtime(f"v0.5.{6 + self.root_edits}-cu129-amd64")
        root["metadata"]["resourceVersion"] = str(10_000_000 + self.root_edits)
        root["metadata"]["generation"] = 1 + self.root_edits
        self.cluster_serving.upsert(root)


@dataclass
class Phase:
    """Per-call samples of one phase, in nanoseconds."""

    samples_ns: list[int]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_ns) / 1000 if self.samples_ns else 0.0

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.samples_ns)
        return {
            "samples": len(ordered),
            "median_us": round(self.median_us, 3),
            "mean_us": round(statistics.fmean(ordered) / 1000, 3) if ordered else 0.0,
            "p10_us": round(ordered[len(ordered) // 10] / 1000, 3) if ordered else 0.0,
            "p90_us": round(ordered[len(ordered) * 9 // 10] / 1000, 3) if ordered else 0.0,
        }


def time_full_merge(chains: Chains, reps: int) -> tuple[Phase, Phase]:
    """`merge_chain` of each leaf's 5 layers (no cache), and chain lookup + merge (a resolve with no resolver)."""
    now = time.perf_counter_ns
    chain_of = [resolve_chain(leaf, chains.lookup) for leaf in chains.leaves]
    assert all(len(c.names) == 5 for c in chain_of), "every leaf has a 5-deep chain"
    layers_of = [spec_layers(c) for c in chain_of]
    merge_samples: list[int] = []
    resolve_samples: list[int] = []
    gc.collect()
    for _ in range(reps):
        for layers in layers_of:
            started = now()
            merge_chain(layers)
            merge_samples.append(now() - started)
        for leaf in chains.leaves:
            started = now()
            merge_chain(spec_layers(resolve_chain(leaf, chains.lookup)))
            resolve_samples.append(now() - started)
    return Phase(merge_samples), Phase(resolve_samples)


def default_resolver() -> ChainResolver:
    return ChainResolver()


def timed_l2_resolver() -> ChainResolver:
    """The resolver with aiocache's default per-call timeout on its second level (the default resolver has none)."""
    return ChainResolver(second_level=Cache(Cache.MEMORY, serializer=NullSerializer()))


async def time_cold(chains: Chains, reps: int) -> Phase:
    """Each sample: a fresh, empty resolver resolving one leaf (all 5 layers merged and stored)."""
    return await time_cold_with(chains, reps, default_resolver)


async def time_cold_with(chains: Chains, reps: int, make: Callable[[], ChainResolver]) -> Phase:
    now = time.perf_counter_ns
    samples: list[int] = []
    gc.collect()
    for _ in range(reps):
        for leaf in chains.leaves:
            resolver = make()
            started = now()
            resolution = await resolver.resolve("bench", leaf, chains.lookup)
            samples.append(now() - started)
            assert not resolution.cache_hit and resolver.stats.merges == 5
    return Phase(samples)


async def time_warm(chains: Chains, resolver: ChainResolver, reps: int) -> Phase:
    """Every leaf resolved again with nothing changed: each call is a hit."""
    now = time.perf_counter_ns
    for leaf in chains.leaves:
        await resolver.resolve("bench", leaf, chains.lookup)
    hits_before = resolver.stats.hits
    samples: list[int] = []
    gc.collect()
    for _ in range(reps):
        for leaf in chains.leaves:
            started = now()
            await resolver.resolve("bench", leaf, chains.lookup)
            samples.append(now() - started)
    assert resolver.stats.hits - hits_before == len(samples), "a warm resolve must be a cache hit"
    return Phase(samples)


async def time_after_edit(chains: Chains, resolver: ChainResolver, reps: int) -> tuple[Phase, Phase, dict[str, int]]:
    """Each rep edits the root, then resolves every leaf: the first re-merges 5 layers, the others only their own."""
    now = time.perf_counter_ns
    first: list[int] = []
    rest: list[int] = []
    merges_before = resolver.stats.merges
    gc.collect()
    for _ in range(reps):
        chains.edit_root()
        for position, leaf in enumerate(chains.leaves):
            started = now()
            resolution = await resolver.resolve("bench", leaf, chains.lookup)
            elapsed = now() - started
            assert not resolution.cache_hit
            (first if position == 0 else rest).append(elapsed)
    merges = resolver.stats.merges - merges_before
    expected = reps * (5 + len(chains.leaves) - 1)
    assert merges == expected, f"after an edit: {merges} merges, expected {expected}"
    return Phase(first), Phase(rest), {"merges": merges, "resolves": reps * len(chains.leaves)}


async def run_phases(sizes: Sizes, profile: bool) -> tuple[dict[str, float], dict[str, Any]]:
    chains = Chains(sizes.leaves)
    profiles: dict[str, cProfile.Profile] = {}

    async def measured(name: str, work: Callable[[], Awaitable[Any]]) -> Any:
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()
        try:
            return await work()
        finally:
            if profiler is not None:
                profiler.disable()
                profiles[name] = profiler

    async def full() -> tuple[Phase, Phase]:
        return time_full_merge(chains, sizes.full_reps)

    full_merge, uncached = await measured("full", full)
    cold = await measured("cold", lambda: time_cold(chains, sizes.cold_reps))
    resolver = ChainResolver()
    warm = await measured("warm", lambda: time_warm(chains, resolver, sizes.warm_reps))
    edit_first, edit_rest, edit_counts = await measured(
        "edit", lambda: time_after_edit(chains, resolver, sizes.edit_reps)
    )
    # What-if: the resolver with aiocache's default per-call timeout (5 s) on its second level, which wraps every
    # get and set in asyncio.wait_for (a task and a loop iteration each): what the default resolver's timeout=None
    # saves on the miss path, measured beside it in the same run.
    timed_l2 = timed_l2_resolver()
    what_if_cold = await time_cold_with(chains, sizes.cold_reps, timed_l2_resolver)
    await time_warm(chains, timed_l2, 1)
    what_if_first, what_if_rest, _ = await time_after_edit(chains, timed_l2, sizes.edit_reps)
    phases = {
        "full_merge": full_merge.summary(),
        "uncached_resolve": uncached.summary(),
        "cold_resolve": cold.summary(),
        "warm_resolve": {**warm.summary(), "hits": resolver.stats.hits},
        "edit_resolve": {**edit_rest.summary(), **edit_counts},
        "edit_first_resolve": edit_first.summary(),
        "resolver_entries_at_end": len(resolver),
        WHAT_IF: {
            "note": "ChainResolver(second_level=Cache(Cache.MEMORY, serializer=NullSerializer())): aiocache's "
            "default timeout on, beside the default resolver (timeout=None)",
            "cold_resolve_median_us": round(what_if_cold.median_us, 3),
            "edit_resolve_median_us": round(what_if_rest.median_us, 3),
            "edit_first_resolve_median_us": round(what_if_first.median_us, 3),
            "cold_over_default": round(what_if_cold.median_us / cold.median_us, 3),
            "edit_over_default": round(what_if_rest.median_us / edit_rest.median_us, 3),
            "edit_first_over_default": round(what_if_first.median_us / edit_first.median_us, 3),
        },
    }
    full_us = full_merge.median_us
    figures = {
        "full_merge_us": round(full_us, 3),
        "uncached_resolve_us": round(uncached.median_us, 3),
        "cold_resolve_us": round(cold.median_us, 3),
        "warm_resolve_us": round(warm.median_us, 3),
        "edit_resolve_us": round(edit_rest.median_us, 3),
        "edit_first_resolve_us": round(edit_first.median_us, 3),
        "warm_speedup": round(full_us / warm.median_us, 2),
        "edit_speedup": round(full_us / edit_rest.median_us, 2),
        "warm_over_full": round(warm.median_us / full_us, 5),
        "edit_over_full": round(edit_rest.median_us / full_us, 5),
    }
    for name, (_unit, label) in FIGURES.items():
        if name.endswith("_us"):
            print(f"[{name.removesuffix('_us'):>18}] {figures[name]:10.2f} µs  {label}", flush=True)
    print(f"[{'what-if':>18}] {what_if_line(phases[WHAT_IF])}", flush=True)
    if profile:
        for name, profiler in profiles.items():
            print(f"\n=== {name}: top 20 functions by cumulative time ===", flush=True)
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(20)
    return figures, phases


def run_benchmark(sizes: Sizes, quick: bool, profile: bool) -> dict[str, Any]:
    print(
        f"resolver benchmark ({'quick' if quick else 'full'}): {sizes.leaves} leaves below a shared 4-runtime prefix, "
        "5-deep chains, in-process",
        flush=True,
    )
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    rounds = []
    for index in range(ROUNDS):  # the profile, when asked for, of the first round only
        print(f"round {index + 1} of {ROUNDS}", flush=True)
        rounds.append(asyncio.run(run_phases(sizes, profile and index == 0)))
    figures, spread = median_and_spread([figures for figures, _ in rounds], FIGURES, digits=5)
    return {
        **run_header("resolver", quick, started),
        "machine": machine_info(load_before),
        "sizes": asdict(sizes),
        "chain": ["sglang-profile", "sglang-cuda", "sglang-h100", "sglang-llama", "sglang-llama-NNNN"],
        "repeats": ROUNDS,
        "figures": figures,
        "spread": spread,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(figures, quick, TARGETS),
        "phases": rounds[0][1],
        "profiled": profile,
    }


# --- output ------------------------------------------------------------------------------------------------------


def table_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, (unit, label) in FIGURES.items():
        value = results["figures"][name]
        if unit == "x" or 1 <= value < 100:
            shown = f"{value:,.2f}"
        else:
            shown = f"{value:,.4f}" if value < 1 else f"{value:,.1f}"
        target = results["targets"].get(name)
        wanted = f"{target['op']} {target['target']:,.0f}{unit}" if target else ""
        verdict = ("PASS" if target["pass"] else "FAIL") if target else ""
        low, high = results["spread"][name]
        value_shown = f"{shown} {unit}".rstrip().replace(" x", "x")
        rows.append((label, f"{value_shown} ({low:,.4g}-{high:,.4g})", wanted, verdict))
    return rows


def what_if_line(what_if: dict[str, Any]) -> str:
    return (
        f"With aiocache's default timeout on the second level: cold {what_if['cold_resolve_median_us']:,.1f} µs "
        f"({what_if['cold_over_default']:.2f}x the default resolver's), after an edit "
        f"{what_if['edit_resolve_median_us']:,.1f} µs ({what_if['edit_over_default']:.2f}x), first after an edit "
        f"{what_if['edit_first_resolve_median_us']:,.1f} µs ({what_if['edit_first_over_default']:.2f}x)"
    )


def format_table(results: dict[str, Any]) -> str:
    return text_table(table_rows(results))


README_INTRO = """## Chain resolver

```sh
.venv/bin/python -m benchmarks.resolver                              # the full run; rewrites this section
.venv/bin/python -m benchmarks.resolver --quick --out /tmp/r.json    # small counts, README untouched
.venv/bin/python -m benchmarks.resolver --profile --no-readme        # also a cProfile of each phase
```

In-process, one core. The runtimes are realistic and stored as the API server stores them: the spec's
`sglang-profile` (ClusterServingRuntime) is the root, then `sglang-cuda` (env) and `sglang-h100` (node selector,
tolerations, env) ClusterServingRuntimes, a `sglang-llama` ServingRuntime (protocols, labels, a volume and its
mount), and the leaves: ServingRuntimes like the spec's `runtime.yaml` with varied formats, size ranges, args and
resources, so every chain is 5 deep and the leaves share a 4-runtime prefix. They sit in the controller's own
`ObjectCache`s and are looked up through `CacheLookup`, exactly as a reconcile does. Every figure is the median of
per-call times (`time.perf_counter_ns` around one call):

- **full merge**: `merge_chain(spec_layers(chain))` of a leaf's 5 layers, no cache; the baseline of the target.
  **chain lookup + full merge** adds `resolve_chain` (what a resolve would cost without the resolver).
- **cold**: a fresh `ChainResolver` resolving one leaf: 5 `merge_layer` calls, each stored in both levels.
- **warm**: `ChainResolver.resolve` of a leaf whose chain's resourceVersions are all unchanged (a hit).
- **after a root edit**: the profile gets a new image, resourceVersion and generation (a new dict in the cache, as
  the informer does); then every leaf is resolved. The first leaf re-merges all 5 layers; every other leaf finds
  the new 4-runtime prefix its sibling cached and merges only its own layer ("edit" is the median of those,
  "first after edit" the median of the first ones).

The target is a warm resolve >= 50x faster than a full merge. `phases.what_if_l2_default_timeout` in the results
JSON repeats the cold and edit phases with the second level built as `Cache(Cache.MEMORY,
serializer=NullSerializer())`, aiocache's default 5 s timeout on, which wraps every second-level `get`/`set` in
`asyncio.wait_for`; the default resolver's second level has `timeout=None`, and the ratios say what that saves.
"""


def markdown_table(results: dict[str, Any]) -> str:
    machine = results["machine"]
    sizes = results["sizes"]
    samples = {
        name: phase["samples"]
        for name, phase in results["phases"].items()
        if isinstance(phase, dict) and "samples" in phase
    }
    lines = [
        README_INTRO,
        *markdown_rows(table_rows(results)),
        "",
        f"Measured {results['timestamp']} ({results['mode']} run, {results['duration_s']} s) on "
        f"{machine['cpu_count']} CPUs, {machine['implementation']} {machine['python']}, {machine['platform']}; "
        f"{sizes['leaves']} leaves, medians of "
        + ", ".join(f"{count:,} {name.replace('_', ' ')}" for name, count in samples.items())
        + f" samples per round; each figure the median of {results['repeats']} rounds (their range in brackets); "
        f"1-minute load average before the run: {machine['load_average_1m_before']}.",
        "",
        what_if_line(results["phases"][WHAT_IF]) + ".",
    ]
    return "\n".join(lines)


# --- command line ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.resolver", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (the smoke test); the README is untouched")
    parser.add_argument(
        "--out", type=Path, help=f"results JSON (default: {DEFAULT_OUT}, on a run that rewrites the README only)"
    )
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the table in the README")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of each phase (slower)")
    args = parser.parse_args(argv)
    results = run_benchmark(QUICK if args.quick else FULL, args.quick, args.profile)
    print("\n" + format_table(results), flush=True)
    rewrites_readme = not args.quick and not args.no_readme and not args.profile
    out = results_path(args.out, DEFAULT_OUT, rewrites_readme=rewrites_readme)
    if out is not None:
        write_results(out, results)
    else:
        print(not_written_note(), flush=True)
    if rewrites_readme:
        rewrite_readme_section(README, markdown_table(results), README_BEGIN, README_END, append_missing=True)
        print(f"table rewritten in {README}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
