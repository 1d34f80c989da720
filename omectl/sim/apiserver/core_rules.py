"""Validation kube-apiserver applies to a few built-in kinds beyond their ObjectMeta, in its field paths and words.

- a core/v1 Event names the namespace of the object it is about: without `eventTime` (an old-style event) the
  two must agree (an event about a cluster-scoped object lives in `default`); with it, an event about a
  cluster-scoped object lives in `default` or `kube-system`;
- a Secret's `stringData` is write-only: its entries are folded into `data` (base64), replacing keys there;
- a ConfigMap or Secret marked `immutable: true` keeps its data, and stays immutable; a Secret's `type` never
  changes;
- a CustomResourceDefinition in a protected group (`k8s.io`, `kubernetes.io` and their subdomains) carries the
  `api-approved.kubernetes.io` annotation: a URL, or a reason starting with "unapproved".
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlsplit

from omectl.sim.apiserver.errors import FieldError

_IMMUTABLE_SET = "field is immutable when `immutable` is set"


def core_event_errors(event: dict[str, Any], namespace: str) -> list[FieldError]:
    involved_ns = (event.get("involvedObject") or {}).get("namespace") or ""
    if event.get("eventTime"):
        matches = bool(involved_ns) or namespace in ("default", "kube-system")
    elif involved_ns:
        matches = involved_ns == namespace
    else:
        matches = namespace in ("", "default")
    if matches:
        return []
    return [FieldError("Invalid", "involvedObject.namespace", "does not match event.namespace", involved_ns)]


def immutable_data_errors(kind: str, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Errors of an update of a ConfigMap or a Secret (`kind`), from its stored version `old`."""
    errs: list[FieldError] = []
    if kind == "Secret" and (new.get("type") or "Opaque") != (old.get("type") or "Opaque"):
        errs.append(FieldError("Invalid", "type", "field is immutable", new.get("type") or ""))
    if old.get("immutable") is not True:
        return errs
    if new.get("immutable") is not True:
        errs.append(FieldError("Forbidden", "immutable", _IMMUTABLE_SET))
    data_fields = ("data", "binaryData") if kind == "ConfigMap" else ("data",)
    for field in data_fields:
        if (new.get(field) or {}) != (old.get(field) or {}):
            errs.append(FieldError("Forbidden", field, _IMMUTABLE_SET))
    return errs


def fold_string_data(secret: dict[str, Any]) -> None:
    string_data = secret.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = dict(secret.get("data") or {})
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    secret["data"] = data


API_APPROVED = "api-approved.kubernetes.io"
_APPROVAL_PR = "see https://github.com/kubernetes/enhancements/pull/1111"


def _protected_group(group: str) -> bool:
    return any(group == g or group.endswith("." + g) for g in ("k8s.io", "kubernetes.io"))


def _approval_state(crd: dict[str, Any]) -> tuple[str, str]:
    annotation = ((crd.get("metadata") or {}).get("annotations") or {}).get(API_APPROVED) or ""
    if not annotation:
        return "missing", f'protected groups must have approval annotation "{API_APPROVED}", {_APPROVAL_PR}'
    if annotation.startswith("unapproved"):
        return "bypassed", ""
    parts = urlsplit(annotation)
    if parts.scheme and parts.netloc:
        return "approved", ""
    return "invalid", (
        f'protected groups must have approval annotation "{API_APPROVED}" with either a URL or a reason starting '
        f'with "unapproved", {_APPROVAL_PR}'
    )


def api_approval_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """A CRD in a protected group needs the approval annotation; an update that keeps its state is let through."""
    if not _protected_group((crd.get("spec") or {}).get("group") or ""):
        return []
    state, reason = _approval_state(crd)
    if old is not None and _approval_state(old)[0] == state:
        return []
    path = f"metadata.annotations[{API_APPROVED}]"
    if state == "missing":
        return [FieldError("Required", path, reason)]
    if state == "invalid":
        value = crd["metadata"]["annotations"][API_APPROVED]
        return [FieldError("Invalid", path, reason, value)]
    return []
