"""The engine pipeline (`omectl.core.ome.pipeline`): model and runtime chosen, the named chain merged, the model
checked, the workloads rendered; what the engine reconciler and `runtime plan` both run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from omectl.core.ome.inheritance import ChainError
from omectl.core.ome.pipeline import CachedModels, CachedRuntimes, choose, merge_named, model_of, render
from omectl.core.ome.render import RUNTIME_REVISION_ANNOTATION
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeRef
from omectl.core.ome.selection import ModelError, NoRuntimeFound, RuntimeValidation

NAMESPACE = "team-a"


class DictStore:
    """A `Store` over a dict keyed by (namespace, name)."""

    def __init__(self, *objects: Mapping[str, Any]) -> None:
        self.objects = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((namespace, name))

    def list(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return [o for (ns, _), o in sorted(self.objects.items()) if namespace is None or ns == namespace]


def runtime(kind: str, name: str, spec: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if kind == SERVING_RUNTIME:
        metadata["namespace"] = NAMESPACE
    if parent:
        metadata["annotations"] = {"ome.io/inherit-from": parent}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata, "spec": spec}


def formats(auto_select: bool = True) -> list[dict[str, Any]]:
    return [{"modelFormat": {"name": "safetensors"}, "autoSelect": auto_select, "priority": 1}]


def model(name: str = "llama", format_name: str = "safetensors") -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": name},
        "spec": {"modelFormat": {"name": format_name}, "storage": {"path": "/models/llama"}},
    }


def isvc(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "svc", "namespace": NAMESPACE, "uid": "uid-1"},
        "spec": {"engine": {"minReplicas": 1}, **spec},
    }


def engine_image(objects: list[dict[str, Any]]) -> str:
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return str(next(c for c in containers if c["name"] == "ome-container")["image"])


BASE = runtime(
    CLUSTER_SERVING_RUNTIME,
    "base",
    {"supportedModelFormats": formats(), "engineConfig": {"runner": {"name": "ome-container", "image": "base:1"}}},
)
CHILD = runtime(
    SERVING_RUNTIME, "child", {"engineConfig": {"runner": {"name": "ome-container", "args": ["--x"]}}}, "base"
)
RUNTIMES = CachedRuntimes(DictStore(CHILD), DictStore(BASE))
MODELS = CachedModels(DictStore(), DictStore(model()))


def test_a_named_runtime_renders_its_merged_chain_with_the_revision_given() -> None:
    service = isvc({"runtime": {"name": "child"}, "model": {"name": "llama"}})
    choice = choose(service, model_of(service, MODELS), RUNTIMES)
    assert (choice.ref, choice.automatic) == (RuntimeRef(SERVING_RUNTIME, NAMESPACE, "child"), False)
    spec, chain = merge_named(choice, RUNTIMES)
    assert chain == (RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "base"), RuntimeRef(SERVING_RUNTIME, NAMESPACE, "child"))
    assert spec["engineConfig"]["runner"] == {"name": "ome-container", "image": "base:1", "args": ["--x"]}
    objects = render(service, choice, spec, revision="child-0123456789")
    assert engine_image(objects) == "base:1"
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["annotations"][RUNTIME_REVISION_ANNOTATION] == "child-0123456789"


def test_automatic_selection_renders_the_chosen_runtimes_own_spec_without_inheritance() -> None:
    own = runtime(
        SERVING_RUNTIME,
        "own",
        {"supportedModelFormats": formats(), "engineConfig": {"runner": {"name": "ome-container", "image": "own:2"}}},
        "base",
    )
    service = isvc({"model": {"name": "llama"}})
    choice = choose(service, model_of(service, MODELS), CachedRuntimes(DictStore(own), DictStore(BASE)))
    assert choice.ref == RuntimeRef(SERVING_RUNTIME, NAMESPACE, "own")  # the namespace's runtimes come first
    assert choice.own_spec == own["spec"]
    objects = render(service, choice, choice.own_spec)
    assert engine_image(objects) == "own:2"
    assert all(RUNTIME_REVISION_ANNOTATION not in (o["metadata"].get("annotations") or {}) for o in objects)


def test_a_named_runtime_that_does_not_support_the_model_is_refused_before_rendering() -> None:
    other = CachedModels(DictStore(), DictStore(model(format_name="gguf")))
    service = isvc({"runtime": {"name": "child"}, "model": {"name": "llama"}})
    choice = choose(service, model_of(service, other), RUNTIMES)
    spec, _ = merge_named(choice, RUNTIMES)
    with pytest.raises(RuntimeValidation, match="runtime child does not support model llama"):
        render(service, choice, spec)


def test_a_named_runtime_without_a_model_is_rendered_unchecked() -> None:
    service = isvc({"runtime": {"name": "child"}})
    model_none = model_of(service, MODELS)
    assert (model_none.ref, model_none.obj) == (None, None)
    choice = choose(service, model_none, RUNTIMES)
    assert engine_image(render(service, choice, merge_named(choice, RUNTIMES)[0])) == "base:1"


def test_each_step_raises_its_own_error() -> None:
    with pytest.raises(ModelError, match="No BaseModel or ClusterBaseModel with the name: missing"):
        model_of(isvc({"model": {"name": "missing"}}), MODELS)
    named_missing = isvc({"runtime": {"name": "nope"}})
    with pytest.raises(RuntimeValidation, match="runtime nope not found in namespace team-a or at cluster scope"):
        choose(named_missing, model_of(named_missing, MODELS), RUNTIMES)
    unselectable = isvc({"model": {"name": "llama"}})
    only_manual = runtime(CLUSTER_SERVING_RUNTIME, "manual", {"supportedModelFormats": formats(auto_select=False)})
    with pytest.raises(NoRuntimeFound, match="no runtime found to support model llama"):
        choose(unselectable, model_of(unselectable, MODELS), CachedRuntimes(DictStore(), DictStore(only_manual)))
    orphan = runtime(SERVING_RUNTIME, "orphan", {}, "gone")
    broken = isvc({"runtime": {"name": "orphan"}})
    choice = choose(broken, model_of(broken, MODELS), CachedRuntimes(DictStore(orphan), DictStore()))
    with pytest.raises(ChainError, match='inherit-from parent "gone" not found'):
        merge_named(choice, CachedRuntimes(DictStore(orphan), DictStore()))
