"""What kube-apiserver checks in the pod templates of the built-in workloads it serves (Pod, Deployment, Job), and
in a Service's ports (`service_errors`).

Two stages, as there: decoding into the Go types first, where a resource quantity that does not parse is a 400
BadRequest before anything is validated (`quantity_error`); then validation, a 422 Invalid with field paths
(`workload_errors`): every container needs a name and an image, and a Deployment needs a selector that matches
its template's labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from omectl.sim.apiserver.errors import FieldError

QUANTITY_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
# What resource.ParseQuantity accepts: a decimal number, then a binary or decimal SI suffix or an exponent
_QUANTITY = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$")

# kind -> path of the pod spec in the object
_POD_SPECS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
}
_CONTAINER_LISTS = ("initContainers", "containers")


def serves_pod_template(group: str, kind: str) -> bool:
    return (group, kind) in _POD_SPECS


def quantity_error(group: str, kind: str, version: str, obj: Mapping[str, Any]) -> str | None:
    """The 400 message when a resource quantity of the object's pod spec does not parse, else None."""
    pod = _pod_spec(group, kind, obj)
    if pod is None:
        return None
    for _path, container in _containers(pod):
        resources = _mapping(container.get("resources"))
        for section in ("limits", "requests"):
            for value in _mapping(resources.get(section)).values():
                if not _is_quantity(value):
                    return f'{kind} in version "{version}" cannot be handled as a {kind}: {QUANTITY_MESSAGE}'
    for volume in _list(pod.get("volumes")):
        size = _mapping(_mapping(volume).get("emptyDir")).get("sizeLimit")
        if size is not None and not _is_quantity(size):
            return f'{kind} in version "{version}" cannot be handled as a {kind}: {QUANTITY_MESSAGE}'
    return None


def workload_errors(group: str, kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    """The field errors of a workload's pod template (containers, and a Deployment's selector)."""
    path = _POD_SPECS.get((group, kind))
    pod = _pod_spec(group, kind, obj)
    if path is None or pod is None:
        return []
    prefix = ".".join(path)
    errors: list[FieldError] = []
    if (group, kind) == ("apps", "Deployment"):
        errors += _selector_errors(obj)
    if not _list(pod.get("containers")):
        errors.append(FieldError("Required", f"{prefix}.containers"))
    for container_path, container in _containers(pod):
        if not container.get("name"):
            errors.append(FieldError("Required", f"{prefix}.{container_path}.name"))
        if not container.get("image"):
            errors.append(FieldError("Required", f"{prefix}.{container_path}.image"))
    return errors


_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PORT_RANGE = "must be between 1 and 65535, inclusive"


def service_errors(service: Mapping[str, Any]) -> list[FieldError]:
    """A Service's port errors, in kube-apiserver's order: ports required (unless headless or ExternalName),
    names required when there are several and unique, port and targetPort numbers in range, known protocols."""
    spec = _mapping(service.get("spec"))
    ports = _list(spec.get("ports"))
    errors: list[FieldError] = []
    if not ports and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
        errors.append(FieldError("Required", "spec.ports"))
    names: set[str] = set()
    for index, raw in enumerate(ports):
        port, path = _mapping(raw), f"spec.ports[{index}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            errors.append(FieldError("Required", f"{path}.name"))
        elif name in names:
            errors.append(FieldError("Duplicate", f"{path}.name", value=name))
        names.add(name)
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            errors.append(FieldError("Invalid", f"{path}.port", _PORT_RANGE, number if number is not None else 0))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in _PROTOCOLS:
            errors.append(FieldError("NotSupported", f"{path}.protocol", value=protocol, supported=_PROTOCOLS))
        target = port.get("targetPort", number)  # defaulted to the port before validation, as there
        if isinstance(target, int) and not isinstance(target, bool) and not 1 <= target <= 65535:
            errors.append(FieldError("Invalid", f"{path}.targetPort", _PORT_RANGE, target))
    return errors


def _selector_errors(deployment: Mapping[str, Any]) -> list[FieldError]:
    spec = _mapping(deployment.get("spec"))
    selector = spec.get("selector")
    if not isinstance(selector, Mapping) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return [FieldError("Required", "spec.selector")]
    labels = _mapping(_mapping(_mapping(spec.get("template")).get("metadata")).get("labels"))
    match_labels = _mapping(selector.get("matchLabels"))
    matches = all(labels.get(k) == v for k, v in match_labels.items()) and all(
        _expression_matches(e, labels) for e in _list(selector.get("matchExpressions"))
    )
    if matches:
        return []
    return [
        FieldError(
            "Invalid",
            "spec.template.metadata.labels",
            "`selector` does not match template `labels`",
            dict(labels),
        )
    ]


def _expression_matches(expression: Any, labels: Mapping[str, Any]) -> bool:
    expression = _mapping(expression)
    key, operator = expression.get("key"), expression.get("operator")
    values = set(_list(expression.get("values")))
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def _pod_spec(group: str, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    path = _POD_SPECS.get((group, kind))
    if path is None:
        return None
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in _CONTAINER_LISTS:
        for index, container in enumerate(_list(pod.get(field))):
            if isinstance(container, Mapping):
                yield f"{field}[{index}]", container


def _is_quantity(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and bool(_QUANTITY.match(value))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
