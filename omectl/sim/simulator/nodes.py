"""The simulated Node objects of one cluster, as a kubelet would register them."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from omectl.core.aim.legacy.gpus import (
    AMD_DEVICE_ID,
    AMD_DEVICES,
    AMD_FAMILY,
    AMD_VRAM,
    KNOWN_VRAM,
    NVIDIA_MEMORY,
    NVIDIA_PRODUCT,
)
from omectl.sim.apiserver.clock import now_rfc3339
from omectl.sim.simulator.config import NodePool, SimulatorConfig

GPU_TYPE_LABEL = "gpu.omectl.io/type"
GPU_VENDOR_LABEL = "gpu.omectl.io/vendor"
SIMULATED_LABEL = "sim.omectl.io/node-pool"
NVIDIA_PRODUCTS = {
    "A100": ("NVIDIA-A100-SXM4-80GB", "81920"),
    "H100": ("NVIDIA-H100-80GB-HBM3", "81559"),
    "H200": ("NVIDIA-H200", "143771"),
    "B200": ("NVIDIA-B200", "183359"),
    "L40S": ("NVIDIA-L40S", "46068"),
}
"""GPU type → (`nvidia.com/gpu.product`, `nvidia.com/gpu.memory` in MiB) as NVIDIA's GPU feature discovery labels
them."""
KUBELET_VERSION = "v1.32.5"


def simulated_nodes(cluster: str, config: SimulatorConfig) -> list[dict[str, Any]]:
    """One Node per pool member, `<cluster>-<pool name>-node-<i>`, Ready, with GPU capacity and labels."""
    now = now_rfc3339()
    numbered: dict[str, int] = {}
    nodes: list[dict[str, Any]] = []
    for pool in config.pools:
        for _ in range(pool.count):
            index = numbered[pool.name] = numbered.get(pool.name, 0) + 1
            name = f"{cluster}-{pool.name}-node-{index}"
            resources = {
                "cpu": pool.cpu,
                "memory": pool.memory,
                "pods": str(pool.pods),
                "ephemeral-storage": "3Ti",
                pool.gpu_resource: str(pool.gpus_per_node),
            }
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/arch": "amd64",
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "node.kubernetes.io/instance-type": pool.instance_type_label,
                            GPU_TYPE_LABEL: pool.gpu_type,
                            GPU_VENDOR_LABEL: pool.vendor,
                            SIMULATED_LABEL: pool.name,
                            **gpu_labels(pool),
                        },
                    },
                    "spec": {"providerID": f"omectl-sim://{cluster}/{name}"},
                    "status": {
                        "capacity": resources,
                        "allocatable": dict(resources),
                        "conditions": [
                            _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", now),
                            _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", now),
                            _condition("PIDPressure", "False", "KubeletHasSufficientPID", now),
                            _condition("Ready", "True", "KubeletReady", now),
                        ],
                        "addresses": [
                            {"type": "InternalIP", "address": f"10.0.{len(nodes) // 250}.{len(nodes) % 250 + 2}"},
                            {"type": "Hostname", "address": name},
                        ],
                        "nodeInfo": _node_info(name),
                    },
                }
            )
    return nodes


def gpu_labels(pool: NodePool) -> dict[str, str]:
    """The labels the GPU vendor's node labeller puts on a Node of the pool: for AMD (the GPU operator's) the PCI
    device id of the model, the family and the memory per GPU; for NVIDIA (GPU feature discovery's) the product,
    the memory per GPU in MiB and the count. A model the tables do not know gets what can be said of it."""
    if pool.vendor == "amd":
        labels = {AMD_FAMILY: "AI"}
        device = next((d for d, model in AMD_DEVICES.items() if model == pool.gpu_type.upper()), None)
        if device is not None:
            labels[AMD_DEVICE_ID] = device
        vram = KNOWN_VRAM.get(pool.gpu_type.upper())
        if vram is not None:
            labels[AMD_VRAM] = vram
        return labels
    if pool.vendor == "nvidia":
        product, memory = NVIDIA_PRODUCTS.get(pool.gpu_type.upper(), (f"NVIDIA-{pool.gpu_type}", ""))
        labels = {NVIDIA_PRODUCT: product, "nvidia.com/gpu.count": str(pool.gpus_per_node)}
        if memory:
            labels[NVIDIA_MEMORY] = memory
        return labels
    return {}


def _node_info(name: str) -> dict[str, str]:
    """Every field clients require (kubernetes-asyncio refuses a NodeSystemInfo missing one)."""
    machine = hashlib.md5(name.encode(), usedforsecurity=False).hexdigest()
    return {
        "machineID": machine,
        "systemUUID": str(uuid.UUID(machine)),
        "bootID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        "kernelVersion": "6.8.0-sim",
        "osImage": "Ubuntu 24.04.1 LTS",
        "containerRuntimeVersion": "containerd://1.7.24",
        "kubeletVersion": KUBELET_VERSION,
        "kubeProxyVersion": KUBELET_VERSION,
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


_MESSAGES = {
    "KubeletHasSufficientMemory": "kubelet has sufficient memory available",
    "KubeletHasNoDiskPressure": "kubelet has no disk pressure",
    "KubeletHasSufficientPID": "kubelet has sufficient PID available",
    "KubeletReady": "kubelet is posting ready status",
}


def _condition(type_: str, status: str, reason: str, now: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": _MESSAGES[reason],
    }
