"""Decoding of the protobuf request bodies kubectl's typed generators send (`kubectl create namespace|configmap|
secret ...` use `application/vnd.kubernetes.protobuf`).

Only what those commands send is decoded: the `k8s\\x00` envelope (`runtime.Unknown`), ObjectMeta, and the
Namespace, ConfigMap and Secret messages (field numbers from k8s.io/api generated.proto). Other kinds answer 415,
so a client can fall back to JSON. Responses are always JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    pass


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field; length-delimited values are bytes."""
    i, n = 0, len(data)
    while i < n:
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            length, i = _varint(data, i)
            value, i = data[i : i + length], i + length
            if i > n:
                raise ProtobufError("truncated length-delimited field")
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        yield number, wire, value


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _str(value: bytes) -> str:
    return value.decode("utf-8")


def _map_entry(value: bytes, decode_value: Callable[[bytes], Any]) -> tuple[str, Any]:
    key, item = "", decode_value(b"")
    for number, _, raw in _fields(value):
        if number == 1:
            key = _str(raw)
        elif number == 2:
            item = decode_value(raw)
    return key, item


def _time(value: bytes) -> str:
    seconds = 0
    for number, _, raw in _fields(value):
        if number == 1:
            seconds = raw
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owner_reference(value: bytes) -> dict[str, Any]:
    names = {1: "kind", 3: "name", 4: "uid", 5: "apiVersion"}
    ref: dict[str, Any] = {}
    for number, _, raw in _fields(value):
        if number in names:
            ref[names[number]] = _str(raw)
        elif number == 6:
            ref["controller"] = bool(raw)
        elif number == 7:
            ref["blockOwnerDeletion"] = bool(raw)
    return ref


def _object_meta(value: bytes) -> dict[str, Any]:
    strings = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    meta: dict[str, Any] = {}
    for number, _, raw in _fields(value):
        if number in strings and raw:
            meta[strings[number]] = _str(raw)
        elif number == 7 and raw:
            meta["generation"] = raw
        elif number in (8, 9) and raw:
            meta["creationTimestamp" if number == 8 else "deletionTimestamp"] = _time(raw)
        elif number in (11, 12):
            key, item = _map_entry(raw, _str)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = item
        elif number == 13:
            meta.setdefault("ownerReferences", []).append(_owner_reference(raw))
        elif number == 14:
            meta.setdefault("finalizers", []).append(_str(raw))
    return meta


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _namespace(body: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, _, raw in _fields(body):
        if number == 1:
            obj["metadata"] = _object_meta(raw)
        elif number == 2:
            finalizers = [_str(v) for n, _, v in _fields(raw) if n == 1]
            if finalizers:
                obj["spec"] = {"finalizers": finalizers}
    return obj


def _configmap(body: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, _, raw in _fields(body):
        if number == 1:
            obj["metadata"] = _object_meta(raw)
        elif number == 2:
            key, item = _map_entry(raw, _str)
            obj.setdefault("data", {})[key] = item
        elif number == 3:
            key, item = _map_entry(raw, _b64)
            obj.setdefault("binaryData", {})[key] = item
        elif number == 4:
            obj["immutable"] = bool(raw)
    return obj


def _secret(body: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, _, raw in _fields(body):
        if number == 1:
            obj["metadata"] = _object_meta(raw)
        elif number == 2:
            key, item = _map_entry(raw, _b64)
            obj.setdefault("data", {})[key] = item
        elif number == 3 and raw:
            obj["type"] = _str(raw)
        elif number == 4:
            key, item = _map_entry(raw, _str)
            obj.setdefault("stringData", {})[key] = item
        elif number == 5:
            obj["immutable"] = bool(raw)
    return obj


DECODERS: dict[tuple[str, str], Callable[[bytes], dict[str, Any]]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Secret"): _secret,
}


def decode(data: bytes) -> dict[str, Any]:
    """The JSON-shaped object of a protobuf-encoded request body; raises ProtobufError when unsupported."""
    if not data.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf envelope")
    api_version = kind = ""
    raw = b""
    for number, _, value in _fields(data[len(MAGIC) :]):
        if number == 1:
            for n, _, v in _fields(value):
                if n == 1:
                    api_version = _str(v)
                elif n == 2:
                    kind = _str(v)
        elif number == 2:
            raw = value
    decoder = DECODERS.get((api_version, kind))
    if decoder is None:
        raise ProtobufError(f"protobuf bodies of {api_version} {kind} are not supported; send JSON")
    obj = decoder(raw)
    obj.setdefault("metadata", {})
    return {"apiVersion": api_version, "kind": kind, **obj}
