"""An AIMArtifact's children and status: its check-size Job, its PVC, its download Job, and how its status follows
them (docs/aim-resources.md, "AIMArtifact").

Check-size Job (`render_check_size_job`), while neither `spec.size` nor `status.discoveredSizeBytes` is known
(`check_size_due`): name `<artifact>-check-size-<hash8(uid)>`, backoffLimit 2, ttlSecondsAfterFinished 300; one
container `check-size` of the download image running upstream's `/check-size.sh <sourceUri>`, its last output line
also its termination message (`CHECK_SIZE_SCRIPT`); env the config's < the profile's < the artifact's. The size comes
from that message (`omectl.core.aim.artifact_pods.discovered_size`).

PVC (`render_artifact_pvc`): name `<artifact>-cache-<hash8(uid)>`, access mode ReadWriteMany, size
`ceil_Gi(size * (1 + headroom/100))` (at least 1Gi) where headroom = the config's `storage.pvcHeadroomPercent` >
its deprecated top-level `pvcHeadroomPercent` > 10 (a present 0 counts); storage class = the artifact's
`spec.storageClassName` > the config's `storage.defaultStorageClassName` > its deprecated top-level
`defaultStorageClassName` > unset (the cluster's default class). The size is `spec.size`, else
`status.discoveredSizeBytes` (`effective_size_bytes`); while it is unknown there is no PVC. Labels
`app.kubernetes.io/component: artifact-cache`, `aim.eai.amd.com/artifact`, plus the artifact's labels propagated with
the artifact's config. Owned by the artifact.

Download Job (`render_download_job`): name `<artifact>-download-<hash8(uid)>` (at most 63 characters), backoffLimit 2,
ttlSecondsAfterFinished 600; one container `downloader`, image `spec.downloadImage` >
`ghcr.io/silogen/aim-artifact-downloader:0.2.0`, args `[spec.sourceUri]`, the PVC at `/cache`, restartPolicy Never,
`terminationMessagePolicy: FallbackToLogsOnError`. Env (`omectl.core.aim.env.download_job_env`), highest first, each
layer merged by name: `AIMArtifact.spec.env` > the profile's `engineEnv` > its `containerEnv` > the resolved config's
`env` (namespace over cluster) > operator defaults (`AIM_DOWNLOADER_PROTOCOL=XET,HF_TRANSFER`, `TMPDIR`, `HF_HOME`,
`EXPECTED_SIZE_BYTES`, `MOUNT_PATH`, `ARTIFACT_NAME`, `ARTIFACT_NAMESPACE`, `STALL_TIMEOUT`, `TARGET_DIR`).

Both Jobs are labelled (`job_labels`) `app.kubernetes.io/component` and `aim.eai.amd.com/component` (`download` /
`check-size`), `aim.eai.amd.com/artifact`, upstream's `aim.eai.amd.com/cache.name` and `cache.type: artifact`, and
the artifact's labels propagated with its config, on the Job and on its pod template. Owned by the artifact.

Status (`artifact_status`): while the size is unknown, Downloading (upstream's Progressing: `Ready` False
`Progressing`, `CheckSizeJobReady` and `CheckSizeJobPodsReady` as upstream derives them) until the check-size Job or
its pod fails it; no download Job yet → Downloading too (upstream's Progressing); running → Downloading;
`Complete=True` → Ready; a Failed pod or `Failed=True` → Failed, with upstream's reasons for the pod's failure. A
Ready artifact whose Job was cleaned up by its TTL stays Ready. Once the size is known, upstream's component
conditions `CachePvcReady` (`pvc_condition`) and, until the artifact is Ready, `DownloadJobReady`
(`job_ready_condition`) and, while the Job that was there runs, `DownloadJobPodsReady` (`pods_ready_condition`);
upstream's `DownloadComplete`, `AuthValid`, `ConfigValid` where they apply; a component condition (or
`DownloadComplete`) no longer derived stays as it last was (`kept_conditions`); `Ready` True is upstream's
`AllComponentsReady`. `progress` is 100 % when Ready and `N/A` when Failed (the downloader's while it runs); the
runtime-config part is laid over it by `omectl.core.aim.consumers.consumer_status`.

The InferenceService mounts Ready artifacts (`mount_artifacts`): each one's PVC read-only at
`/workspace/cache/<modelId>` (the artifact's name when it has no modelId).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Final

from omectl.core.aim.artifact_pods import AUTH, INVALID_SPEC, PodFailure, discovered_size, first_failure
from omectl.core.aim.consumers import (
    AIM_COMPONENT_LABEL,
    ARTIFACT_LABEL,
    base_labels,
    bounded_name,
    dns_label,
    hash8,
    owner_reference,
    propagate_edge,
    spec_of,
    status_of,
    text,
    uid_of,
)
from omectl.core.aim.env import CACHE_MOUNT_PATH, DOWNLOADER_PROTOCOL, INFERENCE_CACHE_PATH, download_job_env, merge_env
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.predictor_pods import EventsOf, pods_component
from omectl.core.aim.status import (
    ALL_COMPONENTS_READY,
    ALL_COMPONENTS_READY_MESSAGE,
    PROGRESSING,
    PROGRESSING_MESSAGE,
)
from omectl.core.jsonish import as_mapping
from omectl.core.layering import copy_json
from omectl.core.quantity import scaled

DEFAULT_DOWNLOAD_IMAGE: Final = "ghcr.io/silogen/aim-artifact-downloader:0.2.0"
DEFAULT_HEADROOM_PERCENT: Final = 10
DOWNLOAD_BACKOFF_LIMIT: Final = 2
DOWNLOAD_TTL_SECONDS: Final = 600
ACCESS_MODES: Final = ("ReadWriteMany",)
CACHE_VOLUME: Final = "cache"
DOWNLOADER_CONTAINER: Final = "downloader"
PVC_COMPONENT: Final = "artifact-cache"
DOWNLOAD_COMPONENT: Final = "download"
CHECK_SIZE_COMPONENT: Final = "check-size"
CHECK_SIZE_CONTAINER: Final = "check-size"
CHECK_SIZE_TTL_SECONDS: Final = 300
CACHE_NAME_LABEL: Final = "aim.eai.amd.com/cache.name"
CACHE_TYPE_LABEL: Final = "aim.eai.amd.com/cache.type"
FALLBACK_TO_LOGS: Final = "FallbackToLogsOnError"
CHECK_SIZE_SCRIPT: Final = (
    'out=$(/check-size.sh "$1") || exit 1; printf "%s\n" "$out"; printf "%s" "$out" | tail -n 1 > /dev/termination-log'
)
"""Upstream's check-size script, its last line (`{"url": ..., "sizeBytes": N}`) also the termination message, which
the controller reads (it reads no logs)."""
GI: Final = 1 << 30

PENDING: Final = "Pending"
DOWNLOADING: Final = "Downloading"
READY: Final = "Ready"
FAILED: Final = "Failed"

RESOURCE_NOT_READY: Final = "ResourceNotReady"
RESOURCE_NOT_READY_MESSAGE: Final = "Downstream resource not found or being created"
"""Upstream's reason and message for a child it creates that does not exist (yet)."""
JOB_FAILURE_REASONS: Final[Mapping[str, str]] = {
    "BackoffLimitExceeded": "JobBackoffLimitExceeded",
    "DeadlineExceeded": "JobDeadlineExceeded",
    "Evicted": "JobEvicted",
}
"""A failed Job's `Failed` reason -> upstream's component reason (else `JobFailed`)."""

IMAGE_PULL_FAILURES: Final = frozenset(("ImagePullAuthFailure", "ImageNotFound", "ImagePullBackOff"))
"""A pod's reasons that rank before a failed pod's, as upstream checks image pulls first."""
KEPT_COMPONENTS: Final = frozenset(
    f"{c}Ready"
    for c in ("CachePvc", "CheckSizeJob", "CheckSizeJobPods", "CheckSizeOutput", "DownloadJob", "DownloadJobPods")
)
"""The artifact's component conditions (`kept_conditions`)."""

_QUANTITY: Final = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$")


# -- sizes and storage -----------------------------------------------------------------------------------


def parse_quantity(value: Any) -> Fraction:
    """A Kubernetes quantity (`65Gi`, `1.5T`, `500M`, `1e9`, an integer) as an exact number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a quantity")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a quantity (e.g. 100Gi)")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        base = Fraction(Decimal(number))
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(f"{value!r} is not a quantity") from error
    return scaled(base, suffix)


def size_bytes(artifact: Mapping[str, Any]) -> int | None:
    """`spec.size` in bytes (rounded up), or None when unset."""
    size = spec_of(artifact).get("size")
    if size is None or size == "":
        return None
    return math.ceil(parse_quantity(size))


def discovered_size_bytes(artifact: Mapping[str, Any]) -> int | None:
    """`status.discoveredSizeBytes`, what the check-size Job found, or None."""
    size = status_of(artifact).get("discoveredSizeBytes")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def effective_size_bytes(artifact: Mapping[str, Any]) -> int | None:
    """The size the PVC and the download go by: `spec.size`, else the discovered size, else None (unknown)."""
    size = size_bytes(artifact)
    return size if size is not None else discovered_size_bytes(artifact)


def headroom_percent(config: Mapping[str, Any]) -> int:
    """`storage.pvcHeadroomPercent` > deprecated top-level `pvcHeadroomPercent` > 10."""
    for value in (as_mapping(config.get("storage")).get("pvcHeadroomPercent"), config.get("pvcHeadroomPercent")):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return DEFAULT_HEADROOM_PERCENT


def pvc_size_gi(size: int, headroom: int) -> int:
    """`ceil_Gi(size * (1 + headroom/100))`, at least 1."""
    return max(1, math.ceil(Fraction(size * (100 + headroom), 100 * GI)))


def storage_class_name(artifact: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    """Artifact `spec.storageClassName` > config `storage.defaultStorageClassName` > deprecated top-level
    `defaultStorageClassName` > None (the cluster's default class)."""
    for value in (
        spec_of(artifact).get("storageClassName"),
        as_mapping(config.get("storage")).get("defaultStorageClassName"),
        config.get("defaultStorageClassName"),
    ):
        if text(value):
            return str(value)
    return None


# -- children --------------------------------------------------------------------------------------------


def pvc_name(artifact: Mapping[str, Any]) -> str:
    return f"{name_of(artifact)}-cache-{hash8(uid_of(artifact))}"


def download_job_name(artifact: Mapping[str, Any]) -> str:
    return bounded_name(name_of(artifact), f"-download-{hash8(uid_of(artifact))}")


def render_artifact_pvc(artifact: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The artifact's PVC (module docstring), or None when its size is unknown. `config` is the artifact's resolved
    runtime config."""
    size = effective_size_bytes(artifact)
    if size is None:
        return None
    spec: dict[str, Any] = {
        "accessModes": list(ACCESS_MODES),
        "resources": {"requests": {"storage": f"{pvc_size_gi(size, headroom_percent(config))}Gi"}},
    }
    storage_class = storage_class_name(artifact, config)
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": pvc_name(artifact),
            "namespace": namespace_of(artifact),
            "labels": base_labels(PVC_COMPONENT, {ARTIFACT_LABEL: name_of(artifact)}),
            "ownerReferences": [owner_reference(artifact)],
        },
        "spec": spec,
    }
    return propagate_edge(artifact, pvc, config)


def render_download_job(
    artifact: Mapping[str, Any], config: Mapping[str, Any], profile: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The artifact's download Job (module docstring). `config` is the artifact's resolved runtime config, `profile`
    the AIMProfile / AIMClusterProfile named by `spec.profileName`, when there is one."""
    spec = spec_of(artifact)
    source = text(spec.get("sourceUri"))
    if source is None:
        raise ValueError(f"AIMArtifact {name_of(artifact)!r} has no spec.sourceUri")
    labels = job_labels(artifact, DOWNLOAD_COMPONENT)
    container = {
        "name": DOWNLOADER_CONTAINER,
        "image": text(spec.get("downloadImage")) or DEFAULT_DOWNLOAD_IMAGE,
        "args": [source],
        "env": download_job_env(artifact, config, profile, expected_size_bytes=effective_size_bytes(artifact)),
        "volumeMounts": [{"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT_PATH}],
        "terminationMessagePolicy": FALLBACK_TO_LOGS,
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": download_job_name(artifact),
            "namespace": namespace_of(artifact),
            "labels": dict(labels),
            "ownerReferences": [owner_reference(artifact)],
        },
        "spec": {
            "backoffLimit": DOWNLOAD_BACKOFF_LIMIT,
            "ttlSecondsAfterFinished": DOWNLOAD_TTL_SECONDS,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": pvc_name(artifact)}}],
                },
            },
        },
    }
    return propagate_edge(artifact, job, config)


def download_job_due(artifact: Mapping[str, Any]) -> bool:
    """Whether the controller should (re)create the download Job: the size is known and the artifact is not Ready
    (a Ready artifact's Job may be gone after its TTL)."""
    return effective_size_bytes(artifact) is not None and status_of(artifact).get("status") != READY


def job_labels(artifact: Mapping[str, Any], component: str) -> dict[str, str]:
    """Labels of an artifact's Jobs and their pods: omectl's and upstream's (`aim.eai.amd.com/cache.name`,
    `cache.type: artifact`)."""
    name = name_of(artifact)
    return base_labels(
        component,
        {AIM_COMPONENT_LABEL: component, ARTIFACT_LABEL: name, CACHE_NAME_LABEL: name, CACHE_TYPE_LABEL: "artifact"},
    )


def check_size_job_name(artifact: Mapping[str, Any]) -> str:
    return bounded_name(name_of(artifact), f"-check-size-{hash8(uid_of(artifact))}")


def check_size_due(artifact: Mapping[str, Any]) -> bool:
    """Whether the artifact needs its check-size Job: neither `spec.size` nor a discovered size."""
    return effective_size_bytes(artifact) is None and text(spec_of(artifact).get("sourceUri")) is not None


def render_check_size_job(
    artifact: Mapping[str, Any], config: Mapping[str, Any], profile: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The artifact's check-size Job (module docstring): the download image's `/check-size.sh <sourceUri>`, its last
    output line kept as the container's termination message; env the config's < the profile's < the artifact's."""
    spec = spec_of(artifact)
    source = text(spec.get("sourceUri"))
    if source is None:
        raise ValueError(f"AIMArtifact {name_of(artifact)!r} has no spec.sourceUri")
    labels = job_labels(artifact, CHECK_SIZE_COMPONENT)
    env = merge_env(
        as_env(config.get("env")),
        as_env(spec_of(profile).get("containerEnv")),
        as_env(spec_of(profile).get("engineEnv")),
        as_env(spec.get("env")),
    )
    container: dict[str, Any] = {
        "name": CHECK_SIZE_CONTAINER,
        "image": text(spec.get("downloadImage")) or DEFAULT_DOWNLOAD_IMAGE,
        "command": ["/bin/sh", "-c", CHECK_SIZE_SCRIPT, CHECK_SIZE_CONTAINER],
        "args": [source],
        "terminationMessagePolicy": FALLBACK_TO_LOGS,
    }
    if env:
        container["env"] = env
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": check_size_job_name(artifact),
            "namespace": namespace_of(artifact),
            "labels": dict(labels),
            "ownerReferences": [owner_reference(artifact)],
        },
        "spec": {
            "backoffLimit": DOWNLOAD_BACKOFF_LIMIT,
            "ttlSecondsAfterFinished": CHECK_SIZE_TTL_SECONDS,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        },
    }
    return propagate_edge(artifact, job, config)


# -- status ----------------------------------------------------------------------------------------------


def job_condition(job: Mapping[str, Any] | None, condition_type: str) -> Mapping[str, Any] | None:
    """The Job's condition of that type when it is True."""
    for condition in status_of(job).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return condition if condition.get("status") == "True" else None
    return None


def protocol_sequence(job: Mapping[str, Any] | None) -> str | None:
    """`AIM_DOWNLOADER_PROTOCOL` of the Job's downloader container."""
    template = as_mapping(spec_of(job).get("template"))
    for container in as_mapping(template.get("spec")).get("containers") or ():
        for item in as_mapping(container).get("env") or ():
            if isinstance(item, Mapping) and item.get("name") == DOWNLOADER_PROTOCOL:
                return text(item.get("value"))
    return None


def artifact_status(
    artifact: Mapping[str, Any],
    job: Mapping[str, Any] | None,
    pvc: Mapping[str, Any] | None,
    *,
    pods: Sequence[Mapping[str, Any]] | None = (),
    check_job: Mapping[str, Any] | None = None,
    check_pods: Sequence[Mapping[str, Any]] | None = (),
    pod_events: EventsOf = lambda _pod: (),
    check_pod_events: EventsOf = lambda _pod: (),
) -> dict[str, Any]:
    """The artifact's own status (module docstring): `status`, `persistentVolumeClaim`, `allocatedSize`,
    `discoveredSizeBytes`, `progress`, `download{job, protocol, protocolSequence, attempt, totalAttempts, message}` and
    upstream's conditions `CachePvcReady`, `DownloadJobReady`, `CheckSizeJobReady`, `DownloadComplete`,
    `DownloadJobPodsReady`, `AuthValid`, `ConfigValid` where they apply, and `Ready`. `job`, `pvc` and `pods` (the
    download Job's) are the live objects, `check_job` and `check_pods` the check-size Job's (while the size is
    unknown), `pod_events` and `check_pod_events` the Events of their pending pods. Pods None: not looked at (the
    Job did not exist when the reconcile began), so no pods condition is derived, as upstream's."""
    looked_at, check_looked_at = pods is not None, check_pods is not None
    pods, check_pods = pods or (), check_pods or ()
    out: dict[str, Any] = {}
    previous = status_of(artifact)
    discovered = discovered_size_bytes(artifact)
    found = discovered_size(check_pods, CHECK_SIZE_CONTAINER) if size_bytes(artifact) is None else None
    if discovered is None and isinstance(found, int):
        discovered = found
    if size_bytes(artifact) is None and discovered is not None:
        out["discoveredSizeBytes"] = discovered
    size = size_bytes(artifact) if size_bytes(artifact) is not None else discovered
    if pvc is not None:
        out["persistentVolumeClaim"] = name_of(pvc)
        requested = as_mapping(as_mapping(spec_of(pvc).get("resources")).get("requests")).get("storage")
        if text(requested):
            out["allocatedSize"] = requested

    sequence = protocol_sequence(job)
    protocols = [p.strip() for p in (sequence or "").split(",") if p.strip()]
    download: dict[str, Any] = {}
    if job is not None:
        download["job"] = name_of(job)
    if sequence is not None:
        download["protocolSequence"] = sequence
        download["totalAttempts"] = len(protocols)

    extra: list[dict[str, str]] = []
    progress = dict(as_mapping(previous.get("progress")))
    at_100 = isinstance(progress.get("percentage"), int) and progress["percentage"] >= 100
    failed = job_condition(job, "Failed")
    complete = job_condition(job, "Complete")
    failure = first_failure(pods) if complete is None else None
    if check_size_due(artifact):  # the check-size Job was looked at: the size was unknown when the reconcile began
        extra.append(job_ready_condition("CheckSizeJob", check_job))
        if check_looked_at and check_job is not None:
            failed_pod = first_failure(check_pods)
            extra.append(pods_ready_condition("CheckSizeJobPods", check_pods, failed_pod, check_pod_events))
    if size is None:
        status, reason, message = _size_discovery(check_job, check_pods, found, extra)
    elif failure is not None or failed is not None:
        status = FAILED
        if failure is not None:
            reason, message = failure_reason(failure), failure.message
            extra.extend(_category_conditions(failure))
        else:
            reason, message = "DownloadFailed", str(as_mapping(failed).get("message") or "The download Job failed")
        if at_100:
            extra.append(
                _cond("DownloadComplete", False, "VerificationFailed", "Download completed but verification failed")
            )
        else:
            extra.append(_cond("DownloadComplete", False, "Downloading", "Download failed before completion"))
        out["progress"] = {**progress, "displayPercentage": "N/A"}
        if protocols:
            download.update(protocol=protocols[-1], attempt=len(protocols))
    elif complete is not None:
        status, reason, message = READY, "DownloadComplete", "Complete"
        extra.append(_cond("DownloadComplete", True, "Verified", "Download and verification complete"))
        out["progress"] = complete_progress(size)
        if protocols:
            download.update(protocol=protocols[0], attempt=1)
    elif job is not None:
        status, reason, message = DOWNLOADING, "Downloading", "Downloading"
        if at_100:
            extra.append(_cond("DownloadComplete", True, "Verifying", "Download complete, verifying integrity..."))
        else:
            extra.append(_cond("DownloadComplete", False, "Downloading", "Download in progress"))
        if protocols:
            download.update(protocol=protocols[0], attempt=1)
    elif previous.get("status") == READY:
        status, reason, message = READY, "DownloadComplete", "Complete"
        download = dict(as_mapping(previous.get("download")))
        out["progress"] = complete_progress(size)
    else:  # upstream's Progressing: the claim and the Job it creates are not there (yet)
        status, reason, message = DOWNLOADING, PROGRESSING, PROGRESSING_MESSAGE
    download["message"] = message

    out["status"] = status
    out["download"] = download
    components: list[dict[str, str]] = []
    if size is not None:
        components.append(pvc_condition(pvc))
        if previous.get("status") != READY:  # upstream stops looking at the Job and its pods once Ready
            components.append(job_ready_condition("DownloadJob", job))
            if looked_at and job is not None and complete is None:
                components.append(pods_ready_condition("DownloadJobPods", pods, failure, pod_events))
    if status == READY:
        ready = _cond("Ready", True, ALL_COMPONENTS_READY, ALL_COMPONENTS_READY_MESSAGE)
    else:
        ready = _cond("Ready", False, reason, message)
    derived = [*components, *extra]
    out["conditions"] = [*derived, *kept_conditions(previous, derived), ready]
    return out


def kept_conditions(previous: Mapping[str, Any], derived: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The previous status's conditions upstream keeps when it stops deriving them (its condition manager starts from
    the old ones): the component conditions (`CheckSizeJobReady` once the size is known, `DownloadJobReady` and
    `DownloadJobPodsReady` once the Job completed or the artifact is Ready, ...) and `DownloadComplete`, unless
    derived again. `Ready`, the runtime config's and the error categories' are always written anew."""
    taken = {c.get("type") for c in derived}
    return [
        dict(c)
        for c in previous.get("conditions") or ()
        if isinstance(c, Mapping)
        and c.get("type") not in taken
        and (c.get("type") == "DownloadComplete" or str(c.get("type")) in KEPT_COMPONENTS)
    ]


def pods_ready_condition(
    component: str,
    pods: Sequence[Mapping[str, Any]],
    failure: PodFailure | None,
    events_of: EventsOf = lambda _pod: (),
) -> dict[str, str]:
    """`<component>Ready` (`DownloadJobPodsReady`, `CheckSizeJobPodsReady`) as upstream derives it from a Job's pods:
    False `NoPods` without any; a container that cannot pull its image, as an AIMService's pods
    (`omectl.core.aim.predictor_pods`: `ImagePullAuthFailure`, `ImageNotFound`, `ImagePullBackOff`); a failed pod,
    its categorised `failure`; True `PodsReady` when one Succeeded or runs Ready; False `PodsStarting` when one runs
    not Ready, `PodsPending` (or a pending pod's latest scheduling / mount Event's reason, from `events_of`), else
    `PodsProgressing`."""
    condition_type = f"{component}Ready"
    health = pods_component(pods, events_of)
    if health is None:
        return _cond(condition_type, False, "NoPods", "No pods found")
    if failure is not None and health.reason not in IMAGE_PULL_FAILURES:
        return _cond(condition_type, False, failure.reason, failure.message)
    return _cond(condition_type, health.state == "Ready", health.reason, health.message)


def pvc_condition(pvc: Mapping[str, Any] | None) -> dict[str, str]:
    """`CachePvcReady` as upstream derives it from the claim: True (`Ready`) when Bound; False `PvcLost`,
    `PvcProvisioningFailed`, `PvcPending`, or `ResourceNotReady` while it does not exist."""
    if pvc is None:
        return _cond("CachePvcReady", False, RESOURCE_NOT_READY, RESOURCE_NOT_READY_MESSAGE)
    phase = status_of(pvc).get("phase")
    if phase == "Bound":
        return _cond("CachePvcReady", True, READY, "")
    if phase == "Lost":
        return _cond("CachePvcReady", False, "PvcLost", "PVC lost its underlying volume")
    for condition in status_of(pvc).get("conditions") or ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "Resizing"
            and condition.get("status") == "False"
            and condition.get("reason") == "ProvisioningFailed"
        ):
            message = f"PVC provisioning failed: {condition.get('message') or ''}"
            return _cond("CachePvcReady", False, "PvcProvisioningFailed", message)
    return _cond("CachePvcReady", False, "PvcPending", "PVC is pending")


def job_ready_condition(component: str, job: Mapping[str, Any] | None) -> dict[str, str]:
    """`<component>Ready` (`DownloadJobReady`, `CheckSizeJobReady`) as upstream derives it from a Job: True (`Ready`)
    when Complete; False `JobRunning` while it runs, `ResourceNotReady` while it does not exist, and when it failed
    `JobBackoffLimitExceeded`, `JobDeadlineExceeded`, `JobEvicted` or `JobFailed` with the Job's message."""
    condition_type = f"{component}Ready"
    if job is None:
        return _cond(condition_type, False, RESOURCE_NOT_READY, RESOURCE_NOT_READY_MESSAGE)
    if job_condition(job, "Complete") is not None:
        return _cond(condition_type, True, READY, "")
    failed = job_condition(job, "Failed")
    if failed is not None:
        reason = JOB_FAILURE_REASONS.get(str(failed.get("reason") or ""), "JobFailed")
        return _cond(condition_type, False, reason, str(failed.get("message") or "Job failed"))
    return _cond(condition_type, False, "JobRunning", "Job is in progress")


def complete_progress(size: int) -> dict[str, Any]:
    return {"totalBytes": size, "downloadedBytes": size, "percentage": 100, "displayPercentage": "100 %"}


def failure_reason(failure: PodFailure) -> str:
    """The artifact's `Ready` reason for a failed pod, as upstream derives it: its category's (`AuthError`,
    `InvalidSpec`), else the pod's own reason (`StorageFull`, `PodOOMKilled`, `InfrastructureError`)."""
    return {AUTH: "AuthError", INVALID_SPEC: "InvalidSpec"}.get(failure.category, failure.reason)


def _category_conditions(failure: PodFailure) -> list[dict[str, str]]:
    if failure.category == AUTH:
        return [_cond("AuthValid", False, "AuthError", "Authentication or authorization failure")]
    if failure.category == INVALID_SPEC:
        return [_cond("ConfigValid", False, "InvalidSpec", "Configuration validation failed")]
    return []


def _size_discovery(
    check_job: Mapping[str, Any] | None,
    check_pods: Sequence[Mapping[str, Any]],
    found: int | ValueError | None,
    extra: list[dict[str, str]],
) -> tuple[str, str, str]:
    """(status, reason, message) while the size is unknown, from the check-size Job and its pods; adds their
    conditions to `extra`."""
    failure = first_failure(check_pods)
    if isinstance(found, ValueError):
        extra.append(_cond("CheckSizeOutputReady", False, "InvalidSizeOutput", str(found)))
        return FAILED, "InvalidSizeOutput", str(found)
    if failure is not None:
        extra.extend(_category_conditions(failure))
        return FAILED, failure_reason(failure), failure.message
    failed = job_condition(check_job, "Failed")
    if failed is not None:
        return FAILED, "CheckSizeFailed", str(failed.get("message") or "The check-size Job failed")
    # upstream's Progressing (v1alpha2's Downloading) while the Job it creates runs
    return DOWNLOADING, PROGRESSING, PROGRESSING_MESSAGE


# -- the InferenceService's mounts -----------------------------------------------------------------------


def artifact_mount_path(artifact: Mapping[str, Any]) -> str:
    model_id = text(spec_of(artifact).get("modelId"))
    return f"{INFERENCE_CACHE_PATH}/{model_id or name_of(artifact)}"


def artifact_volumes(artifacts: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`(volumes, volumeMounts)` for the Ready artifacts (those with `status.status: Ready` and a PVC), in name
    order: volume `artifact-<name>` (at most 63 characters), mounted read-only at `/workspace/cache/<modelId>`."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for artifact in sorted(artifacts, key=name_of):
        status = status_of(artifact)
        claim = text(status.get("persistentVolumeClaim"))
        if status.get("status") != READY or claim is None:
            continue
        volume = bounded_name(f"artifact-{dns_label(name_of(artifact))}")
        volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}})
        mounts.append({"name": volume, "mountPath": artifact_mount_path(artifact), "readOnly": True})
    return volumes, mounts


def mount_artifacts(
    inference_service: Mapping[str, Any], artifacts: Sequence[Mapping[str, Any]], container: str = "kserve-container"
) -> dict[str, Any]:
    """A copy of a rendered InferenceService with the Ready artifacts' PVCs mounted into its `container`."""
    out: dict[str, Any] = copy_json(inference_service)
    volumes, mounts = artifact_volumes(artifacts)
    if not volumes:
        return out
    predictor = out.setdefault("spec", {}).setdefault("predictor", {})
    predictor["volumes"] = [*(predictor.get("volumes") or []), *volumes]
    for item in predictor.get("containers") or []:
        if item.get("name") == container:
            item["volumeMounts"] = [*(item.get("volumeMounts") or []), *mounts]
    return out


def as_env(value: Any) -> list[Mapping[str, Any]] | None:
    return list(value) if isinstance(value, list | tuple) else None


def _cond(condition_type: str, status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": condition_type, "status": "True" if status else "False", "reason": reason, "message": message}
