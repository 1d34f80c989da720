"""The simulated artifact downloader's decisions (omectl/sim/simulator/downloader.py): what each attempt of an
AIMArtifact's check-size or download Job does, from the source, the Job's env and the cluster's model sources."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omectl.core.aim.artifacts import render_check_size_job, render_download_job
from omectl.sim.simulator.downloader import DEFAULT_SOURCE_SIZE, ModelSources, Phase, plan, termination_message

SOURCES = ModelSources(
    missing=("hf://nobody/*",),
    gated=("hf://meta-llama/*",),
    s3_credentials=(("minioadmin", "minioadmin"),),
    sizes=(("hf://big/*", 3 << 30),),
    time_scale=0.5,
)


def artifact(source: str, *env: tuple[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMArtifact",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u"},
        "spec": {"sourceUri": source, "size": "1Gi", "env": [{"name": n, "value": v} for n, v in env]},
    }


@pytest.mark.parametrize(
    ("source", "env", "log"),
    [
        ("hf://nobody/model", (), "Repository Not Found"),
        ("hf://meta-llama/Llama-3.2-1B-Instruct", (), "Cannot access gated repo"),
        ("s3://models/x", (("AWS_ACCESS_KEY_ID", "wrong"), ("AWS_SECRET_ACCESS_KEY", "wrong")), "InvalidAccessKeyId"),
        ("hf://big/model", (), "No space left on device"),
        ("hf://org/model", (("AIM_DEBUG_CAUSE_FAILURE", "true"),), "AIM_DEBUG_CAUSE_FAILURE is set"),
    ],
)
def test_a_download_fails_as_the_downloader_would(source: str, env: tuple[tuple[str, str], ...], log: str) -> None:
    what = plan(render_download_job(artifact(source, *env), {}), SOURCES, capacity_bytes=2 << 30)
    assert what is not None and what.attempt.failed and log in what.attempt.log
    assert what.attempts == 3, "backoffLimit 2: three pods"
    assert what.container == "downloader" and what.artifact == ("ns", "a")


def test_a_gated_source_with_a_token_and_s3_with_its_credentials_download() -> None:
    token = plan(render_download_job(artifact("hf://meta-llama/x", ("HF_TOKEN", "t")), {}), SOURCES, None)
    creds = (("AWS_ACCESS_KEY_ID", "minioadmin"), ("AWS_SECRET_ACCESS_KEY", "minioadmin"))
    s3 = plan(render_download_job(artifact("s3://models/x", *creds), {}), SOURCES, None)
    assert token is not None and not token.attempt.failed and not token.attempt.phases
    assert s3 is not None and not s3.attempt.failed


def test_a_token_from_a_secret_opens_a_gated_source() -> None:
    """The simulated pod reads no Secret: a variable set from one counts as given (profile-id-propagation's
    HF_TOKEN from the hf-token Secret)."""
    doc = artifact("hf://meta-llama/x")
    doc["spec"]["env"] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "t"}}}]
    token = plan(render_download_job(doc, {}), SOURCES, None)
    assert token is not None and not token.attempt.failed


def test_debug_switches_give_phases_scaled_by_the_time_scale() -> None:
    simulated = (("AIM_DEBUG_SIMULATE_DOWNLOAD", "true"), ("AIM_DEBUG_DOWNLOAD_DURATION", "4"))
    what = plan(render_download_job(artifact("hf://gpt2", *simulated), {}), SOURCES, None)
    assert what is not None and what.attempt.phases == (Phase(0, 50), Phase(2.0, 100), Phase(5.0))
    assert what.expected_bytes == 1 << 30
    hang = plan(render_download_job(artifact("hf://gpt2", ("AIM_DEBUG_CAUSE_HANG", "1")), {}), SOURCES, None)
    assert hang is not None and hang.attempt.phases[-1] == Phase(60.0), "STALL_TIMEOUT 120 by default"
    assert hang.attempt.log.endswith("Download stalled for 120s, killing")


def test_check_size_prints_the_sources_size_or_fails_like_the_download() -> None:
    what = plan(render_check_size_job(artifact("hf://big/m"), {}), SOURCES, None)
    assert what is not None and what.container == "check-size"
    assert json.loads(what.attempt.output) == {"url": "hf://big/m", "sizeBytes": 3 << 30}
    other = plan(render_check_size_job(artifact("hf://org/m"), {}), SOURCES, None)
    assert other is not None and json.loads(other.attempt.output)["sizeBytes"] == DEFAULT_SOURCE_SIZE
    missing = plan(render_check_size_job(artifact("hf://nobody/m"), {}), SOURCES, None)
    assert missing is not None and missing.attempt.failed and "Repository Not Found" in missing.attempt.log


def test_other_jobs_are_not_the_downloaders_and_messages_keep_the_logs_tail() -> None:
    assert plan({"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}}, SOURCES, None) is None
    log = "\n".join(f"line {i}" for i in range(200))
    message = termination_message(log)
    assert message.endswith("line 199") and message.startswith("line 120") and len(message) <= 2048
