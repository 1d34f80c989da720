"""Typed model of `fleet.omectl.io/v1alpha1` FleetRuntime: one runtime, written once in the hub, applied to the
member clusters a placement selects (issue 16; docs/fleet-rollouts.md).

A FleetRuntime is cluster-scoped and lives in the **hub**: the cluster `omectl run` reads its
registration Secrets from. Its `spec.template` is a ClusterServingRuntime or a ServingRuntime (then copied into
each of `spec.namespaces`); the CRD keeps the template open (`x-kubernetes-preserve-unknown-fields`), since a
runtime's own schema is the member's CRD, and the controller validates it against `omectl.api.ome` before it
applies anything (`template_problem`).

The model is the one source of the CRD YAML in `deploy/crds/hub/` (`omectl.api.crdgen`), with the conventions of
`omectl.api.ome`: camelCase on the wire, optional fields default to `None`, schema defaults only where marked.

What the controller acts on: `template`, `namespaces`, `placement`, `driftPolicy`, and of `rollout` the waves with
their gates, `maxUnavailableClusters`, `paused` and `autoRollback`; and the request annotations promote, abort and
rollback (`omectl.core.fleet_runtimes.REQUEST_ANNOTATIONS`, docs/fleet-rollouts.md says why annotations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import pydantic
from pydantic import ConfigDict, Field, WithJsonSchema

from omectl.api import ome
from omectl.api.ome import ConditionList, crd_default
from omectl.problems import validation_problems

GROUP: Final = "fleet.omectl.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "FleetRuntime"

TEMPLATE_KINDS: Final = ("ServingRuntime", "ClusterServingRuntime")

OpenTemplate = Annotated[
    dict[str, Any],
    WithJsonSchema(
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "description": (
                "The runtime to apply: apiVersion ome.io/v1beta1, kind ServingRuntime or ClusterServingRuntime, "
                "metadata (name; labels and annotations are copied) and spec. Validated by the controller."
            ),
        }
    ),
]


class _Object(pydantic.BaseModel):
    """A typed part of a FleetRuntime: camelCase on the wire, unknown fields dropped (the CRD prunes them too)."""

    model_config = ConfigDict(**ome.Resource.model_config)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, only the fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class LabelSelectorRequirement(_Object):
    """One requirement of a label selector (metav1.LabelSelectorRequirement)."""

    key: str
    """The label key the requirement applies to."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    """How the key's value is compared with `values`."""
    values: list[str] | None = None
    """Values for In and NotIn; must be empty for Exists and DoesNotExist."""


class ClusterSelector(_Object):
    """A label selector over the labels cluster registrations carry (`omectl.io/label.<key>` annotations of the
    registration Secrets, `labels:` of registration files). An empty selector selects every cluster."""

    match_labels: dict[str, str] | None = None
    """Labels a cluster must have, with these values."""
    match_expressions: list[LabelSelectorRequirement] | None = None
    """Requirements a cluster's labels must all meet."""


class Placement(_Object):
    """Which registered member clusters get the runtime: those named in `clusters`, and those `clusterSelector`
    selects (either is enough). With neither, no cluster is placed."""

    cluster_selector: ClusterSelector | None = None
    """Clusters whose registration labels match."""
    clusters: list[str] | None = None
    """Clusters by registered name."""


class Wave(_Object):
    """One wave of a rollout: of the placed clusters no earlier wave took, those `clusters` names or
    `clusterSelector` selects, or `percent` of them."""

    name: str
    """Name of the wave, shown in status."""
    cluster_selector: ClusterSelector | None = None
    """Placed clusters of this wave, by label."""
    clusters: list[str] | None = None
    """Placed clusters of this wave, by name."""
    percent: int | None = Field(default=None, ge=1, le=100)
    """Instead of a selector: this share of the placed clusters not in an earlier wave (rounded up)."""
    soak_seconds: int | None = Field(default=None, ge=0)
    """How long every engine the change reaches in the wave must stay Ready at the new revision before the next
    wave starts (default 0)."""
    progress_deadline_seconds: int | None = Field(default=None, ge=1)
    """How long the wave may take to pass its gate before it fails (default 600)."""


class Rollout(_Object):
    """How a new revision reaches the placed clusters: wave by wave, each gated by its engines' health. Without
    waves every placed cluster is applied at once."""

    waves: list[Wave] | None = Field(default=None, json_schema_extra=ome.list_map("name"))
    """Ordered waves, each name once; clusters in no wave are applied after the last one (a wave named
    `remaining`, or `remaining-<n>` when a wave of the list has that name)."""
    max_unavailable_clusters: ome.IntOrString | None = None
    """How many clusters of a wave may fail its gate while the wave still passes (a number, or a percentage of the
    wave's clusters rounded down; default 0): they keep being applied, and do not hold the next wave."""
    paused: bool | None = None
    """Hold the rollout at its current wave."""
    auto_rollback: bool | None = None
    """Re-apply the previous revision when a wave's gate fails."""


class FleetRuntimeSpec(_Object):
    """A runtime written once and where it goes."""

    template: OpenTemplate
    namespaces: list[str] | None = None
    """For a ServingRuntime template: the namespaces of each placed cluster to copy it into (required there; a
    ClusterServingRuntime template takes none)."""
    placement: Placement | None = None
    """Which member clusters get the runtime."""
    drift_policy: Literal["Report", "Correct"] = crd_default("Report")
    """What to do when someone edits a member's copy: Report marks the cluster Drifted, Correct applies the
    template again."""
    rollout: Rollout | None = None
    """Waves, gates, pause and automatic rollback."""


class CopyStatus(_Object):
    """One copy in a cluster as the controller left it."""

    namespace: str | None = None
    """The copy's namespace (unset for a ClusterServingRuntime)."""
    generation: int | None = None
    """The copy's metadata.generation after the controller applied it (an edit bumps it: drift)."""


class EngineCounts(_Object):
    """The InferenceServices a change reaches (the runtime chain leads to them), and how far they are."""

    reached: int | None = None
    """InferenceServices the change reaches."""
    updated: int | None = None
    """Of them, those whose status records the new runtime revision."""
    ready: int | None = None
    """Of them, those also Ready."""
    pinned: int | None = None
    """Pinned ones (`spec.runtime.autoSync: false` or a `spec.runtime.revision`): never moved, not gated on."""


RolloutPhase = Literal["Pending", "Progressing", "Soaking", "Succeeded", "Failed", "RolledBack", "Paused", "Aborted"]


class ClusterStatus(_Object):
    """The runtime's state in one placed cluster."""

    name: str
    """The cluster's registered name."""
    phase: Literal["Pending", "Applied", "Conflict", "Drifted", "Failed"]
    """Pending: not applied yet (not reached, or not run by this controller); Applied: the copy is at `revision`;
    Conflict: a runtime of the same name exists there that this FleetRuntime did not make; Drifted: the copy was
    edited (driftPolicy Report); Failed: the apply was refused."""
    revision: int | None = None
    """The FleetRuntime revision of the copy there."""
    copies: list[CopyStatus] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    """The copies there (one per namespace for a ServingRuntime)."""
    message: str | None = None
    """Why the cluster is not Applied."""
    last_transition_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the phase last changed."""
    wave: str | None = None
    """With waves: the cluster's wave."""
    rollout_phase: RolloutPhase | None = None
    """With waves: the phase of the cluster's wave."""
    engines: EngineCounts | None = None
    """With waves, once the rollout has reached the cluster: its engines the change reaches."""


class WaveStatus(_Object):
    """One wave of the rollout."""

    name: str
    """The wave's name (`remaining` for the clusters no wave takes)."""
    phase: RolloutPhase
    """Pending: not reached yet; Progressing: applied, its gate not passed yet; Soaking: every engine Ready at the
    revision, for `soakSeconds`; Succeeded: passed; Failed: its deadline passed; RolledBack: given the stable
    revision again; Paused: held by `spec.rollout.paused`; Aborted: stopped by an abort request, its clusters
    keep the revision."""
    clusters: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    """The placed clusters of the wave."""
    revision: int | None = None
    """The revision its clusters were given."""
    engines: EngineCounts | None = None
    """Its clusters' engines the change reaches, together."""


class RolloutStatus(_Object):
    """Where the rollout of the current revision is (read again by a restarted controller)."""

    revision: int | None = None
    """The revision being rolled out."""
    hash: str | None = None
    """Its template hash."""
    stable_revision: int | None = None
    """The revision a rollback re-applies: what the last rollout that Succeeded left everywhere."""
    stable_hash: str | None = None
    """Its template hash."""
    wave: str | None = None
    """The current wave's name."""
    wave_index: int | None = None
    """The current wave's index (0 for the first)."""
    phase: RolloutPhase | None = None
    """The rollout's phase (the current wave's)."""
    wave_start_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the current wave started (or resumed): its progress deadline counts from here."""
    soak_start_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When its engines were all Ready at the revision: the soak counts from here."""
    message: str | None = None
    """What the rollout waits for, or why it stopped."""
    requests: dict[str, str] | None = None
    """The last promote, abort and rollback request acted on: kind -> the annotation's value (a request whose
    value is here is not acted on again)."""


class FleetRuntimeStatus(_Object):
    """What the controller did with the FleetRuntime."""

    observed_generation: int | None = None
    """The metadata.generation this status was computed from."""
    revision: int | None = None
    """The revision of the current template (a ControllerRevision in the controller's hub namespace)."""
    clusters: list[ClusterStatus] | None = Field(default=None, json_schema_extra=ome.list_map("name"))
    """One entry per placed cluster."""
    placed: int | None = None
    """How many clusters the placement selects."""
    applied: int | None = None
    """How many of them are Applied at `revision`."""
    phase: (
        Literal[
            "Pending",
            "Progressing",
            "Soaking",
            "Paused",
            "Succeeded",
            "Failed",
            "RolledBack",
            "Aborted",
            "Degraded",
            "Invalid",
        ]
        | None
    ) = None
    """Succeeded: every placed cluster Applied; Progressing: some still Pending; Degraded: some in Conflict,
    Drifted or Failed; Invalid: the template cannot be applied; Pending: no cluster placed. With waves the
    rollout's phase: Progressing, Soaking, Paused, Succeeded (Degraded when a cluster is not as it should be),
    Failed, RolledBack or Aborted."""
    rollout: RolloutStatus | None = None
    """With waves: the rollout of the current revision."""
    waves: list[WaveStatus] | None = Field(default=None, json_schema_extra=ome.list_map("name"))
    """With waves: each wave, in order."""
    conditions: ConditionList
    """Ready: every placed cluster has the current revision. Progressing (with waves): True while a rollout goes
    on (WaveProgressing, WaveSoaking, RolloutPaused), False once it stopped (RolloutSucceeded,
    ProgressDeadlineExceeded, RolledBack, RolloutAborted)."""


class FleetRuntime(ome.Resource):
    """A ServingRuntime or ClusterServingRuntime applied by omectl to the member clusters its placement selects."""

    api_version: str | None = API_VERSION
    """APIVersion of the object's schema."""
    kind: str | None = KIND
    """Kind of the object."""
    spec: FleetRuntimeSpec | None = None
    status: FleetRuntimeStatus | None = None


def template_problem(spec: dict[str, Any]) -> str | None:
    """Why a FleetRuntime spec's template cannot be applied (one line), or None."""
    template = spec.get("template")
    if not isinstance(template, dict) or not template:
        return "spec.template is missing"
    kind = template.get("kind")
    if kind not in TEMPLATE_KINDS:
        return f"spec.template.kind must be ServingRuntime or ClusterServingRuntime, not {kind!r}"
    if template.get("apiVersion") != ome.API_VERSION:
        return f"spec.template.apiVersion must be {ome.API_VERSION}, not {template.get('apiVersion')!r}"
    metadata = template.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return "spec.template.metadata.name is missing"
    if metadata.get("namespace"):
        return "spec.template.metadata.namespace must be unset: spec.namespaces says where a ServingRuntime goes"
    namespaces = spec.get("namespaces") or []
    if kind == "ServingRuntime" and not namespaces:
        return "spec.namespaces is required for a ServingRuntime template"
    if kind == "ClusterServingRuntime" and namespaces:
        return "spec.namespaces must be empty for a ClusterServingRuntime template"
    model = ome.ServingRuntime if kind == "ServingRuntime" else ome.ClusterServingRuntime
    try:
        model.model_validate(template)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"spec.template.{where}: {first['msg']}"
    return None


def document_problem(document: Mapping[str, Any]) -> str | None:
    """Why a FleetRuntime document (read from a file, in the hubless setup) is not one the hub's API server would
    store: its CRD's schema (types, enums, bounds, required fields), as one line; None when it is. The template is
    checked later, by `template_problem`, as in a hub."""
    try:
        FleetRuntime.model_validate({key: value for key, value in document.items() if key != "status"})
    except pydantic.ValidationError as exc:
        return validation_problems(exc.errors())
    return None
