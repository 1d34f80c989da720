"""Model resolution, the runtime matcher, automatic selection and their exact messages and events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from omectl.core.ome.merge import merge_spec
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeKind, RuntimeRef
from omectl.core.ome.selection import (
    BASE_MODEL,
    BASE_MODEL_DISABLED,
    BASE_MODEL_NOT_FOUND,
    CLUSTER_BASE_MODEL,
    MODEL_RECONCILE_ERROR,
    RUNTIME_FETCH_ERROR,
    RUNTIME_PIN_ERROR,
    RUNTIME_SELECTION_ERROR,
    RUNTIME_VALIDATION_ERROR,
    ModelError,
    ModelKind,
    ModelRef,
    NoRuntimeFound,
    RuntimeValidation,
    check_runtime_supports,
    event_for_model_error,
    event_for_named_runtime_failure,
    event_for_selection_failure,
    format_mismatches,
    format_score,
    incompatibility,
    is_pinned,
    lookup_named_runtime,
    model_format_label,
    model_ref,
    parse_size,
    required_accelerator_classes,
    resolve_model,
    select_runtime,
    size_in_range,
    version_matches,
)

NAMESPACE = "llama-demo"
MODEL = "llama-3-2-3b-instruct"


def llama(**changes: Any) -> ModelRef:
    """The spec's example model as the model agent fills it in."""
    fields: dict[str, Any] = {
        "name": MODEL,
        "kind": CLUSTER_BASE_MODEL,
        "namespace": "",
        "format_name": "safetensors",
        "format_version": "1.0.0",
        "framework_name": "transformers",
        "framework_version": "4.45.0.dev0",
        "architecture": "LlamaForCausalLM",
        "quantization": None,
        "parameter_size": "3.21B",
    }
    fields.update(changes)
    return ModelRef(**fields)


def fmt(**changes: Any) -> dict[str, Any]:
    """A supportedModelFormats entry matching `llama()`; a change of None removes the field."""
    entry: dict[str, Any] = {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelArchitecture": "LlamaForCausalLM",
        "autoSelect": True,
    }
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    return entry


def spec_with(*formats: dict[str, Any], size: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"supportedModelFormats": list(formats), **fields}
    if size is not None:
        spec["modelSizeRange"] = size
    return spec


def runtime(
    kind: RuntimeKind, name: str, spec: dict[str, Any], *, namespace: str = NAMESPACE, parent: str | None = None
) -> tuple[RuntimeKind, dict[str, Any]]:
    metadata: dict[str, Any] = {"name": name}
    if kind == SERVING_RUNTIME:
        metadata["namespace"] = namespace
    if parent is not None:
        metadata["annotations"] = {"ome.io/inherit-from": parent}
    return kind, {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata, "spec": spec}


def sr(name: str, spec: dict[str, Any], **kwargs: Any) -> tuple[RuntimeKind, dict[str, Any]]:
    return runtime(SERVING_RUNTIME, name, spec, **kwargs)


def csr(name: str, spec: dict[str, Any], **kwargs: Any) -> tuple[RuntimeKind, dict[str, Any]]:
    return runtime(CLUSTER_SERVING_RUNTIME, name, spec, **kwargs)


def isvc(
    *, model: str | None = MODEL, runtime_name: str | None = None, namespace: str = NAMESPACE, **runtime_fields: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if model is not None:
        spec["model"] = {"name": model}
    if runtime_name is not None:
        spec["runtime"] = {"name": runtime_name, **runtime_fields}
    return {"kind": "InferenceService", "metadata": {"name": "svc", "namespace": namespace}, "spec": spec}


# ---------------------------------------------------------------------------------------------------------
# Sizes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3B", 3e9),
        ("70B", 70e9),
        ("1.5B", 1.5e9),
        ("3.21B", 3.21e9),
        ("500M", 500e6),
        ("1T", 1e12),
        ("1.5T", 1.5e12),
        ("1000", 1000.0),
        ("7K", 0.0),
        ("7b", 0.0),
        ("B", 0.0),
        ("", 0.0),
        ("lots", 0.0),
    ],
)
def test_parse_size_reads_parameter_counts_and_unknown_text_as_zero(text: str, expected: float) -> None:
    assert parse_size(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("size", "size_range", "inside"),
    [
        ("3B", {"min": "2B", "max": "4B"}, True),
        ("2B", {"min": "2B", "max": "4B"}, True),
        ("4B", {"min": "2B", "max": "4B"}, True),
        ("1.9B", {"min": "2B", "max": "4B"}, False),
        ("4.1B", {"min": "2B", "max": "4B"}, False),
        ("500M", {"min": "1B", "max": "1T"}, False),
        ("70B", {"min": "2B"}, True),
        ("1B", {"min": "2B"}, False),
        ("1B", {"max": "4B"}, True),
        ("1T", {"max": "4B"}, False),
        ("1T", {"min": "", "max": ""}, True),
        ("1T", {}, True),
        ("1T", None, True),
        (3e9, {"min": "2B", "max": "4B"}, True),
    ],
)
def test_size_in_range_is_inclusive_and_a_missing_bound_is_unbounded(
    size: float | str, size_range: dict[str, Any] | None, inside: bool
) -> None:
    assert size_in_range(size, size_range) is inside


# ---------------------------------------------------------------------------------------------------------
# Versions and operators


@pytest.mark.parametrize(
    ("runtime_version", "model_version", "operator", "matches"),
    [
        ("1.0.0", "1.0.0", None, True),
        ("1", "1.0.0", None, True),
        ("1.0", "1.0.0", "Equal", True),
        ("1.0.1", "1.0.0", None, False),
        ("1.0.1", "1.0.0", "Bogus", False),
        ("2.0.0", "1.0.0", "GreaterThan", True),
        ("1.0.0", "1.0.0", "GreaterThan", False),
        ("0.9.0", "1.0.0", "GreaterThan", False),
        ("1.0.0", "1.0.0", "GreaterThanOrEqual", True),
        ("1.2.0", "1.0.0", "GreaterThanOrEqual", True),
        ("0.9.9", "1.0.0", "GreaterThanOrEqual", False),
        ("2.0", "1.0.0", "GreaterThan", False),
        ("v2.0.0", "1.0.0", "GreaterThan", False),
        ("v2.0.0", "v1.0.0", "GreaterThan", True),
        ("4.45.0.dev0", "4.45.0.dev0", None, True),
        ("4.45.0.dev0", "4.45.0.dev1", None, False),
        ("4.46.0.dev0", "4.45.0.dev0", "GreaterThan", False),
        ("4.46.0", "4.45.0.dev0", "GreaterThanOrEqual", False),
        ("4.51.3-SAM-HQ-preview", "4.51.3-SAM-HQ-preview", None, True),
        ("1.0.0+build.1", "1.0.0", None, False),
        ("abc", "1.0.0", None, False),
        ("01.0.0", "1.0.0", None, False),
        ("1.0.0-", "1.0.0", None, False),
        ("", "1.0.0", None, False),
    ],
)
def test_version_matches_follows_upstream_operators(
    runtime_version: str, model_version: str, operator: str | None, matches: bool
) -> None:
    assert version_matches(runtime_version, model_version, operator) is matches


# ---------------------------------------------------------------------------------------------------------
# Matcher rules, one field at a time


@pytest.mark.parametrize(
    ("model", "entry", "reasons"),
    [
        (llama(), fmt(), []),
        (llama(), fmt(autoSelect=False), []),
        (
            llama(),
            fmt(modelArchitecture="MistralForCausalLM"),
            ["architecture mismatch (model=LlamaForCausalLM, runtime=MistralForCausalLM)"],
        ),
        (
            llama(architecture=None),
            fmt(),
            ["model has no architecture but runtime requires LlamaForCausalLM"],
        ),
        (
            llama(),
            fmt(modelArchitecture=None),
            ["model has architecture LlamaForCausalLM but runtime has no architecture requirement"],
        ),
        (llama(architecture=None), fmt(modelArchitecture=None), []),
        (llama(quantization="fp8"), fmt(quantization="fp8"), []),
        (llama(quantization="fp8"), fmt(quantization="int4"), ["quantization mismatch (model=fp8, runtime=int4)"]),
        (llama(), fmt(quantization="fp8"), ["model has no quantization but runtime requires fp8"]),
        (
            llama(quantization="fp8"),
            fmt(),
            ["model has quantization fp8 but runtime has no quantization requirement"],
        ),
        (
            llama(format_name="pytorch"),
            fmt(),
            ["format name mismatch (model=pytorch, runtime=safetensors)"],
        ),
        (
            llama(format_version="2.0.0"),
            fmt(),
            ["format version mismatch (model=2.0.0, runtime=1.0.0)"],
        ),
        (
            llama(format_version="1.0.0"),
            fmt(modelFormat={"name": "safetensors", "version": "2.0.0", "operator": "GreaterThan"}),
            [],
        ),
        (
            llama(format_version=None),
            fmt(),
            ["model has no format version but runtime requires 1.0.0"],
        ),
        (
            llama(),
            fmt(modelFormat={"name": "safetensors"}),
            ["model has format version but runtime has no version requirement"],
        ),
        (llama(format_version=None), fmt(modelFormat={"name": "safetensors"}), []),
        (llama(), fmt(modelFormat=None), ["supported format has no modelFormat"]),
        (
            llama(framework_name="vllm"),
            fmt(),
            ["framework name mismatch (model=vllm, runtime=transformers)"],
        ),
        (
            llama(framework_version="4.46.0"),
            fmt(),
            ["framework version mismatch (model=4.46.0, runtime=4.45.0.dev0)"],
        ),
        (
            llama(framework_version="4.45.0"),
            fmt(modelFramework={"name": "transformers", "version": "4.46.0", "operator": "GreaterThanOrEqual"}),
            [],
        ),
        (
            llama(framework_version=None),
            fmt(),
            ["model has no framework version but runtime requires 4.45.0.dev0"],
        ),
        (
            llama(),
            fmt(modelFramework={"name": "transformers"}),
            ["model has framework version but runtime has no version requirement"],
        ),
        (
            llama(framework_name=None, framework_version=None),
            fmt(),
            ["model has no framework but runtime requires transformers"],
        ),
        (
            llama(),
            fmt(modelFramework=None),
            ["model has framework transformers but runtime has no framework requirement"],
        ),
        (llama(framework_name=None, framework_version=None), fmt(modelFramework=None), []),
        (
            llama(),
            fmt(modelArchitecture="", quantization=""),
            ["model has architecture LlamaForCausalLM but runtime has no architecture requirement"],
        ),
        (
            llama(format_name="pytorch", quantization="fp8"),
            fmt(quantization="int4"),
            [
                "quantization mismatch (model=fp8, runtime=int4)",
                "format name mismatch (model=pytorch, runtime=safetensors)",
            ],
        ),
    ],
)
def test_format_mismatches_names_each_field_that_differs(
    model: ModelRef, entry: dict[str, Any], reasons: list[str]
) -> None:
    assert format_mismatches(model, entry) == reasons


@pytest.mark.parametrize(
    ("model", "label"),
    [
        (llama(), "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0"),
        (llama(quantization="fp8", framework_version=None), "mt:safetensors:1.0.0:LlamaForCausalLM:fp8:transformers"),
        (
            llama(format_version=None, architecture=None, framework_name=None, framework_version=None),
            "mt:safetensors",
        ),
    ],
)
def test_model_format_label_lists_the_set_fields_in_upstream_order(model: ModelRef, label: str) -> None:
    assert model_format_label(model) == label


# ---------------------------------------------------------------------------------------------------------
# Named runtime: validated from the merged spec


def test_check_runtime_supports_accepts_a_matching_runtime_without_auto_select() -> None:
    check_runtime_supports(
        "rt", spec_with(fmt(autoSelect=False), size={"min": "2B", "max": "4B"}), llama(), kind=SERVING_RUNTIME
    )


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (SERVING_RUNTIME, "namespace-scoped runtime rt is disabled"),
        (CLUSTER_SERVING_RUNTIME, "cluster-scoped runtime rt is disabled"),
    ],
)
def test_check_runtime_supports_rejects_a_disabled_runtime_with_its_scope(kind: RuntimeKind, message: str) -> None:
    with pytest.raises(RuntimeValidation) as caught:
        check_runtime_supports("rt", spec_with(fmt(), disabled=True), llama(), kind=kind)
    assert caught.value.message == message


@pytest.mark.parametrize(
    ("spec", "model", "reason"),
    [
        (
            spec_with(fmt(modelArchitecture="MistralForCausalLM"), fmt(modelFormat={"name": "pytorch"})),
            llama(),
            "model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported formats: "
            "architecture mismatch (model=LlamaForCausalLM, runtime=MistralForCausalLM); "
            "format name mismatch (model=safetensors, runtime=pytorch)",
        ),
        (
            spec_with(),
            llama(),
            "model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported formats: "
            "no supported formats defined",
        ),
        (
            spec_with(fmt(), size={"min": "5B", "max": "9B"}),
            llama(),
            "model size 3.21B is outside supported range [5B, 9B]",
        ),
        (spec_with(fmt(), size={"min": "5B"}), llama(), "model size 3.21B is outside supported range [5B, unbounded]"),
        (spec_with(fmt(), size={"max": "3B"}), llama(), "model size 3.21B is outside supported range [unbounded, 3B]"),
        (
            spec_with(fmt(), acceleratorRequirements={"acceleratorClasses": ["a100"]}),
            llama(),
            "runtime does not support the required accelerator class",
        ),
    ],
)
def test_check_runtime_supports_names_the_model_and_the_reason(
    spec: dict[str, Any], model: ModelRef, reason: str
) -> None:
    wanted = {"h100"} if "acceleratorRequirements" in spec else set()
    with pytest.raises(RuntimeValidation) as caught:
        check_runtime_supports("rt", spec, model, kind=SERVING_RUNTIME, accelerator_classes=wanted)
    assert caught.value.message == f"runtime rt does not support model {MODEL}: {reason}"


@pytest.mark.parametrize(
    "size",
    [{"min": "2B"}, {"max": "4B"}, {"min": "3.21B", "max": "3.21B"}, {}],
)
def test_check_runtime_supports_accepts_a_size_inside_a_one_sided_or_exact_range(size: dict[str, Any]) -> None:
    check_runtime_supports("rt", spec_with(fmt(), size=size), llama(), kind=SERVING_RUNTIME)


def test_check_runtime_supports_ignores_the_size_range_for_a_model_without_a_size() -> None:
    check_runtime_supports(
        "rt", spec_with(fmt(), size={"min": "100B"}), llama(parameter_size=None), kind=SERVING_RUNTIME
    )


def test_check_runtime_supports_needs_a_model_format() -> None:
    with pytest.raises(RuntimeValidation) as caught:
        check_runtime_supports("rt", spec_with(fmt()), llama(format_name=""), kind=SERVING_RUNTIME)
    assert caught.value.message == "invalid model specification: modelFormat.name: model format name is required"


@pytest.mark.parametrize(
    ("offered", "wanted", "supported"),
    [
        (None, set(), True),
        (None, {"h100"}, False),
        (["h100", "a100"], {"h100"}, True),
        (["h100"], {"h100", "a100"}, False),
    ],
)
def test_incompatibility_requires_every_requested_accelerator_class(
    offered: list[str] | None, wanted: set[str], supported: bool
) -> None:
    spec = spec_with(fmt())
    if offered is not None:
        spec["acceleratorRequirements"] = {"acceleratorClasses": offered}
    assert (incompatibility(spec, llama(), wanted) is None) is supported


def test_the_spec_example_child_is_supported_through_its_merged_spec_only() -> None:
    profile = {"disabled": True, "engineConfig": {"runner": {"name": "ome-container", "image": "sglang"}}}
    child = spec_with(
        fmt(autoSelect=False),
        size={"min": "2B", "max": "4B"},
        disabled=False,
        engineConfig={"runner": {"name": "ome-container", "args": ["--tp-size=1"]}},
    )
    check_runtime_supports("sglang-llama-3-2-3b", merge_spec(profile, child), llama(), kind=SERVING_RUNTIME)
    with pytest.raises(RuntimeValidation, match="runtime sglang-profile is disabled"):
        check_runtime_supports("sglang-profile", profile, llama(), kind=CLUSTER_SERVING_RUNTIME)


def test_a_merged_one_sided_size_range_keeps_the_parents_bound() -> None:
    merged = merge_spec(spec_with(fmt(), size={"min": "2B", "max": "4B"}), {"modelSizeRange": {"max": "3B"}})
    with pytest.raises(RuntimeValidation, match=r"outside supported range \[2B, 3B\]"):
        check_runtime_supports("rt", merged, llama(), kind=SERVING_RUNTIME)


# ---------------------------------------------------------------------------------------------------------
# Named runtime lookup


class Runtimes:
    def __init__(self, *runtimes: tuple[RuntimeKind, dict[str, Any]]) -> None:
        self.objects = {
            (kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]): obj for kind, obj in runtimes
        }

    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))


def test_lookup_named_runtime_prefers_the_namespace_then_the_cluster() -> None:
    lookup = Runtimes(sr("rt", {}), csr("rt", {}), csr("only-cluster", {}), sr("rt", {}, namespace="other"))
    assert lookup_named_runtime(NAMESPACE, "rt", lookup)[0] == RuntimeRef(SERVING_RUNTIME, NAMESPACE, "rt")
    assert lookup_named_runtime("third", "rt", lookup)[0] == RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "rt")
    assert lookup_named_runtime(NAMESPACE, "only-cluster", lookup)[0].kind == CLUSTER_SERVING_RUNTIME


def test_lookup_named_runtime_reports_a_missing_runtime_like_upstream() -> None:
    with pytest.raises(RuntimeValidation) as caught:
        lookup_named_runtime(NAMESPACE, "nope", Runtimes())
    assert caught.value.message == "runtime nope not found in namespace llama-demo or at cluster scope"


# ---------------------------------------------------------------------------------------------------------
# Automatic selection: each runtime's own spec


def selected_name(candidates: list[tuple[RuntimeKind, dict[str, Any]]], model: ModelRef | None = None) -> str:
    return select_runtime(NAMESPACE, model or llama(), candidates).ref.name


@pytest.mark.parametrize(
    ("entry", "score"),
    [
        (fmt(), 2),
        (fmt(priority=3), 6),
        (fmt(modelFormat={"name": "safetensors", "version": "1.0.0", "weight": 4}), 5),
        (fmt(modelFormat={"name": "safetensors", "version": "1.0.0", "weight": 0}), 11),
        (fmt(modelFramework={"name": "transformers", "version": "4.45.0.dev0", "weight": 0}, priority=2), 12),
        (fmt(modelFramework=None), 1),
    ],
)
def test_format_score_is_weight_times_priority_for_format_and_framework(entry: dict[str, Any], score: int) -> None:
    model = llama() if "modelFramework" in entry else llama(framework_name=None, framework_version=None)
    assert format_score(model, entry) == score


def test_the_higher_score_wins() -> None:
    candidates = [csr("a-low", spec_with(fmt())), csr("b-high", spec_with(fmt(priority=2)))]
    chosen = select_runtime(NAMESPACE, llama(), candidates)
    assert (chosen.ref.name, chosen.score) == ("b-high", 4)


def test_the_best_auto_select_format_of_a_runtime_sets_its_score() -> None:
    candidates = [csr("rt", spec_with(fmt(priority=1), fmt(priority=5), fmt(priority=9, autoSelect=False)))]
    chosen = select_runtime(NAMESPACE, llama(), candidates)
    assert chosen.score == 10
    assert chosen.supported_format["priority"] == 5


def test_a_namespaced_runtime_beats_a_cluster_runtime_with_a_higher_score() -> None:
    candidates = [csr("cluster", spec_with(fmt(priority=10))), sr("namespaced", spec_with(fmt()))]
    chosen = select_runtime(NAMESPACE, llama(), candidates)
    assert chosen.ref == RuntimeRef(SERVING_RUNTIME, NAMESPACE, "namespaced")


def test_a_serving_runtime_of_another_namespace_is_not_a_candidate() -> None:
    candidates = [sr("elsewhere", spec_with(fmt(priority=10)), namespace="other"), csr("cluster", spec_with(fmt()))]
    assert selected_name(candidates) == "cluster"


def test_on_equal_scores_the_closest_size_range_wins() -> None:
    candidates = [
        csr("a-far", spec_with(fmt(), size={"min": "1B", "max": "70B"})),
        csr("b-close", spec_with(fmt(), size={"min": "3B", "max": "4B"})),
    ]
    assert selected_name(candidates) == "b-close"


def test_the_size_tie_break_counts_only_the_bounds_that_are_set() -> None:
    candidates = [
        csr("a-two-sided", spec_with(fmt(), size={"min": "2B", "max": "4B"})),
        csr("b-min-only", spec_with(fmt(), size={"min": "3B"})),
    ]
    assert selected_name(candidates) == "b-min-only"


def test_without_a_model_size_the_name_breaks_a_tie_regardless_of_ranges() -> None:
    candidates = [
        csr("b-close", spec_with(fmt(), size={"min": "3B", "max": "4B"})),
        csr("a-far", spec_with(fmt(), size={"min": "1B", "max": "70B"})),
    ]
    assert selected_name(candidates, llama(parameter_size=None)) == "a-far"


def test_the_name_breaks_a_tie_between_equal_runtimes() -> None:
    candidates = [csr("zeta", spec_with(fmt())), csr("alpha", spec_with(fmt())), csr("mid", spec_with(fmt()))]
    assert selected_name(candidates) == "alpha"


def test_a_disabled_runtime_is_never_selected() -> None:
    candidates = [sr("disabled", spec_with(fmt(priority=100), disabled=True)), csr("enabled", spec_with(fmt()))]
    assert selected_name(candidates) == "enabled"


@pytest.mark.parametrize("auto_select", [False, None])
def test_a_runtime_without_auto_select_is_never_auto_selected(auto_select: bool | None) -> None:
    candidates = [sr("manual", spec_with(fmt(autoSelect=auto_select, priority=100))), csr("auto", spec_with(fmt()))]
    assert selected_name(candidates) == "auto"


def test_auto_select_on_a_format_that_does_not_match_does_not_qualify_another_format() -> None:
    other = fmt(modelArchitecture="MistralForCausalLM")
    candidates = [csr("mixed", spec_with(other, fmt(autoSelect=None)))]
    with pytest.raises(NoRuntimeFound):
        select_runtime(NAMESPACE, llama(), candidates)


def test_a_runtime_out_of_size_range_is_not_selected() -> None:
    candidates = [
        sr("too-small", spec_with(fmt(priority=10), size={"max": "3B"})),
        csr("fits", spec_with(fmt(), size={"min": "3B"})),
    ]
    assert selected_name(candidates) == "fits"


def test_selection_matches_the_runtimes_own_spec_without_inheritance() -> None:
    # The child declares no formats itself; only its parent does, so automatic selection cannot pick it.
    candidates = [sr("child", {"disabled": False}, parent="profile"), csr("plain", spec_with(fmt()))]
    chosen = select_runtime(NAMESPACE, llama(), candidates)
    assert chosen.ref.name == "plain"
    assert chosen.spec is candidates[1][1]["spec"]


def test_selection_filters_on_accelerator_classes() -> None:
    candidates = [
        sr("no-classes", spec_with(fmt(priority=5))),
        csr("h100", spec_with(fmt(), acceleratorRequirements={"acceleratorClasses": ["h100"]})),
    ]
    assert select_runtime(NAMESPACE, llama(), candidates, accelerator_classes={"h100"}).ref.name == "h100"


def test_no_runtime_found_lists_what_was_checked_and_why_each_was_excluded() -> None:
    candidates = [
        sr("disabled", spec_with(fmt(), disabled=True)),
        sr("manual", spec_with(fmt(autoSelect=False))),
        csr("small", spec_with(fmt(), size={"min": "1B", "max": "2B"})),
        csr("pytorch", spec_with(fmt(modelFormat={"name": "pytorch"}))),
        sr("elsewhere", spec_with(fmt()), namespace="other"),
    ]
    with pytest.raises(NoRuntimeFound) as caught:
        select_runtime(NAMESPACE, llama(), candidates)
    assert caught.value.message == (
        f"no runtime found to support model {MODEL} with format safetensors in namespace {NAMESPACE}"
        ". Checked 4 runtimes (2 namespace-scoped, 2 cluster-scoped)"
        ". Excluded runtimes: disabled (runtime is disabled)"
        "; manual (runtime does not have auto-select enabled for any matching supported format)"
        "; small (model size 3.21B is outside supported range [1B, 2B])"
        "; pytorch (model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported"
        " formats: format name mismatch (model=safetensors, runtime=pytorch))"
    )


def test_no_runtime_found_without_candidates_is_the_bare_sentence() -> None:
    with pytest.raises(NoRuntimeFound) as caught:
        select_runtime(NAMESPACE, llama(), [])
    assert (
        caught.value.message
        == f"no runtime found to support model {MODEL} with format safetensors in namespace {NAMESPACE}"
    )


def test_a_runtime_whose_score_is_not_positive_is_excluded() -> None:
    negative = fmt(modelFormat={"name": "safetensors", "version": "1.0.0", "weight": -5})
    with pytest.raises(NoRuntimeFound, match=r"Excluded runtimes: rt \(score -4 is not positive\)"):
        select_runtime(NAMESPACE, llama(), [csr("rt", spec_with(negative))])


def test_selection_needs_a_model_format() -> None:
    with pytest.raises(NoRuntimeFound) as caught:
        select_runtime(NAMESPACE, llama(format_name=""), [csr("rt", spec_with(fmt()))])
    assert caught.value.message == "invalid model specification: modelFormat.name: model format name is required"


# ---------------------------------------------------------------------------------------------------------
# Model resolution


class Models:
    """An in-memory ModelLookup that records what was asked."""

    def __init__(self, *models: dict[str, Any]) -> None:
        self.objects = {
            (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]): obj for obj in models
        }
        self.asked: list[tuple[str, str, str]] = []

    def get(self, kind: ModelKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.asked.append((kind, namespace, name))
        return self.objects.get((kind, namespace, name))


def model_object(kind: ModelKind, name: str = MODEL, *, disabled: bool | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if kind == BASE_MODEL:
        metadata["namespace"] = NAMESPACE
    body: dict[str, Any] = {"storage": {"storageUri": "hf://meta-llama/Llama-3.2-3B-Instruct"}, **spec}
    if disabled is not None:
        body["disabled"] = disabled
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata, "spec": body}


def test_resolve_model_prefers_the_base_model_in_the_namespace() -> None:
    models = Models(
        model_object(BASE_MODEL, modelParameterSize="1B"), model_object(CLUSTER_BASE_MODEL, modelParameterSize="3B")
    )
    resolved = resolve_model(isvc(), models)
    assert resolved is not None
    assert (resolved.kind, resolved.namespace, resolved.parameter_size) == (BASE_MODEL, NAMESPACE, "1B")
    assert models.asked == [(BASE_MODEL, NAMESPACE, MODEL)]


def test_resolve_model_falls_back_to_the_cluster_base_model() -> None:
    models = Models(
        model_object(CLUSTER_BASE_MODEL), model_object(BASE_MODEL) | {"metadata": {"name": MODEL, "namespace": "other"}}
    )
    resolved = resolve_model(isvc(), models)
    assert resolved is not None
    assert (resolved.kind, resolved.namespace) == (CLUSTER_BASE_MODEL, "")
    assert models.asked == [(BASE_MODEL, NAMESPACE, MODEL), (CLUSTER_BASE_MODEL, "", MODEL)]


@pytest.mark.parametrize("kind", [BASE_MODEL, CLUSTER_BASE_MODEL])
def test_resolve_model_rejects_a_disabled_model(kind: ModelKind) -> None:
    with pytest.raises(ModelError) as caught:
        resolve_model(isvc(), Models(model_object(kind, disabled=True)))
    error = caught.value
    assert (error.reason, error.failure_reason) == (MODEL_RECONCILE_ERROR, BASE_MODEL_DISABLED)
    assert error.message == f"specified base model {MODEL} is disabled"
    assert event_for_model_error(error) == ("ModelReconcileError", f"specified base model {MODEL} is disabled")


def test_resolve_model_accepts_a_model_with_disabled_false() -> None:
    assert resolve_model(isvc(), Models(model_object(CLUSTER_BASE_MODEL, disabled=False))) is not None


def test_resolve_model_reports_a_missing_model() -> None:
    with pytest.raises(ModelError) as caught:
        resolve_model(isvc(), Models())
    assert (caught.value.reason, caught.value.failure_reason) == (MODEL_RECONCILE_ERROR, BASE_MODEL_NOT_FOUND)
    assert caught.value.message == f"No BaseModel or ClusterBaseModel with the name: {MODEL}"


def test_an_isvc_without_a_model_that_names_a_runtime_resolves_to_no_model() -> None:
    models = Models(model_object(CLUSTER_BASE_MODEL))
    assert resolve_model(isvc(model=None, runtime_name="rt"), models) is None
    assert models.asked == []


def test_an_isvc_with_neither_model_nor_runtime_needs_a_model_reference() -> None:
    with pytest.raises(ModelError) as caught:
        resolve_model(isvc(model=None), Models())
    assert (caught.value.reason, caught.value.message) == (MODEL_RECONCILE_ERROR, "model reference is required")


def test_model_ref_reads_the_matching_fields_and_treats_empty_values_as_unset() -> None:
    obj = model_object(
        CLUSTER_BASE_MODEL,
        modelFormat={"name": "safetensors", "version": "1.0.0"},
        modelFramework={"name": "transformers", "version": "4.45.0.dev0"},
        modelArchitecture="LlamaForCausalLM",
        quantization="",
        modelParameterSize="3.21B",
    )
    assert model_ref(obj) == llama()


# ---------------------------------------------------------------------------------------------------------
# Events


@pytest.mark.parametrize(
    ("service", "chain_broken", "reason"),
    [
        (isvc(runtime_name="rt"), True, RUNTIME_VALIDATION_ERROR),
        (isvc(runtime_name="rt"), False, RUNTIME_VALIDATION_ERROR),
        (isvc(runtime_name="rt", autoSync=True), True, RUNTIME_VALIDATION_ERROR),
        (isvc(runtime_name="rt", autoSync=False), True, RUNTIME_PIN_ERROR),
        (isvc(runtime_name="rt", revision="rt-5d8f9c"), True, RUNTIME_PIN_ERROR),
        (isvc(runtime_name="rt", autoSync=False), False, RUNTIME_VALIDATION_ERROR),
    ],
)
def test_named_runtime_failures_with_a_model_name_runtime_and_model(
    service: dict[str, Any], chain_broken: bool, reason: str
) -> None:
    error = 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    assert event_for_named_runtime_failure(service, "sglang-llama-3-2-3b", MODEL, error, chain_broken=chain_broken) == (
        reason,
        "Runtime sglang-llama-3-2-3b does not support model llama-3-2-3b-instruct: " + error,
    )


@pytest.mark.parametrize("pinned", [{}, {"autoSync": False}])
def test_a_named_runtime_failure_without_spec_model_is_the_bare_error(pinned: dict[str, Any]) -> None:
    error = "inheritance cycle detected: [a a]"
    service = isvc(model=None, runtime_name="a", **pinned)
    assert event_for_named_runtime_failure(service, "a", None, error, chain_broken=True) == (RUNTIME_FETCH_ERROR, error)


def test_the_named_runtime_event_takes_the_model_name_from_the_isvc_when_not_given() -> None:
    reason, message = event_for_named_runtime_failure(
        isvc(runtime_name="rt"), "rt", None, RuntimeValidation("boom"), chain_broken=False
    )
    assert (reason, message) == (RUNTIME_VALIDATION_ERROR, f"Runtime rt does not support model {MODEL}: boom")


def test_the_selection_failure_event_names_the_model() -> None:
    assert event_for_selection_failure(MODEL, NoRuntimeFound("no runtime found")) == (
        RUNTIME_SELECTION_ERROR,
        f"Failed to find runtime for model {MODEL}: no runtime found",
    )


@pytest.mark.parametrize(
    ("runtime_fields", "pinned"),
    [
        ({}, False),
        ({"autoSync": True}, False),
        ({"autoSync": False}, True),
        ({"revision": "rt-1"}, True),
        ({"revision": ""}, False),
    ],
)
def test_is_pinned_means_auto_sync_false_or_a_revision(runtime_fields: dict[str, Any], pinned: bool) -> None:
    assert is_pinned(isvc(runtime_name="rt", **runtime_fields)) is pinned


def test_required_accelerator_classes_collects_every_source() -> None:
    service = isvc()
    service["metadata"]["annotations"] = {"ome.io/accelerator-class": "h100"}
    service["spec"]["acceleratorSelector"] = {"acceleratorClass": "a100"}
    service["spec"]["engine"] = {"acceleratorOverride": {"acceleratorClass": "mi300x"}}
    service["spec"]["decoder"] = {"acceleratorOverride": {"acceleratorClass": ""}}
    assert required_accelerator_classes(service) == {"h100", "a100", "mi300x"}
    assert required_accelerator_classes(isvc()) == frozenset()
