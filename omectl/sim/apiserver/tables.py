"""Server-side `meta.k8s.io/v1` Table responses (what `kubectl get` prints), with the real printers' columns.

Custom resources get `Name` plus their additionalPrinterColumns (or `Name` + `Age`), rendered like the
apiextensions table convertor. Built-in kinds get the kube-apiserver printers' columns, always in their wide
form (the server prints wide; kubectl hides priority>0 columns unless `-o wide`). Other kinds: `Name` + `Age`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from omectl.core.jsonpath import JSONPath, JSONPathError, compile_jsonpath
from omectl.sim.apiserver.errors import bad_request, go_value
from omectl.sim.apiserver.registry import PrinterColumn, ResourceType

__all__ = ["human_duration", "table_for"]

TABLE_API_VERSION = "meta.k8s.io/v1"

Cells = list[Any]
RowFunction = Callable[[dict[str, Any], datetime], Cells]


# --- durations and timestamps ---------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery `duration.HumanDuration`: about two significant units (`45s`, `5m30s`, `2d3h`)."""
    whole = int(seconds)  # truncates toward zero, like Go's int(d.Seconds())
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = divmod(hours // 24, 365)
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


class _Unparsable(ValueError):
    pass


def _parse_time(value: str) -> datetime:
    # RFC 3339 as Go parses it: a `T` separator and an explicit offset are required.
    if len(value) < 20 or value[10] not in "Tt":
        raise _Unparsable(value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise _Unparsable(value) from exc
    if parsed.tzinfo is None:
        raise _Unparsable(value)
    return parsed


def _since(value: Any, now: datetime) -> str:
    """`translateTimestampSince`: `<unknown>` for a zero (absent) time."""
    if not value or not isinstance(value, str):
        return "<unknown>"
    try:
        return human_duration((now - _parse_time(value)).total_seconds())
    except _Unparsable:
        return "<invalid>"


def _between(start: str, end: str) -> str:
    try:
        return human_duration((_parse_time(end) - _parse_time(start)).total_seconds())
    except _Unparsable:
        return "<invalid>"


# --- Go value printing (client-go jsonpath PrintResults) ------------------------------------------


def _go_float(value: float) -> str:
    """Go's `%v` for float64: the shortest digits, in exponent form below 1e-4 and from 1e6 up (`1e+06`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # position of the decimal point relative to the digits
    exp10 = point - 1
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:  # strconv 'g' with shortest precision decides at 6 digits
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{prefix}{digits}{'0' * (point - len(digits))}"
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def _go_json(value: Any) -> str:
    # encoding/json sorts map keys and escapes HTML-sensitive characters.
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _print_value(value: Any) -> str:
    """How a `string` printer column shows any JSON value."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<no value>"  # client-go prints an invalid reflect.Value this way
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    return _go_json(value)


def _typed_cell(column_type: str, value: Any, now: datetime) -> Any:
    """The apiextensions `cellForJSONValue` rules for non-string columns (None when the type does not fit)."""
    if value is None:
        return None
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if column_type == "integer":
        return int(value) if is_number and math.isfinite(value) else None
    if column_type == "number":
        return float(value) if is_number else None
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        if not isinstance(value, str):
            return None
        if value in ("", "null"):
            return "<unknown>"
        try:
            return human_duration((now - _parse_time(value)).total_seconds())
        except _Unparsable:
            return "<invalid>"
    return None


# --- column definitions ---------------------------------------------------------------------------

_NAME_DESCRIPTION = "The object's name, unique within its namespace (metadata.name)."
_AGE_DESCRIPTION = "Time since the object was created (metadata.creationTimestamp)."


def _column(name: str, description: str, type_: str = "string", format_: str = "", priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": format_, "description": description, "priority": priority}


def _name_column(priority: int = 0) -> dict[str, Any]:
    return _column("Name", _NAME_DESCRIPTION, format_="name", priority=priority)


def _age_column() -> dict[str, Any]:
    return _column("Age", _AGE_DESCRIPTION)


def _wide(name: str, description: str) -> dict[str, Any]:
    return _column(name, description, priority=1)


@dataclass(frozen=True)
class _Printer:
    columns: list[dict[str, Any]]
    row: RowFunction


# --- helpers shared by the built-in printers ------------------------------------------------------


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: dict[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _age(obj: dict[str, Any], now: datetime) -> str:
    return _since(_meta(obj).get("creationTimestamp"), now)


def _section(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _format_labels(labels: dict[str, Any] | None) -> str:
    """`labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _selector_string(selector: dict[str, Any] | None) -> str:
    """`metav1.LabelSelectorAsSelector(...).String()`: requirements sorted by key."""
    if not selector:
        return ""
    requirements: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key = str(expression.get("key", ""))
        operator = expression.get("operator")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        if operator == "In":
            requirements.append((key, f"{key} in ({values})"))
        elif operator == "NotIn":
            requirements.append((key, f"{key} notin ({values})"))
        elif operator == "Exists":
            requirements.append((key, key))
        elif operator == "DoesNotExist":
            requirements.append((key, f"!{key}"))
    requirements.sort(key=lambda r: r[0])
    return ",".join(text for _, text in requirements)


def _format_label_selector(selector: dict[str, Any] | None) -> str:
    return _selector_string(selector) or "<none>"


def _containers_and_images(pod_spec: dict[str, Any]) -> tuple[str, str]:
    containers = pod_spec.get("containers") or []
    return (
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    )


def _template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return _section(_section(_section(obj, "spec"), "template"), "spec")


def _condition_true(conditions: Any, condition_type: str) -> bool:
    for condition in conditions or []:
        if condition.get("type") == condition_type:
            return bool(condition.get("status") == "True")
    return False


# --- built-in printers ----------------------------------------------------------------------------


def _namespace_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_name(obj), _section(obj, "status").get("phase", ""), _age(obj, now)]


def _event_fields(obj: dict[str, Any], events_v1: bool) -> dict[str, Any]:
    """The core/v1 Event view of an event (events.k8s.io/v1 renames most fields)."""
    if not events_v1:
        return obj
    return {
        "metadata": obj.get("metadata"),
        "involvedObject": obj.get("regarding") or {},
        "reason": obj.get("reason", ""),
        "message": obj.get("note", ""),
        "source": obj.get("deprecatedSource") or {},
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount", 0),
        "type": obj.get("type", ""),
        "eventTime": obj.get("eventTime"),
        "series": obj.get("series"),
        "reportingComponent": obj.get("reportingController", ""),
        "reportingInstance": obj.get("reportingInstance", ""),
    }


def _event_row_function(events_v1: bool) -> RowFunction:
    def row(raw: dict[str, Any], now: datetime) -> Cells:
        obj = _event_fields(raw, events_v1)
        first_seen = _since(obj.get("firstTimestamp"), now)
        if not obj.get("firstTimestamp"):
            first_seen = _since(obj.get("eventTime"), now)
        last_seen = _since(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first_seen
        count = int(obj.get("count") or 0)
        series = obj.get("series")
        if isinstance(series, dict):
            last_seen = _since(series.get("lastObservedTime"), now)
            count = int(series.get("count") or 0)
        elif count == 0:
            count = 1  # singleton events have no count in the new API
        involved = _section(obj, "involvedObject")
        kind = str(involved.get("kind", "")).lower()
        target = f"{kind}/{involved['name']}" if involved.get("name") else kind
        source = _section(obj, "source")
        component = source.get("component") or obj.get("reportingComponent") or ""
        instance = source.get("host") or obj.get("reportingInstance") or ""
        return [
            last_seen,
            obj.get("type", ""),
            obj.get("reason", ""),
            target,
            involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component,
            str(obj.get("message", "")).strip(),
            first_seen,
            count,
            _name(raw),
        ]

    return row


_EVENT_COLUMNS = [
    _column("Last Seen", "Time since the event was last observed."),
    _column("Type", "Type of the event (Normal, Warning)."),
    _column("Reason", "Short, machine-readable reason for the event."),
    _column("Object", "The object the event is about, as kind/name."),
    _wide("Subobject", "The part of the object the event is about (involvedObject.fieldPath)."),
    _wide("Source", "The component (and host) that reported the event."),
    _column("Message", "Human-readable description of the event."),
    _wide("First Seen", "Time since the event was first observed."),
    _wide("Count", "How many times the event has occurred."),
    _column("Name", _NAME_DESCRIPTION, format_="name", priority=1),
]


def _crd_row(obj: dict[str, Any], now: datetime) -> Cells:
    created = _meta(obj).get("creationTimestamp")
    try:
        stamp = _parse_time(created).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if created else None
    except _Unparsable:
        stamp = None
    return [_name(obj), stamp or "0001-01-01T00:00:00Z"]


def _config_map_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_name(obj), len(obj.get("data") or {}) + len(obj.get("binaryData") or {}), _age(obj, now)]


def _secret_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_name(obj), obj.get("type", ""), len(obj.get("data") or {}), _age(obj, now)]


def _deployment_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = _section(obj, "spec"), _section(obj, "status")
    containers, images = _containers_and_images(_template_spec(obj))
    return [
        _name(obj),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        _age(obj, now),
        containers,
        images,
        _selector_string(spec.get("selector")),
    ]


def _job_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = _section(obj, "spec"), _section(obj, "status")
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{int(spec['completions'])}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    start, end = status.get("startTime"), status.get("completionTime")
    duration = "" if not start else (_between(start, end) if end else _since(start, now))
    conditions = status.get("conditions")
    if _condition_true(conditions, "Complete"):
        state = "Complete"
    elif _condition_true(conditions, "Failed"):
        state = "Failed"
    elif _meta(obj).get("deletionTimestamp"):
        state = "Terminating"
    elif _condition_true(conditions, "Suspended"):
        state = "Suspended"
    elif _condition_true(conditions, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    containers, images = _containers_and_images(_template_spec(obj))
    return [
        _name(obj),
        state,
        completions,
        duration,
        _age(obj, now),
        containers,
        images,
        _format_label_selector(spec.get("selector")),
    ]


def _lease_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_name(obj), _section(obj, "spec").get("holderIdentity") or "", _age(obj, now)]


def _node_row(obj: dict[str, Any], now: datetime) -> Cells:
    status = _section(obj, "status")
    states: list[str] = []
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is not None:
        states.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        states.append("Unknown")
    if _section(obj, "spec").get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (_meta(obj).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = _section(status, "nodeInfo")
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((str(a.get("address", "")) for a in addresses if a.get("type") == kind), "<none>")

    return [
        _name(obj),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _service_external_ip(spec: dict[str, Any], status: dict[str, Any]) -> str:
    service_type = spec.get("type", "")
    external_ips = [str(ip) for ip in spec.get("externalIPs") or []]
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if service_type == "LoadBalancer":
        ingress = _section(status, "loadBalancer").get("ingress") or []
        balancer = sorted({str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")})
        if external_ips:
            return ",".join(balancer + external_ips)
        return ",".join(balancer) if balancer else "<pending>"
    if service_type == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _service_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec = _section(obj, "spec")
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    ports = []
    for port in spec.get("ports") or []:
        protocol = port.get("protocol", "")
        node_port = int(port.get("nodePort") or 0)
        number = int(port.get("port") or 0)
        ports.append(f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}")
    return [
        _name(obj),
        spec.get("type", ""),
        cluster_ips[0] if cluster_ips else "<none>",
        _service_external_ip(spec, _section(obj, "status")),
        ",".join(ports) or "<none>",
        _age(obj, now),
        _format_labels(spec.get("selector")),
    ]


_ACCESS_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def _pvc_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = _section(obj, "spec"), _section(obj, "status")
    phase = "Terminating" if _meta(obj).get("deletionTimestamp") else status.get("phase", "")
    capacity = access_modes = ""
    if spec.get("volumeName"):
        modes = set(status.get("accessModes") or [])
        access_modes = ",".join(short for mode, short in _ACCESS_MODES if mode in modes)
        capacity = str(_section(status, "capacity").get("storage", ""))
    annotations = _meta(obj).get("annotations") or {}
    storage_class = annotations.get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or ""
    attributes_class = spec.get("volumeAttributesClassName")
    return [
        _name(obj),
        phase,
        spec.get("volumeName", ""),
        capacity,
        access_modes,
        storage_class,
        attributes_class if attributes_class is not None else "<unset>",
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _controller_revision_row(obj: dict[str, Any], now: datetime) -> Cells:
    controller = "<none>"
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            api_version = str(ref.get("apiVersion", ""))
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
            kind = str(ref.get("kind", ""))
            group_kind = f"{kind}.{group}" if group else kind
            controller = f"{group_kind.lower()}/{ref.get('name', '')}" if group_kind else str(ref.get("name", ""))
            break
    return [_name(obj), controller, int(obj.get("revision") or 0), _age(obj, now)]


def _webhook_configuration_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_name(obj), len(obj.get("webhooks") or []), _age(obj, now)]


def _pod_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = _section(obj, "spec"), _section(obj, "status")
    init_names = {c.get("name") for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(init_names)
    reason = status.get("reason") or status.get("phase", "")
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in status.get("conditions") or []
    ):
        reason = "SchedulingGated"
    ready = restarts = 0
    last_restart = ""
    has_running = False
    for container in status.get("initContainerStatuses") or []:
        if container.get("name") in init_names:
            restarts += int(container.get("restartCount") or 0)
            if container.get("started") and container.get("ready"):
                ready += 1
    for container in reversed(status.get("containerStatuses") or []):
        restarts += int(container.get("restartCount") or 0)
        finished = _section(_section(container, "lastState"), "terminated").get("finishedAt")
        if finished and finished > last_restart:
            last_restart = finished
        state = _section(container, "state")
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = waiting["reason"]
        elif isinstance(terminated, dict) and terminated.get("reason"):
            reason = terminated["reason"]
        elif isinstance(terminated, dict):
            signal = int(terminated.get("signal") or 0)
            reason = f"Signal:{signal}" if signal else f"ExitCode:{int(terminated.get('exitCode') or 0)}"
        elif container.get("ready") and "running" in state:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        reason = "Running" if _condition_true(status.get("conditions"), "Ready") else "NotReady"
    if _meta(obj).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({_since(last_restart, now)} ago)"
    pod_ips = status.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        passed = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
        gates_text = f"{passed}/{len(gates)}"
    return [
        _name(obj),
        f"{ready}/{total}",
        reason,
        restarts_text,
        _age(obj, now),
        (pod_ips[0].get("ip") if pod_ips else "") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."

_BUILTIN_PRINTERS: dict[tuple[str, str], _Printer] = {
    ("", "Namespace"): _Printer(
        [_name_column(), _column("Status", "The status of the namespace"), _age_column()], _namespace_row
    ),
    ("", "Event"): _Printer(_EVENT_COLUMNS, _event_row_function(events_v1=False)),
    ("events.k8s.io", "Event"): _Printer(_EVENT_COLUMNS, _event_row_function(events_v1=True)),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _Printer(
        [_name_column(), _column("Created At", "When the object was created (RFC 3339, UTC).", type_="date")],
        _crd_row,
    ),
    ("", "ConfigMap"): _Printer(
        [_name_column(), _column("Data", "Number of data and binaryData entries."), _age_column()],
        _config_map_row,
    ),
    ("", "Secret"): _Printer(
        [
            _name_column(),
            _column("Type", "Used to facilitate programmatic handling of secret data."),
            _column("Data", "Number of data entries."),
            _age_column(),
        ],
        _secret_row,
    ),
    ("apps", "Deployment"): _Printer(
        [
            _name_column(),
            _column("Ready", "Number of the pod with ready state"),
            _column("Up-to-date", "Total number of pods targeted by this deployment with the desired template."),
            _column("Available", "Total number of available pods targeted by this deployment."),
            _age_column(),
            _wide("Containers", _CONTAINERS),
            _wide("Images", _IMAGES),
            _wide("Selector", "Label selector for the pods of this deployment."),
        ],
        _deployment_row,
    ),
    ("batch", "Job"): _Printer(
        [
            _name_column(),
            _column("Status", "Status of the job."),
            _column("Completions", "Succeeded pods out of the completions wanted."),
            _column("Duration", "Time required to complete the job."),
            _age_column(),
            _wide("Containers", _CONTAINERS),
            _wide("Images", _IMAGES),
            _wide("Selector", "Label selector for the pods of this job."),
        ],
        _job_row,
    ),
    ("coordination.k8s.io", "Lease"): _Printer(
        [_name_column(), _column("Holder", "The current holder of the lease."), _age_column()], _lease_row
    ),
    ("", "Node"): _Printer(
        [
            _name_column(),
            _column("Status", "The status of the node"),
            _column("Roles", "The roles of the node"),
            _age_column(),
            _column("Version", "Kubelet version reported by the node."),
            _wide("Internal-IP", "The node's first InternalIP address."),
            _wide("External-IP", "The node's first ExternalIP address."),
            _wide("OS-Image", "OS image reported by the node."),
            _wide("Kernel-Version", "Kernel version reported by the node."),
            _wide("Container-Runtime", "Container runtime version reported by the node."),
        ],
        _node_row,
    ),
    ("", "Service"): _Printer(
        [
            _name_column(),
            _column("Type", "How the service is exposed."),
            _column("Cluster-IP", "The service's cluster IP."),
            _column("External-IP", "External addresses of the service."),
            _column("Port(s)", "The ports the service exposes."),
            _age_column(),
            _wide("Selector", "Label selector for the pods behind the service."),
        ],
        _service_row,
    ),
    ("", "PersistentVolumeClaim"): _Printer(
        [
            _name_column(),
            _column("Status", "The phase of the claim."),
            _column("Volume", "The bound persistent volume."),
            _column("Capacity", "The capacity of the bound volume."),
            _column("Access Modes", "The access modes of the bound volume."),
            _column("StorageClass", "StorageClass of the pvc"),
            _column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
            _age_column(),
            _wide("VolumeMode", "Whether the volume is a filesystem or a block device."),
        ],
        _pvc_row,
    ),
    ("apps", "ControllerRevision"): _Printer(
        [
            _name_column(),
            _column("Controller", "Controller of the object"),
            _column("Revision", "The revision number of the state data."),
            _age_column(),
        ],
        _controller_revision_row,
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _Printer(
        [
            _name_column(),
            _column(
                "Webhooks",
                "Webhooks indicates the number of webhooks registered in this configuration",
                "integer",
            ),
            _age_column(),
        ],
        _webhook_configuration_row,
    ),
    ("", "Pod"): _Printer(
        [
            _name_column(),
            _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            _column("Status", "The aggregate status of the containers in this pod."),
            _column("Restarts", "Container restarts, and how long ago the last one was."),
            _age_column(),
            _wide("IP", "The pod's first IP address."),
            _wide("Node", "The node the pod is scheduled on."),
            _wide("Nominated Node", "The node nominated by preemption."),
            _wide("Readiness Gates", "Readiness gates that pass, out of all."),
        ],
        _pod_row,
    ),
}


def _name_age_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_name(obj), _age(obj, now)]


_NAME_AGE_PRINTER = _Printer([_name_column(), _age_column()], _name_age_row)


# --- custom resources -----------------------------------------------------------------------------

_DEFAULT_CR_COLUMNS = (PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp"),)


def _custom_resource_printer(printer_columns: tuple[PrinterColumn, ...]) -> _Printer:
    columns = [_column("Name", _NAME_DESCRIPTION, format_="name")]
    compiled: list[tuple[JSONPath, str]] = []
    for column in printer_columns or _DEFAULT_CR_COLUMNS:
        try:
            path = compile_jsonpath(column.json_path)
        except JSONPathError:
            # The apiextensions server keeps the columns before an unparsable one and drops the rest.
            break
        description = column.description
        if not description:
            description = (
                _AGE_DESCRIPTION
                if column is _DEFAULT_CR_COLUMNS[0]
                else f"Custom resource definition column (in JSONPath format): {column.json_path}"
            )
        columns.append(_column(column.name, description, column.type, column.format, column.priority))
        compiled.append((path, column.type))

    def row(obj: dict[str, Any], now: datetime) -> Cells:
        cells: Cells = [_name(obj)]
        for path, column_type in compiled:
            found = path.find(obj)
            if not found:
                cells.append(None)
            elif column_type == "string":
                cells.append(_print_value(found[0]))
            else:
                cells.append(_typed_cell(column_type, found[0], now))
        return cells

    return _Printer(columns, row)


_PrinterKey = tuple[str, str, bool, tuple[tuple[str, str, str, str, str, int], ...]]
_printer_cache: dict[_PrinterKey, _Printer] = {}
_PRINTER_CACHE_LIMIT = 1024


def _printer_for(rt: ResourceType) -> _Printer:
    key: _PrinterKey = (
        rt.group,
        rt.kind,
        rt.builtin,
        tuple((c.name, c.type, c.json_path, c.format, c.description, c.priority) for c in rt.printer_columns),
    )
    printer = _printer_cache.get(key)
    if printer is None:
        if rt.builtin:
            printer = _BUILTIN_PRINTERS.get((rt.group, rt.kind), _NAME_AGE_PRINTER)
        else:
            printer = _custom_resource_printer(tuple(rt.printer_columns))
        if len(_printer_cache) >= _PRINTER_CACHE_LIMIT:
            _printer_cache.clear()
        _printer_cache[key] = printer
    return printer


# --- the Table ------------------------------------------------------------------------------------


def _row_object(obj: dict[str, Any], include_object: str) -> Any:
    if include_object == "Metadata":
        # Shares the object's metadata dict: the table is serialized right away, never mutated.
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": TABLE_API_VERSION,
            "metadata": obj.get("metadata") or {},
        }
    if include_object == "Object":
        return obj
    return None


def table_for(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    *,
    resource_version: str,
    continue_token: str | None = None,
    remaining_item_count: int | None = None,
    include_object: str | None = "Metadata",
    now: datetime | None = None,
    with_columns: bool = True,
) -> dict[str, Any]:
    """A `meta.k8s.io/v1` Table of `objects` (one row each) as the real server renders it for `kubectl get`.

    `include_object` is the `includeObject` query value: `Metadata` (default, also for ""), `Object`, or
    `None` (Python None works too), which leaves `object: null` in each row. Anything else is a 400.
    `with_columns=False` leaves `columnDefinitions` null, as in watch events after the first.
    """
    mode = "None" if include_object is None else (include_object or "Metadata")
    if mode not in ("Metadata", "Object", "None"):
        raise bad_request(f"unrecognized includeObject value: {go_value(include_object)}")
    printer = _printer_for(rt)
    moment = now or datetime.now(UTC)
    row = printer.row
    rows = [{"cells": row(obj, moment), "object": _row_object(obj, mode)} for obj in objects]
    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": metadata,
        "columnDefinitions": list(printer.columns) if with_columns else None,
        "rows": rows,
    }
