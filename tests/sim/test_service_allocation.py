"""A Service gets a cluster IP and node ports when it is created, as kube-apiserver's Service storage allocates
them, and keeps them on an update that leaves them out."""

from __future__ import annotations

import ipaddress
from typing import Any

from omectl.sim.apiserver.service_allocation import NODE_PORTS, SERVICE_CIDR
from tests.support import RawClient

SERVICES = "/api/v1/namespaces/default/services"


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


async def test_each_service_gets_its_own_cluster_ip_in_the_range(raw: RawClient) -> None:
    ips = []
    for i in range(20):
        created = await raw.post(SERVICES, service(f"s{i}", ports=[{"port": 80}]))
        assert created.status == 201, created.body
        spec = created.body["spec"]
        assert spec["clusterIPs"] == [spec["clusterIP"]]
        assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
        address = ipaddress.IPv4Address(spec["clusterIP"])
        assert address in SERVICE_CIDR and address not in (SERVICE_CIDR[0], SERVICE_CIDR[1])
        ips.append(address)
    assert len(set(ips)) == len(ips)
    assert created.body["status"] == {"loadBalancer": {}}


async def test_headless_and_external_name_services_get_no_address(raw: RawClient) -> None:
    selected = (await raw.post(SERVICES, service("h", clusterIP="None", selector={"a": "b"}))).body["spec"]
    assert (selected["clusterIPs"], selected["ipFamilies"], selected["ipFamilyPolicy"]) == (
        ["None"],
        ["IPv4"],
        "SingleStack",
    )
    unselected = (await raw.post(SERVICES, service("u", clusterIP="None", ports=[{"port": 1}]))).body["spec"]
    assert (unselected["ipFamilies"], unselected["ipFamilyPolicy"]) == (["IPv4", "IPv6"], "RequireDualStack")
    external = (await raw.post(SERVICES, service("e", type="ExternalName", externalName="example.com"))).body
    assert not {"clusterIP", "clusterIPs", "ipFamilies"} & set(external["spec"])


async def test_node_ports_are_allocated_in_range_and_kept_by_an_update_that_omits_them(raw: RawClient) -> None:
    ports = [{"name": "a", "port": 80}, {"name": "b", "port": 443, "nodePort": 30443}]
    created = (await raw.post(SERVICES, service("np", type="NodePort", ports=ports))).body
    allocated = [p["nodePort"] for p in created["spec"]["ports"]]
    assert allocated[0] in NODE_PORTS and allocated[1] == 30443
    replaced = await raw.put(f"{SERVICES}/np", service("np", type="NodePort", ports=[{"name": "a", "port": 80}]))
    assert replaced.status == 200, replaced.body
    assert replaced.body["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    assert [p["nodePort"] for p in replaced.body["spec"]["ports"]] == allocated[:1]
    cluster_ip = await raw.put(f"{SERVICES}/np", service("np", ports=[{"name": "a", "port": 80}]))
    assert "nodePort" not in cluster_ip.body["spec"]["ports"][0]
    assert cluster_ip.body["spec"]["clusterIP"] == created["spec"]["clusterIP"]


async def test_status_sent_on_create_is_dropped(raw: RawClient) -> None:
    body = service("st", ports=[{"port": 80}])
    body["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}
    assert (await raw.post(SERVICES, body)).body["status"] == {"loadBalancer": {}}
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }
    created = (await raw.post("/api/v1/namespaces/default/persistentvolumeclaims", claim)).body
    assert (created["status"], created["spec"]["volumeMode"]) == ({"phase": "Pending"}, "Filesystem")
