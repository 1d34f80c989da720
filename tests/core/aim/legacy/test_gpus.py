"""The GPUs a cluster offers, read from Node labels, and a template's hardware against them
(omectl/core/aim/legacy/gpus.py)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.legacy.gpus import (
    gpu_component,
    gpu_inventory,
    node_affinity,
    normalize_gpu_model,
    requires_gpu,
    vram_bytes,
)


def node(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


def template(**gpu: Any) -> dict[str, Any]:
    return {"kind": "AIMServiceTemplate", "spec": {"modelName": "m", "hardware": {"gpu": gpu}}}


MI300X = node(**{"amd.com/gpu.device-id": "74a1", "amd.com/gpu.vram": "192G"})
H100 = node(**{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"})


@pytest.mark.parametrize(
    ("given", "model"),
    [
        ("MI300X (rev 2)", "MI300X"),
        ("Instinct-MI325X", "MI325X"),
        ("NVIDIA-H100-80GB-HBM3", "H100"),
        ("mi300x", "MI300X"),
    ],
)
def test_gpu_models_are_normalised_as_upstream_does(given: str, model: str) -> None:
    assert normalize_gpu_model(given) == model


def test_the_inventory_reads_amd_device_ids_count_encoded_ids_families_and_nvidia_products() -> None:
    inventory = gpu_inventory(
        [
            MI300X,
            node(**{"beta.amd.com/gpu.device-id.75a3": "8"}),  # count-encoded: an MI355X, memory from the table
            node(**{"amd.com/gpu.device-id": "0x9999"}),  # an id upstream does not know
            H100,
            node(**{"kubernetes.io/hostname": "cpu-only"}),
        ]
    )
    assert sorted(inventory) == ["AMD-9999", "H100", "MI300X", "MI355X"]
    assert (inventory["MI300X"].vram_bytes, inventory["MI355X"].vram) == (192 * 2**30, "288G")
    assert (inventory["H100"].resource_name, inventory["H100"].vram_bytes) == ("nvidia.com/gpu", 81559 * 2**20)


@pytest.mark.parametrize(("vram", "count"), [("192G", 192 * 2**30), ("1T", 2**40), ("64Gi", 64 * 2**30), ("", 0)])
def test_vram_labels_are_binary_units(vram: str, count: int) -> None:
    assert vram_bytes(vram) == count


def test_only_a_gpu_request_or_a_gpu_model_requires_a_gpu() -> None:
    assert requires_gpu(template(requests=1)) and requires_gpu(template(model="MI300X"))
    assert not requires_gpu(template(requests=0)) and not requires_gpu({"spec": {"hardware": {"cpu": {"requests": 1}}}})
    assert gpu_component({"spec": {}}, {}) is None


def test_a_model_fits_when_a_node_has_it_and_names_what_there_is_when_not() -> None:
    inventory = gpu_inventory([MI300X, H100])
    fits = gpu_component(template(model="mi300x", requests=1), inventory)
    assert fits is not None and (fits.state, fits.reason) == ("Ready", "GPUAvailable")
    missing = gpu_component(template(model="MI355X", requests=1), inventory)
    assert missing is not None and (missing.state, missing.reason) == ("NotAvailable", "GPUNotAvailable")
    assert missing.message == "Required GPU model 'MI355X' not available in cluster. Available: H100, MI300X"
    none = gpu_component(template(requests=1), {})
    assert none is not None and (none.state, none.message) == ("NotAvailable", "No GPUs available in cluster")


def test_a_minimum_vram_needs_one_model_with_as_much() -> None:
    inventory = gpu_inventory([MI300X, H100])
    enough = gpu_component(template(requests=1, minVram="128Gi"), inventory)
    assert enough is not None and (enough.state, enough.reason) == ("Ready", "GPUAvailable")
    short = gpu_component(template(requests=1, minVram="1Ti"), inventory)
    assert short is not None and (short.state, short.reason) == ("NotAvailable", "VRAMNotAvailable")
    assert short.message == "Required minimum VRAM (1024Gi) exceeds available GPUs. Highest available: MI300X (192Gi)"


def test_node_affinity_selects_every_device_id_of_an_amd_model_or_the_products_with_enough_vram() -> None:
    inventory = gpu_inventory([MI300X, H100])
    amd = node_affinity(template(model="MI300X", requests=1), inventory)
    assert amd == {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "amd.com/gpu.device-id", "operator": "In", "values": ["74a1", "74a9", "74b5", "74bd"]}
                    ]
                }
            ]
        }
    }
    big = node_affinity(template(requests=1, minVram="64Gi"), inventory)
    assert big is not None
    terms = big["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["key"] for t in terms] == ["amd.com/gpu.device-id", "nvidia.com/gpu.product"]
    assert node_affinity(template(requests=1), inventory) is None, "any GPU: no affinity"
