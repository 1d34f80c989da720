"""Decide which model an InferenceService serves and which runtime serves it: model resolution, the matcher
that checks a runtime spec against a model, automatic selection, and the error texts and events of both.

Where each spec comes from: a runtime the InferenceService names is checked and rendered
from its **merged** spec (the caller resolves the chain and passes the merge); automatic selection matches each
runtime's **own** spec, without inheritance. Disabled runtimes are never selected.

Matching follows upstream OME's `runtimeselector` (matcher, scorer, selector), with these choices:

- The model fields matched are format, framework, architecture, quantization and parameter size (no diffusion
  pipeline). `""`, `{}` and `null` count as unset everywhere, as they do in a merge.
- `ModelFormat.weight` has no schema default: an absent weight counts as 1; an explicit 0 falls back to upstream's
  config weights (10 for the format, 5 for the framework). An absent `operator` is `Equal`.
- A one-sided `modelSizeRange` leaves the missing bound unbounded (decision 7); the size tie-break sums the
  distances to the bounds that are set (a runtime without a range scores 0 there, as upstream).
- A runtime is auto-selected only through a format that has `autoSelect: true` and matches the model; upstream also
  scores formats that leave `autoSelect` unset once any format of the runtime sets it.
- Messages name the model, not its format (decision 9).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal, Protocol

from omectl.core.jsonish import as_mapping
from omectl.core.ome.inheritance import ResolutionContext, RuntimeLookup
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeKind, RuntimeRef

BASE_MODEL: Final = "BaseModel"
CLUSTER_BASE_MODEL: Final = "ClusterBaseModel"
ModelKind = Literal["BaseModel", "ClusterBaseModel"]

# Event reasons on an InferenceService.
MODEL_RECONCILE_ERROR: Final = "ModelReconcileError"
RUNTIME_VALIDATION_ERROR: Final = "RuntimeValidationError"
RUNTIME_PIN_ERROR: Final = "RuntimePinError"
RUNTIME_FETCH_ERROR: Final = "RuntimeFetchError"
RUNTIME_SELECTION_ERROR: Final = "RuntimeSelectionError"

# Failure reasons (upstream's FailureReason enum) for status conditions.
BASE_MODEL_NOT_FOUND: Final = "BaseModelNotFound"
BASE_MODEL_DISABLED: Final = "BaseModelDisabled"

ACCELERATOR_CLASS_ANNOTATION: Final = "ome.io/accelerator-class"

MODEL_REFERENCE_REQUIRED: Final = "model reference is required"
MODEL_FORMAT_REQUIRED: Final = "invalid model specification: modelFormat.name: model format name is required"
RUNTIME_DISABLED_REASON: Final = "runtime is disabled"
ACCELERATOR_CLASS_REASON: Final = "runtime does not support the required accelerator class"
NO_AUTO_SELECT_REASON: Final = "runtime does not have auto-select enabled for any matching supported format"

DEFAULT_PRIORITY: Final = 1
ABSENT_WEIGHT: Final = 1
ZERO_FORMAT_WEIGHT: Final = 10
ZERO_FRAMEWORK_WEIGHT: Final = 5

_SIZE_MULTIPLIERS: Final[Mapping[str, float]] = {"T": 1e12, "B": 1e9, "M": 1e6}
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


# ---------------------------------------------------------------------------------------------------------
# Errors


class SelectionError(Exception):
    """Base of the errors below; `message` is the exact text for events and webhooks."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ModelError(SelectionError):
    """The InferenceService's model is missing, disabled or not named. `reason` is the event reason
    (`ModelReconcileError`); `failure_reason` the status reason (`BaseModelNotFound`, `BaseModelDisabled`), or
    None when the InferenceService names no model."""

    def __init__(self, reason: str, message: str, failure_reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.failure_reason = failure_reason


class RuntimeValidation(SelectionError):
    """A named runtime that cannot serve the model: missing, disabled, or not supporting it."""


class NoRuntimeFound(SelectionError):
    """Automatic selection found no runtime for the model."""


# ---------------------------------------------------------------------------------------------------------
# Models


class ModelLookup(Protocol):
    """Read access to the models of one cluster. `namespace` is `""` for a ClusterBaseModel."""

    def get(self, kind: ModelKind, namespace: str, name: str) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A resolved model and the fields runtime matching uses; unset fields are None."""

    name: str
    kind: ModelKind
    namespace: str
    """`""` for a ClusterBaseModel."""
    format_name: str
    """`""` when the model declares no format (such a model cannot be matched)."""
    format_version: str | None = None
    framework_name: str | None = None
    framework_version: str | None = None
    architecture: str | None = None
    quantization: str | None = None
    parameter_size: str | None = None
    """As written, e.g. `3.21B`."""


def model_ref(model: Mapping[str, Any]) -> ModelRef:
    """The `ModelRef` of a BaseModel or ClusterBaseModel object."""
    kind: ModelKind = CLUSTER_BASE_MODEL if model.get("kind") == CLUSTER_BASE_MODEL else BASE_MODEL
    metadata = as_mapping(model.get("metadata"))
    spec = as_mapping(model.get("spec"))
    model_format = as_mapping(spec.get("modelFormat"))
    framework = as_mapping(spec.get("modelFramework"))
    framework_name = _text(framework.get("name"))
    return ModelRef(
        name=_text(metadata.get("name")) or "",
        kind=kind,
        namespace=(_text(metadata.get("namespace")) or "") if kind == BASE_MODEL else "",
        format_name=_text(model_format.get("name")) or "",
        format_version=_text(model_format.get("version")),
        framework_name=framework_name,
        framework_version=_text(framework.get("version")) if framework_name is not None else None,
        architecture=_text(spec.get("modelArchitecture")),
        quantization=_text(spec.get("quantization")),
        parameter_size=_text(spec.get("modelParameterSize")),
    )


def resolve_model(isvc: Mapping[str, Any], lookup: ModelLookup) -> ModelRef | None:
    """The model `spec.model.name` names: the BaseModel in the InferenceService's namespace, else the
    ClusterBaseModel. None for an InferenceService without `spec.model` that names a runtime (it follows the
    runtime's live spec). Raises ModelError when the model is missing or disabled, or when
    the InferenceService names neither a model nor a runtime."""
    name = _text(as_mapping(_spec(isvc).get("model")).get("name"))
    if name is None:
        if named_runtime(isvc) is not None:
            return None
        raise ModelError(MODEL_RECONCILE_ERROR, MODEL_REFERENCE_REQUIRED)
    namespace = _text(as_mapping(isvc.get("metadata")).get("namespace")) or ""
    model = lookup.get(BASE_MODEL, namespace, name)
    if model is None:
        model = lookup.get(CLUSTER_BASE_MODEL, "", name)
    if model is None:
        raise ModelError(
            MODEL_RECONCILE_ERROR, f"No BaseModel or ClusterBaseModel with the name: {name}", BASE_MODEL_NOT_FOUND
        )
    if as_mapping(model.get("spec")).get("disabled") is True:
        raise ModelError(MODEL_RECONCILE_ERROR, f"specified base model {name} is disabled", BASE_MODEL_DISABLED)
    return model_ref(model)


def named_runtime(isvc: Mapping[str, Any]) -> str | None:
    """`spec.runtime.name`, or None when the InferenceService leaves the choice to automatic selection."""
    return _text(as_mapping(_spec(isvc).get("runtime")).get("name"))


def required_accelerator_classes(isvc: Mapping[str, Any]) -> frozenset[str]:
    """The accelerator classes the InferenceService asks for (upstream's sources: the `ome.io/accelerator-class`
    annotation, `spec.acceleratorSelector`, and the engine's and decoder's `acceleratorOverride`)."""
    spec = _spec(isvc)
    sources = (
        as_mapping(as_mapping(isvc.get("metadata")).get("annotations")).get(ACCELERATOR_CLASS_ANNOTATION),
        as_mapping(spec.get("acceleratorSelector")).get("acceleratorClass"),
        as_mapping(as_mapping(spec.get("engine")).get("acceleratorOverride")).get("acceleratorClass"),
        as_mapping(as_mapping(spec.get("decoder")).get("acceleratorOverride")).get("acceleratorClass"),
    )
    return frozenset(value for value in sources if isinstance(value, str) and value)


# ---------------------------------------------------------------------------------------------------------
# Sizes


@lru_cache(maxsize=1024)  # a few distinct sizes, parsed for every render
def parse_size(size: str) -> float:
    """A parameter count written with a `T`, `B` or `M` suffix (`1.5B` is 1.5e9), or a bare number; anything
    else (`7K`, `7b`, garbage) is 0, as upstream."""
    number, multiplier = size, 1.0
    if size[-1:] in _SIZE_MULTIPLIERS:
        number, multiplier = size[:-1], _SIZE_MULTIPLIERS[size[-1]]
    if _DECIMAL.fullmatch(number) is None:
        return 0.0
    return float(number) * multiplier


def size_in_range(size: float | str, size_range: Mapping[str, Any] | None) -> bool:
    """Whether `size` lies in `[min, max]`, bounds included; a missing bound (or range) is unbounded."""
    value = parse_size(size) if isinstance(size, str) else size
    low, high = _bounds(size_range)
    if low is not None and value < parse_size(low):
        return False
    return not (high is not None and value > parse_size(high))


def _bounds(size_range: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    size_range = as_mapping(size_range)
    return _text(size_range.get("min")), _text(size_range.get("max"))


def _size_distance(size: float, size_range: Mapping[str, Any] | None) -> float:
    return sum(abs(parse_size(bound) - size) for bound in _bounds(size_range) if bound is not None)


# ---------------------------------------------------------------------------------------------------------
# Versions (upstream's pkg/modelver)


@dataclass(frozen=True, slots=True)
class _Version:
    numbers: tuple[int, int, int]
    prefix: str
    pre: tuple[str, ...]
    build: tuple[str, ...]
    dev: tuple[str, ...]
    precision: int

    @property
    def unofficial(self) -> bool:
        return bool(self.pre or self.build or self.dev)


@lru_cache(maxsize=1024)  # a few distinct versions, parsed for every render
def _parse_version(text: str) -> _Version | None:
    """`[v]MAJOR[.MINOR[.PATCH]]` with optional `.devN`, `-pre` and `+build` parts after the patch; None if invalid."""
    if not text:
        return None
    parts = text.split(".", 2)
    major = parts[0].removeprefix("v")
    prefix = "v" if major != parts[0] else ""
    minor = parts[1] if len(parts) > 1 else "0"
    patch = parts[2] if len(parts) > 2 else "0"
    patch, build = _split_suffix(patch, "+")
    patch, pre = _split_suffix(patch, "-")
    patch, dev = _split_suffix(patch, ".")
    if None in (build, pre, dev):
        return None
    numbers = tuple(_numeric(part) for part in (major, minor, patch))
    if any(number is None for number in numbers):
        return None
    major_n, minor_n, patch_n = (n for n in numbers if n is not None)
    return _Version((major_n, minor_n, patch_n), prefix, pre or (), build or (), dev or (), len(parts))


def _split_suffix(text: str, separator: str) -> tuple[str, tuple[str, ...] | None]:
    head, found, tail = text.partition(separator)
    if not found:
        return text, ()
    pieces = tuple(tail.split("."))
    return head, None if "" in pieces else pieces


def _numeric(text: str) -> int | None:
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        return None
    return int(text)


def _compare_versions(left: _Version, right: _Version) -> int:
    if left.numbers != right.numbers:
        return 1 if left.numbers > right.numbers else -1
    # Suffix lists compare item by item, then by length, like upstream's string slices.
    for a, b in ((left.pre, right.pre), (left.build, right.build), (left.dev, right.dev)):
        if a != b:
            return 1 if a > b else -1
    return 0


def version_matches(runtime_version: str, model_version: str, operator: str | None) -> bool:
    """Whether a runtime's format or framework version accepts the model's. `Equal` (also when the operator is
    unset or unknown, or when either side has pre/build/dev parts) compares numerically with suffixes, so `1`
    equals `1.0.0`; `GreaterThan`/`GreaterThanOrEqual` need the same precision and `v` prefix on both sides and
    the runtime's version above (or at) the model's."""
    supported, wanted = _parse_version(runtime_version), _parse_version(model_version)
    if supported is None or wanted is None:
        return False
    if supported.unofficial or wanted.unofficial or operator not in ("GreaterThan", "GreaterThanOrEqual"):
        return _compare_versions(supported, wanted) == 0
    if supported.precision != wanted.precision or supported.prefix != wanted.prefix:
        return False
    order = _compare_versions(supported, wanted)
    return order > 0 if operator == "GreaterThan" else order >= 0


# ---------------------------------------------------------------------------------------------------------
# The matcher


def format_mismatches(model: ModelRef, supported_format: Mapping[str, Any]) -> list[str]:
    """Why one entry of `supportedModelFormats` does not match the model, in upstream's words; empty if it matches."""
    reasons: list[str] = []
    _compare_optional(
        reasons,
        "architecture",
        model.architecture,
        _text(supported_format.get("modelArchitecture")),
    )
    _compare_optional(reasons, "quantization", model.quantization, _text(supported_format.get("quantization")))

    model_format = as_mapping(supported_format.get("modelFormat"))
    format_name = _text(model_format.get("name"))
    if format_name is None:
        reasons.append("supported format has no modelFormat")
    elif format_name != model.format_name:
        reasons.append(f"format name mismatch (model={model.format_name}, runtime={format_name})")
    else:
        _compare_versions_into(reasons, "format", model.format_version, model_format)

    framework = as_mapping(supported_format.get("modelFramework"))
    framework_name = _text(framework.get("name"))
    if framework_name is not None and model.framework_name is not None:
        if framework_name != model.framework_name:
            reasons.append(f"framework name mismatch (model={model.framework_name}, runtime={framework_name})")
        else:
            _compare_versions_into(reasons, "framework", model.framework_version, framework)
    elif framework_name is not None:
        reasons.append(f"model has no framework but runtime requires {framework_name}")
    elif model.framework_name is not None:
        reasons.append(f"model has framework {model.framework_name} but runtime has no framework requirement")
    return reasons


def _compare_optional(reasons: list[str], field: str, model_value: str | None, runtime_value: str | None) -> None:
    if model_value is not None and runtime_value is not None:
        if model_value != runtime_value:
            reasons.append(f"{field} mismatch (model={model_value}, runtime={runtime_value})")
    elif runtime_value is not None:
        reasons.append(f"model has no {field} but runtime requires {runtime_value}")
    elif model_value is not None:
        reasons.append(f"model has {field} {model_value} but runtime has no {field} requirement")


def _compare_versions_into(
    reasons: list[str], field: str, model_version: str | None, runtime_side: Mapping[str, Any]
) -> None:
    runtime_version = _text(runtime_side.get("version"))
    if model_version is not None and runtime_version is not None:
        if not version_matches(runtime_version, model_version, _text(runtime_side.get("operator"))):
            reasons.append(f"{field} version mismatch (model={model_version}, runtime={runtime_version})")
    elif runtime_version is not None:
        reasons.append(f"model has no {field} version but runtime requires {runtime_version}")
    elif model_version is not None:
        reasons.append(f"model has {field} version but runtime has no version requirement")


def model_format_label(model: ModelRef) -> str:
    """Upstream's label for a model in format errors: `mt:<format>[:<ver>][:<arch>][:<quant>][:<fw>[:<fwver>]]`."""
    parts = [f"mt:{model.format_name}"]
    for value in (model.format_version, model.architecture, model.quantization):
        if value is not None:
            parts.append(value)
    if model.framework_name is not None:
        parts.append(model.framework_name)
        if model.framework_version is not None:
            parts.append(model.framework_version)
    return ":".join(parts)


def incompatibility(spec: Mapping[str, Any], model: ModelRef, accelerator_classes: Collection[str] = ()) -> str | None:
    """The first reason the runtime spec cannot serve the model (disabled, accelerator class, formats, size), or
    None when it can. autoSelect plays no part here."""
    if spec.get("disabled") is True:
        return RUNTIME_DISABLED_REASON
    if accelerator_classes:
        offered = as_mapping(spec.get("acceleratorRequirements")).get("acceleratorClasses")
        offered_set = set(offered) if isinstance(offered, list) else set()
        if not set(accelerator_classes) <= offered_set:
            return ACCELERATOR_CLASS_REASON
    formats = _formats(spec)
    per_format = [format_mismatches(model, supported_format) for supported_format in formats]
    if not any(not reasons for reasons in per_format):
        if not formats:
            details = "no supported formats defined"
        else:
            details = "; ".join(", ".join(reasons) for reasons in per_format)
        return f"model format '{model_format_label(model)}' not in supported formats: {details}"
    size_range = spec.get("modelSizeRange")
    if model.parameter_size is not None and not size_in_range(model.parameter_size, as_mapping(size_range)):
        low, high = _bounds(as_mapping(size_range))
        return (
            f"model size {model.parameter_size} is outside supported range "
            f"[{low or 'unbounded'}, {high or 'unbounded'}]"
        )
    return None


def check_runtime_supports(
    runtime_name: str,
    merged_spec: Mapping[str, Any],
    model: ModelRef,
    *,
    kind: RuntimeKind,
    accelerator_classes: Collection[str] = (),
) -> None:
    """Validate a runtime the InferenceService names against its model, from the runtime's merged spec, in
    upstream's order: the model declares a format, the runtime is enabled, then compatibility. autoSelect is not
    required. Raises RuntimeValidation with the exact message."""
    if not model.format_name:
        raise RuntimeValidation(MODEL_FORMAT_REQUIRED)
    if merged_spec.get("disabled") is True:
        raise RuntimeValidation(runtime_disabled_message(runtime_name, kind))
    reason = incompatibility(merged_spec, model, accelerator_classes)
    if reason is not None:
        raise RuntimeValidation(f"runtime {runtime_name} does not support model {model.name}: {reason}")


def runtime_disabled_message(runtime_name: str, kind: RuntimeKind) -> str:
    scope = "cluster-scoped" if kind == CLUSTER_SERVING_RUNTIME else "namespace-scoped"
    return f"{scope} runtime {runtime_name} is disabled"


def runtime_not_found_message(runtime_name: str, namespace: str) -> str:
    return f"runtime {runtime_name} not found in namespace {namespace} or at cluster scope"


def lookup_named_runtime(
    namespace: str, runtime_name: str, lookup: RuntimeLookup
) -> tuple[RuntimeRef, Mapping[str, Any]]:
    """The runtime an InferenceService names: the ServingRuntime in its namespace, else the ClusterServingRuntime
    (`spec.runtime.kind` is never consulted). Raises RuntimeValidation when neither exists."""
    found = ResolutionContext(namespace).find(runtime_name, lookup)
    if found is None:
        raise RuntimeValidation(runtime_not_found_message(runtime_name, namespace))
    return found


# ---------------------------------------------------------------------------------------------------------
# Automatic selection


@dataclass(frozen=True, slots=True)
class SelectedRuntime:
    """The runtime automatic selection chose, with its own spec (render from it: no inheritance)."""

    ref: RuntimeRef
    runtime: Mapping[str, Any]
    spec: Mapping[str, Any]
    score: int
    supported_format: Mapping[str, Any]
    """The best-scoring matching format with `autoSelect: true` (for its acceleratorConfig)."""


def format_score(model: ModelRef, supported_format: Mapping[str, Any]) -> int:
    """`weight * priority` of the format match plus that of the framework match (when both sides name a framework),
    for a format that matches the model. Priority is 1 when unset."""
    priority = _integer(supported_format.get("priority"), DEFAULT_PRIORITY)
    score = _weight(as_mapping(supported_format.get("modelFormat")), ZERO_FORMAT_WEIGHT) * priority
    framework = as_mapping(supported_format.get("modelFramework"))
    if _text(framework.get("name")) is not None and model.framework_name is not None:
        score += _weight(framework, ZERO_FRAMEWORK_WEIGHT) * priority
    return score


def select_runtime(
    isvc_namespace: str,
    model: ModelRef,
    candidates: Iterable[tuple[RuntimeKind, Mapping[str, Any]]],
    *,
    accelerator_classes: Collection[str] = (),
) -> SelectedRuntime:
    """Choose a runtime for an InferenceService that names none, from each candidate's own spec.

    A runtime qualifies when it is enabled, compatible (formats, size, accelerator class), and some format that
    matches the model has `autoSelect: true` and a positive score. Every ServingRuntime in the namespace comes
    before every ClusterServingRuntime; within each, the higher score wins, then (for a model with a size) the
    closer size range, then the name. ServingRuntimes of other namespaces are ignored. Raises NoRuntimeFound."""
    if not model.format_name:
        raise NoRuntimeFound(MODEL_FORMAT_REQUIRED)
    ranked: list[tuple[tuple[bool, int, float, str], SelectedRuntime]] = []
    excluded: list[str] = []
    namespaced = cluster = 0
    size = parse_size(model.parameter_size) if model.parameter_size is not None else None
    for kind, runtime in candidates:
        metadata = as_mapping(runtime.get("metadata"))
        name = _text(metadata.get("name")) or ""
        if kind == SERVING_RUNTIME:
            if (_text(metadata.get("namespace")) or "") != isvc_namespace:
                continue
            namespaced += 1
            ref = RuntimeRef(SERVING_RUNTIME, isvc_namespace, name)
        else:
            cluster += 1
            ref = RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name)
        spec = as_mapping(runtime.get("spec"))
        reason = incompatibility(spec, model, accelerator_classes)
        if reason is not None:
            excluded.append(f"{name} ({reason})")
            continue
        best = _best_auto_select_format(spec, model)
        if best is None:
            excluded.append(f"{name} ({NO_AUTO_SELECT_REASON})")
            continue
        score, supported_format = best
        if score <= 0:
            excluded.append(f"{name} (score {score} is not positive)")
            continue
        distance = _size_distance(size, as_mapping(spec.get("modelSizeRange"))) if size is not None else 0.0
        key = (kind == CLUSTER_SERVING_RUNTIME, -score, distance, name)
        ranked.append((key, SelectedRuntime(ref, runtime, spec, score, supported_format)))
    if ranked:
        return min(ranked, key=lambda entry: entry[0])[1]
    message = (
        f"no runtime found to support model {model.name} with format {model.format_name} in namespace {isvc_namespace}"
    )
    if namespaced + cluster:
        total = namespaced + cluster
        message += f". Checked {total} runtimes ({namespaced} namespace-scoped, {cluster} cluster-scoped)"
    if excluded:
        message += ". Excluded runtimes: " + "; ".join(excluded)
    raise NoRuntimeFound(message)


def _best_auto_select_format(spec: Mapping[str, Any], model: ModelRef) -> tuple[int, Mapping[str, Any]] | None:
    best: tuple[int, Mapping[str, Any]] | None = None
    for supported_format in _formats(spec):
        if supported_format.get("autoSelect") is not True or format_mismatches(model, supported_format):
            continue
        score = format_score(model, supported_format)
        if best is None or score > best[0]:
            best = (score, supported_format)
    return best


# ---------------------------------------------------------------------------------------------------------
# Events on the InferenceService


def event_for_named_runtime_failure(
    isvc: Mapping[str, Any],
    runtime_name: str,
    model_name: str | None,
    error: object,
    *,
    chain_broken: bool,
) -> tuple[str, str]:
    """`(reason, message)` of the Warning event for a runtime the InferenceService names that cannot be used
    Without `spec.model` (or a model name): `RuntimeFetchError` with the bare error. A
    broken chain (`chain_broken`, also a missing pinned revision) under `autoSync: false` or a pinned
    `spec.runtime.revision`: `RuntimePinError`. Otherwise `RuntimeValidationError`. Both of the latter read
    `Runtime <rt> does not support model <model>: <error>`."""
    model_name = model_name or _text(as_mapping(_spec(isvc).get("model")).get("name"))
    if model_name is None:
        return RUNTIME_FETCH_ERROR, str(error)
    message = f"Runtime {runtime_name} does not support model {model_name}: {error}"
    if chain_broken and is_pinned(isvc):
        return RUNTIME_PIN_ERROR, message
    return RUNTIME_VALIDATION_ERROR, message


def event_for_selection_failure(model_name: str, error: object) -> tuple[str, str]:
    """`(reason, message)` of the Warning event when automatic selection finds no runtime."""
    return RUNTIME_SELECTION_ERROR, f"Failed to find runtime for model {model_name}: {error}"


def event_for_model_error(error: ModelError) -> tuple[str, str]:
    """`(reason, message)` of the Warning event for a model that is missing, disabled or not named."""
    return error.reason, error.message


def is_pinned(isvc: Mapping[str, Any]) -> bool:
    """Whether the InferenceService keeps a snapshot: `spec.runtime.autoSync: false` or a `spec.runtime.revision`."""
    runtime = as_mapping(_spec(isvc).get("runtime"))
    return runtime.get("autoSync") is False or _text(runtime.get("revision")) is not None


# ---------------------------------------------------------------------------------------------------------
# Helpers


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(obj.get("spec"))


def _text(value: Any) -> str | None:
    """A set string; `""`, None and non-strings count as unset."""
    return value if isinstance(value, str) and value else None


def _integer(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _weight(side: Mapping[str, Any], zero_weight: int) -> int:
    weight = _integer(side.get("weight"), ABSENT_WEIGHT)
    return zero_weight if weight == 0 else weight


def _formats(spec: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    formats = spec.get("supportedModelFormats")
    if not isinstance(formats, list):
        return []
    return [item for item in formats if isinstance(item, Mapping)]
