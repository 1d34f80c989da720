"""Kubernetes core types (PodSpec, Container, Probe, Toleration, ...) as CRD structural schemas, derived from the
Kubernetes OpenAPI v3 definitions rather than written by hand.

`k8s-openapi.json` next to this module is a pinned extract of kube-apiserver's published definitions (the types
reachable from `ROOTS`, descriptions removed; the version is recorded in the file). Regenerate it from a Kubernetes
source tree (`make envtest` leaves one in the Go module cache):

    python -m omectl.k8s_openapi ~/go/pkg/mod/k8s.io/kubernetes@v1.34.4

`structural(name)` turns one definition into the schema controller-gen would write for the Go type: references
inlined, `Quantity` and `IntOrString` as `x-kubernetes-int-or-string` (quantities with their pattern), and only the
defaults the API server's own defaulting markers give (a zero-value default of a required field, or `{}` on an
object, is an artefact of the OpenAPI generator and is dropped).
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

DATA_FILE: Final = Path(__file__).with_name("k8s-openapi.json")
ROOTS: Final = (
    "io.k8s.api.core.v1.PodSpec",
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.apps.v1.DeploymentStrategy",
    # the built-in kinds the embedded server decodes strictly, as kube-apiserver decodes them into their Go types
    *(
        f"io.k8s.api.core.v1.{kind}"
        for kind in (
            "ConfigMap",
            "Event",
            "Namespace",
            "Node",
            "PersistentVolumeClaim",
            "Pod",
            "Secret",
            "Service",
            "ServiceAccount",
        )
    ),
    "io.k8s.api.apps.v1.ControllerRevision",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.batch.v1.Job",
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.events.v1.Event",
    "io.k8s.api.policy.v1.PodDisruptionBudget",
    *(f"io.k8s.api.rbac.v1.{kind}" for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")),
)
_SPEC_FILES: Final = (
    "api__v1_openapi.json",
    "apis__apps__v1_openapi.json",
    "apis__batch__v1_openapi.json",
    "apis__coordination.k8s.io__v1_openapi.json",
    "apis__events.k8s.io__v1_openapi.json",
    "apis__policy__v1_openapi.json",
    "apis__rbac.authorization.k8s.io__v1_openapi.json",
)
_REF_PREFIX: Final = "#/components/schemas/"

QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_INT_OR_STRING: Final = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
_SPECIAL: Final[dict[str, dict[str, Any]]] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {**_INT_OR_STRING, "pattern": QUANTITY_PATTERN},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": _INT_OR_STRING,
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"type": "string", "format": "date-time"},
}
# Keys of the published definitions a CRD schema does not take (strategic-merge hints, docs, union markers).
_DROPPED: Final = frozenset(
    (
        "description",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-unions",
        "x-kubernetes-group-version-kind",
    )
)


# Defaults given in Go as `+default=ref(...)`: published in the OpenAPI, but controller-gen does not write them.
_NO_CRD_DEFAULT: Final[dict[str, tuple[str, ...]]] = {
    "io.k8s.api.core.v1.AzureDiskVolumeSource": ("cachingMode", "kind"),
}


class UnknownDefinition(KeyError):
    """No Kubernetes definition of that name in the pinned extract."""


@functools.cache
def _extract() -> dict[str, Any]:
    content: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return content


def kubernetes_version() -> str:
    return str(_extract()["kubernetesVersion"])


def definitions() -> dict[str, Any]:
    return dict(_extract()["schemas"])


def structural(name: str) -> dict[str, Any]:
    """The structural schema of the Kubernetes definition `name` (a fresh copy)."""
    return copy.deepcopy(_structural(name))


def structural_property(name: str, prop: str) -> dict[str, Any]:
    """The structural schema of the property `prop` of the definition `name` (e.g. PodSpec's `tolerations`)."""
    properties = _structural(name).get("properties", {})
    if prop not in properties:
        raise UnknownDefinition(f"{name} has no property {prop!r}")
    return copy.deepcopy(properties[prop])


@functools.cache
def _structural(name: str) -> dict[str, Any]:
    return _convert_definition(name, ())


def _convert_definition(name: str, seen: tuple[str, ...]) -> dict[str, Any]:
    if name in _SPECIAL:
        return copy.deepcopy(_SPECIAL[name])
    schemas = _extract()["schemas"]
    if name not in schemas:
        raise UnknownDefinition(name)
    if name in seen:
        raise ValueError(f"recursive Kubernetes type through {name}: structural schemas cannot recurse")
    return _convert(schemas[name], (*seen, name))


def _convert(node: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    node = dict(node)
    target = node.pop("$ref", None)
    all_of = node.pop("allOf", None)
    if all_of is not None:
        if len(all_of) != 1 or "$ref" not in all_of[0]:
            raise ValueError(f"unsupported allOf {all_of!r}")
        target = all_of[0]["$ref"]
    out: dict[str, Any] = {}
    if target is not None:
        out = _convert_definition(target.removeprefix(_REF_PREFIX), seen)
    required = set(node.get("required", ()))
    kept_defaults = _NO_CRD_DEFAULT.get(seen[-1] if seen else "", ())
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "properties":
            out["properties"] = {
                prop: _property(child, seen, required=prop in required or prop in kept_defaults)
                for prop, child in value.items()
            }
        elif key == "items":
            out["items"] = _element(value, seen)
        elif key == "additionalProperties":
            out["additionalProperties"] = _element(value, seen)
        elif key == "default":
            if value != {}:
                out["default"] = copy.deepcopy(value)
        else:
            out[key] = copy.deepcopy(value)
    if "properties" in out or "additionalProperties" in out:
        out.setdefault("type", "object")
    return out


def _element(node: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    out = _convert(node, seen)
    out.pop("default", None)  # an element's zero value: the generator's, never a defaulting marker's
    return out


def _property(node: dict[str, Any], seen: tuple[str, ...], *, required: bool) -> dict[str, Any]:
    out = _convert(node, seen)
    if required:
        out.pop("default", None)  # the zero value the generator writes for a required field
    return out


# ---------------------------------------------------------------------------------------------------------
# regenerating the pinned extract


def _reachable(schemas: dict[str, Any], roots: Sequence[str]) -> set[str]:
    found: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in found or name in _SPECIAL:
            continue
        found.add(name)
        stack.extend(ref.removeprefix(_REF_PREFIX) for ref in _refs(schemas[name]))
    return found


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def _without_docs(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_docs(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_docs(v) for v in node]
    return node


def extract(kubernetes_tree: Path) -> dict[str, Any]:
    """The pinned extract's content, from a Kubernetes source tree's `api/openapi-spec/v3`."""
    spec_dir = kubernetes_tree / "api" / "openapi-spec" / "v3"
    schemas: dict[str, Any] = {}
    for file_name in _SPEC_FILES:
        schemas.update(json.loads((spec_dir / file_name).read_text(encoding="utf-8"))["components"]["schemas"])
    keep = _reachable(schemas, ROOTS) - set(_SPECIAL)
    version = kubernetes_tree.resolve().name.rpartition("@")[2] or "unknown"
    return {
        "kubernetesVersion": version,
        "source": f"kubernetes {version} api/openapi-spec/v3/{{{','.join(_SPEC_FILES)}}}, descriptions removed",
        "roots": list(ROOTS),
        "schemas": {name: _without_docs(schemas[name]) for name in sorted(keep)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m omectl.k8s_openapi KUBERNETES_SOURCE_TREE", file=sys.stderr)
        return 2
    content = extract(Path(args[0]))
    DATA_FILE.write_text(json.dumps(content, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {DATA_FILE} ({len(content['schemas'])} definitions, kubernetes {content['kubernetesVersion']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
