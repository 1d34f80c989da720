"""What a simulated AIM image prints for a service template's discovery Job (`omectl.sim.simulator.dry_runs`)."""

from __future__ import annotations

import json
from typing import Any

from omectl.core.aim.legacy.discovery import parse_template_result, render_discovery_job
from omectl.sim.simulator.dry_runs import dry_run_output

MODEL = {"apiVersion": "aim.eai.amd.com/v1alpha2", "kind": "AIMModel", "metadata": {"name": "m", "namespace": "ns"}}


def job(image: str, **spec: Any) -> dict[str, Any]:
    template = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMServiceTemplate",
        "metadata": {"name": "t", "namespace": "ns", "uid": "u"},
        "spec": {"modelName": "m", **spec},
    }
    return render_discovery_job(template, {**MODEL, "spec": {"image": image}}, {})


def test_a_simulated_images_dry_run_prints_its_profile_which_the_template_discovery_reads() -> None:
    printed = dry_run_output(
        job("ghcr.io/silogen/aim-dummy:0.1.10", metric="latency", hardware={"gpu": {"model": "MI300X", "requests": 1}})
    )
    assert printed is not None
    (profile,) = json.loads(printed)
    assert profile["id"] == "vllm-mi300x-fp16-tp1-latency"
    found = parse_template_result({"profiles.yaml": printed}, {}, MODEL)
    assert found.profile["metadata"]["type"] == "optimized"
    assert found.model_sources == [
        {"modelId": "HuggingFaceTB/SmolLM2-135M", "sourceUri": "hf://HuggingFaceTB/SmolLM2-135M", "size": "512Mi"}
    ]


def test_the_registry_host_does_not_matter_and_a_docker_hub_name_is_qualified() -> None:
    assert dry_run_output(job("quay.io/silogen/aim-dummy:0.1.10")) is not None
    qwen = dry_run_output(job("amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"))
    assert qwen is not None and json.loads(qwen)[0]["models"][0]["source"] == "hf://Qwen/Qwen3-32B"


def test_what_the_env_asks_for_selects_the_profiles_and_none_prints_an_empty_list() -> None:
    for spec in (
        {"metric": "throughput"},
        {"precision": "fp8"},
        {"profileId": "other"},
        {"hardware": {"gpu": {"model": "MI300X", "requests": 2}}},
    ):
        assert dry_run_output(job("ghcr.io/silogen/aim-dummy:0.1.10", **spec)) == "[]", spec


def test_an_unknown_image_or_another_command_prints_nothing() -> None:
    assert dry_run_output(job("ghcr.io/silogen/aim-dummy:0.1.9")) is None
    other = job("ghcr.io/silogen/aim-dummy:0.1.10")
    other["spec"]["template"]["spec"]["containers"][0]["args"] = ["discover"]
    assert dry_run_output(other) is None
