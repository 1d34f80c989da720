"""Upstream AIM Engine's v1alpha1 schemas of AIMModel and AIMClusterModel, served beside omectl's v1alpha2 ones
(docs/aim-versions.md, "AIMModel and AIMClusterModel").

As `omectl.api.aim_shared_v1alpha1`: upstream's schema field for field (a superset of upstream's CRDs at the commit
pinned in tests/fixtures/upstream/aim/SOURCE: defaults, enums, patterns, required fields and CEL rules, the spec's
modelSources/hardware rule among them), so upstream's YAML applies unchanged; v1alpha2 (`omectl.api.aim`) is the
storage version, and the API server converts through the controller's webhook (`omectl.core.aim.versions.model`).
The two kinds have one schema, as upstream's: a cluster model differs only in its scope.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field

from omectl.api import ome
from omectl.api.aim import (
    AimEnvVar,
    AimLocalObjectReference,
    EnvList,
    ImageMetadata,
    LegacyModelSource,
    LegacyResolvedReference,
    MetaConditionList,
    Metric,
    Precision,
    TemplateHardware,
    TemplateType,
    _AIMResource,
    _Object,
)
from omectl.api.aim_shared_v1alpha1 import INT64
from omectl.api.ome import ResourceRequirements, list_map

MODEL_SOURCES_NEED_HARDWARE: Final[dict[str, Any]] = {
    "rule": "!has(self.modelSources) || size(self.modelSources) == 0 || (has(self.custom) && has(self.custom.hardware))"
    " || !has(self.customTemplates) || size(self.customTemplates) == 0 || self.customTemplates.all(t, has(t.hardware)"
    " || (has(self.custom) && has(self.custom.hardware)))",
    "message": "when using modelSources, hardware must be specified: set custom.hardware (inherited by all templates) "
    "or set hardware on each template individually",
}
"""Upstream's rule on a model's spec, word for word."""


class ModelCustom(_Object):
    """Defaults of a custom model's templates (a model with inline modelSources)."""

    hardware: TemplateHardware | None = None
    """Hardware of every template that sets none; required with modelSources when customTemplates is empty."""
    type: TemplateType | None = None
    """Type of every template that sets none; unoptimized when unset."""


class CustomTemplateProfile(_Object):
    """What a custom template optimises."""

    metric: Metric | None = None
    """latency or throughput."""
    precision: Precision | None = None
    """Numeric precision of the weights, e.g. fp8, bf16."""


class CustomTemplate(_Object):
    """A template upstream's controller creates for the model without running discovery."""

    name: str | None = Field(default=None, max_length=63)
    """Name of the template, a suffix of the model's."""
    type: TemplateType = ome.crd_default("unoptimized")
    """How far the profile is tuned: optimized, preview or unoptimized."""
    env: Annotated[list[AimEnvVar] | None, Field(default=None, max_length=64, json_schema_extra=list_map("name"))]
    """Environment of the inference container when this template serves."""
    hardware: TemplateHardware | None = None
    """Hardware of the template; custom.hardware when unset."""
    profile: CustomTemplateProfile | None = None
    """Metric and precision of the template."""


class ModelDiscovery(_Object):
    """What upstream's controller does with the model image."""

    extract_metadata: bool = ome.crd_default(True)
    """Read the image's labels from its registry (status.imageMetadata)."""
    create_service_templates: bool = ome.crd_default(True)
    """Create service templates from the image's recommended deployments."""


class AIMModelSpec(_Object):
    """An AIM model image (upstream's v1alpha1): its templates come from the image's labels, or from customTemplates
    for a custom model (inline modelSources)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [MODEL_SOURCES_NEED_HARDWARE]})

    image: str = Field(min_length=1)
    """Container image of the AIM model."""
    runtime_config_name: str | None = None
    """Name of the runtime config; "default" when unset."""
    env: EnvList
    """Environment of the model's jobs and inference containers."""
    model_sources: list[LegacyModelSource] | None = Field(default=None, max_length=1)
    """The model's files: with them the model is a custom model (no metadata extraction)."""
    custom: ModelCustom | None = None
    """Defaults of a custom model's templates."""
    custom_templates: list[CustomTemplate] | None = Field(default=None, max_length=16)
    """Templates created without discovery."""
    default_service_template: str | None = None
    """The template a service of this model uses when it names none."""
    discovery: ModelDiscovery | None = None
    """Metadata extraction and template creation; the runtime config's defaults when unset."""
    image_metadata: ImageMetadata | None = None
    """The image's metadata given here: the registry is not read."""
    image_pull_secrets: list[AimLocalObjectReference] | None = None
    """Secrets for pulling the image (metadata extraction and inference)."""
    resources: Annotated[ResourceRequirements, ome.k8s_type(ome.CORE + "ResourceRequirements")] | None = None
    """Default compute resources of the model's services."""
    service_account_name: str | None = None
    """Service account of the model's jobs."""


class AIMModelStatus(_Object):
    """Observed state of a model, as upstream's v1alpha1 words it."""

    status: Literal["Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable"] = ome.crd_default(
        "Pending"
    )
    """Overall state of the model, from its templates."""
    conditions: MetaConditionList
    """Conditions of the model."""
    observed_generation: int | None = Field(default=None, json_schema_extra=INT64)
    """The metadata.generation this status was computed from."""
    resolved_runtime_config: LegacyResolvedReference | None = None
    """The runtime config in use."""
    image_metadata: ImageMetadata | None = None
    """The image's metadata, extracted or given."""
    source_type: Literal["Image", "Custom"] | None = None
    """Image (templates from the image's labels) or Custom (spec.modelSources)."""


class AIMClusterModel(_AIMResource):
    """A cluster-wide AIM model (upstream's v1alpha1 schema)."""

    kind: str | None = "AIMClusterModel"
    """Kind of the object."""
    spec: AIMModelSpec | None = None
    status: AIMModelStatus | None = None


class AIMModel(AIMClusterModel):
    """An AIM model of one namespace (upstream's v1alpha1 schema)."""

    kind: str | None = "AIMModel"
    """Kind of the object."""
