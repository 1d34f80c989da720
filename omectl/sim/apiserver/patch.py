"""The non-apply patch types of the API server, as pure functions over JSON-like dicts.

Each function returns a new object and never mutates its inputs (the result shares nothing with them).

- `apply_merge_patch`: RFC 7386 JSON merge patch (`null` deletes, a non-object patch replaces, objects merge).
- `apply_json_patch`: RFC 6902 JSON patch, applied with the `jsonpatch` library but with the behaviour of the
  server's evanphx/json-patch v4: a body that is not an array is a 400 with Go's decode text, more than 10,000
  operations is a 413, and any failed operation is the server's generic 422 ("the server rejected our request
  due to an error in our request", `details: {}`; the library's own text is kept on `__cause__`). Like v4,
  `replace` of a missing object member adds it, an `add`/`replace` without `value` writes `null`, `null`
  as the whole body is an empty patch, and only the six RFC operations exist.
  Not reproduced: negative array indices (v4 accepts them) and `copy` from a missing member (v4 copies `null`);
  both fail with the 422 here.
- `apply_strategic_merge_patch`: the subset of strategic merge patch that the built-in kinds need:
    * maps merge as in RFC 7386 (`null` deletes a key);
    * `metadata.finalizers` merges as a set (existing items first, then new ones, without duplicates);
    * lists of maps merge by key when every item (existing and patch) is a map holding the key:
      `metadata.ownerReferences` by `uid`; `containers`, `initContainers`, `ephemeralContainers`, `volumes`,
      `env`, `imagePullSecrets` by `name`; `volumeMounts` by `mountPath` (upstream's key); `ports` by
      `containerPort` (container ports) or else `port` (service ports); `conditions` by `type`.
      Existing items keep their place, merged in place; new items are appended. Every other list is replaced;
    * directives: `$patch: replace` (a map, or an item of a list of maps, replaces the whole map/list),
      `$patch: delete` (a map becomes `{}`; a list item deletes the item with that key), `$retainKeys` (keys
      not listed are cleared; a patch key outside the list is the server's 422),
      `$deleteFromPrimitiveList/<field>` (removes the values from the existing primitive list before the
      merge), `$setElementOrder/<field>` (orders the merged items it names; items it does not name keep their
      slots). Directives never reach the result. A malformed directive gives the server's 400 text; an unknown
      `$patch` value is a 400 here (upstream returns it as a 500).
    * not covered: schema-driven strategies of other fields (`patchStrategy=replace` maps, `retainKeys`
      strategies declared in Go structs, other merge keys), and lists of lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonpatch
from jsonpointer import JsonPointer, JsonPointerException

from omectl.sim.apiserver.errors import APIError, bad_request

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MAX_JSON_PATCH_OPERATIONS",
    "MERGE_PATCH",
    "PATCH_CONTENT_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_CONTENT_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

MAX_JSON_PATCH_OPERATIONS = 10000


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _copy(value: Any) -> Any:
    """Deep copy of a JSON value, much cheaper than `copy.deepcopy` for plain dicts and lists."""
    if isinstance(value, dict):
        return {k: v if type(v) in _SCALARS else _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else _copy(v) for v in value]
    return value


def _go_json_kind(value: Any) -> str:
    """The JSON kind Go's decoder names in `cannot unmarshal X into ...`."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"


# --- RFC 7386 ------------------------------------------------------------------------------------------------


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch to `target`."""
    if not isinstance(patch, dict):
        return _copy(patch)
    base = target if isinstance(target, dict) else {}
    result: dict[str, Any] = {}
    for key, value in base.items():
        if key not in patch:
            result[key] = _copy(value)
        elif patch[key] is not None:
            result[key] = apply_merge_patch(value, patch[key])
    for key, value in patch.items():
        if value is not None and key not in base:
            result[key] = apply_merge_patch(None, value)
    return result


# --- RFC 6902 ------------------------------------------------------------------------------------------------

_RFC6902_OPERATIONS = frozenset(("add", "remove", "replace", "move", "copy", "test"))
_LIBRARY_ERRORS = (
    jsonpatch.JsonPatchException,
    JsonPointerException,
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
)


class PatchFailure(Exception):
    """Why a patch failed, kept as `__cause__` of the generic 422 (the real server does not show it)."""


def _unprocessable() -> APIError:
    # NewGenericServerResponse(422, ...) without causes: this fixed text and empty details is all clients see.
    return APIError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def _apply_operation(doc: Any, operation: dict[str, Any] | None) -> Any:
    if operation is None:
        raise PatchFailure("Unexpected kind: unknown")
    op = operation.get("op")
    if not isinstance(op, str) or op not in _RFC6902_OPERATIONS:
        raise PatchFailure(f"Unexpected kind: {op if isinstance(op, str) else 'unknown'}")
    path = operation.get("path")
    if not isinstance(path, str):
        raise PatchFailure(f"{op} operation failed to decode path")
    if op in ("move", "copy") and not isinstance(operation.get("from"), str):
        raise PatchFailure(f"{op} operation failed to decode from")
    # v4 has no parent for the root: only replace and test may address the whole document.
    if (path == "" and op not in ("replace", "test")) or (op in ("move", "copy") and operation["from"] == ""):
        raise PatchFailure(f'{op} operation does not apply: doc is missing path: "{path}"')
    if op in ("add", "replace") and "value" not in operation:
        operation = {**operation, "value": None}
    if op == "replace" and path:
        try:
            parent, key = JsonPointer(path).to_last(doc)
        except _LIBRARY_ERRORS as exc:
            raise PatchFailure(str(exc)) from None
        if isinstance(parent, dict) and key not in parent:
            operation = {**operation, "op": "add"}  # evanphx/json-patch v4 quirk: replace adds a missing member
    try:
        return jsonpatch.JsonPatch.operations[operation["op"]](operation).apply(doc)
    except _LIBRARY_ERRORS as exc:
        raise PatchFailure(str(exc)) from None


def apply_json_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 6902 JSON patch (the decoded request body) to `target`, with the server's errors."""
    if patch is None:
        unchanged: dict[str, Any] = _copy(target)  # Go decodes `null` into an empty patch
        return unchanged
    if not isinstance(patch, list):
        raise bad_request(f"json: cannot unmarshal {_go_json_kind(patch)} into Go value of type jsonpatch.Patch")
    for operation in patch:
        if operation is not None and not isinstance(operation, dict):
            raise bad_request(
                f"json: cannot unmarshal {_go_json_kind(operation)} into Go value of type jsonpatch.Operation"
            )
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise APIError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}",
        )
    doc: Any = _copy(target)
    for operation in patch:
        try:
            doc = _apply_operation(doc, operation)
        except PatchFailure as exc:
            raise _unprocessable() from exc
    if not isinstance(doc, dict):
        # v4 refuses a scalar root; an array root then fails to decode as the object.
        raise _unprocessable() from PatchFailure("the patched document is not an object")
    return doc


# --- strategic merge patch (subset) ---------------------------------------------------------------------------

_PATCH_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ELEMENT_ORDER = "$setElementOrder/"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"

# Field name -> candidate merge keys, first one that every item has wins.
_MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "port"),
    "conditions": ("type",),
}
# Lists of ObjectMeta (wherever an ObjectMeta sits, e.g. pod templates).
_METADATA_MERGE_KEYS: dict[str, tuple[str, ...]] = {"ownerReferences": ("uid",)}
_METADATA_SET_LISTS = frozenset(("finalizers",))


def _go_v(value: Any) -> str:
    """Go's `%v` of a decoded JSON value (maps print with sorted keys)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_v(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_directive(key: str) -> bool:
    return key.startswith("$")


def _merge_key_for(field: str, in_metadata: bool, *lists: list[Any]) -> str | None:
    candidates = _METADATA_MERGE_KEYS.get(field) if in_metadata else None
    if candidates is None:
        candidates = _MERGE_KEYS.get(field)
    if candidates is None:
        return None
    for key in candidates:
        if all(isinstance(item, dict) and key in item for items in lists for item in items):
            return key
    return None


def _smp_new_value(value: Any, field: str, in_metadata: bool) -> Any:
    """A patch value with nothing to merge into: directives resolved and stripped, nulls dropped."""
    if isinstance(value, dict):
        return _smp_merge_map({}, value, field)
    if isinstance(value, list):
        return _smp_merge_list([], value, field, in_metadata)
    return value


def _smp_merge_map(original: dict[str, Any], patch: dict[str, Any], field: str) -> dict[str, Any]:
    """Merge `patch` into a copy of `original`; `field` is the key this map sits under ("" at the top)."""
    directive = patch.get(_PATCH_DIRECTIVE)
    if directive is not None:
        if directive == "replace":
            rest = {k: v for k, v in patch.items() if k != _PATCH_DIRECTIVE}
            return _smp_merge_map({}, rest, field)
        if directive == "delete":
            return {}
        raise bad_request(f"unknown patch type: {_go_v(directive)} in map: {_go_v(patch)}")
    in_metadata = field == "metadata"
    # Shallow first: values the patch rewrites are built fresh, the rest are copied at the end.
    result = dict(original)
    fresh: set[str] = set()

    retain = patch.get(_RETAIN_KEYS)
    if _RETAIN_KEYS in patch:
        if not isinstance(retain, list):
            raise bad_request("invalid patch format of retainKeys")
        allowed = {k for k in retain if isinstance(k, str)}
        for key, value in patch.items():
            if value is None or _is_directive(key):
                continue
            if key not in allowed:
                raise _unprocessable() from PatchFailure("patch content doesn't match retainKeys list")
        result = {k: v for k, v in result.items() if k in allowed}

    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
            if not isinstance(value, list):
                raise bad_request("invalid patch format of primitive list")
            target_field = key[len(_DELETE_FROM_PRIMITIVE_LIST) :]
            existing = result.get(target_field)
            if isinstance(existing, list):
                kept = [_copy(item) for item in existing if item not in value]
                if kept:
                    result[target_field] = kept
                    fresh.add(target_field)
                else:
                    del result[target_field]
        elif key.startswith(_SET_ELEMENT_ORDER):
            if not isinstance(value, list):
                raise bad_request("invalid patch format of setElementOrder list")
            orders[key[len(_SET_ELEMENT_ORDER) :]] = value

    for key, value in patch.items():
        if _is_directive(key):
            continue
        if value is None:
            result.pop(key, None)
            continue
        existing = result.get(key)
        if isinstance(existing, dict) and isinstance(value, dict):
            result[key] = _smp_merge_map(existing, value, key)
        elif isinstance(existing, list) and isinstance(value, list):
            result[key] = _smp_merge_list(existing, value, key, in_metadata)
        else:
            result[key] = _smp_new_value(value, key, in_metadata)
        fresh.add(key)

    for key, value in result.items():
        if key not in fresh:
            result[key] = _copy(value)
    for key, order in orders.items():
        items = result.get(key)
        if isinstance(items, list):
            result[key] = _apply_element_order(items, order, key, in_metadata)
    return result


def _smp_merge_list(original: list[Any], patch: list[Any], field: str, in_metadata: bool) -> list[Any]:
    replace = any(isinstance(item, dict) and item.get(_PATCH_DIRECTIVE) == "replace" for item in patch)
    if replace:
        patch = [item for item in patch if not (isinstance(item, dict) and item.get(_PATCH_DIRECTIVE) == "replace")]
        original = []
    if in_metadata and field in _METADATA_SET_LISTS:
        merged = list(original)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return _dedupe([_copy(item) for item in merged])
    merge_key = _merge_key_for(field, in_metadata, original, patch)
    if merge_key is None:
        return [_smp_new_value(item, "", False) for item in patch]
    result: list[Any] = [_copy(item) for item in original]
    for item in patch:
        identity = item[merge_key]
        position = next((i for i, existing in enumerate(result) if existing[merge_key] == identity), None)
        if item.get(_PATCH_DIRECTIVE) == "delete":
            result = [existing for existing in result if existing[merge_key] != identity]
        elif position is None:
            result.append(_smp_merge_map({}, item, ""))
        else:
            result[position] = _smp_merge_map(result[position], item, "")
    return result


def _dedupe(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _apply_element_order(items: list[Any], order: list[Any], field: str, in_metadata: bool) -> list[Any]:
    """Order the items that `order` names as it says; the others keep their slots."""
    identity: Callable[[Any], Any]
    if in_metadata and field in _METADATA_SET_LISTS:

        def identity(item: Any) -> Any:
            return item
    else:
        merge_key = _merge_key_for(field, in_metadata, items, order)
        if merge_key is None:
            return items  # order directives only mean something for merging lists

        def identity(item: Any) -> Any:
            return item[merge_key]

    rank: dict[Any, int] = {}
    for index, entry in enumerate(order):
        key = identity(entry)
        if isinstance(key, str | int | float | bool) and key not in rank:
            rank[key] = index

    def ranked(item: Any) -> bool:
        key = identity(item)
        return isinstance(key, str | int | float | bool) and key in rank

    named = sorted((item for item in items if ranked(item)), key=lambda item: rank[identity(item)])
    sequence = iter(named)
    return [next(sequence) if ranked(item) else item for item in items]


def apply_strategic_merge_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a strategic merge patch (the subset in the module docstring) to `target`."""
    if patch is None:
        unchanged: dict[str, Any] = _copy(target)  # Go decodes `null` into an empty map
        return unchanged
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {_go_json_kind(patch)} into Go value of type map[string]interface {{}}"
        )
    return _smp_merge_map(target, patch, "")
