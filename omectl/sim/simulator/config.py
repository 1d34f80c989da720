"""What a simulated cluster looks like: its nodes (`NodePool`s) and the registry they pull from, in a
`SimulatorConfig`; the `--nodes` syntax."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from omectl.sim.simulator.downloader import ModelSources
from omectl.sim.simulator.images import ImageRegistry
from omectl.sim.simulator.models import ModelMetadata

GPU_RESOURCES_BY_VENDOR = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
DEFAULT_GPU_TYPE = {"nvidia.com/gpu": "H100", "amd.com/gpu": "MI300X"}


@dataclass(frozen=True)
class NodePool:
    """`count` identical GPU nodes, named `<cluster>-<name>-node-<i>` (numbered on across pools of one name)."""

    count: int = 2
    gpus_per_node: int = 8
    # The extended resource the nodes offer: `nvidia.com/gpu` or `amd.com/gpu`.
    gpu_resource: str = "nvidia.com/gpu"
    # The GPU model, the `gpu.omectl.io/type` label (e.g. H100, MI300X).
    gpu_type: str = "H100"
    name: str = "gpu"
    cpu: str = "192"
    memory: str = "2Ti"
    pods: int = 110
    # The `node.kubernetes.io/instance-type` label; default `sim-<type>-<gpus>x`.
    instance_type: str = ""

    def __post_init__(self) -> None:
        if self.count < 0 or self.gpus_per_node < 0:
            raise ValueError("a node pool needs a count and GPUs per node of 0 or more")

    @property
    def vendor(self) -> str:
        """`nvidia` for `nvidia.com/gpu`, `amd` for `amd.com/gpu`: the domain's first label."""
        return self.gpu_resource.split("/", 1)[0].split(".", 1)[0]

    @property
    def instance_type_label(self) -> str:
        return self.instance_type or f"sim-{self.gpu_type.lower()}-{self.gpus_per_node}x"

    def describe(self) -> str:
        return f"{self.count}x{self.gpus_per_node} {self.gpu_resource} {self.gpu_type}"


@dataclass(frozen=True)
class SimulatorConfig:
    """The workload simulator of one cluster: its node pools (none: workloads stay unschedulable) and the image
    registry they pull from."""

    pools: tuple[NodePool, ...] = field(default_factory=lambda: (NodePool(),))
    # Every image can be pulled but those the registry lists as missing: their pods stay in ImagePullBackOff.
    registry: ImageRegistry = field(default_factory=ImageRegistry)
    # What the simulated model agent fills into models' specs, by storage URI or model name, over its built-in
    # table (`omectl.sim.simulator.models.BUILTIN_MODELS`).
    model_metadata: Mapping[str, ModelMetadata] = field(default_factory=dict, hash=False, compare=False)
    # The model repositories the artifact downloader reaches (`omectl.sim.simulator.downloader`).
    sources: ModelSources = field(default_factory=ModelSources)

    def describe(self) -> str:
        nodes = ", ".join(p.describe() for p in self.pools) or "no nodes"
        return f"{nodes}; registry lacks {self.registry.describe()}" if self.registry.missing else nodes


# --- the `omectl dev up --nodes` syntax -----------------------------------------------------------------

NODES_HELP = (
    "Simulated GPU nodes (turns the workload simulator on): [CLUSTER=]POOL[,POOL...] where POOL is "
    "COUNTxGPUS[:VENDOR[:TYPE]], VENDOR is nvidia (nvidia.com/gpu, default) or amd (amd.com/gpu) or a resource "
    "name, TYPE the GPU model (default H100 for nvidia, MI300X for amd); CLUSTER=none gives a cluster no nodes. "
    "Without CLUSTER= the pools apply to every cluster not named elsewhere. Repeatable. "
    "Example: --nodes 2x8:nvidia:H100 --nodes sim-2=1x8:amd:MI300X"
)
_POOL = re.compile(r"^(\d+)x(\d+)(?::([A-Za-z0-9./-]+))?(?::([A-Za-z0-9._-]+))?$")


def parse_pools(text: str) -> tuple[NodePool, ...]:
    """`2x8:nvidia:H100,1x8:amd` -> node pools; `none` -> no pools."""
    text = text.strip()
    if text == "none":
        return ()
    pools = []
    for part in text.split(","):
        match = _POOL.match(part.strip())
        if match is None:
            raise ValueError(f"node pool {part.strip()!r} is not COUNTxGPUS[:VENDOR[:TYPE]] (e.g. 2x8:nvidia:H100)")
        count, gpus, vendor, gpu_type = match.groups()
        resource = GPU_RESOURCES_BY_VENDOR.get(vendor or "nvidia", vendor or "")
        if "/" not in resource:
            raise ValueError(
                f"node pool {part.strip()!r}: vendor must be nvidia, amd or a resource name like x.com/gpu"
            )
        pools.append(
            NodePool(
                count=int(count),
                gpus_per_node=int(gpus),
                gpu_resource=resource,
                gpu_type=gpu_type or DEFAULT_GPU_TYPE.get(resource, "GPU"),
            )
        )
    return tuple(pools)


def parse_nodes_option(
    values: Sequence[str], clusters: Sequence[str] | None = None, registry: ImageRegistry | None = None
) -> Callable[[str], SimulatorConfig]:
    """The `--nodes` values as a cluster name -> `SimulatorConfig` function (for `EmbeddedFleet(simulator=)`).

    Pools without `CLUSTER=` form every other cluster's config (default one pool of 2x8 nvidia H100); the pools
    of repeated values for one cluster add up. With `clusters`, a value naming another cluster is an error. Every
    cluster pulls from `registry` (default: one that has every image).
    """
    registry = registry or ImageRegistry()
    default: list[NodePool] | None = None
    named: dict[str, list[NodePool]] = {}
    for value in values:
        cluster, sep, pools = value.partition("=")
        if not sep:
            default = [*(default or []), *parse_pools(value)]
        elif not cluster.strip():
            raise ValueError(f"--nodes {value!r}: the cluster name before '=' is empty")
        elif clusters is not None and cluster.strip() not in clusters:
            raise ValueError(f"{value!r}: there is no cluster {cluster.strip()!r} (the clusters: {_span(clusters)})")
        else:
            named.setdefault(cluster.strip(), []).extend(parse_pools(pools))
    fallback = SimulatorConfig(registry=registry) if default is None else SimulatorConfig(tuple(default), registry)
    configs = {name: SimulatorConfig(tuple(pools), registry) for name, pools in named.items()}
    return lambda cluster: configs.get(cluster, fallback)


def _span(names: Sequence[str]) -> str:
    return ", ".join(names) if len(names) <= 3 else f"{names[0]}, ..., {names[-1]}"
