"""What an AIMArtifact's Job pods say (docs/aim-resources.md, "AIMArtifact"): why a download pod failed, and the size a
check-size pod found.

The downloader and check-size containers run with `terminationMessagePolicy: FallbackToLogsOnError`, so a failed
container's `state.terminated.message` is the tail of its log (kubelet's last 80 lines, at most 2 KiB), and the
check-size container writes its last line (`{"url": ..., "sizeBytes": N}`) to its termination message when it succeeds.
The controller reads pods, never their logs.

A failed pod is categorised as upstream's controller categorises its log: the first pattern group that matches any line,
in the order infrastructure (RBAC), resource not found, auth, storage full (`FAILURE_PATTERNS`); without a match, by
the container's terminated reason (`OOMKilled` → `PodOOMKilled`, else `PodFailed`). Upstream's categorisation of the
failure has no case for the infrastructure group: a line matching it (which masks the later groups) quotes that line
in a `PodFailed` (invalid spec). A pod the kubelet evicted (no terminated container, the pod's reason `Evicted`) is
`PodEvicted`, an infrastructure error (`omectl.core.aim.reachability`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.jsonish import as_mapping

MAX_REASONABLE_SIZE: Final = 1 << 50
"""Upstream's bound on a discovered size (1 PiB): a larger one is not a model."""

INFRASTRUCTURE: Final = "Infrastructure"
AUTH: Final = "Auth"
INVALID_SPEC: Final = "InvalidSpec"
RESOURCE_EXHAUSTION: Final = "ResourceExhaustion"


@dataclass(frozen=True)
class PodFailure:
    """A failed pod, categorised: `reason` (e.g. `AuthError`, `SourceNotFound`, `StorageFull`, `PodFailed`) in an
    upstream error `category`, and a message with the matching log line."""

    reason: str
    category: str
    message: str


_PATTERNS: Final[Sequence[tuple[str, str, str, Sequence[str]]]] = (
    (
        "InfrastructureError",
        INFRASTRUCTURE,
        "Infrastructure error detected in pod logs",
        (r"RBAC:.*not found", r"clusterrole.*not found", r"forbidden.*cannot.*resource", r"serviceaccount.*cannot"),
    ),
    (
        "SourceNotFound",
        INVALID_SPEC,
        "Source resource not found (404)",
        (
            r"Repository Not Found",
            r"RepositoryNotFoundError",
            r"404.*not.*found",
            r"not.*found.*404",
            r"NoSuchKey",
            r"NoSuchBucket",
            r"model.*not.*found",
            r"file.*not.*found",
            r"s3.*404",
        ),
    ),
    (
        "AuthError",
        AUTH,
        "Authentication error detected in pod logs",
        (
            r"access.*denied.*s3",
            r"s3.*403",
            r"InvalidAccessKeyId",
            r"SignatureDoesNotMatch",
            r"s3.*unauthorized",
            r"aws.*credentials.*not.*found",
            r"NoCredentialProviders",
            r"Access to model .* is restricted",
            r"Cannot access gated repo",
            r"Invalid.*token.*huggingface",
            r"huggingface.*authentication.*failed",
            r"401.*Unauthorized.*hf\.co",
            r"403.*Forbidden.*hf\.co",
        ),
    ),
    (
        "StorageFull",
        RESOURCE_EXHAUSTION,
        "Storage full error detected in pod logs",
        (r"no space left on device", r"disk.*full", r"ENOSPC", r"quota.*exceeded", r"storage.*full"),
    ),
)
FAILURE_PATTERNS: Final = tuple(
    (reason, category, summary, tuple(re.compile(p, re.IGNORECASE) for p in patterns))
    for reason, category, summary, patterns in _PATTERNS
)
"""(reason, category, summary, patterns) in the order upstream tries them."""


def pod_phase(pod: Mapping[str, Any]) -> str | None:
    phase = as_mapping(pod.get("status")).get("phase")
    return phase if isinstance(phase, str) else None


def terminated(pod: Mapping[str, Any], container: str | None = None) -> Mapping[str, Any] | None:
    """The `state.terminated` of the pod's first terminated container (of that name, when given)."""
    for status in as_mapping(pod.get("status")).get("containerStatuses") or ():
        status = as_mapping(status)
        if container is not None and status.get("name") != container:
            continue
        state = as_mapping(as_mapping(status.get("state")).get("terminated"))
        if state:
            return state
    return None


def categorize_log(log: str) -> tuple[str, str, str, str] | None:
    """(reason, category, summary, matching line) of the first pattern group matching a line of `log`."""
    lines = log.splitlines()
    for reason, category, summary, patterns in FAILURE_PATTERNS:
        for pattern in patterns:
            for line in lines:
                if pattern.search(line):
                    return reason, category, summary, line.strip()
    return None


def pod_failure(pod: Mapping[str, Any]) -> PodFailure:
    """Why a Failed pod failed (module docstring)."""
    state = terminated(pod)
    if state is None:
        status = as_mapping(pod.get("status"))
        message = str(status.get("message") or "Pod failed")
        if status.get("reason") == "Evicted":
            return PodFailure("PodEvicted", INFRASTRUCTURE, message)
        return PodFailure("PodFailed", INVALID_SPEC, message)
    exit_code = state.get("exitCode")
    why = str(state.get("reason") or "")
    log = str(state.get("message") or "")
    message = f"Container failed with exit code {exit_code}"
    if why == "OOMKilled":
        return PodFailure("PodOOMKilled", RESOURCE_EXHAUSTION, message)
    found = categorize_log(log)
    if found is not None:
        reason, category, summary, line = found
        if category == INFRASTRUCTURE:  # upstream's categorisation falls through to the container's reason
            return PodFailure("PodFailed", INVALID_SPEC, f"{message}\n\nLog excerpt:\n{line}")
        return PodFailure(reason, category, f"{summary}: {message}\n\nLog excerpt:\n{line}")
    tail = "\n".join(log.strip().splitlines()[-3:])
    return PodFailure("PodFailed", INVALID_SPEC, f"{message}\n\nLog excerpt:\n{tail}" if tail else message)


def first_failure(pods: Sequence[Mapping[str, Any]]) -> PodFailure | None:
    """The failure of the first Failed pod by name, or None."""
    for pod in sorted(pods, key=lambda p: str(as_mapping(p.get("metadata")).get("name") or "")):
        if pod_phase(pod) == "Failed":
            return pod_failure(pod)
    return None


def parse_check_size_output(line: str) -> int:
    """The size in bytes of a check-size container's output line; raises ValueError as upstream refuses it."""
    if not line.strip():
        raise ValueError("no output from check-size job")
    try:
        output = json.loads(line.strip().splitlines()[-1])
    except json.JSONDecodeError as error:
        raise ValueError(f"failed to parse check-size output: {error}") from error
    size = as_mapping(output).get("sizeBytes") if isinstance(output, Mapping) else None
    if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_REASONABLE_SIZE:
        raise ValueError(f"invalid size: {size} bytes")
    return size


def discovered_size(pods: Sequence[Mapping[str, Any]], container: str) -> int | ValueError | None:
    """The size a Succeeded check-size pod wrote (a ValueError when its output is not a size), else None."""
    for pod in pods:
        if pod_phase(pod) != "Succeeded":
            continue
        state = terminated(pod, container) or {}
        try:
            return parse_check_size_output(str(state.get("message") or ""))
        except ValueError as error:
            return error
    return None
