"""`/openapi/v2`: the swagger 2.0 document kube-apiserver still serves beside `/openapi/v3`, as JSON or as
gnostic's protobuf `openapi_v2.Document` (what client-go asks for)."""

from __future__ import annotations

from typing import Any

from omectl.sim.apiserver.discovery import KUBERNETES_VERSION


def swagger_document(v3_documents: list[dict[str, Any]]) -> dict[str, Any]:
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"{major}.{minor}"},
        "paths": {},
        "definitions": {},
    }


def protobuf_document(doc: dict[str, Any]) -> bytes:
    """`doc` (a swagger 2.0 document) as gnostic's protobuf `openapi_v2.Document`."""
    info = _proto_string(1, doc["info"]["title"]) + _proto_string(2, doc["info"]["version"])
    return (
        _proto_string(1, "2.0")
        + _proto_field(2, info)
        + _proto_field(8, b"")  # paths
        + _proto_field(9, b"")  # definitions
    )


def _proto_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _proto_string(number: int, text: str) -> bytes:
    return _proto_field(number, text.encode())


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)
