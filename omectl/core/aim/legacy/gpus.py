"""The GPUs a cluster's Nodes offer, read from their labels, and whether a template's hardware fits them
(docs/aim-resources.md, "The legacy template path").

Inventory (`gpu_inventory`), by GPU model, one entry per model any Node carries:

- AMD, as upstream reads the AMD GPU operator's labels: the PCI device id (`amd.com/gpu.device-id`, or
  `beta.amd.com/gpu.device-id`, or the count-encoded `amd.com/gpu.device-id.<id>=<n>`) mapped to its model (74a1 →
  MI300X; an unknown id `AMD-<ID>`), else the family label; memory per GPU from `amd.com/gpu.vram` (`192G`, G and T
  being binary units, as upstream parses them), else the model's known memory.
- NVIDIA (ours; upstream reads AMD labels only): GPU feature discovery's `nvidia.com/gpu.product`
  (`NVIDIA-H100-80GB-HBM3` → H100) and `nvidia.com/gpu.memory` (MiB).

A model name is normalised as upstream does (`normalize_gpu_model`): upper case, the first token that looks like a
model (`MI300X`, `H100`), vendor words skipped.

Fit (`gpu_component`), only for a template that requires a GPU (`requests` > 0 or a `model`): a `minVram` no GPU
reaches → NotAvailable / `VRAMNotAvailable`; a `model` no Node has → NotAvailable / `GPUNotAvailable`; no GPU at all
→ NotAvailable / `GPUNotAvailable`; else Ready / `GPUAvailable`. Messages are upstream's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.artifacts import parse_quantity
from omectl.core.aim.legacy.status import Component
from omectl.core.jsonish import as_mapping

AMD_DEVICE_ID: Final = "amd.com/gpu.device-id"
AMD_DEVICE_ID_BETA: Final = "beta.amd.com/gpu.device-id"
AMD_FAMILY: Final = "amd.com/gpu.family"
AMD_FAMILY_BETA: Final = "beta.amd.com/gpu.family"
AMD_VRAM: Final = "amd.com/gpu.vram"
AMD_VRAM_BETA: Final = "beta.amd.com/gpu.vram"
NVIDIA_PRODUCT: Final = "nvidia.com/gpu.product"
NVIDIA_MEMORY: Final = "nvidia.com/gpu.memory"
"""MiB per GPU (NVIDIA GPU feature discovery)."""
GPU_COMPONENT: Final = "GPU"

AMD_DEVICES: Final[Mapping[str, str]] = {
    "738c": "MI100",
    "738e": "MI100",
    "7408": "MI250X",
    "740c": "MI250X",
    "740f": "MI210",
    "7410": "MI210",
    "74a0": "MI300A",
    "74a1": "MI300X",
    "74a2": "MI308X",
    "74a5": "MI325X",
    "74a8": "MI308X",
    "74a9": "MI300X",
    "74b5": "MI300X",
    "74b6": "MI308X",
    "74b9": "MI325X",
    "74bd": "MI300X",
    "75a0": "MI350X",
    "75a3": "MI355X",
    "75b0": "MI350X",
    "75b3": "MI355X",
    "7460": "V710",
    "7461": "V710",
    "7448": "W7900",
    "744a": "W7900",
    "7449": "W7800",
    "745e": "W7800",
    "73a2": "W6900X",
    "73a3": "W6800",
    "73ab": "W6800X",
    "73a1": "V620",
    "73ae": "V620",
    "7550": "RX9070",
    "744c": "RX7900",
    "73af": "RX6900",
    "73bf": "RX6800",
}
"""PCI device id → AMD GPU model (the ids upstream knows)."""
KNOWN_VRAM: Final[Mapping[str, str]] = {
    "MI355X": "288G",
    "MI350X": "288G",
    "MI325X": "256G",
    "MI308X": "128G",
    "MI300X": "192G",
    "MI300A": "128G",
    "MI250X": "128G",
    "MI210": "64G",
    "MI100": "32G",
    "V710": "32G",
    "W7900": "48G",
    "W7800": "32G",
    "W6900X": "32G",
    "W6800": "32G",
    "W6800X": "32G",
    "V620": "32G",
    "RX9070": "16G",
    "RX7900": "24G",
    "RX6900": "16G",
    "RX6800": "16G",
}
"""Memory per GPU of a model whose Nodes carry no memory label (upstream's table)."""

_MODEL_TOKEN: Final = re.compile(r"^(MI|ME|RX|RTX|GTX|A|H|L|T|V|K|P|QUADRO|TESLA|GRID)?[A-Z]*[0-9]+[A-Z0-9]*$")
_GIB: Final = 1024**3


@dataclass(frozen=True)
class GpuInfo:
    """One GPU model a cluster has."""

    model: str
    resource_name: str
    vram: str
    """Memory per GPU as labelled (`192G`; NVIDIA's in MiB as `<n>Mi`), or "" when unknown."""
    labels: tuple[tuple[str, str], ...]
    """The Node labels that identify it, `(key, value)`, for node affinity."""

    @property
    def vram_bytes(self) -> int:
        return vram_bytes(self.vram)


def normalize_gpu_model(model: str) -> str:
    """`MI300X (rev 2)` → `MI300X`, `Instinct-MI325X` → `MI325X`, `NVIDIA-H100-80GB-HBM3` → `H100`."""
    text = model.strip()
    if not text:
        return ""
    text = text.replace("_", "-").upper()
    tokens = [t for t in re.split(r"[- /:]", text) if t]
    for token in tokens:
        if token in ("AMD", "INSTINCT", "NVIDIA"):
            continue
        if _MODEL_TOKEN.match(token):
            return token.removeprefix("INSTINCT")
    return tokens[0] if tokens else text


def vram_bytes(vram: str) -> int:
    """`192G` / `1T` (binary units, as upstream reads the AMD label) or a quantity (`80Gi`, `81559Mi`) in bytes; 0
    when unknown."""
    text = vram.strip().upper()
    if not text:
        return 0
    for suffix, factor in (("G", _GIB), ("T", 1024 * _GIB)):
        if text.endswith(suffix) and text[:-1].isdigit():
            return int(text[:-1]) * factor
    if text.isdigit():
        return int(text)
    try:
        return int(parse_quantity(vram.strip()))
    except ValueError:
        return 0


def gpu_inventory(nodes: Iterable[Mapping[str, Any]]) -> dict[str, GpuInfo]:
    """The GPU models the Nodes offer (module docstring), by normalised model."""
    inventory: dict[str, GpuInfo] = {}
    for node in nodes:
        labels = as_mapping(as_mapping(node.get("metadata")).get("labels"))
        for info in (_amd(labels), _nvidia(labels)):
            if info is not None and info.model not in inventory:
                inventory[info.model] = info
    return inventory


def _amd(labels: Mapping[str, Any]) -> GpuInfo | None:
    device = _label(labels, AMD_DEVICE_ID, AMD_DEVICE_ID_BETA) or _suffix(labels, AMD_DEVICE_ID, AMD_DEVICE_ID_BETA)
    if device:
        device = device.lower().removeprefix("0x")
        model = AMD_DEVICES.get(device, f"AMD-{device.upper()}")
        identity: tuple[tuple[str, str], ...] = ((AMD_DEVICE_ID, device),)
    else:
        family = _label(labels, AMD_FAMILY, AMD_FAMILY_BETA) or _suffix(labels, AMD_FAMILY, AMD_FAMILY_BETA)
        if not family:
            return None
        model = normalize_gpu_model(family)
        identity = ((AMD_FAMILY, family),)
    vram = _label(labels, AMD_VRAM, AMD_VRAM_BETA) or KNOWN_VRAM.get(model, "")
    return GpuInfo(model, "amd.com/gpu", vram, identity)


def _nvidia(labels: Mapping[str, Any]) -> GpuInfo | None:
    product = _label(labels, NVIDIA_PRODUCT)
    if not product:
        return None
    memory = _label(labels, NVIDIA_MEMORY)
    vram = f"{memory}Mi" if memory.isdigit() else ""
    return GpuInfo(normalize_gpu_model(product), "nvidia.com/gpu", vram, ((NVIDIA_PRODUCT, product),))


def _label(labels: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = labels.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _suffix(labels: Mapping[str, Any], *prefixes: str) -> str:
    """The `<x>` of a count-encoded label `<prefix>.<x>=<n>` with n not 0."""
    for prefix in prefixes:
        for key, value in labels.items():
            if key.startswith(prefix + ".") and isinstance(value, str) and value.strip() not in ("", "0"):
                return key[len(prefix) + 1 :]
    return ""


# --- a template's hardware ---------------------------------------------------------------------------------------


def gpu_spec(template: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(as_mapping(as_mapping(template.get("spec")).get("hardware")).get("gpu"))


def requires_gpu(template: Mapping[str, Any]) -> bool:
    """A GPU request above 0 or a GPU model (upstream's rule)."""
    gpu = gpu_spec(template)
    requests = gpu.get("requests")
    model = gpu.get("model")
    return (isinstance(requests, int) and requests > 0) or (isinstance(model, str) and bool(model.strip()))


def min_vram_bytes(template: Mapping[str, Any]) -> int:
    value = gpu_spec(template).get("minVram")
    if value in (None, "", 0):
        return 0
    try:
        return int(parse_quantity(value))
    except ValueError:
        return 0


def gpu_component(template: Mapping[str, Any], inventory: Mapping[str, GpuInfo]) -> Component | None:
    """The `GPU` component (module docstring); None when the template requires no GPU."""
    if not requires_gpu(template):
        return None
    wanted = str(gpu_spec(template).get("model") or "")
    model = normalize_gpu_model(wanted)
    least = min_vram_bytes(template)
    if least and not any(i.vram_bytes >= least for i in inventory.values()):
        largest = max(inventory.values(), key=lambda i: i.vram_bytes, default=None)
        highest = f"{largest.model} ({_gib(largest.vram_bytes)})" if largest and largest.vram_bytes else "none detected"
        message = f"Required minimum VRAM ({_gib(least)}) exceeds available GPUs. Highest available: {highest}"
        return Component(GPU_COMPONENT, "NotAvailable", "VRAMNotAvailable", message)
    if not model:
        if inventory:
            found = ", ".join(sorted(inventory))
            return Component(GPU_COMPONENT, "Ready", "GPUAvailable", f"GPU available (any model accepted): {found}")
        return Component(GPU_COMPONENT, "NotAvailable", "GPUNotAvailable", "No GPUs available in cluster")
    if model in inventory:
        return Component(GPU_COMPONENT, "Ready", "GPUAvailable", f"GPU model '{model}' is available")
    available = ", ".join(sorted(inventory)) or "none"
    message = f"Required GPU model '{wanted}' not available in cluster. Available: {available}"
    return Component(GPU_COMPONENT, "NotAvailable", "GPUNotAvailable", message)


def node_affinity(template: Mapping[str, Any], inventory: Mapping[str, GpuInfo]) -> dict[str, Any] | None:
    """The inference pods' node affinity: the Nodes of the template's GPU model, or of every model with at least
    `minVram`; None when the template names neither or no Node fits. An AMD model is selected by every device id
    of that model (upstream's), an NVIDIA one by its product label."""
    if not requires_gpu(template):
        return None
    model = normalize_gpu_model(str(gpu_spec(template).get("model") or ""))
    least = min_vram_bytes(template)
    if model:
        models = [model]
    elif least:
        models = sorted(m for m, i in inventory.items() if i.vram_bytes >= least)
    else:
        return None
    values: dict[str, list[str]] = {}
    for name in models:
        device_ids = sorted(d for d, m in AMD_DEVICES.items() if m == name)
        if device_ids:
            values.setdefault(AMD_DEVICE_ID, []).extend(device_ids)
        elif name in inventory:
            for key, value in inventory[name].labels:
                values.setdefault(key, []).append(value)
    if not values:
        return None
    terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": v}]} for k, v in sorted(values.items())]
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def _gib(count: int) -> str:
    return f"{count // _GIB}Gi" if count else "0"
