"""The structural schemas of the built-in kinds the embedded server decodes strictly.

kube-apiserver decodes a built-in object into its Go type: with `fieldValidation=Strict` (kubectl's default) a field
the type lacks is a 400 `strict decoding error: unknown field "..."`, with `Warn` a warning, and the field is
dropped either way. The embedded server has no Go types, so it takes the same fields from the pinned extract of
kube-apiserver's OpenAPI (`omectl.k8s_openapi`) and checks them with the schema code CRDs use. Only the fields are
taken from it: values are still checked by the server's own rules (quantities, ports, names).
"""

from __future__ import annotations

import functools
from typing import Any, Final

from omectl import k8s_openapi
from omectl.sim.apiserver.schema import StructuralSchema

# (group, kind) -> the definition kube-apiserver decodes it into, for every built-in kind the server serves at v1 but
# the CRDs and webhook configurations (their own rules check them, and JSONSchemaProps recurses).
_CORE: Final = (
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
DEFINITIONS: Final[dict[tuple[str, str], str]] = {
    **{("", kind): f"io.k8s.api.core.v1.{kind}" for kind in _CORE},
    ("apps", "ControllerRevision"): "io.k8s.api.apps.v1.ControllerRevision",
    ("apps", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("batch", "Job"): "io.k8s.api.batch.v1.Job",
    ("coordination.k8s.io", "Lease"): "io.k8s.api.coordination.v1.Lease",
    ("events.k8s.io", "Event"): "io.k8s.api.events.v1.Event",
    ("policy", "PodDisruptionBudget"): "io.k8s.api.policy.v1.PodDisruptionBudget",
    **{
        ("rbac.authorization.k8s.io", kind): f"io.k8s.api.rbac.v1.{kind}"
        for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    },
}


def builtin_schema(group: str, version: str, kind: str) -> StructuralSchema | None:
    """The schema strict decoding of this built-in kind uses, or None where every field is kept."""
    name = DEFINITIONS.get((group, kind))
    if name is None or version != "v1":
        return None
    return _compiled(name)


@functools.cache
def _compiled(name: str) -> StructuralSchema:
    return StructuralSchema(_free_form_objects_preserved(k8s_openapi.structural(name)))


def _free_form_objects_preserved(node: Any) -> Any:
    """An object the OpenAPI gives no fields (FieldsV1, raw JSON in Go) holds any field, as its Go type does."""
    if isinstance(node, dict):
        out = {key: _free_form_objects_preserved(value) for key, value in node.items()}
        if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    if isinstance(node, list):
        return [_free_form_objects_preserved(value) for value in node]
    return node
