"""The ConversionReview exchange of kube-apiserver's webhook converter, without I/O: the review it posts for an
object going to another version of its CRD, and the checks the answer must pass before the converted object is
used. The webhook may change the object's body, its labels and its annotations; every other part of its
metadata comes back as it was sent."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import orjson

from omectl.sim.apiserver.errors import FieldError, go_quote
from omectl.sim.apiserver.metadata import meta_errors

REVIEW_VERSIONS = ("v1", "v1beta1")  # the ConversionReview versions the real server can send
_REVIEW_GROUP = "apiextensions.k8s.io"


class ReviewError(Exception):
    """An answer that cannot be used. `str()` follows `conversion webhook for <group/version, Kind=K> `:
    `failed: ...` for a failed call or answer, else what is wrong with the returned object."""


def gvk_string(api_version: Any, kind: Any) -> str:
    """Go's `schema.GroupVersionKind` as `%v` prints it: `group/version, Kind=Kind`."""
    group, _, version = str(api_version or "").rpartition("/")
    return f"{group}/{version}, Kind={kind or ''}"


def review_version(accepted: list[Any]) -> str | None:
    """The first of the CRD's `conversionReviewVersions` the server can send, or None."""
    return next((v for v in accepted if v in REVIEW_VERSIONS), None)


def review_body(version: str, uid: str, desired_api_version: str, objects: list[dict[str, Any]]) -> bytes:
    """The review as posted. Objects go with sorted keys (Go marshals maps so); the empty `response` is what the
    real server sends along with the request."""
    body = {
        "kind": "ConversionReview",
        "apiVersion": f"{_REVIEW_GROUP}/{version}",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": [orjson.Fragment(orjson.dumps(o, option=orjson.OPT_SORT_KEYS)) for o in objects],
        },
        "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
    }
    return orjson.dumps(body)


def converted_object(answer: Any, version: str, uid: str, original: dict[str, Any], desired: str) -> dict[str, Any]:
    """The one object the webhook converted `original` into, its metadata restored (labels and annotations
    as the webhook returned them). Raises `ReviewError`."""
    converted = _converted_objects(answer, version, uid)
    if not isinstance(converted, list) or len(converted) != 1:
        count = len(converted) if isinstance(converted, list) else 0
        raise ReviewError(f"returned {count} objects, expected 1")
    out = converted[0]
    if not isinstance(out, dict):
        raise ReviewError(f"failed: json: cannot unmarshal {_go_json_type(out)} into Go value of type map[string]any")
    received = str(out.get("apiVersion") or "")
    if received != desired:
        raise ReviewError(
            f"returned invalid object at index 0: invalid groupVersion (expected {desired}, received {received})"
        )
    if out.get("kind") != original.get("kind"):
        raise ReviewError(
            f"returned invalid object at index 0: invalid kind (expected {original.get('kind')}, "
            f"received {out.get('kind') or ''})"
        )
    _same_identity(original, out)
    return _restore_metadata(original, out)


def _converted_objects(answer: Any, version: str, uid: str) -> Any:
    if not isinstance(answer, dict):
        answer = {}
    if version == "v1":  # v1beta1 answers were never checked for their kind or uid
        expected = f"{_REVIEW_GROUP}/v1, Kind=ConversionReview"
        got = gvk_string(answer.get("apiVersion"), answer.get("kind"))
        if got != expected:
            raise ReviewError(f"failed: expected webhook response of {expected}, got {got}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ReviewError("failed: no response provided")
    if version == "v1" and response.get("uid", "") != uid:
        raise ReviewError(f"failed: expected response.uid={go_quote(uid)}, got {go_quote(str(response.get('uid')))}")
    result = response.get("result")
    result = result if isinstance(result, dict) else {}
    status = str(result.get("status") or "")
    if status != "Success":
        if result.get("message"):
            raise ReviewError(f"failed: {result['message']}")
        raise ReviewError(f"failed: response.result.status was '{status}', not 'Success'")
    return response.get("convertedObjects")


def _same_identity(original: dict[str, Any], out: dict[str, Any]) -> None:
    before, after = _meta(original), _meta(out)
    for key, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        sent, returned = str(before.get(key) or ""), str(after.get(key) or "")
        if sent != returned:
            raise ReviewError(f"returned invalid object: must have the same {label}: {sent} != {returned}")


def _restore_metadata(original: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """`original`'s metadata with the webhook's labels and annotations (checked when they changed)."""
    if "metadata" not in out:
        raise ReviewError("returned invalid metadata: missing metadata in converted object")
    answered = out["metadata"]
    if not isinstance(answered, dict):
        raise ReviewError(
            f"returned invalid metadata: invalid metadata of type {_go_type(answered)} in converted object"
        )
    restored = copy.deepcopy(_meta(original))
    for field in ("labels", "annotations"):
        value = answered.get(field)
        if value is None:
            restored.pop(field, None)
            continue
        if not isinstance(value, dict):
            raise ReviewError(
                f"returned invalid metadata: invalid metadata.{field} of type {_go_type(value)} in converted object"
            )
        for key, item in value.items():
            if not isinstance(item, str):
                raise ReviewError(
                    f"returned invalid metadata: metadata.{field}[{key}] must be a string, but is "
                    f"{_go_type(item)} in converted object"
                )
        if value != (restored.get(field) or {}):
            _check_changed(field, value)
        restored[field] = value
    return {**out, "metadata": restored}


def _check_changed(field: str, value: dict[str, str]) -> None:
    errors = meta_errors({field: value})
    if field == "annotations":  # the real server names the path so
        errors = [dataclasses.replace(e, field=e.field.replace("annotations", "annotation")) for e in errors]
    if errors:
        raise ReviewError(f"returned invalid metadata: {_aggregate(errors)}")


def _aggregate(errors: list[FieldError]) -> str:
    return str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _go_type(value: Any) -> str:
    """The Go type a decoded JSON value has (`%T` of an unstructured value)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "<nil>"


def _go_json_type(value: Any) -> str:
    return {bool: "bool", str: "string", list: "array"}.get(type(value), "number" if value is not None else "null")
