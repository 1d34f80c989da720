"""What upstream's artifact-downloader image does in an AIMArtifact's Jobs, decided from the Job alone (pure; the
simulator's `ArtifactJobs` plays it out).

A Job is an artifact's when its pod template is labelled `aim.eai.amd.com/component: download` or `check-size` (omectl's
and upstream's Jobs both are). Its container's first argument is the source URI; its env and the cluster's
`ModelSources` decide each attempt, in the order the downloader's entrypoint checks them:

- `AIM_DEBUG_CAUSE_HANG` (download): the download hangs; the progress monitor kills it after `STALL_TIMEOUT` seconds
  (default 120): `Download stalled for <n>s, killing`.
- `AIM_DEBUG_CAUSE_FAILURE` (download): fails at once (`AIM_DEBUG_CAUSE_FAILURE is set, causing failure`).
- A source matching `ModelSources.missing`: HuggingFace's `404 Client Error ... Repository Not Found` or s3cmd's
  `ERROR: S3 error: 404 (NoSuchBucket)`.
- An `hf://` source matching `ModelSources.gated` without `HF_TOKEN` (one from a Secret counts as given):
  HuggingFace's `Cannot access gated repo`; an `s3://` source whose `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` are
  not a pair of `ModelSources.s3_credentials` (when it lists any): s3cmd's `ERROR: S3 error: 403 (InvalidAccessKeyId)`.
- check-size: succeeds with `{"url": <source>, "sizeBytes": <size>}` (the source's size, `ModelSources.size_of`).
- `AIM_DEBUG_SIMULATE_DOWNLOAD` (download): progress 50 % for `AIM_DEBUG_DOWNLOAD_DURATION` seconds (default 10), 100 %
  while verifying for `AIM_DEBUG_VERIFY_DURATION` (default 10), then done, or failed with `AIM_DEBUG_VERIFY_FAIL`.
- A download whose files (the source's size) exceed the PVC's capacity: `OSError: [Errno 28] No space left on device`.
- Otherwise the download succeeds at once.

Every duration is multiplied by `ModelSources.time_scale`. A failed attempt is retried up to the Job's `backoffLimit`.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

ARTIFACT_COMPONENTS: Final = ("download", "check-size")
COMPONENT_LABEL: Final = "aim.eai.amd.com/component"
DEFAULT_SOURCE_SIZE: Final = 500 * 1024 * 1024
"""Bytes of a source's files that `ModelSources.sizes` does not list."""


@dataclass(frozen=True)
class ModelSources:
    """The model repositories a simulated cluster's downloader reaches (HuggingFace and S3)."""

    missing: tuple[str, ...] = ()
    """Glob patterns of source URIs that do not exist."""
    gated: tuple[str, ...] = ()
    """Glob patterns of hf:// sources that need an `HF_TOKEN`."""
    s3_credentials: tuple[tuple[str, str], ...] = ()
    """(access key id, secret) pairs S3 accepts; none: any (or none)."""
    sizes: tuple[tuple[str, int], ...] = ()
    """(glob pattern, bytes) of the sources' files, first match wins; others `DEFAULT_SOURCE_SIZE`."""
    time_scale: float = 1.0
    """Seconds of the downloader's debug durations and stall timeout are multiplied by this."""

    def size_of(self, source: str) -> int:
        return next((size for pattern, size in self.sizes if fnmatch.fnmatchcase(source, pattern)), DEFAULT_SOURCE_SIZE)

    def is_missing(self, source: str) -> bool:
        return any(fnmatch.fnmatchcase(source, pattern) for pattern in self.missing)

    def refuses(self, source: str, env: Mapping[str, str]) -> bool:
        """Whether the source refuses these credentials."""
        if source.startswith("hf://"):
            gated = any(fnmatch.fnmatchcase(source, pattern) for pattern in self.gated)
            return gated and not env.get("HF_TOKEN")
        if source.startswith("s3://") and self.s3_credentials:
            return (env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")) not in self.s3_credentials
        return False


VALUE_FROM_REFERENCE = "<valueFrom>"
"""What a variable set from a reference reads as here."""


@dataclass(frozen=True)
class Phase:
    """Before this phase's end: wait `seconds`, then patch the artifact's `status.progress` with `progress`."""

    seconds: float
    progress: int | None = None


@dataclass(frozen=True)
class Attempt:
    """One pod: its phases, then exit 0 (`output` is the check-size line) or 1 with `log` as the log's tail."""

    phases: tuple[Phase, ...] = ()
    failed: bool = False
    log: str = ""
    output: str = ""


@dataclass(frozen=True)
class Plan:
    """Every attempt of one Job is the same (the downloader is deterministic here)."""

    container: str
    attempt: Attempt
    expected_bytes: int = 0
    artifact: tuple[str, str] | None = None
    """(namespace, name) whose progress the downloader patches."""
    attempts: int = field(default=3)


def artifact_job(job: Mapping[str, Any]) -> bool:
    labels = ((job.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    return labels.get(COMPONENT_LABEL) in ARTIFACT_COMPONENTS


def plan(job: Mapping[str, Any], sources: ModelSources, capacity_bytes: int | None) -> Plan | None:
    """What the Job's downloader does (module docstring); None when the Job is not an artifact's."""
    if not artifact_job(job):
        return None
    spec = job.get("spec") or {}
    template = spec.get("template") or {}
    component = (template.get("metadata") or {}).get("labels", {}).get(COMPONENT_LABEL)
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    container = containers[0]
    args = container.get("args") or []
    source = str(args[0]) if args else ""
    env = {str(e.get("name")): _env_value(e) for e in container.get("env") or [] if isinstance(e, Mapping)}
    backoff = spec.get("backoffLimit")
    attempts = (backoff if isinstance(backoff, int) and backoff >= 0 else 6) + 1
    name = str(container.get("name") or "")
    if component == "check-size":
        return Plan(name, _check_size(source, env, sources), attempts=attempts)
    expected = _int(env.get("EXPECTED_SIZE_BYTES"))
    artifact = (env.get("ARTIFACT_NAMESPACE", ""), env.get("ARTIFACT_NAME", ""))
    attempt = _download(source, env, sources, capacity_bytes)
    return Plan(name, attempt, expected, artifact if all(artifact) else None, attempts)


def _env_value(variable: Mapping[str, Any]) -> str:
    """A variable's value; one from a Secret or ConfigMap (`valueFrom`, which the simulated pod does not read) is
    taken as set: an `HF_TOKEN` from a Secret opens a gated repository, as the scenarios' tokens do."""
    if variable.get("valueFrom"):
        return VALUE_FROM_REFERENCE
    return str(variable.get("value") or "")


def _check_size(source: str, env: Mapping[str, str], sources: ModelSources) -> Attempt:
    failure = _source_failure(source, env, sources)
    if failure is not None:
        return Attempt(failed=True, log=f"Error: Failed to get size for {source}\n{failure}")
    return Attempt(output=json.dumps({"url": source, "sizeBytes": sources.size_of(source)}))


def _download(source: str, env: Mapping[str, str], sources: ModelSources, capacity: int | None) -> Attempt:
    scale = sources.time_scale
    if env.get("AIM_DEBUG_CAUSE_HANG"):
        stall = _int(env.get("STALL_TIMEOUT")) or 120
        return Attempt(
            (Phase(0, 0), Phase(stall * scale)),
            failed=True,
            log=f"AIM_DEBUG_CAUSE_HANG is set, causing hang\nDownload stalled for {stall}s, killing",
        )
    if env.get("AIM_DEBUG_CAUSE_FAILURE"):
        return Attempt(failed=True, log="AIM_DEBUG_CAUSE_FAILURE is set, causing failure")
    if env.get("AIM_DEBUG_SIMULATE_DOWNLOAD"):
        download = (_int(env.get("AIM_DEBUG_DOWNLOAD_DURATION")) or 10) * scale
        verify = (_int(env.get("AIM_DEBUG_VERIFY_DURATION")) or 10) * scale
        phases = (Phase(0, 50), Phase(download, 100), Phase(verify))
        if env.get("AIM_DEBUG_VERIFY_FAIL"):
            return Attempt(phases, failed=True, log="AIM_DEBUG_VERIFY_FAIL is set, simulating verification failure")
        return Attempt(phases)
    failure = _source_failure(source, env, sources)
    if failure is not None:
        return Attempt(failed=True, log=failure)
    if capacity is not None and sources.size_of(source) > capacity:
        return Attempt(failed=True, log=f"Downloading {source}\nOSError: [Errno 28] No space left on device")
    return Attempt()


def _source_failure(source: str, env: Mapping[str, str], sources: ModelSources) -> str | None:
    """The downloader's last log lines when the source cannot be read, else None."""
    repo = source.split("://", 1)[-1]
    if sources.is_missing(source):
        if source.startswith("s3://"):
            return "ERROR: S3 error: 404 (NoSuchBucket): The specified bucket does not exist"
        return (
            f"huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: "
            f"https://huggingface.co/api/models/{repo}."
        )
    if sources.refuses(source, env):
        if source.startswith("s3://"):
            return (
                "ERROR: S3 error: 403 (InvalidAccessKeyId): The AWS Access Key Id you provided does not exist in "
                "our records."
            )
        return (
            f"huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
            f"https://huggingface.co/api/models/{repo}. Access to model {repo} is restricted. You must have access "
            "to it and be authenticated to access it. Please log in."
        )
    return None


def _int(value: str | None) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def termination_message(log: str, limit: int = 2048) -> str:
    """kubelet's `FallbackToLogsOnError` message: the log's last 80 lines, at most `limit` bytes."""
    tail = "\n".join(log.splitlines()[-80:])
    return tail[-limit:]
