"""The Kubernetes CEL libraries a CRD rule can call (k8s.io/apiserver/pkg/cel/library), as CEL functions.

Lists (`isSorted`, `sum`, `min`, `max`), regex (`find`, `findAll`), URLs (`url`, `isURL`,
`getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`) and quantities (`quantity`,
`isQuantity`, `sign`, `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub`, `isLessThan`,
`isGreaterThan`, `compareTo`), IPs (`ip`, `isIP`, `family`, `isUnspecified`, `isLoopback`,
`isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`) and CIDRs (`cidr`, `isCIDR`, `containsIP`,
`containsCIDR`, `ip`, `masked`, `prefixLength`). A URL, a quantity, an IP and a CIDR are protobuf messages holding
their text (`kubernetes.URL`, `kubernetes.Quantity`, `kubernetes.IP`, `kubernetes.CIDR`). The list functions are
declared over `list(dyn)`, so the checker accepts them on any list (kube-apiserver refuses `sum` on a list of
strings when the CRD is written; here it fails when evaluated).

Not modelled: lists' `indexOf` and `lastIndexOf` (the strings extension's own `indexOf` cannot be overloaded
here), `ip.isCanonical`, format, semver, authz; regexes are Python's `re`, close to RE2 for the patterns rules use.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from omectl.core.quantity import scaled

_F = descriptor_pb2.FieldDescriptorProto
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[eE][+-]?[0-9]+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|)$")
_INT64_MAX = (1 << 63) - 1


def _file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="kubernetes_cel.proto", package="kubernetes", syntax="proto3")
    for name in ("Quantity", "URL", "IP", "CIDR"):
        message = file.message_type.add(name=name)
        message.field.add(name="value", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    return file


def add_types(pool: Any) -> None:
    """Add `kubernetes.Quantity` and `kubernetes.URL` to a descriptor pool."""
    pool.Add(_file())


@functools.cache
def pool() -> Any:
    """A descriptor pool holding only the library's types (the untyped runtime environment's)."""
    created = descriptor_pool.DescriptorPool()
    add_types(created)
    return created


@functools.cache
def _classes() -> tuple[Any, Any, Any, Any]:
    quantity, url, ip, cidr = (
        message_factory.GetMessageClass(pool().FindMessageTypeByName(f"kubernetes.{name}"))
        for name in ("Quantity", "URL", "IP", "CIDR")
    )
    return quantity, url, ip, cidr


# -- IPs and CIDRs ---------------------------------------------------------------------------------------------


def _parse_ip(text: str) -> Any:
    """Go's netip.ParseAddr as the library uses it: no zone, no IPv4-mapped IPv6 address."""
    address = ipaddress.ip_address(text)
    if isinstance(address, ipaddress.IPv6Address) and (address.ipv4_mapped is not None or "%" in text):
        raise ValueError("IPv4-mapped IPv6 addresses and zones are not allowed")
    return address


def _ip(text: str) -> Any:
    try:
        _parse_ip(text)
    except ValueError as error:
        raise ValueError(f"IP Address {text!r} parse error during conversion from string: {error}") from error
    return _classes()[2](value=text)


def _is_ip(text: str) -> bool:
    try:
        _parse_ip(text)
    except ValueError:
        return False
    return True


def _parse_cidr(text: str) -> Any:
    address, _, prefix = text.partition("/")
    _parse_ip(address)
    if not prefix.isdigit():
        raise ValueError(f"network address parse error during conversion from string: {text!r}")
    return ipaddress.ip_interface(text)


def _cidr(text: str) -> Any:
    _parse_cidr(text)
    return _classes()[3](value=text)


def _is_cidr(text: str) -> bool:
    try:
        _parse_cidr(text)
    except ValueError:
        return False
    return True


def _is_link_local_multicast(ip: Any) -> bool:
    address = _parse_ip(ip.value)
    return address in ipaddress.ip_network("224.0.0.0/24" if address.version == 4 else "ff02::/16")


def _is_global_unicast(ip: Any) -> bool:
    """Go's netip.Addr.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or the IPv4 broadcast."""
    address = _parse_ip(ip.value)
    broadcast = address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255")
    return not (
        address.is_unspecified or address.is_loopback or address.is_multicast or address.is_link_local or broadcast
    )


def _contains_ip(cidr: Any, ip: Any) -> bool:
    network = _parse_cidr(cidr.value).network
    address = _parse_ip(ip if isinstance(ip, str) else ip.value)
    return address.version == network.version and address in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    network = _parse_cidr(cidr.value).network
    inner = _parse_cidr(other if isinstance(other, str) else other.value).network
    return bool(inner.version == network.version and inner.subnet_of(network))


# -- quantities ------------------------------------------------------------------------------------------------


def parse_quantity(text: str) -> Fraction:
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    try:
        base = Fraction(Decimal(match.group(1)))
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(str(error)) from error
    suffix = match.group(2)
    return scaled(base, suffix)


def _quantity(text: str) -> Any:
    parse_quantity(text)
    return _classes()[0](value=text)


def _is_quantity(text: str) -> bool:
    return _QUANTITY.match(text) is not None


def _q(value: Any) -> Fraction:
    return parse_quantity(value.value) if not isinstance(value, int) else Fraction(value)


def _from_fraction(value: Fraction) -> Any:
    text = str(value.numerator) if value.denominator == 1 else f"{Decimal(value.numerator) / value.denominator}"
    return _classes()[0](value=text)


def _as_integer(value: Any) -> int:
    number = _q(value)
    if number.denominator != 1 or abs(number) > _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return int(number)


def _compare(a: Any, b: Any) -> int:
    x, y = _q(a), _q(b)
    return (x > y) - (x < y)


# -- URLs ------------------------------------------------------------------------------------------------------


def _parse_url(text: str) -> Any:
    parts = urlsplit(text)
    if not (parts.scheme or text.startswith("/")) or " " in text:
        raise ValueError(f"URL parse error during conversion from string: parse {text!r}: invalid URI for request")
    return parts


def _url(text: str) -> Any:
    _parse_url(text)
    return _classes()[1](value=text)


def _is_url(text: str) -> bool:
    try:
        _parse_url(text)
    except ValueError:
        return False
    return True


def _host(url: Any) -> str:
    netloc: str = _parse_url(url.value).netloc
    return netloc.rpartition("@")[2]


def _hostname(url: Any) -> str:
    host = _host(url)
    if host.startswith("["):
        return host[1 : host.index("]")]
    return host.rpartition(":")[0] if ":" in host else host


def _port(url: Any) -> str:
    host = _host(url)
    tail = host.rpartition("]")[2] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


# -- lists -----------------------------------------------------------------------------------------------------


def _sum(items: list[Any]) -> Any:
    if any(isinstance(i, float) for i in items):
        return math.fsum(items)
    return sum(items)


def _min(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return min(items)


def _max(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return max(items)


def _member(name: str, result: Any, params: list[Any], impl: Any) -> Any:
    overload_id = f"{name}_" + "_".join(re.sub(r"\W", "", p.name()) for p in params)
    return cel.Overload(overload_id, result, params, is_member=True, impl=impl)


@functools.cache
def declarations() -> list[Any]:
    """The library's functions, declared with their implementations."""
    dyn, string, integer = cel.Type.DYN, cel.Type.STRING, cel.Type.INT
    dyn_list = cel.Type.List(dyn)
    quantity, url = cel.Type("kubernetes.Quantity"), cel.Type("kubernetes.URL")
    ip, cidr = cel.Type("kubernetes.IP"), cel.Type("kubernetes.CIDR")
    boolean = cel.Type.BOOL
    groups: dict[str, list[Any]] = {
        "isSorted": [_member("isSorted", cel.Type.BOOL, [dyn_list], lambda items: items == sorted(items))],
        "sum": [_member("sum", dyn, [dyn_list], _sum)],
        "min": [_member("min", dyn, [dyn_list], _min)],
        "max": [_member("max", dyn, [dyn_list], _max)],
        "find": [_member("find", string, [string, string], lambda s, p: m.group(0) if (m := re.search(p, s)) else "")],
        "findAll": [
            _member(
                "findAll", cel.Type.List(string), [string, string], lambda s, p: [m.group(0) for m in re.finditer(p, s)]
            ),
            _member(
                "findAll",
                cel.Type.List(string),
                [string, string, integer],
                lambda s, p, n: [m.group(0) for m in re.finditer(p, s)][: n if n >= 0 else None],
            ),
        ],
        "url": [cel.Overload("string_to_url", url, [string], impl=_url)],
        "isURL": [cel.Overload("is_url_string", cel.Type.BOOL, [string], impl=_is_url)],
        "getScheme": [_member("getScheme", string, [url], lambda u: _parse_url(u.value).scheme)],
        "getHost": [_member("getHost", string, [url], _host)],
        "getHostname": [_member("getHostname", string, [url], _hostname)],
        "getPort": [_member("getPort", string, [url], _port)],
        "getEscapedPath": [_member("getEscapedPath", string, [url], lambda u: _parse_url(u.value).path)],
        "getQuery": [
            _member(
                "getQuery",
                cel.Type.Map(string, cel.Type.List(string)),
                [url],
                lambda u: parse_qs(_parse_url(u.value).query, keep_blank_values=True),
            )
        ],
        "quantity": [cel.Overload("string_to_quantity", quantity, [string], impl=_quantity)],
        "isQuantity": [cel.Overload("is_quantity_string", cel.Type.BOOL, [string], impl=_is_quantity)],
        "sign": [_member("sign", integer, [quantity], lambda q: (_q(q) > 0) - (_q(q) < 0))],
        "isInteger": [_member("isInteger", cel.Type.BOOL, [quantity], lambda q: _q(q).denominator == 1)],
        "asInteger": [_member("asInteger", integer, [quantity], _as_integer)],
        "asApproximateFloat": [_member("asApproximateFloat", cel.Type.DOUBLE, [quantity], lambda q: float(_q(q)))],
        "add": [
            _member("add", quantity, [quantity, quantity], lambda a, b: _from_fraction(_q(a) + _q(b))),
            _member("add", quantity, [quantity, integer], lambda a, b: _from_fraction(_q(a) + b)),
        ],
        "sub": [
            _member("sub", quantity, [quantity, quantity], lambda a, b: _from_fraction(_q(a) - _q(b))),
            _member("sub", quantity, [quantity, integer], lambda a, b: _from_fraction(_q(a) - b)),
        ],
        "isLessThan": [_member("isLessThan", cel.Type.BOOL, [quantity, quantity], lambda a, b: _compare(a, b) < 0)],
        "isGreaterThan": [
            _member("isGreaterThan", cel.Type.BOOL, [quantity, quantity], lambda a, b: _compare(a, b) > 0)
        ],
        "compareTo": [_member("compareTo", integer, [quantity, quantity], _compare)],
        "ip": [
            cel.Overload("string_to_ip", ip, [string], impl=_ip),
            _member("ip", ip, [cidr], lambda c: _classes()[2](value=str(_parse_cidr(c.value).ip))),
        ],
        "isIP": [cel.Overload("is_ip_string", boolean, [string], impl=_is_ip)],
        "family": [_member("family", integer, [ip], lambda a: _parse_ip(a.value).version)],
        "isUnspecified": [_member("isUnspecified", boolean, [ip], lambda a: _parse_ip(a.value).is_unspecified)],
        "isLoopback": [_member("isLoopback", boolean, [ip], lambda a: _parse_ip(a.value).is_loopback)],
        "isLinkLocalMulticast": [_member("isLinkLocalMulticast", boolean, [ip], _is_link_local_multicast)],
        "isLinkLocalUnicast": [
            _member("isLinkLocalUnicast", boolean, [ip], lambda a: _parse_ip(a.value).is_link_local)
        ],
        "isGlobalUnicast": [_member("isGlobalUnicast", boolean, [ip], _is_global_unicast)],
        "cidr": [cel.Overload("string_to_cidr", cidr, [string], impl=_cidr)],
        "isCIDR": [cel.Overload("is_cidr_string", boolean, [string], impl=_is_cidr)],
        "containsIP": [
            _member("containsIP", boolean, [cidr, ip], _contains_ip),
            _member("containsIP", boolean, [cidr, string], _contains_ip),
        ],
        "containsCIDR": [
            _member("containsCIDR", boolean, [cidr, cidr], _contains_cidr),
            _member("containsCIDR", boolean, [cidr, string], _contains_cidr),
        ],
        "masked": [_member("masked", cidr, [cidr], lambda c: _classes()[3](value=str(_parse_cidr(c.value).network)))],
        "prefixLength": [_member("prefixLength", integer, [cidr], lambda c: _parse_cidr(c.value).network.prefixlen)],
    }
    return [cel.FunctionDecl(name, overloads) for name, overloads in groups.items()]
