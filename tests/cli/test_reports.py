"""`omectl.cli.reports`: one record list in each `-o` format, and `cluster status`'s report through it."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from omectl.cli.reports import Column, OutputFormat, render
from omectl.cli.status import ControllerView, StatusReport
from omectl.webhook.health import MemberCheck

RECORDS = [{"name": "a", "size": 1, "owner": "x"}, {"name": "b", "size": 22, "owner": "y"}, {"name": "a", "size": 3}]
COLUMNS: list[Column[dict[str, Any]]] = [
    Column("NAME", lambda r: r["name"]),
    Column("OWNER", lambda r: r.get("owner", "-"), wide=True),
    Column("SIZE", lambda r: str(r["size"])),
]


def lines(output: OutputFormat, **kw: Any) -> list[str]:
    return render(RECORDS, COLUMNS, output, **kw).splitlines()


def test_table_leaves_the_wide_columns_out_and_wide_shows_them_in_place() -> None:
    assert lines(OutputFormat.table) == ["NAME   SIZE", "a      1", "b      22", "a      3"]
    assert lines(OutputFormat.wide) == [
        "NAME   OWNER   SIZE",
        "a      x       1",
        "b      y       22",
        "a      -       3",
    ]


def test_name_prints_each_kind_slash_name_once_in_order() -> None:
    assert lines(OutputFormat.name, kind="servingruntime.ome.io", name=lambda r: r["name"]) == [
        "servingruntime.ome.io/a",
        "servingruntime.ome.io/b",
    ]
    with pytest.raises(ValueError, match="no names"):
        render(RECORDS, COLUMNS, OutputFormat.name)


@pytest.mark.parametrize("output", [OutputFormat.json, OutputFormat.yaml])
def test_json_and_yaml_print_the_document_or_else_the_records(output: OutputFormat) -> None:
    load = json.loads if output is OutputFormat.json else yaml.safe_load
    assert load(render(RECORDS, COLUMNS, output)) == RECORDS
    assert load(render(RECORDS, COLUMNS, output, document={"items": RECORDS[:1]})) == {"items": RECORDS[:1]}


def status_report() -> StatusReport:
    served = {
        "name": "c1", "state": "ready", "connected": True, "synced": True, "server": "https://c1:6443",
        "objectsCached": 5, "reconciles": 7, "errors": 1, "lastError": "boom", "lastErrorTime": "2026-01-01T00:00:00Z",
        "queueDepth": 0,
    }  # fmt: skip
    controller = ControllerView(True, {"clusters": [served]}, source="status", url="http://127.0.0.1:1/status")
    members = [MemberCheck("c1", installed=True, failure_policy="Fail"), MemberCheck("c2")]
    return StatusReport(controller, ["c1", "c2"], members=members)


def test_cluster_status_names_every_cluster_and_its_wide_table_adds_server_and_error_time() -> None:
    report = status_report()
    assert report.render(OutputFormat.name) == "cluster/c1\ncluster/c2"

    table = report.render(OutputFormat.table).splitlines()
    wide = report.render(OutputFormat.wide).splitlines()
    assert table[2].split()[:2] == ["NAME", "STATE"] and "SERVER" not in table[2]
    assert wide[2].split()[:5] == ["NAME", "STATE", "SERVER", "REGISTERED", "CONNECTED"]
    assert "LAST ERROR TIME" in wide[2]
    assert wide[3].split()[:4] == ["c1", "ready", "https://c1:6443", "yes"]
    assert "2026-01-01T00:00:00Z" in wide[3] and wide[3].endswith("boom")
    assert wide[4].split()[:4] == ["c2", "not", "served", "-"]
    members = wide[wide.index("") + 1 :]
    member_header = next(line for line in members if line.startswith("CLUSTER"))
    assert member_header.split() == ["CLUSTER", "OWNER", "OWNER", "LIVE", "WEBHOOKS", "FAILURE", "POLICY"]
    assert [line.split() for line in table if line.startswith("CLUSTER")] == [["CLUSTER", "OWNER", "WEBHOOKS"]]
    assert json.loads(report.render(OutputFormat.json))["clusters"][0]["server"] == "https://c1:6443"


def test_cluster_status_with_a_selector_leaves_the_other_clusters_out_even_those_the_controller_serves() -> None:
    report = status_report()
    report.registered, report.members, report.only = ["c2"], [MemberCheck("c2")], {"c2"}
    assert report.render(OutputFormat.name) == "cluster/c2"
    assert [entry["name"] for entry in report.to_dict()["clusters"]] == ["c2"]
