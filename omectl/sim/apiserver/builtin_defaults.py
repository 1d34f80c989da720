"""The defaults kube-apiserver gives the pod templates of the built-in workloads it serves (Pod, Deployment, Job),
those workloads' own fields, Services and PersistentVolumeClaims, before it validates and stores them.

The real server decodes into its Go types and runs their defaulting functions, so an object is stored, and
answered, with fields its writer never sent: a container's `imagePullPolicy` (Always for an untagged or `:latest`
image, else IfNotPresent), `terminationMessagePath` and `terminationMessagePolicy`, `resources: {}`, a port's
`protocol`; a pod's `restartPolicy`, `dnsPolicy`, `schedulerName`, `securityContext: {}` and
`terminationGracePeriodSeconds`; a Deployment's `replicas`, `strategy`, `revisionHistoryLimit` and
`progressDeadlineSeconds`; a Job's `parallelism`, `completions`, `backoffLimit`, `completionMode`, `suspend` and
`podReplacementPolicy`; a Service's `type` (ClusterIP), `sessionAffinity` (None; a ClientIP affinity's timeout),
`internalTrafficPolicy`, `externalTrafficPolicy` (NodePort and LoadBalancer), `allocateLoadBalancerNodePorts`, and
each port's `protocol` and `targetPort` (the port); a claim's `volumeMode` (Filesystem) and `status.phase`
(Pending); a Pod container's requests of what it limits; a role binding's `roleRef.apiGroup` and its User and
Group subjects' `apiGroup`; a webhook configuration's `failurePolicy`, `matchPolicy`, selectors, `timeoutSeconds`
and each rule's `scope` (`omectl.sim.admission.config`). What a new object gets beyond its defaults is
`create_rules.py`'s, what a Service's storage allocates (cluster IPs, node ports) `service_allocation.py`'s. The same
happens here, in place, only where a field is absent: a value the writer set is never changed. An applied
configuration is not defaulted, its merged result is (api.py), so an applier never owns a default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omectl.sim.admission.config import default_webhook_configuration

Obj = dict[str, Any]

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_POD_DEFAULTS: dict[str, Any] = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
_VOLUME_MODES = ("configMap", "secret", "projected", "downwardAPI")
_DEFAULT_MODE = 0o644


def apply_builtin_defaults(group: str, kind: str, obj: Obj) -> None:
    """Fill the defaults of a built-in workload in place; other kinds are left alone."""
    defaulting = _KINDS.get((group, kind))
    if defaulting is not None:
        defaulting(obj)


def image_pull_policy(image: str) -> str:
    """Always for an image without a tag or tagged `latest`, else IfNotPresent (a digest counts as a tag)."""
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    _, colon, tag = last.partition(":")
    return "Always" if not colon or tag == "latest" else "IfNotPresent"


def _section(obj: Obj, key: str) -> Obj | None:
    value = obj.get(key)
    return value if isinstance(value, dict) else None


def _fill(obj: Obj, defaults: dict[str, Any]) -> None:
    for key, value in defaults.items():
        if obj.get(key) is None or obj.get(key) == "":
            obj[key] = dict(value) if isinstance(value, dict) else value


def _pod_spec(pod: Obj) -> None:
    _fill(pod, _POD_DEFAULTS)
    for field in _CONTAINER_LISTS:
        for container in pod.get(field) or []:
            if isinstance(container, dict):
                _container(container)
    for volume in pod.get("volumes") or []:
        if isinstance(volume, dict):
            _volume(volume)


def _container(container: Obj) -> None:
    image = container.get("image")
    if not container.get("imagePullPolicy") and isinstance(image, str) and image:
        container["imagePullPolicy"] = image_pull_policy(image)
    _fill(container, {"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
    if container.get("resources") is None:
        container["resources"] = {}
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            _fill(port, {"protocol": "TCP"})
    for entry in container.get("env") or []:
        value_from = _section(entry, "valueFrom") if isinstance(entry, dict) else None
        field_ref = _section(value_from, "fieldRef") if value_from is not None else None
        if field_ref is not None:
            _fill(field_ref, {"apiVersion": "v1"})
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _section(container, name)
        if probe is not None:
            _probe(probe)


def _probe(probe: Obj) -> None:
    _fill(probe, _PROBE_DEFAULTS)
    http_get = _section(probe, "httpGet")
    if http_get is not None:
        _fill(http_get, {"path": "/", "scheme": "HTTP"})


def _volume(volume: Obj) -> None:
    for source in _VOLUME_MODES:
        section = _section(volume, source)
        if section is not None:
            _fill(section, {"defaultMode": _DEFAULT_MODE})


def _template(owner: Obj) -> None:
    spec = _section(owner, "spec")
    template = _section(spec, "template") if spec is not None else None
    pod = _section(template, "spec") if template is not None else None
    if pod is not None:
        _pod_spec(pod)


def _pod(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        _pod_spec(spec)
        _fill(spec, {"enableServiceLinks": True})
        for field in ("initContainers", "containers"):
            for container in spec.get(field) or []:
                resources = _section(container, "resources") if isinstance(container, dict) else None
                if resources is not None:
                    _requests_from_limits(resources)


def _requests_from_limits(resources: Obj) -> None:
    """A Pod's container requests what it limits unless it says otherwise (SetDefaults_Pod; templates are not)."""
    limits = _section(resources, "limits")
    if not limits:
        return
    requests = resources.setdefault("requests", {})
    if isinstance(requests, dict):
        for name, quantity in limits.items():
            requests.setdefault(name, quantity)


def _role_binding(obj: Obj) -> None:
    role_ref = _section(obj, "roleRef")
    if role_ref is not None:
        _fill(role_ref, {"apiGroup": _RBAC_GROUP})
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group"):
            _fill(subject, {"apiGroup": _RBAC_GROUP})


_RBAC_GROUP = "rbac.authorization.k8s.io"


def _deployment(obj: Obj) -> None:
    _template(obj)
    spec = _section(obj, "spec")
    if spec is None:
        return
    _fill(spec, {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600})
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        _fill(strategy, {"type": "RollingUpdate"})
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                _fill(rolling, {"maxUnavailable": "25%", "maxSurge": "25%"})


def _job(obj: Obj) -> None:
    _template(obj)
    spec = _section(obj, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _fill(spec, {"parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False})
    _fill(spec, {"podReplacementPolicy": "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"})


def _service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    _fill(spec, {"type": "ClusterIP", "sessionAffinity": "None"})
    if spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {})
        client_ip = config.setdefault("clientIP", {}) if isinstance(config, dict) else None
        if isinstance(client_ip, dict):
            _fill(client_ip, {"timeoutSeconds": _CLIENT_IP_TIMEOUT})
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            _fill(port, {"protocol": "TCP"})
            if not port.get("targetPort") and port.get("port") is not None:
                port["targetPort"] = port["port"]
    if spec["type"] != "ExternalName":
        _fill(spec, {"internalTrafficPolicy": "Cluster"})
    if spec["type"] in ("NodePort", "LoadBalancer"):
        _fill(spec, {"externalTrafficPolicy": "Cluster"})
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _persistent_volume_claim(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        _fill(spec, {"volumeMode": "Filesystem"})
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        _fill(status, {"phase": "Pending"})


_CLIENT_IP_TIMEOUT = 10800  # seconds: kube's DefaultClientIPServiceAffinitySeconds
_KINDS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("", "Pod"): _pod,
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _persistent_volume_claim,
    (_RBAC_GROUP, "RoleBinding"): _role_binding,
    (_RBAC_GROUP, "ClusterRoleBinding"): _role_binding,
    ("apps", "Deployment"): _deployment,
    ("batch", "Job"): _job,
    # every write, not only a create: a re-applied rule list replaces the stored one and gets its `scope` again
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): default_webhook_configuration,
}
