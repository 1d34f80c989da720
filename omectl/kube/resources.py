"""`ResourceRef`: which REST path serves a kind, and the kinds the controller reads and writes."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "AIM_ARTIFACTS",
    "AIM_CLUSTER_MODELS",
    "AIM_CLUSTER_MODEL_SOURCES",
    "AIM_CLUSTER_PROFILES",
    "AIM_CLUSTER_RUNTIME_CONFIGS",
    "AIM_CLUSTER_SERVICE_TEMPLATES",
    "AIM_MODELS",
    "AIM_PROFILES",
    "AIM_PROFILE_CACHES",
    "AIM_PROFILE_SETS",
    "AIM_RUNTIME_CONFIGS",
    "AIM_SERVICES",
    "AIM_SERVICE_TEMPLATES",
    "AIM_TEMPLATE_CACHES",
    "BASE_MODELS",
    "CLUSTER_BASE_MODELS",
    "CLUSTER_SERVING_RUNTIMES",
    "CONFIG_MAPS",
    "CONTROLLER_REVISIONS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEPLOYMENTS",
    "EVENTS",
    "FLEET_RUNTIMES",
    "HORIZONTAL_POD_AUTOSCALERS",
    "HTTP_ROUTES",
    "INFERENCE_SERVICES",
    "JOBS",
    "KSERVE_INFERENCE_SERVICES",
    "LEADER_WORKER_SETS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVING_RUNTIMES",
    "VALIDATING_WEBHOOK_CONFIGURATIONS",
    "ResourceRef",
]


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """A served resource: group ("" for core), version, plural, kind and whether objects live in a namespace."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """`Kind.group` as Kubernetes spells a GroupKind (`ConfigMap` for core kinds)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def base_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path; a namespaced kind without a namespace gives the all-namespaces collection."""
        if subresource and not name:
            raise ValueError(f"{self.plural}: a subresource needs an object name")
        if namespace and not self.namespaced:
            raise ValueError(f"{self.plural} is cluster-scoped; it takes no namespace (got {namespace!r})")
        parts = [self.base_path]
        if namespace:
            parts.append(f"/namespaces/{quote(namespace, safe='')}")
        parts.append(f"/{self.plural}")
        if name:
            parts.append(f"/{quote(name, safe='')}")
        if subresource:
            parts.append(f"/{subresource}")
        return "".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}" if self.group else f"{self.plural}/{self.version}"


_OME = "ome.io"
_OME_VERSION = "v1beta1"

SERVING_RUNTIMES = ResourceRef(_OME, _OME_VERSION, "servingruntimes", "ServingRuntime", True)
CLUSTER_SERVING_RUNTIMES = ResourceRef(_OME, _OME_VERSION, "clusterservingruntimes", "ClusterServingRuntime", False)
INFERENCE_SERVICES = ResourceRef(_OME, _OME_VERSION, "inferenceservices", "InferenceService", True)
BASE_MODELS = ResourceRef(_OME, _OME_VERSION, "basemodels", "BaseModel", True)
CLUSTER_BASE_MODELS = ResourceRef(_OME, _OME_VERSION, "clusterbasemodels", "ClusterBaseModel", False)

CONFIG_MAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
SECRETS = ResourceRef("", "v1", "secrets", "Secret", True)
EVENTS = ResourceRef("", "v1", "events", "Event", True)
PODS = ResourceRef("", "v1", "pods", "Pod", True)
NAMESPACES = ResourceRef("", "v1", "namespaces", "Namespace", False)
LEASES = ResourceRef("coordination.k8s.io", "v1", "leases", "Lease", True)
DEPLOYMENTS = ResourceRef("apps", "v1", "deployments", "Deployment", True)
SERVICES = ResourceRef("", "v1", "services", "Service", True)
LEADER_WORKER_SETS = ResourceRef("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", True)
CONTROLLER_REVISIONS = ResourceRef("apps", "v1", "controllerrevisions", "ControllerRevision", True)
VALIDATING_WEBHOOK_CONFIGURATIONS = ResourceRef(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
)
CUSTOM_RESOURCE_DEFINITIONS = ResourceRef(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)

# AMD AIM (aim.eai.amd.com) and the third-party kinds an AIMService renders; informers for them are optional.
AIM_SERVICES = ResourceRef("aim.eai.amd.com", "v1alpha2", "aimservices", "AIMService", True)
AIM_RUNTIME_CONFIGS = ResourceRef("aim.eai.amd.com", "v1alpha1", "aimruntimeconfigs", "AIMRuntimeConfig", True)
AIM_CLUSTER_RUNTIME_CONFIGS = ResourceRef(
    "aim.eai.amd.com", "v1alpha1", "aimclusterruntimeconfigs", "AIMClusterRuntimeConfig", False
)
KSERVE_INFERENCE_SERVICES = ResourceRef("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService", True)
HTTP_ROUTES = ResourceRef("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", True)
PERSISTENT_VOLUME_CLAIMS = ResourceRef("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
HORIZONTAL_POD_AUTOSCALERS = ResourceRef(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True
)

# The AIM v1alpha2 kinds besides AIMService (docs/aim-resources.md) and the Jobs they run (controller/aim/consumers.py).
_AIM = "aim.eai.amd.com"
AIM_MODELS = ResourceRef(_AIM, "v1alpha2", "aimmodels", "AIMModel", True)
AIM_CLUSTER_MODELS = ResourceRef(_AIM, "v1alpha2", "aimclustermodels", "AIMClusterModel", False)
AIM_PROFILES = ResourceRef(_AIM, "v1alpha2", "aimprofiles", "AIMProfile", True)
AIM_CLUSTER_PROFILES = ResourceRef(_AIM, "v1alpha2", "aimclusterprofiles", "AIMClusterProfile", False)
AIM_PROFILE_SETS = ResourceRef(_AIM, "v1alpha2", "aimprofilesets", "AIMProfileSet", True)
AIM_PROFILE_CACHES = ResourceRef(_AIM, "v1alpha2", "aimprofilecaches", "AIMProfileCache", True)
AIM_ARTIFACTS = ResourceRef(_AIM, "v1alpha2", "aimartifacts", "AIMArtifact", True)
AIM_CLUSTER_MODEL_SOURCES = ResourceRef(_AIM, "v1alpha2", "aimclustermodelsources", "AIMClusterModelSource", False)
JOBS = ResourceRef("batch", "v1", "jobs", "Job", True)
ROLE_BINDINGS = ResourceRef("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
PODS = ResourceRef("", "v1", "pods", "Pod", True)
"""The pods of an AIMArtifact's Jobs (watched by the label `aim.eai.amd.com/artifact`): why a download failed, the
size a check-size Job found."""
# Upstream's legacy template path (v1alpha1 only; controller/aim/legacy.py) and the Nodes whose GPUs a template needs.
AIM_SERVICE_TEMPLATES = ResourceRef(_AIM, "v1alpha1", "aimservicetemplates", "AIMServiceTemplate", True)
AIM_CLUSTER_SERVICE_TEMPLATES = ResourceRef(
    _AIM, "v1alpha1", "aimclusterservicetemplates", "AIMClusterServiceTemplate", False
)
AIM_TEMPLATE_CACHES = ResourceRef(_AIM, "v1alpha1", "aimtemplatecaches", "AIMTemplateCache", True)
NODES = ResourceRef("", "v1", "nodes", "Node", False)
# The hub's own kind (omectl.api.fleet): runtimes applied across the fleet.
FLEET_RUNTIMES = ResourceRef("fleet.omectl.io", "v1alpha1", "fleetruntimes", "FleetRuntime", False)
