"""Generate the `ome.io` and `aim.eai.amd.com` CRDs in `deploy/crds/` from the pydantic models in `omectl.api.ome`
and `omectl.api.aim`, and the hub's `fleet.omectl.io` CRDs in `deploy/crds/hub/` from `omectl.api.fleet`.

`python -m omectl.api.crdgen [--out deploy/crds]` writes one YAML file per CRD, named `<group>_<plural>.yaml`;
`--check` writes nothing and exits 1 listing the files that are missing or differ from what the models produce now.
Only the generated files are compared, other files in the directory are never read or written. They include the
stand-ins for third-party CRDs (`deploy/crds/thirdparty/`), rendered from `omectl/api/templates/` (their
`x-omectl-k8s` nodes become the Kubernetes type's schema, e.g. a LeaderWorkerSet's pod templates; a template without
them is written as it is), so the package carries every CRD `omectl dev up` applies.

The models' JSON schema becomes a Kubernetes structural schema: `$ref`s are inlined, `title`s dropped, docstrings
unwrapped into one line per paragraph, `anyOf [X, null]` becomes X with `nullable: true`, `int | str` becomes
`x-kubernetes-int-or-string`, an open object (`additionalProperties: true`) becomes
`x-kubernetes-preserve-unknown-fields` (a node with that mark alone and no type holds any JSON value), an `allOf` of
value validations (upstream's doubled enums) is kept as it is, and defaults are dropped unless the field is marked
with `crd_default` (so the API server never invents a value the merge would take as set). A kind served as
upstream serves it (`CRDDefinition.nullable=False`) allows null nowhere, as upstream's CRD.
"""

from __future__ import annotations

import argparse
import copy
import functools
import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel

from omectl import k8s_openapi
from omectl.api import aim, aim_model_v1alpha1, aim_service_v1alpha1, aim_shared_v1alpha1, fleet, ome

# JSON-schema keys a CRD's JSONSchemaProps accepts and that we pass through unchanged.
_PLAIN_KEYS: Final = frozenset(
    (
        "type",
        "format",
        "description",
        "required",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "pattern",
        "multipleOf",
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    )
)
_NULL: Final = {"type": "null"}


class SchemaConversionError(ValueError):
    """The JSON schema uses a construct that has no structural-schema equivalent."""


def _schema_for(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True, mode="validation")


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as a Kubernetes structural `openAPIV3Schema` (a fresh copy)."""
    return copy.deepcopy(_structural_schema(model))


@functools.cache
def _structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = _schema_for(model)
    defs: dict[str, Any] = raw.pop("$defs", {})
    return _convert(raw, defs, ())


def _resolve(
    node: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Inline one level of `$ref` (or a single-item `allOf`), the outer keys winning over the referenced ones."""
    outer = dict(node)
    target: dict[str, Any] | None = None
    if "$ref" in outer:
        ref = outer.pop("$ref")
        target = {"$ref": ref}
    elif "allOf" in outer and len(outer["allOf"]) == 1:
        target = outer.pop("allOf")[0]
    if target is None:
        return outer, seen
    if "$ref" in target:
        ref = target["$ref"]
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise SchemaConversionError(f"recursive schema through {name}: structural schemas cannot recurse")
        if name not in defs:
            raise SchemaConversionError(f"unresolved reference {ref}")
        inner, seen = _resolve(defs[name], defs, (*seen, name))
    else:
        inner, seen = _resolve(target, defs, seen)
    return {**inner, **outer}, seen


def _unwrap(text: str) -> str:
    """A docstring's text with its line breaks inside paragraphs turned into spaces (paragraphs stay apart)."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in text.split("\n\n"))


def _convert(node: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    node, seen = _resolve(node, defs, seen)
    out: dict[str, Any] = {}

    any_of = node.pop("anyOf", None)
    if any_of is not None:
        choices = [c for c in any_of if c != _NULL]
        if len(choices) < len(any_of):
            out["nullable"] = True
        if len(choices) == 1:
            inner, seen = _resolve(choices[0], defs, seen)
            node = {**inner, **node}
            if "anyOf" in node:
                return {**_convert(node, defs, seen), **out}
        elif sorted(_resolve(c, defs, seen)[0].get("type", "") for c in choices) == ["integer", "string"]:
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            out["x-kubernetes-int-or-string"] = True
        else:
            raise SchemaConversionError(f"unsupported anyOf {any_of!r}")

    mirrored = node.pop(ome.K8S_MARK, None)
    if mirrored is not None:
        return _mirror(mirrored, node, out, defs, seen)

    keep_default = node.pop(ome.CRD_DEFAULT_MARK, False)
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key == "default":
            if keep_default:
                out["default"] = value
        elif key == "description":
            out["description"] = _unwrap(value)
        elif key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out["properties"] = {name: _convert(prop, defs, seen) for name, prop in value.items()}
        elif key == "items":
            out["items"] = _convert(value, defs, seen)
        elif key == "allOf":
            out["allOf"] = [_value_validation(item) for item in value]
        elif key == "additionalProperties":
            if value is True:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict):
                out["additionalProperties"] = _convert(value, defs, seen)
            # `false` (extra="forbid") is what pruning does anyway
        elif key in _PLAIN_KEYS:
            out[key] = copy.deepcopy(value)
        else:
            raise SchemaConversionError(f"unsupported schema key {key!r}")

    if "properties" in out and "additionalProperties" in out:
        raise SchemaConversionError("properties and additionalProperties are mutually exclusive in a CRD")
    if "type" not in out and "x-kubernetes-int-or-string" not in out:
        if "properties" in out or "additionalProperties" in out:
            out["type"] = "object"
        elif not out.get("x-kubernetes-preserve-unknown-fields"):  # that alone: any JSON value, kept as written
            raise SchemaConversionError(f"schema without a type: {node!r}")
    if out.get("nullable") is not True:
        out.pop("nullable", None)
    return out


# What a structural schema allows under `allOf`: value validations only (no type, properties or defaults).
_VALUE_VALIDATIONS: Final = frozenset(
    ("enum", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "multipleOf")
)


def _value_validation(node: dict[str, Any]) -> dict[str, Any]:
    if not node.keys() <= _VALUE_VALIDATIONS:
        raise SchemaConversionError(f"allOf may hold value validations only, not {sorted(node)}")
    return copy.deepcopy(node)


def _mirror(
    mirrored: str | list[str], node: dict[str, Any], out: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]
) -> dict[str, Any]:
    """A node marked as a Kubernetes type: that type's schema, derived from the Kubernetes OpenAPI definitions.

    A model marked as a whole (`k8s_model`) adds its own fields to the type's and decides which are required; the
    descriptions of the fields it shares with the type are its own (`kubectl explain` shows them).
    """
    if isinstance(mirrored, str):
        derived = k8s_openapi.structural(mirrored)
    else:
        derived = k8s_openapi.structural_property(*mirrored)
    if "description" in node:
        derived["description"] = _unwrap(node["description"])
    if "properties" in node:
        ours = _convert({k: v for k, v in node.items() if k != "additionalProperties"}, defs, seen)
        properties = derived.setdefault("properties", {})
        for name, prop in ours["properties"].items():
            if name not in properties:
                properties[name] = prop
            elif "description" in prop:
                properties[name]["description"] = prop["description"]
        derived.pop("required", None)
        if ours.get("required"):
            derived["required"] = ours["required"]
    return {**derived, **out}


# ---------------------------------------------------------------------------------------------------------
# CRD metadata


def _column(name: str, type_: str, json_path: str, *, description: str = "", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": json_path}
    if description:
        column["description"] = description
    if priority:
        column["priority"] = priority
    return column


_AGE: Final = _column("Age", "date", ".metadata.creationTimestamp")
_FORMATS: Final = ".spec.supportedModelFormats[*]"
# Upstream OME's columns first, in its order, then ours; Age last.
_RUNTIME_COLUMNS: Final = (
    _column("Disabled", "boolean", ".spec.disabled"),
    _column("ModelFormat", "string", f"{_FORMATS}.modelFormat.name"),
    _column("ModelFramework", "string", f"{_FORMATS}.modelFramework.name"),
    _column("ModelFrameworkVersion", "string", f"{_FORMATS}.modelFramework.version"),
    _column("ModelArchitecture", "string", f"{_FORMATS}.modelArchitecture"),
    _column("ModelSizeMin", "string", ".spec.modelSizeRange.min"),
    _column("ModelSizeMax", "string", ".spec.modelSizeRange.max"),
    _column("Images", "string", ".spec.containers[*].image"),
    _column("Chain", "string", ".status.inheritanceChain", description="Inheritance chain, root first"),
    _column("Ready", "string", '.status.conditions[?(@.type=="InheritanceReady")].status'),
    _AGE,
)
_ENGINE_TRAFFIC: Final = ".status.components.engine.traffic"
_ISVC_COLUMNS: Final = (
    _column("URL", "string", ".status.url"),
    _column("Ready", "string", ".status.conditions[?(@.type=='Ready')].status"),
    _column("BaseModel", "string", ".spec.model.name"),
    _column("Runtime", "string", ".spec.runtime.name"),
    _column("Prev", "integer", f"{_ENGINE_TRAFFIC}[?(@.tag=='prev')].percent"),
    _column("Latest", "integer", f"{_ENGINE_TRAFFIC}[?(@.latestRevision==true)].percent"),
    _column("PrevRolledoutRevision", "string", f"{_ENGINE_TRAFFIC}[?(@.tag=='prev')].revisionName"),
    _column("LatestReadyRevision", "string", f"{_ENGINE_TRAFFIC}[?(@.latestRevision==true)].revisionName"),
    _column("RuntimeRevision", "string", ".status.runtime.revision", description="Runtime revision rendered from"),
    _AGE,
)
_MODEL_COLUMNS: Final = (
    _column("Disabled", "boolean", ".spec.disabled"),
    _column("Version", "string", ".spec.version"),
    _column("Vendor", "string", ".spec.vendor"),
    _column("Framework", "string", ".spec.modelFramework.name"),
    _column("FrameworkVersion", "string", ".spec.modelFramework.version"),
    _column("ModelFormat", "string", ".spec.modelFormat.name"),
    _column("Architecture", "string", ".spec.modelArchitecture"),
    _column("Capabilities", "string", ".spec.modelCapabilities[*]"),
    _column("Size", "string", ".spec.modelParameterSize"),
    _column("CompartmentID", "string", ".spec.compartmentID"),
    _column("Ready", "string", ".status.state"),
    _AGE,
)


_AIM_SERVICE_COLUMNS: Final = (
    _column("Status", "string", ".status.status"),
    _column("Model", "string", ".spec.model.name"),
    _column("Path", "string", ".status.routing.path", description="HTTP path prefix of the service's HTTPRoute"),
    _AGE,
)
_AIM_CATEGORIES: Final = ("aim", "all")
_AIM_STATUS: Final = _column("Status", "string", ".status.status")
_AIM_MODEL_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Image", "string", ".spec.image"),
    _column("Profiles", "integer", ".status.profileCount", description="Profiles discovery found"),
    _AGE,
)
_AIM_PROFILE_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Model", "string", ".spec.modelName"),
    _column("GPU", "string", ".spec.gpu"),
    _column("GPUs", "integer", ".spec.gpuCount"),
    _column("Precision", "string", ".spec.precision"),
    _column("Metric", "string", ".spec.metric"),
    _AGE,
)
_AIM_PROFILE_SET_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Model", "string", ".spec.modelName"),
    _column("Profiles", "integer", ".status.profileCount"),
    _AGE,
)
_AIM_PROFILE_CACHE_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Profile", "string", ".spec.profileName"),
    _column("Scope", "string", ".spec.profileScope", priority=1),
    _AGE,
)
_AIM_ARTIFACT_COLUMNS: Final = (
    _AIM_STATUS,
    _column("ModelID", "string", ".spec.modelId"),
    _column("Size", "string", ".status.allocatedSize", description="Size of the PVC"),
    _column("PVC", "string", ".status.persistentVolumeClaim"),
    _column("Protocol", "string", ".status.download.protocol"),
    _column("Source", "string", ".spec.sourceUri", priority=1),
    _AGE,
)
_AIM_SOURCE_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Models", "integer", ".status.modelCount"),
    _AGE,
)


_AIM_TEMPLATE_CACHE_COLUMNS: Final = (
    _column("Template", "string", ".spec.templateName"),
    _column("Mode", "string", ".spec.mode"),
    _AIM_STATUS,
    _column("Kind", "string", ".status.resolvedTemplateKind"),
    _AGE,
)


_AIM_V1ALPHA1_ARTIFACT_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Mode", "string", ".status.mode"),
    _column("Model Size", "string", ".status.displaySize"),
    _column("Progress", "string", ".status.progress.displayPercentage"),
    _column("Protocol", "string", ".status.download.protocol"),
    _column("Attempt", "string", ".status.download.attempt"),
    _AGE,
)
_AIM_V1ALPHA1_SERVICE_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Model", "string", ".status.resolvedModel.name"),
    _column("Template", "string", ".status.resolvedTemplate.name"),
    _column("Replicas", "string", ".status.runtime.replicas"),
    _AGE,
)
_AIM_V1ALPHA1_SOURCE_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Models", "integer", ".status.discoveredModels"),
    _column("LastSync", "date", ".status.lastSyncTime"),
    _AGE,
)
_AIM_V1ALPHA1_MODEL_COLUMNS: Final = (
    _AIM_STATUS,
    _column("Source", "string", ".status.sourceType"),
    _column("Image", "string", ".spec.image"),
    _column("Model", "string", ".status.imageMetadata.model.canonicalName"),
    _AGE,
)


@dataclass(frozen=True, eq=False)
class ConvertedVersion:
    """A version served with its own schema and printer columns, converted to and from the storage version by
    omectl's conversion webhook (docs/aim-versions.md)."""

    name: str
    model: type[ome.Resource]
    printer_columns: tuple[dict[str, Any], ...]


CONVERSION_PLACEHOLDER_URL: Final = "https://omectl-webhook.invalid/convert"
"""The conversion webhook a generated CRD names until the owner of its cluster puts its own URL and caBundle there
(`omectl.webhook.conversion_keeper`): `.invalid` never resolves, so until then kube-apiserver answers 500 for the
versions it must convert, and serves the storage version as usual."""

_UPSTREAM_V1ALPHA1: Final[dict[type[ome.Resource], ConvertedVersion]] = {
    aim.AIMArtifact: ConvertedVersion(aim.V1ALPHA1, aim_shared_v1alpha1.AIMArtifact, _AIM_V1ALPHA1_ARTIFACT_COLUMNS),
    aim.AIMClusterModelSource: ConvertedVersion(
        aim.V1ALPHA1, aim_shared_v1alpha1.AIMClusterModelSource, _AIM_V1ALPHA1_SOURCE_COLUMNS
    ),
    aim.AIMModel: ConvertedVersion(aim.V1ALPHA1, aim_model_v1alpha1.AIMModel, _AIM_V1ALPHA1_MODEL_COLUMNS),
    aim.AIMClusterModel: ConvertedVersion(
        aim.V1ALPHA1, aim_model_v1alpha1.AIMClusterModel, _AIM_V1ALPHA1_MODEL_COLUMNS
    ),
}
"""The v1alpha2 kinds also served at upstream's v1alpha1, converted by the webhook."""

_AIM_SERVICE_TEMPLATE_COLUMNS: Final = (
    _column("Model", "string", ".spec.modelName"),
    _AIM_STATUS,
    _column("Hardware", "string", ".status.hardwareSummary"),
    _column("Metric", "string", ".status.profile.metadata.metric"),
    _column("Precision", "string", ".status.profile.metadata.precision"),
)
"""Upstream's columns, in its order (it has no Age column)."""


_AIM_V1ALPHA2_KINDS: Final[
    tuple[tuple[type[ome.Resource], Literal["Namespaced", "Cluster"], tuple[dict[str, Any], ...], tuple[str, ...]], ...]
] = (
    (aim.AIMModel, "Namespaced", _AIM_MODEL_COLUMNS, ("aimmdl",)),
    (aim.AIMClusterModel, "Cluster", _AIM_MODEL_COLUMNS, ("aimclmdl",)),
    (aim.AIMProfile, "Namespaced", _AIM_PROFILE_COLUMNS, ()),
    (aim.AIMClusterProfile, "Cluster", _AIM_PROFILE_COLUMNS, ()),
    (aim.AIMProfileSet, "Namespaced", _AIM_PROFILE_SET_COLUMNS, ()),
    (aim.AIMProfileCache, "Namespaced", _AIM_PROFILE_CACHE_COLUMNS, ()),
    (aim.AIMArtifact, "Namespaced", _AIM_ARTIFACT_COLUMNS, ("aimart",)),
    (aim.AIMClusterModelSource, "Cluster", _AIM_SOURCE_COLUMNS, ("aimclsrc",)),
)
"""The v1alpha2 consumers: model, scope, printer columns, short names (upstream's where it has the kind)."""


@dataclass(frozen=True, eq=False)
class CRDDefinition:
    """What a CRD needs beyond its schema: names, scope, printer columns, group and served versions.

    Every version of `versions` has the same schema (the API server converts between them with the `None`
    strategy); the first of them is the storage version. A version of `converted` has its own schema and is converted
    by omectl's webhook (`conversion.strategy: Webhook`).
    """

    model: type[ome.Resource]
    kind: str
    plural: str
    scope: Literal["Namespaced", "Cluster"]
    printer_columns: tuple[dict[str, Any], ...]
    short_names: tuple[str, ...] = ()
    group: str = ome.GROUP
    versions: tuple[str, ...] = (ome.VERSION,)
    categories: tuple[str, ...] = ()
    converted: tuple[ConvertedVersion, ...] = ()

    @property
    def served_versions(self) -> tuple[str, ...]:
        """Every version served, the storage version first."""
        return (*self.versions, *(v.name for v in self.converted))

    nullable: bool = True
    """Whether an optional field may hold null (omectl's own kinds). False for a kind served as upstream serves it,
    whose CRD allows null nowhere: the API server drops a null there, and so must ours to store what it stores."""

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def file_name(self) -> str:
        return f"{self.group}_{self.plural}.yaml"


CRDS: Final = (
    CRDDefinition(ome.ServingRuntime, "ServingRuntime", "servingruntimes", "Namespaced", _RUNTIME_COLUMNS),
    CRDDefinition(
        ome.ClusterServingRuntime, "ClusterServingRuntime", "clusterservingruntimes", "Cluster", _RUNTIME_COLUMNS
    ),
    CRDDefinition(
        ome.InferenceService, "InferenceService", "inferenceservices", "Namespaced", _ISVC_COLUMNS, ("isvc",)
    ),
    CRDDefinition(ome.BaseModel, "BaseModel", "basemodels", "Namespaced", _MODEL_COLUMNS),
    CRDDefinition(ome.ClusterBaseModel, "ClusterBaseModel", "clusterbasemodels", "Cluster", _MODEL_COLUMNS),
    CRDDefinition(
        aim.AIMClusterRuntimeConfig,
        "AIMClusterRuntimeConfig",
        "aimclusterruntimeconfigs",
        "Cluster",
        (_AGE,),
        ("aimclrc",),
        group=aim.GROUP,
        versions=aim.CONFIG_VERSIONS,
        categories=_AIM_CATEGORIES,
    ),
    CRDDefinition(
        aim.AIMRuntimeConfig,
        "AIMRuntimeConfig",
        "aimruntimeconfigs",
        "Namespaced",
        (_AGE,),
        ("aimrc",),
        group=aim.GROUP,
        versions=aim.CONFIG_VERSIONS,
        categories=_AIM_CATEGORIES,
    ),
    CRDDefinition(
        aim.AIMService,
        "AIMService",
        "aimservices",
        "Namespaced",
        _AIM_SERVICE_COLUMNS,
        ("aimsvc",),
        group=aim.GROUP,
        versions=aim.SERVICE_VERSIONS,
        categories=_AIM_CATEGORIES,
        converted=(ConvertedVersion(aim.V1ALPHA1, aim_service_v1alpha1.AIMService, _AIM_V1ALPHA1_SERVICE_COLUMNS),),
    ),
    *(
        CRDDefinition(
            model,
            model.__name__,
            f"{model.__name__.lower()}s",
            scope,
            columns,
            short,
            group=aim.GROUP,
            versions=aim.MODEL_VERSIONS,
            categories=_AIM_CATEGORIES,
            converted=tuple(v for m, v in _UPSTREAM_V1ALPHA1.items() if m is model),
        )
        for model, scope, columns, short in _AIM_V1ALPHA2_KINDS
    ),
    CRDDefinition(
        aim.AIMTemplateCache,
        "AIMTemplateCache",
        "aimtemplatecaches",
        "Namespaced",
        _AIM_TEMPLATE_CACHE_COLUMNS,
        ("aimtc",),
        group=aim.GROUP,
        versions=aim.TEMPLATE_CACHE_VERSIONS,
        categories=_AIM_CATEGORIES,
        nullable=False,
    ),
    CRDDefinition(
        aim.AIMServiceTemplate,
        "AIMServiceTemplate",
        "aimservicetemplates",
        "Namespaced",
        _AIM_SERVICE_TEMPLATE_COLUMNS,
        ("aimtpl",),
        group=aim.GROUP,
        versions=aim.SERVICE_TEMPLATE_VERSIONS,
        categories=_AIM_CATEGORIES,
        nullable=False,
    ),
    CRDDefinition(
        aim.AIMClusterServiceTemplate,
        "AIMClusterServiceTemplate",
        "aimclusterservicetemplates",
        "Cluster",
        _AIM_SERVICE_TEMPLATE_COLUMNS,
        ("aimcltpl",),
        group=aim.GROUP,
        versions=aim.SERVICE_TEMPLATE_VERSIONS,
        categories=_AIM_CATEGORIES,
        nullable=False,
    ),
)


_FLEET_RUNTIME_COLUMNS: Final = (
    _column("Kind", "string", ".spec.template.kind", description="Kind of the runtime applied"),
    _column("Runtime", "string", ".spec.template.metadata.name", description="Name of the runtime applied"),
    _column("Revision", "integer", ".status.revision"),
    _column("Placed", "integer", ".status.placed", description="Clusters the placement selects"),
    _column("Applied", "integer", ".status.applied", description="Clusters at the current revision"),
    _column("Phase", "string", ".status.phase"),
    _AGE,
)

HUB_CRDS: Final = (
    CRDDefinition(
        fleet.FleetRuntime,
        fleet.KIND,
        "fleetruntimes",
        "Cluster",
        _FLEET_RUNTIME_COLUMNS,
        ("fr",),
        group=fleet.GROUP,
        versions=(fleet.VERSION,),
        categories=("omectl",),
    ),
)
"""The CRDs of the hub cluster (installed there, not in members): `deploy/crds/hub/`."""


def _overrides_need_not_be_complete(schema: dict[str, Any]) -> None:
    """An InferenceService's components are laid over its runtime's: a runner without a name, a probe without a
    port take them from the runtime. So, as upstream OME's InferenceService CRD, the objects two levels below
    `spec` (spec.engine.runner, ...) and the probes' actions there require nothing."""
    for component in schema["properties"]["spec"]["properties"].values():
        fields = component.get("properties", {})
        for name, field in fields.items():
            field.pop("required", None)
            probe_owners = [field] if name != "containers" else [field.get("items", {})]
            for owner in probe_owners:
                for probe in ("livenessProbe", "readinessProbe"):
                    actions = owner.get("properties", {}).get(probe, {}).get("properties", {})
                    for action in ("httpGet",) if owner is not field else ("httpGet", "tcpSocket"):
                        actions.get(action, {}).pop("required", None)


def _allow_no_null(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("nullable", None)
        for value in node.values():
            _allow_no_null(value)
    elif isinstance(node, list):
        for value in node:
            _allow_no_null(value)


def build_crd(definition: CRDDefinition) -> dict[str, Any]:
    """The CustomResourceDefinition object for one kind."""
    schema = structural_schema(definition.model)
    if definition.model is ome.InferenceService:
        _overrides_need_not_be_complete(schema)
    if not definition.nullable:
        _allow_no_null(schema)
    names: dict[str, Any] = {
        "kind": definition.kind,
        "listKind": f"{definition.kind}List",
        "plural": definition.plural,
        "singular": definition.kind.lower(),
    }
    if definition.short_names:
        names["shortNames"] = list(definition.short_names)
    if definition.categories:
        names["categories"] = list(definition.categories)
    versions = [
        _version(version, schema, definition.printer_columns, storage=index == 0)
        for index, version in enumerate(definition.versions)
    ]
    for converted in definition.converted:
        upstream = structural_schema(converted.model)
        _allow_no_null(upstream)  # upstream's schema, whose CRDs allow null nowhere
        versions.append(_version(converted.name, upstream, converted.printer_columns, storage=False))
    spec: dict[str, Any] = {
        "group": definition.group,
        "names": names,
        "scope": definition.scope,
        "versions": versions,
    }
    if definition.converted:
        spec["conversion"] = conversion_webhook(CONVERSION_PLACEHOLDER_URL)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": definition.name},
        "spec": spec,
    }


def conversion_webhook(url: str, ca_bundle: str | None = None) -> dict[str, Any]:
    """A CRD's `spec.conversion` through omectl's webhook at `url` (ConversionReview v1)."""
    client_config: dict[str, Any] = {"url": url}
    if ca_bundle:
        client_config["caBundle"] = ca_bundle
    return {"strategy": "Webhook", "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]}}


def _version(
    name: str, schema: dict[str, Any], columns: tuple[dict[str, Any], ...], *, storage: bool
) -> dict[str, Any]:
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [dict(c) for c in columns],
    }


def converted_crds() -> tuple[CRDDefinition, ...]:
    """The CRDs converted by omectl's webhook (served at versions with schemas of their own)."""
    return tuple(d for d in CRDS if d.converted)


_SafeDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when present: same text, 3x faster


class _NoAliasDumper(_SafeDumper):  # type: ignore[misc]
    """Writes repeated values out in full (no `&id001` anchors) so each CRD file reads on its own."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class _Flow(dict[str, Any]):
    """A mapping written on one line (`{type: string, ...}`)."""


_NoAliasDumper.add_representer(
    _Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True)
)
# Below this depth mappings are written in flow style: the runtime and InferenceService CRDs nest the Kubernetes
# pod types a dozen levels deep, and in block style their indentation alone takes them past 1.5 MiB.
_FLOW_DEPTH: Final = 12


def _dump(document: Any, *, sort_keys: bool) -> str:
    def shaped(node: Any, depth: int) -> Any:
        if isinstance(node, dict):
            items = sorted(node.items()) if sort_keys else node.items()
            mapping = {key: shaped(value, depth + 1) for key, value in items}
            return _Flow(mapping) if depth >= _FLOW_DEPTH else mapping
        if isinstance(node, list):
            return [shaped(value, depth + 1) for value in node]
        return node

    text: str = yaml.dump(
        shaped(document, 0), Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False, width=120
    )
    return text


@functools.cache
def render_yaml(definition: CRDDefinition) -> str:
    """The committed file's text: a generated-file header, then the CRD with sorted keys."""
    model = definition.model
    header = (
        "# Generated by `python -m omectl.api.crdgen` from "
        f"{model.__module__}.{model.__qualname__}; do not edit by hand.\n"
    )
    body = _dump(build_crd(definition), sort_keys=True)
    return header + "---\n" + body


TEMPLATES: Final = Path(__file__).with_name("templates")


def _expand_k8s_marks(node: Any) -> Any:
    if isinstance(node, dict):
        if ome.K8S_MARK in node:
            rest = {k: v for k, v in node.items() if k != ome.K8S_MARK}
            return {**k8s_openapi.structural(node[ome.K8S_MARK]), **rest}
        return {key: _expand_k8s_marks(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_expand_k8s_marks(value) for value in node]
    return node


@functools.cache
def render_template(path: Path) -> str:
    """A stand-in CRD from its template: the template's leading comments, then the CRD with marks expanded (a
    template without marks is written as it is, its comments kept)."""
    text = path.read_text(encoding="utf-8")
    header = f"# Generated by `python -m omectl.api.crdgen` from omectl/api/templates/{path.name}; do not edit.\n"
    template = yaml.safe_load(text)
    crd = _expand_k8s_marks(template)
    if crd == template:
        return header + text
    comments = "".join(line + "\n" for line in itertools.takewhile(lambda row: row.startswith("#"), text.splitlines()))
    body = _dump(crd, sort_keys=False)
    return header + comments + "---\n" + body


def generated_files() -> dict[str, str]:
    """File name → content for every CRD of omectl's own."""
    return {d.file_name: render_yaml(d) for d in CRDS}


def hub_files() -> dict[str, str]:
    """File name → content for every CRD of the hub (they go to `hub/`)."""
    return {d.file_name: render_yaml(d) for d in HUB_CRDS}


def rendered_stand_ins() -> dict[str, str]:
    """File name → content for every stand-in rendered from a template (they go to `thirdparty/`)."""
    return {p.name: render_template(p) for p in sorted(TEMPLATES.glob("*.yaml"))}


def _written_files() -> dict[str, str]:
    """Path relative to the CRD directory → content, for everything the generator writes."""
    return (
        generated_files()
        | {f"thirdparty/{name}": text for name, text in rendered_stand_ins().items()}
        | {f"hub/{name}": text for name, text in hub_files().items()}
    )


def _stale(out_dir: Path, texts: dict[str, str]) -> list[Path]:
    stale: list[Path] = []
    for file_name, text in texts.items():
        path = out_dir / file_name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def stale_files(out_dir: Path) -> list[Path]:
    """The CRD files under `out_dir` that are missing or differ from what the models produce."""
    return _stale(out_dir, _written_files())


def write_files(out_dir: Path) -> list[Path]:
    """Write every CRD file under `out_dir`; returns the files whose content changed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = _written_files()
    changed = _stale(out_dir, texts)
    for path in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[path.relative_to(out_dir).as_posix()], encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omectl.api.crdgen", description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("deploy/crds"), help="directory of the CRD files")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.out)
        for path in stale:
            print(f"stale: {path} (run python -m omectl.api.crdgen --out {args.out})", file=sys.stderr)
        return 1 if stale else 0
    for path in write_files(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
