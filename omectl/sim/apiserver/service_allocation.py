"""What kube-apiserver's Service REST storage allocates for a Service: a cluster IP and its IP families, and node
ports, on create; on an update that leaves them out, the ones it already has.

The ranges are those the real servers of `make envtest` run with (`omectl/envtest/controlplane.py`): cluster IPs
from 10.0.0.0/16 (the first address is the `kubernetes` Service's), node ports from 30000-32767. A headless
Service (`clusterIP: None`) gets no address; with a selector it is single-stack IPv4, without one kube asks for
both families (`RequireDualStack`). An ExternalName Service gets none of these.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable
from typing import Any, Final

SERVICE_CIDR: Final = ipaddress.IPv4Network("10.0.0.0/16")
NODE_PORTS: Final = range(30000, 32768)
_FIRST_HOST: Final = 2  # .0 is the network, .1 the kubernetes Service
_NODE_PORT_TYPES: Final = ("NodePort", "LoadBalancer")

Obj = dict[str, Any]


def allocate(service: Obj, existing: Iterable[Obj]) -> None:
    """Fill a new Service's cluster IP, IP families and node ports, avoiding those of `existing`."""
    spec = service.get("spec")
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
        return
    taken = list(existing)
    if not spec.get("clusterIP"):
        spec["clusterIP"] = _free_ip({ip for s in taken for ip in _spec(s).get("clusterIPs") or []})
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    if spec["clusterIP"] == "None" and not spec.get("selector"):
        spec.setdefault("ipFamilyPolicy", "RequireDualStack")
        spec.setdefault("ipFamilies", ["IPv4", "IPv6"])
    else:
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("ipFamilies", ["IPv4"])
    _allocate_node_ports(spec, taken)


def keep_allocated(new: Obj, live: Obj) -> None:
    """An update that leaves out what was allocated keeps it (kube's `patchAllocatedValues`); what the update
    newly needs (a NodePort type, a new port) is allocated, and what it no longer needs is dropped."""
    spec, old = new.get("spec"), _spec(live)
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
        return
    if not spec.get("clusterIP") and old.get("clusterIP"):
        spec["clusterIP"] = old["clusterIP"]
        spec.setdefault("clusterIPs", old.get("clusterIPs") or [old["clusterIP"]])
    for key in ("ipFamilies", "ipFamilyPolicy"):
        if key not in spec and key in old:
            spec[key] = old[key]
    if spec.get("type") in _NODE_PORT_TYPES:
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old.get("ports") or []}
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                previous = old_ports.get((port.get("port"), port.get("protocol")))
                if previous:
                    port["nodePort"] = previous
    else:
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.pop("nodePort", None)


def allocate_on_update(new: Obj, live: Obj, existing: Iterable[Obj]) -> None:
    keep_allocated(new, live)
    others = [s for s in existing if _key(s) != _key(live)]
    allocate(new, [live, *others])


def _allocate_node_ports(spec: Obj, taken: list[Obj]) -> None:
    if spec.get("type") not in _NODE_PORT_TYPES:
        return
    if spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is False:
        return
    used = {p.get("nodePort") for s in taken for p in _spec(s).get("ports") or [] if isinstance(p, dict)}
    used |= {p.get("nodePort") for p in spec.get("ports") or [] if isinstance(p, dict)}
    for port in spec.get("ports") or []:
        if isinstance(port, dict) and not port.get("nodePort"):
            port["nodePort"] = _free(NODE_PORTS, used)
            used.add(port["nodePort"])


def _free_ip(used: set[str]) -> str:
    hosts = range(_FIRST_HOST, SERVICE_CIDR.num_addresses - 1)
    offset = _free(hosts, {int(ipaddress.IPv4Address(ip)) - int(SERVICE_CIDR.network_address) for ip in _v4(used)})
    return str(SERVICE_CIDR.network_address + offset)


def _v4(addresses: set[str]) -> Iterable[str]:
    for address in addresses:
        try:
            if ipaddress.IPv4Address(address) in SERVICE_CIDR:
                yield address
        except ValueError:
            continue  # "None" (headless), or an address of another family


def _free(candidates: range, used: set[Any]) -> int:
    """A random free value of `candidates`, as kube's bitmap allocators pick one."""
    for _ in range(64):
        value = random.choice(candidates)
        if value not in used:
            return value
    for value in candidates:
        if value not in used:
            return value
    raise RangeFull(f"no free value in {candidates.start}-{candidates.stop - 1}")


class RangeFull(Exception):
    """Every cluster IP or node port of the range is taken."""


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")
