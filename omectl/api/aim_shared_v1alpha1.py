"""Upstream AIM Engine's v1alpha1 schemas of the kinds omectl also serves at v1alpha2 (docs/aim-versions.md).

Each kind here is served at both versions: v1alpha2 (`omectl.api.aim`) is the storage version, the one the controller
reconciles; v1alpha1 is upstream's schema, field for field (a superset of upstream's CRD at the commit pinned in
tests/fixtures/upstream/aim/SOURCE: its defaults, enums, patterns, required fields and CEL rules), so upstream's YAML
applies unchanged. The API server converts between the two through the controller's conversion webhook
(`omectl.webhook.conversion`, with the rules of `omectl.core.aim.versions`).

Unlike the v1alpha2 models, these carry upstream's schema defaults: they are what upstream's users' objects get, and
converted to v1alpha2 they are values like any other.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator

from omectl.api import ome
from omectl.api.aim import (
    INT32,
    LEGACY_SOURCE_URI_PATTERN,
    MODEL_ID_PATTERN,
    QUANTITY_PATTERN,
    SOURCE_URI_IMMUTABLE,
    AimLocalObjectReference,
    EnvList,
    MetaConditionList,
    Quantity,
    _AIMResource,
    _check_quantity,
    _Object,
    immutable,
)
from omectl.api.ome import IntOrString

INT64: Final[dict[str, Any]] = {"format": "int64"}
DEFAULT_DOWNLOAD_IMAGE: Final = "ghcr.io/silogen/aim-artifact-downloader:0.2.0"

# ---------------------------------------------------------------------------------------------------------
# AIMArtifact


class AIMArtifactSpec(_Object):
    """One set of model files, downloaded into a PVC by a Job (upstream's v1alpha1 AIMArtifact)."""

    source_uri: str = Field(
        min_length=1, pattern=LEGACY_SOURCE_URI_PATTERN, json_schema_extra=immutable(SOURCE_URI_IMMUTABLE)
    )
    """Where the files are: hf://<repo> or s3://<bucket>/<prefix>. Immutable."""
    model_id: str | None = Field(default=None, pattern=MODEL_ID_PATTERN)
    """Model id the inference container knows the files by, `<org>/<name>`."""
    size: Quantity
    """Size of the files; the PVC is this plus the runtime config's headroom."""
    storage_class_name: str | None = None
    """Storage class of the PVC; wins over the runtime config's defaultStorageClassName."""
    env: EnvList
    """Environment of the download Job: the top layer, over the runtime config's env."""
    model_download_image: str = ome.crd_default(DEFAULT_DOWNLOAD_IMAGE)
    """Image of the download Job (v1alpha2's `downloadImage`)."""
    image_pull_secrets: list[AimLocalObjectReference] | None = None
    """Secrets for pulling the download image (no v1alpha2 counterpart: kept in an annotation)."""
    runtime_config_name: str | None = None
    """Name of the runtime config (downloader env, storage defaults); "default" when unset."""

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        return _check_quantity(value)


class ArtifactDownload(_Object):
    """Progress of an artifact's download through its protocols."""

    protocol: str | None = None
    """The protocol in use."""
    protocol_sequence: str | None = None
    """AIM_DOWNLOADER_PROTOCOL of the Job, e.g. XET,HF_TRANSFER."""
    attempt: int | None = Field(default=None, json_schema_extra=INT32)
    """The protocol attempt, from 1."""
    total_attempts: int | None = Field(default=None, json_schema_extra=INT32)
    """Number of protocols in the sequence."""
    message: str | None = None
    """Last message of the download."""


class ArtifactProgress(_Object):
    """How much of the files has been downloaded."""

    downloaded_bytes: int | None = Field(default=None, json_schema_extra=INT64)
    """Bytes downloaded so far."""
    total_bytes: int | None = Field(default=None, json_schema_extra=INT64)
    """Bytes to download."""
    percentage: int | None = Field(default=None, ge=0, le=100, json_schema_extra=INT32)
    """Percent downloaded."""
    display_percentage: str | None = None
    """The percentage as shown, e.g. 42%."""


class AIMArtifactStatus(_Object):
    """Observed state of an artifact, as upstream's v1alpha1 words it."""

    status: Literal["Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable"] = ome.crd_default(
        "Pending"
    )
    """Overall state (v1alpha2's `Downloading` is `Progressing`)."""
    conditions: MetaConditionList
    """Conditions of the artifact."""
    observed_generation: int | None = Field(default=None, json_schema_extra=INT64)
    """The metadata.generation this status was computed from."""
    persistent_volume_claim: str | None = None
    """Name of the PVC holding the files."""
    allocated_size: Annotated[IntOrString | None, Field(default=None, json_schema_extra={"pattern": QUANTITY_PATTERN})]
    """Size of the PVC."""
    headroom_percent: int | None = Field(default=None, json_schema_extra=INT32)
    """Headroom added to the PVC, in percent."""
    discovered_size_bytes: int | None = Field(default=None, json_schema_extra=INT64)
    """Size of the files found by upstream's check-size Job."""
    display_size: str | None = None
    """The size as shown."""
    mode: Literal["Dedicated", "Shared"] | None = None
    """Dedicated when the artifact has an owner, else Shared."""
    last_used: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When a service last used the artifact."""
    download: ArtifactDownload | None = None
    """The download's protocols."""
    progress: ArtifactProgress | None = None
    """The download's progress."""


class AIMArtifact(_AIMResource):
    """Model files downloaded into a PVC by a Job (upstream's v1alpha1 schema)."""

    kind: str | None = "AIMArtifact"
    """Kind of the object."""
    spec: AIMArtifactSpec | None = None
    status: AIMArtifactStatus | None = None


# ---------------------------------------------------------------------------------------------------------
# AIMClusterModelSource


class ModelSourceFilter(_Object):
    """Images of a registry to make models of: a repository pattern (`*` a wildcard), with a tag or a full URI."""

    image: str = Field(max_length=512)
    """Image pattern, e.g. amdenterpriseai/aim-* or ghcr.io/silogen/aim-llama:1.0.0."""
    exclude: list[str] | None = None
    """Repository names to skip."""
    versions: list[str] | None = None
    """Semantic version constraints of this filter, over the source's."""


class AIMClusterModelSourceSpec(_Object):
    """Upstream's registry scan (v1alpha1): the AIMClusterModels of the images its filters find."""

    filters: list[ModelSourceFilter] = Field(min_length=1, max_length=100)
    """The images to find; an image matching any filter counts."""
    registry: str = ome.crd_default("docker.io")
    """The registry to scan."""
    versions: list[str] | None = None
    """Semantic version constraints of every filter."""
    max_models: int = Field(default=100, ge=1, le=10000, json_schema_extra={ome.CRD_DEFAULT_MARK: True})
    """At most this many AIMClusterModels."""
    sync_interval: str = ome.crd_default("1h")
    """How often the registry is scanned, a Go duration."""
    image_pull_secrets: list[AimLocalObjectReference] | None = None
    """Secrets (in the operator namespace) for the registry."""


class AIMClusterModelSourceStatus(_Object):
    """Observed state of a model source, as upstream's v1alpha1 words it."""

    status: (
        Literal["Pending", "Starting", "Progressing", "Ready", "Running", "Degraded", "NotAvailable", "Failed"] | None
    ) = None
    """Overall state."""
    conditions: MetaConditionList
    """Conditions of the source."""
    observed_generation: int | None = Field(default=None, json_schema_extra=INT64)
    """The metadata.generation this status was computed from."""
    discovered_models: int | None = None
    """AIMClusterModels of the source (v1alpha2's `modelCount`)."""
    available_models: int | None = None
    """Images the scan found."""
    models_limit_reached: bool | None = None
    """Whether maxModels was reached."""
    last_sync_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the registry was last scanned."""


class AIMClusterModelSource(_AIMResource):
    """A registry scan that makes AIMClusterModels (upstream's v1alpha1 schema)."""

    kind: str | None = "AIMClusterModelSource"
    """Kind of the object."""
    spec: AIMClusterModelSourceSpec | None = None
    status: AIMClusterModelSourceStatus | None = None
