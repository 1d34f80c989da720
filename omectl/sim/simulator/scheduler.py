"""The scheduler's bookkeeping: each node's labels and GPUs, which pods hold which GPUs, and why a pod fits nowhere.

Filters run in kube-scheduler's order (NodeUnschedulable, NodeAffinity, NodeResourcesFit) and stop at a
node's first failing one; taints, cpu, memory and pod counts are not checked. A pod goes on the first node
(by name) that fits. An unschedulable pod's message is the scheduler's FitError text, e.g.
`0/2 nodes are available: 2 Insufficient nvidia.com/gpu.` (without the preemption postscript).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from omectl.core.ome.workloads import PodShape, is_gpu_resource, parse_count

Binding = tuple[str, tuple[tuple[str, int], ...]]  # (node name, GPUs taken there)

SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE = "node(s) were unschedulable"
NO_NODES = "no nodes available to schedule pods"


@dataclass
class NodeState:
    name: str
    labels: dict[str, str]
    allocatable: dict[str, int]  # GPU resources only
    unschedulable: bool = False
    used: dict[str, int] = field(default_factory=dict)

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.used.get(resource, 0)

    def why_not(self, pod: PodShape) -> list[str]:
        """The reasons this node rejects the pod (empty: it fits)."""
        if self.unschedulable:
            return [UNSCHEDULABLE]
        labels = self.labels
        for key, value in pod.node_selector:
            if labels.get(key) != value:
                return [SELECTOR_MISMATCH]
        return [f"Insufficient {resource}" for resource, count in pod.gpus if self.free(resource) < count]


def node_state(node: Mapping[str, Any]) -> NodeState:
    meta = node.get("metadata") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return NodeState(
        name=meta.get("name", ""),
        labels=dict(meta.get("labels") or {}),
        allocatable={r: parse_count(q) for r, q in allocatable.items() if is_gpu_resource(r)},
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
    )


class GPULedger:
    """Every node the scheduler knows and the GPUs bound on it."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeState] = {}
        self._order: list[str] = []  # node names, sorted: first fit goes by name

    def observe(self, node: Mapping[str, Any]) -> bool:
        """Take a node's current labels and capacity; True when scheduling decisions may change."""
        fresh = node_state(node)
        known = self.nodes.get(fresh.name)
        if known is None:
            self.nodes[fresh.name] = fresh
            bisect.insort(self._order, fresh.name)
            return True
        changed = (known.labels, known.allocatable, known.unschedulable) != (
            fresh.labels,
            fresh.allocatable,
            fresh.unschedulable,
        )
        known.labels, known.allocatable, known.unschedulable = fresh.labels, fresh.allocatable, fresh.unschedulable
        return changed

    def forget(self, name: str) -> None:
        if self.nodes.pop(name, None) is not None:
            self._order.remove(name)

    def place_group(self, pods: Sequence[PodShape]) -> list[Binding] | str:
        """Bind every pod of a group, or none: the bindings, or the scheduler message of the pod that fits nowhere."""
        bindings: list[Binding] = []
        for pod in pods:
            node = next((self.nodes[n] for n in self._order if not self.nodes[n].why_not(pod)), None)
            if node is None:
                message = self.unschedulable_message(pod)
                self.release(bindings)
                return message
            for resource, count in pod.gpus:
                node.used[resource] = node.used.get(resource, 0) + count
            bindings.append((node.name, pod.gpus))
        return bindings

    def release(self, bindings: Sequence[Binding]) -> None:
        for name, gpus in bindings:
            node = self.nodes.get(name)
            if node is None:
                continue
            for resource, count in gpus:
                node.used[resource] = node.used.get(resource, 0) - count

    def unschedulable_message(self, pod: PodShape) -> str:
        if not self.nodes:
            return NO_NODES
        reasons: Counter[str] = Counter()
        for name in self._order:
            reasons.update(self.nodes[name].why_not(pod))
        parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
        return f"0/{len(self.nodes)} nodes are available: {', '.join(parts)}."
