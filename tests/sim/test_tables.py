"""Server-side Tables: HumanDuration, custom resource printer columns, built-in printers, includeObject."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.registry import PrinterColumn, ResourceType, builtin_types, types_from_crd
from omectl.sim.apiserver.tables import human_duration, table_for

NOW = datetime(2025, 1, 10, 12, 0, 0, tzinfo=UTC)


def stamp(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def builtin(group: str, kind: str) -> ResourceType:
    return next(rt for rt in builtin_types() if rt.group == group and rt.kind == kind)


def names(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


def cells(table: dict[str, Any], row: int = 0) -> list[Any]:
    return list(table["rows"][row]["cells"])


MINUTE, HOUR, DAY = 60, 3600, 86400
YEAR = 365 * DAY


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-2.0, "<invalid>"),
        (-1.9, "0s"),
        (-1.0, "0s"),
        (-0.5, "0s"),
        (0, "0s"),
        (45, "45s"),
        (45.9, "45s"),
        (119.99, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (5 * MINUTE, "5m"),
        (5 * MINUTE + 30, "5m30s"),
        (10 * MINUTE - 1, "9m59s"),
        (10 * MINUTE, "10m"),
        (10 * MINUTE + 59, "10m"),
        (3 * HOUR - 1, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + 30 * MINUTE, "3h30m"),
        (3 * HOUR + 30 * MINUTE + 59, "3h30m"),
        (8 * HOUR - 1, "7h59m"),
        (8 * HOUR, "8h"),
        (8 * HOUR + 59 * MINUTE, "8h"),
        (48 * HOUR - 1, "47h"),
        (48 * HOUR, "2d"),
        (2 * DAY + 3 * HOUR, "2d3h"),
        (8 * DAY - 1, "7d23h"),
        (8 * DAY, "8d"),
        (8 * DAY + 23 * HOUR, "8d"),
        (2 * YEAR - 1, "729d"),
        (2 * YEAR, "2y"),
        (3 * YEAR + 45 * DAY, "3y45d"),
        (8 * YEAR - 1, "7y364d"),
        (8 * YEAR, "8y"),
        (8 * YEAR + 200 * DAY, "8y"),
        (25 * YEAR, "25y"),
    ],
)
def test_human_duration_matches_apimachinery(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


# --- custom resources -----------------------------------------------------------------------------

WIDGET_CRD: dict[str, Any] = {
    "spec": {
        "group": "example.com",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "string", "jsonPath": ".spec.size", "description": "The size"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
                    {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused", "priority": 1},
                    {
                        "name": "Ready",
                        "type": "string",
                        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                    },
                    {"name": "Selector", "type": "string", "jsonPath": ".spec.selector"},
                    {
                        "name": "Updated",
                        "type": "date",
                        "jsonPath": ".status.lastUpdate",
                        "format": "date-time",
                    },
                ],
            }
        ],
    }
}


def widget_type() -> ResourceType:
    return types_from_crd(WIDGET_CRD)[0]


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": stamp(timedelta(minutes=5))},
        "spec": spec,
        "status": {
            "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}],
            "lastUpdate": stamp(timedelta(hours=3, minutes=30)),
        },
    }


def test_custom_resource_columns_follow_additional_printer_columns() -> None:
    table = table_for(widget_type(), [], resource_version="7", now=NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    columns = table["columnDefinitions"]
    assert names(table) == ["Name", "Size", "Replicas", "Ratio", "Paused", "Ready", "Selector", "Updated"]
    assert columns[0]["type"] == "string" and columns[0]["format"] == "name"
    assert [c["type"] for c in columns[1:]] == [
        "string",
        "integer",
        "number",
        "boolean",
        "string",
        "string",
        "date",
    ]
    assert columns[1]["description"] == "The size"
    assert columns[2]["description"] == "Custom resource definition column (in JSONPath format): .spec.replicas"
    assert columns[4]["priority"] == 1 and columns[1]["priority"] == 0
    assert columns[7]["format"] == "date-time"
    assert set(columns[0]) == {"name", "type", "format", "description", "priority"}
    assert table["rows"] == []


def test_custom_resource_cells_are_rendered_like_the_apiextensions_server() -> None:
    obj = widget("w1", size="large", replicas=3, ratio=2, paused=True, selector={"b": "2", "a": "<1>"})
    table = table_for(widget_type(), [obj], resource_version="7", now=NOW)
    assert cells(table) == ["w1", "large", 3, 2.0, True, "True", '{"a":"\\u003c1\\u003e","b":"2"}', "3h30m"]
    assert isinstance(cells(table)[3], float)


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        # Missing values are null cells, not "<none>".
        ({}, {}, ["w", None, None, None, None, None, None, None]),
        # A value of the wrong type for a typed column is null; a string column prints any value.
        (
            {"size": 12, "replicas": "three", "ratio": "x", "paused": "yes", "selector": [1, "a"]},
            {"lastUpdate": 17},
            ["w", "12", None, None, None, None, '[1,"a"]', None],
        ),
        (
            {"size": True, "replicas": 2.9, "ratio": 1.5},
            {"lastUpdate": "yesterday"},
            ["w", "true", 2, 1.5] + [None] * 3 + ["<invalid>"],
        ),
        ({"size": 1.5e-7}, {"lastUpdate": ""}, ["w", "1.5e-07"] + [None] * 5 + ["<unknown>"]),
        ({"size": 2500000.0}, {}, ["w", "2.5e+06"] + [None] * 6),
        ({"size": 123456.0}, {}, ["w", "123456"] + [None] * 6),
        ({"size": None}, {}, ["w", "<no value>"] + [None] * 6),
    ],
)
def test_custom_resource_cell_types(spec: dict[str, Any], status: dict[str, Any], expected: list[Any]) -> None:
    obj = {"metadata": {"name": "w"}, "spec": spec, "status": status}
    assert cells(table_for(widget_type(), [obj], resource_version="1", now=NOW)) == expected


def test_custom_resource_without_printer_columns_gets_name_and_age() -> None:
    crd = {
        "spec": {
            "group": "example.com",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1"}],
        }
    }
    rt = types_from_crd(crd)[0]
    obj = {"metadata": {"name": "g1", "creationTimestamp": stamp(timedelta(days=2, hours=3))}}
    table = table_for(rt, [obj, {"metadata": {"name": "g2"}}], resource_version="3", now=NOW)
    assert names(table) == ["Name", "Age"]
    assert table["columnDefinitions"][1]["type"] == "date"
    assert cells(table, 0) == ["g1", "2d3h"]
    assert cells(table, 1) == ["g2", None]


def test_printer_cache_follows_changed_columns() -> None:
    rt = widget_type()
    assert names(table_for(rt, [], resource_version="1"))[1] == "Size"
    rt.printer_columns = [PrinterColumn(name="Phase", type="string", json_path=".status.phase")]
    table = table_for(rt, [{"metadata": {"name": "w"}, "status": {"phase": "Up"}}], resource_version="1")
    assert names(table) == ["Name", "Phase"]
    assert cells(table) == ["w", "Up"]


def test_unparsable_printer_column_drops_it_and_the_rest() -> None:
    rt = widget_type()
    rt.printer_columns = [
        PrinterColumn(name="Good", type="string", json_path=".spec.a"),
        PrinterColumn(name="Bad", type="string", json_path=".spec[?("),
        PrinterColumn(name="After", type="string", json_path=".spec.b"),
    ]
    table = table_for(rt, [{"metadata": {"name": "w"}, "spec": {"a": "x", "b": "y"}}], resource_version="1")
    assert names(table) == ["Name", "Good"]
    assert cells(table) == ["w", "x"]


# --- table envelope and includeObject -------------------------------------------------------------


def test_table_metadata_carries_resource_version_and_continue() -> None:
    table = table_for(widget_type(), [], resource_version="42", continue_token="abc")
    assert table["metadata"] == {"resourceVersion": "42", "continue": "abc"}
    table = table_for(widget_type(), [], resource_version="42", continue_token="abc", remaining_item_count=7)
    assert table["metadata"] == {"resourceVersion": "42", "continue": "abc", "remainingItemCount": 7}
    assert table_for(widget_type(), [], resource_version="42")["metadata"] == {"resourceVersion": "42"}


def test_include_object_metadata_is_partial_object_metadata() -> None:
    obj = widget("w1", size="s")
    for value in ("Metadata", ""):
        row = table_for(widget_type(), [obj], resource_version="1", include_object=value)["rows"][0]
        assert row["object"] == {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }


def test_include_object_object_and_none() -> None:
    obj = widget("w1", size="s")
    assert table_for(widget_type(), [obj], resource_version="1", include_object="Object")["rows"][0]["object"] is obj
    for value in ("None", None):
        row = table_for(widget_type(), [obj], resource_version="1", include_object=value)["rows"][0]
        assert row["object"] is None
        assert row["cells"][0] == "w1"


def test_unknown_include_object_is_a_bad_request() -> None:
    with pytest.raises(APIError) as caught:
        table_for(widget_type(), [], resource_version="1", include_object="Everything")
    assert caught.value.code == 400
    assert caught.value.status()["message"] == 'unrecognized includeObject value: "Everything"'


def test_watch_rows_can_omit_column_definitions() -> None:
    table = table_for(widget_type(), [widget("w1")], resource_version="9", with_columns=False, now=NOW)
    assert table["columnDefinitions"] is None
    assert len(table["rows"]) == 1 and cells(table)[0] == "w1"


# --- built-in printers ----------------------------------------------------------------------------


def test_namespace_table() -> None:
    ns = {
        "metadata": {"name": "default", "creationTimestamp": stamp(timedelta(seconds=45))},
        "status": {"phase": "Active"},
    }
    terminating = {"metadata": {"name": "old"}, "status": {"phase": "Terminating"}}
    table = table_for(builtin("", "Namespace"), [ns, terminating], resource_version="5", now=NOW)
    assert names(table) == ["Name", "Status", "Age"]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert cells(table, 0) == ["default", "Active", "45s"]
    assert cells(table, 1) == ["old", "Terminating", "<unknown>"]


EVENT_COLUMNS = [
    "Last Seen",
    "Type",
    "Reason",
    "Object",
    "Subobject",
    "Source",
    "Message",
    "First Seen",
    "Count",
    "Name",
]


def test_core_event_table() -> None:
    event = {
        "metadata": {"name": "w1.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
        "reason": "Started",
        "message": "  Started container app \n",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": stamp(timedelta(minutes=10)),
        "lastTimestamp": stamp(timedelta(minutes=2)),
        "count": 4,
    }
    table = table_for(builtin("", "Event"), [event], resource_version="5", now=NOW)
    assert names(table) == EVENT_COLUMNS
    priorities = {c["name"]: c["priority"] for c in table["columnDefinitions"]}
    assert [n for n, p in priorities.items() if p == 0] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    assert cells(table) == [
        "2m",
        "Normal",
        "Started",
        "pod/web-0",
        "spec.containers{app}",
        "kubelet, node-1",
        "Started container app",
        "10m",
        4,
        "w1.17a",
    ]


def test_event_fallbacks_series_and_kind_only_target() -> None:
    singleton = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Node"},
        "eventTime": "2025-01-10T11:59:00.000000Z",
        "reportingComponent": "controller",
        "reportingInstance": "ctl-1",
    }
    series = {
        "metadata": {"name": "e2"},
        "involvedObject": {"kind": "Widget", "name": "w"},
        "eventTime": stamp(timedelta(hours=1)),
        "series": {"count": 9, "lastObservedTime": stamp(timedelta(seconds=30))},
    }
    table = table_for(builtin("", "Event"), [singleton, series], resource_version="5", now=NOW)
    first, second = cells(table, 0), cells(table, 1)
    assert first[0] == first[7] == "60s"  # no timestamps: both come from eventTime
    assert first[3] == "node" and first[5] == "controller, ctl-1" and first[8] == 1
    assert second[0] == "30s" and second[7] == "60m" and second[3] == "widget/w" and second[8] == 9


def test_events_k8s_io_event_table_reads_its_own_field_names() -> None:
    event = {
        "metadata": {"name": "e3"},
        "regarding": {"kind": "Deployment", "name": "api"},
        "note": "Scaled up",
        "reason": "ScalingReplicaSet",
        "type": "Normal",
        "reportingController": "deployment-controller",
        "eventTime": stamp(timedelta(minutes=4)),
        "deprecatedCount": 2,
    }
    table = table_for(builtin("events.k8s.io", "Event"), [event], resource_version="5", now=NOW)
    assert names(table) == EVENT_COLUMNS
    assert cells(table) == [
        "4m",
        "Normal",
        "ScalingReplicaSet",
        "deployment/api",
        "",
        "deployment-controller",
        "Scaled up",
        "4m",
        2,
        "e3",
    ]


def test_crd_table_prints_created_at_timestamp() -> None:
    crd = {"metadata": {"name": "widgets.example.com", "creationTimestamp": "2025-01-10T13:00:00+02:00"}}
    table = table_for(builtin("apiextensions.k8s.io", "CustomResourceDefinition"), [crd], resource_version="1", now=NOW)
    assert names(table) == ["Name", "Created At"]
    assert table["columnDefinitions"][1]["type"] == "date"
    assert cells(table) == ["widgets.example.com", "2025-01-10T11:00:00Z"]


AGE = stamp(timedelta(hours=5, minutes=7))


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "creationTimestamp": AGE, **extra}


@pytest.mark.parametrize(
    ("group", "kind", "obj", "expected_names", "expected_cells"),
    [
        (
            "",
            "ConfigMap",
            {"metadata": meta("cm"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}},
            ["Name", "Data", "Age"],
            ["cm", 3, "5h7m"],
        ),
        (
            "",
            "Secret",
            {"metadata": meta("s"), "type": "Opaque", "data": {"k": "dg=="}},
            ["Name", "Type", "Data", "Age"],
            ["s", "Opaque", 1, "5h7m"],
        ),
        (
            "apps",
            "Deployment",
            {
                "metadata": meta("web"),
                "spec": {
                    "replicas": 3,
                    "selector": {
                        "matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}],
                    },
                    "template": {"spec": {"containers": [{"name": "a", "image": "i:1"}, {"name": "b", "image": "j"}]}},
                },
                "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
            },
            ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"],
            ["web", "2/3", 3, 2, "5h7m", "a,b", "i:1,j", "app=web,env in (dev,prod)"],
        ),
        (
            "batch",
            "Job",
            {
                "metadata": meta("job"),
                "spec": {
                    "completions": 2,
                    "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                },
                "status": {
                    "succeeded": 2,
                    "startTime": stamp(timedelta(minutes=9)),
                    "completionTime": stamp(timedelta(minutes=4)),
                    "conditions": [{"type": "Complete", "status": "True"}],
                },
            },
            ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"],
            ["job", "Complete", "2/2", "5m", "5h7m", "c", "x", "<none>"],
        ),
        (
            "batch",
            "Job",
            {
                "metadata": meta("par"),
                "spec": {"parallelism": 3},
                "status": {"startTime": stamp(timedelta(seconds=90))},
            },
            ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"],
            ["par", "Running", "0/1 of 3", "90s", "5h7m", "", "", "<none>"],
        ),
        (
            "coordination.k8s.io",
            "Lease",
            {"metadata": meta("leader"), "spec": {"holderIdentity": "pod-a"}},
            ["Name", "Holder", "Age"],
            ["leader", "pod-a", "5h7m"],
        ),
        (
            "",
            "Node",
            {
                "metadata": meta(
                    "n1", labels={"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "gpu"}
                ),
                "spec": {"unschedulable": True},
                "status": {
                    "conditions": [{"type": "Ready", "status": "False"}],
                    "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Linux"},
                    "addresses": [
                        {"type": "Hostname", "address": "n1"},
                        {"type": "InternalIP", "address": "10.0.0.1"},
                    ],
                },
            },
            [
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime",
            ],
            [
                "n1",
                "NotReady,SchedulingDisabled",
                "control-plane,gpu",
                "5h7m",
                "v1.32.0",
                "10.0.0.1",
                "<none>",
                "Linux",
                "<unknown>",
                "<unknown>",
            ],
        ),
        (
            "",
            "Service",
            {
                "metadata": meta("svc"),
                "spec": {
                    "type": "NodePort",
                    "clusterIPs": ["10.96.0.10"],
                    "ports": [
                        {"port": 80, "protocol": "TCP", "nodePort": 30080},
                        {"port": 53, "protocol": "UDP"},
                    ],
                    "selector": {"b": "2", "a": "1"},
                },
            },
            ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"],
            ["svc", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "5h7m", "a=1,b=2"],
        ),
        (
            "",
            "Service",
            {
                "metadata": meta("lb"),
                "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.9"]},
                "status": {},
            },
            ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"],
            ["lb", "LoadBalancer", "10.0.0.9", "<pending>", "<none>", "5h7m", "<none>"],
        ),
        (
            "",
            "PersistentVolumeClaim",
            {
                "metadata": meta("data"),
                "spec": {"volumeName": "pv-1", "storageClassName": "fast", "volumeMode": "Filesystem"},
                "status": {
                    "phase": "Bound",
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "capacity": {"storage": "10Gi"},
                },
            },
            [
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode",
            ],
            ["data", "Bound", "pv-1", "10Gi", "RWO,RWX", "fast", "<unset>", "5h7m", "Filesystem"],
        ),
        (
            "apps",
            "ControllerRevision",
            {
                "metadata": meta(
                    "web-5d8f",
                    ownerReferences=[
                        {"apiVersion": "v1", "kind": "Pod", "name": "other"},
                        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": True},
                    ],
                ),
                "revision": 3,
            },
            ["Name", "Controller", "Revision", "Age"],
            ["web-5d8f", "statefulset.apps/web", 3, "5h7m"],
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            {"metadata": meta("hooks"), "webhooks": [{"name": "a"}, {"name": "b"}]},
            ["Name", "Webhooks", "Age"],
            ["hooks", 2, "5h7m"],
        ),
        (
            "",
            "Pod",
            {
                "metadata": meta("web-0"),
                "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
                "status": {
                    "phase": "Running",
                    "podIPs": [{"ip": "10.1.0.5"}],
                    "containerStatuses": [
                        {"name": "a", "ready": True, "restartCount": 1, "state": {"running": {}}},
                        {
                            "name": "b",
                            "ready": False,
                            "restartCount": 2,
                            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                            "lastState": {"terminated": {"finishedAt": stamp(timedelta(minutes=3))}},
                        },
                    ],
                },
            },
            ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"],
            ["web-0", "1/2", "CrashLoopBackOff", "3 (3m ago)", "5h7m", "10.1.0.5", "n1", "<none>", "<none>"],
        ),
    ],
)
def test_builtin_printers(
    group: str, kind: str, obj: dict[str, Any], expected_names: list[str], expected_cells: list[Any]
) -> None:
    table = table_for(builtin(group, kind), [obj], resource_version="1", now=NOW)
    assert names(table) == expected_names
    assert table["columnDefinitions"][0]["format"] == "name"
    assert cells(table) == expected_cells


def test_wide_only_columns_have_priority_one() -> None:
    table = table_for(builtin("apps", "Deployment"), [], resource_version="1")
    wide = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["Containers", "Images", "Selector"]
    table = table_for(builtin("", "Namespace"), [], resource_version="1")
    assert all(c["priority"] == 0 for c in table["columnDefinitions"])


def test_every_builtin_row_has_one_cell_per_column() -> None:
    for rt in builtin_types():
        obj = {"metadata": {"name": "x", "creationTimestamp": AGE}}
        table = table_for(rt, [obj], resource_version="1", now=NOW)
        assert len(cells(table)) == len(table["columnDefinitions"]), rt.qualified_kind
        assert cells(table)[names(table).index("Name")] == "x", rt.qualified_kind


def test_other_kinds_get_name_and_age() -> None:
    rt = ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", True)
    table = table_for(rt, [{"metadata": {"name": "pdb", "creationTimestamp": AGE}}], resource_version="1", now=NOW)
    assert names(table) == ["Name", "Age"]
    assert cells(table) == ["pdb", "5h7m"]


def test_age_uses_the_current_time_by_default() -> None:
    created = (datetime.now(UTC) - timedelta(minutes=5, seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    table = table_for(
        builtin("", "ConfigMap"),
        [{"metadata": {"name": "cm", "creationTimestamp": created}}],
        resource_version="1",
    )
    assert cells(table)[2] in ("5m30s", "5m31s")
