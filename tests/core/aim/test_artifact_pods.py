"""An AIMArtifact's Job pods: upstream's categories of a failed download, the check-size output, and the status the
artifact gets from them (check-size, failure reasons, progress and DownloadComplete)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omectl.core.aim.artifact_pods import discovered_size, first_failure, parse_check_size_output, pod_failure
from omectl.core.aim.artifacts import (
    artifact_status,
    check_size_due,
    download_job_due,
    render_artifact_pvc,
    render_check_size_job,
    render_download_job,
)
from omectl.core.aim.consumers import hash8
from omectl.core.aim.versions import convert


def pod(phase: str, message: str = "", reason: str = "Error", name: str = "p", container: str = "x") -> dict[str, Any]:
    terminated = {"exitCode": 0 if phase == "Succeeded" else 1, "reason": reason, "message": message}
    return {
        "metadata": {"name": name},
        "status": {"phase": phase, "containerStatuses": [{"name": container, "state": {"terminated": terminated}}]},
    }


@pytest.mark.parametrize(
    ("log", "reason", "category"),
    [
        (
            "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found",
            "SourceNotFound",
            "InvalidSpec",
        ),
        ("ERROR: S3 error: 404 (NoSuchBucket): The specified bucket does not exist", "SourceNotFound", "InvalidSpec"),
        ("401 Client Error. Cannot access gated repo for url https://huggingface.co/x", "AuthError", "Auth"),
        ("ERROR: S3 error: 403 (InvalidAccessKeyId): no such key id", "AuthError", "Auth"),
        ("OSError: [Errno 28] No space left on device", "StorageFull", "ResourceExhaustion"),
        ('pods is forbidden: User "x" cannot patch resource "aimartifacts"', "PodFailed", "InvalidSpec"),
        ("Download stalled for 15s, killing", "PodFailed", "InvalidSpec"),
        # HuggingFace answers 401 for a repository that does not exist: not found is tried before auth
        ("401 Unauthorized hf.co: Repository Not Found", "SourceNotFound", "InvalidSpec"),
    ],
)
def test_a_failed_pod_is_categorised_by_upstreams_patterns_in_upstreams_order(
    log: str, reason: str, category: str
) -> None:
    failure = pod_failure(pod("Failed", f"starting\n{log}\n"))
    assert (failure.reason, failure.category) == (reason, category)
    assert failure.message.endswith(log.strip()), "the matching line (or the tail) is quoted"


def test_an_oom_killed_pod_is_resource_exhaustion_and_the_first_failed_pod_by_name_counts() -> None:
    assert pod_failure(pod("Failed", "", reason="OOMKilled")).reason == "PodOOMKilled"
    pods = [pod("Running", name="c"), pod("Failed", "No space left on device", name="b"), pod("Failed", "x", name="z")]
    failure = first_failure(pods)
    assert failure is not None and failure.reason == "StorageFull"
    assert first_failure([pod("Succeeded")]) is None


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("", "no output"),
        ("not json", "failed to parse"),
        ('{"url": "hf://a/b", "sizeBytes": 0}', "invalid size"),
        ('{"url": "hf://a/b", "sizeBytes": 1125899906842625}', "invalid size"),  # over 1 PiB
        ('{"url": "hf://a/b", "sizeBytes": "12"}', "invalid size"),
    ],
)
def test_check_size_output_is_refused_as_upstream_refuses_it(line: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_check_size_output(line)


def test_the_size_is_the_succeeded_check_size_pods_last_line() -> None:
    output = "checking\n" + json.dumps({"url": "hf://a/b", "sizeBytes": 1234})
    assert discovered_size([pod("Succeeded", output, "Completed", container="check-size")], "check-size") == 1234
    assert discovered_size([pod("Running")], "check-size") is None
    assert isinstance(discovered_size([pod("Succeeded", "junk", container="check-size")], "check-size"), ValueError)


def artifact(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMArtifact",
        "metadata": {"name": "tiny", "namespace": "ns", "uid": "u"},
        "spec": {"sourceUri": "hf://sshleifer/tiny-gpt2", "env": [{"name": "HF_TOKEN", "value": "t"}]},
        "status": status,
    }


def test_an_artifact_without_size_runs_check_size_then_goes_by_the_discovered_size() -> None:
    obj = artifact()
    assert check_size_due(obj) and not download_job_due(obj) and render_artifact_pvc(obj, {}) is None
    job = render_check_size_job(obj, {"env": [{"name": "A", "value": "1"}]})
    assert job["metadata"]["name"] == f"tiny-check-size-{hash8('u')}"
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["aim.eai.amd.com/cache.name"] == "tiny" and labels["aim.eai.amd.com/component"] == "check-size"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "check-size" and container["args"] == ["hf://sshleifer/tiny-gpt2"]
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "HF_TOKEN", "value": "t"}]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    # while the Job runs: upstream's Progressing (v1alpha2's Downloading) with upstream's wording, no PVC condition
    # yet; once its pod says the size: discoveredSizeBytes
    running = artifact_status(obj, None, None, check_job=job)
    assert running["status"] == "Downloading"
    assert running["conditions"] == [
        {"type": "CheckSizeJobReady", "status": "False", "reason": "JobRunning", "message": "Job is in progress"},
        {"type": "CheckSizeJobPodsReady", "status": "False", "reason": "NoPods", "message": "No pods found"},
        {
            "type": "Ready",
            "status": "False",
            "reason": "Progressing",
            "message": "Waiting for components to become ready",
        },
    ]
    assert convert(dict(obj, status=running), "aim.eai.amd.com/v1alpha1")["status"]["status"] == "Progressing"
    line = json.dumps({"url": "hf://sshleifer/tiny-gpt2", "sizeBytes": 3 << 30})
    done = artifact_status(obj, None, None, check_job=job, check_pods=[pod("Succeeded", line, container="check-size")])
    assert done["discoveredSizeBytes"] == 3 << 30
    pods_ready = {"type": "CheckSizeJobPodsReady", "status": "True", "reason": "PodsReady", "message": "Pods are ready"}
    assert pods_ready in done["conditions"]
    # the size known, upstream stops deriving the check-size conditions and keeps them as they were
    job_done = {"type": "CheckSizeJobReady", "status": "True", "reason": "Ready", "message": ""}
    kept = artifact(discoveredSizeBytes=3 << 30, conditions=[job_done, pods_ready])
    later = {c["type"]: c for c in artifact_status(kept, None, None)["conditions"]}
    assert (later["CheckSizeJobReady"], later["CheckSizeJobPodsReady"]) == (job_done, pods_ready)
    sized = artifact(discoveredSizeBytes=3 << 30)
    assert not check_size_due(sized) and download_job_due(sized)
    pvc = render_artifact_pvc(sized, {})
    assert pvc is not None and pvc["spec"]["resources"]["requests"]["storage"] == "4Gi"  # 3Gi + 10 %, rounded up
    env = render_download_job(sized, {})["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "EXPECTED_SIZE_BYTES", "value": str(3 << 30)} in env


def test_a_failed_check_size_pod_fails_the_artifact_with_upstreams_reason() -> None:
    obj = artifact()
    job = render_check_size_job(obj, {})
    status = artifact_status(obj, None, None, check_job=job, check_pods=[pod("Failed", "Repository Not Found")])
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert status["status"] == "Failed"
    assert conditions["Ready"] == ("False", "InvalidSpec")
    assert conditions["CheckSizeJobPodsReady"] == ("False", "SourceNotFound")
    job["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}
    status = artifact_status(obj, None, None, check_job=job)
    ready = next(c for c in status["conditions"] if c["type"] == "CheckSizeJobReady")
    assert (ready["reason"], ready["message"]) == ("JobBackoffLimitExceeded", "Job failed"), "upstream's words"


def download(*conditions: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "downloader", "env": []}]}}},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }


@pytest.mark.parametrize(
    ("percentage", "live_job", "pods", "status", "complete"),
    [
        (50, download(), [], "Downloading", ("False", "Downloading")),
        (100, download(), [], "Downloading", ("True", "Verifying")),
        (100, download("Complete"), [], "Ready", ("True", "Verified")),
        (100, download(), [pod("Failed", "verification failed")], "Failed", ("False", "VerificationFailed")),
        (50, download("Failed"), [pod("Failed", "Cannot access gated repo")], "Failed", ("False", "Downloading")),
    ],
)
def test_download_complete_follows_the_downloaders_progress(
    percentage: int, live_job: dict[str, Any], pods: list[dict[str, Any]], status: str, complete: tuple[str, str]
) -> None:
    obj = artifact(progress={"percentage": percentage, "displayPercentage": f"{percentage} %"})
    obj["spec"]["size"] = "10Mi"
    got = artifact_status(obj, live_job, None, pods=pods)
    conditions = {c["type"]: (c["status"], c["reason"]) for c in got["conditions"]}
    assert got["status"] == status
    assert conditions["DownloadComplete"] == complete
    if status == "Ready":
        assert got["progress"] == {
            "totalBytes": 10 << 20,
            "downloadedBytes": 10 << 20,
            "percentage": 100,
            "displayPercentage": "100 %",
        }
    elif status == "Failed":
        assert got["progress"]["displayPercentage"] == "N/A"
    else:
        assert "progress" not in got, "the downloader's progress is kept as it is"
    if pods and "gated" in str(pods):
        assert conditions["Ready"] == conditions["AuthValid"] == ("False", "AuthError")
        assert conditions["DownloadJobPodsReady"] == ("False", "AuthError")
