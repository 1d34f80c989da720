"""The kinds a cluster serves: built-ins, plus one entry per established CustomResourceDefinition version."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass
class PrinterColumn:
    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass
class ResourceType:
    """One served resource (a group/version/plural) and the rules its objects follow."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    has_status: bool = False
    builtin: bool = True
    # Built-ins with generation: CRDs, apps and batch types. Every custom resource has it.
    generation: bool = False
    # The CRD version's openAPIV3Schema (None: no validation, keep every field).
    schema: dict[str, Any] | None = None
    printer_columns: list[PrinterColumn] = field(default_factory=list)
    # Extra field-selector labels beyond metadata.name / metadata.namespace (events add their own).
    field_labels: tuple[str, ...] = ()
    # The other versions of the same storage (served as identical views); the key shares one store.
    storage_key: tuple[str, str] = ("", "")
    verbs: list[str] = field(default_factory=lambda: list(ALL_VERBS))

    def __post_init__(self) -> None:
        if self.storage_key == ("", ""):
            self.storage_key = (self.group, self.plural)

    @cached_property  # built once: read on every request
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property  # built once: read on every request
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @cached_property  # built once: read on every request
    def qualified_plural(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @cached_property  # built once: read on every request
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def base_path(self, namespace: str | None) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"
        if self.namespaced and namespace:
            return f"{prefix}/namespaces/{namespace}/{self.plural}"
        return f"{prefix}/{self.plural}"


EVENT_FIELD_LABELS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)


def builtin_types() -> list[ResourceType]:
    """The built-in kinds the embedded server serves (only the fields omectl reads and writes matter)."""
    rt = ResourceType
    return [
        rt("", "v1", "Namespace", "namespaces", "namespace", False, ["ns"], has_status=True),
        rt("", "v1", "ConfigMap", "configmaps", "configmap", True, ["cm"]),
        rt("", "v1", "Secret", "secrets", "secret", True),
        rt("", "v1", "Event", "events", "event", True, ["ev"], field_labels=EVENT_FIELD_LABELS),
        rt("", "v1", "Service", "services", "service", True, ["svc"], ["all"], has_status=True),
        rt(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            "persistentvolumeclaim",
            True,
            ["pvc"],
            has_status=True,
        ),
        rt("", "v1", "Node", "nodes", "node", False, ["no"], has_status=True),
        rt("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ["sa"]),
        rt("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
        rt("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
        rt("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False),
        rt("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", False),
        rt(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            "poddisruptionbudget",
            True,
            ["pdb"],
            has_status=True,
            generation=True,
        ),
        rt("", "v1", "Pod", "pods", "pod", True, ["po"], ["all"], has_status=True),
        rt(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            "event",
            True,
            ["ev"],
            storage_key=("", "events"),
            field_labels=EVENT_FIELD_LABELS,
        ),
        rt("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
        rt(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            "deployment",
            True,
            ["deploy"],
            ["all"],
            has_status=True,
            generation=True,
        ),
        rt("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True),
        rt("batch", "v1", "Job", "jobs", "job", True, [], ["all"], has_status=True, generation=True),
        rt(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            True,
            ["hpa"],
            ["all"],
            has_status=True,
            generation=True,
        ),
        rt(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinition",
            False,
            ["crd", "crds"],
            has_status=True,
            generation=True,
        ),
        rt(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            False,
            generation=True,
        ),
    ]


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The served versions of a CRD, the storage version first. All share one store."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    plural = names.get("plural", "")
    kind = names.get("kind", "")
    out: list[ResourceType] = []
    versions = sorted(spec.get("versions") or [], key=lambda v: not v.get("storage"))
    for version in versions:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        columns = [
            PrinterColumn(
                name=c.get("name", ""),
                type=c.get("type", "string"),
                json_path=c.get("jsonPath", ""),
                format=c.get("format", ""),
                description=c.get("description", ""),
                priority=int(c.get("priority", 0) or 0),
            )
            for c in version.get("additionalPrinterColumns") or []
        ]
        out.append(
            ResourceType(
                group=group,
                version=version.get("name", ""),
                kind=kind,
                plural=plural,
                singular=names.get("singular") or kind.lower(),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=list(names.get("shortNames") or []),
                categories=list(names.get("categories") or []),
                has_status="status" in subresources,
                builtin=False,
                generation=True,
                schema=schema,
                printer_columns=columns,
                storage_key=(group, plural),
            )
        )
    return out


class TypeRegistry:
    """The types one cluster serves right now. `revision` changes whenever the set changes."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}  # CRD name -> its served versions
        self.revision = 0
        for rt in builtin_types():
            self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def storage_version(self, key: tuple[str, str]) -> ResourceType | None:
        """The version objects of a kind are stored in (the first served version for a CRD)."""
        crd = self._crd_types.get(f"{key[1]}.{key[0]}")
        if crd:
            return crd[0]
        for rt in self._by_gvr.values():
            if rt.builtin and (rt.group, rt.plural) == key:
                return rt
        return None

    def crd_types(self, crd_name: str) -> list[ResourceType]:
        return self._crd_types.get(crd_name, [])

    def set_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        for rt in self._crd_types.pop(crd_name, []):
            self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
        if types:
            self._crd_types[crd_name] = types
            for rt in types:
                self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self.revision += 1

    def find_by_kind(self, group: str, kind: str) -> ResourceType | None:
        for rt in self._by_gvr.values():
            if rt.group == group and rt.kind == kind:
                return rt
        return None
