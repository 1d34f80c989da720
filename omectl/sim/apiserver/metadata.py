"""ObjectMeta rules: name syntax, labels, annotations, finalizers and owner references (apimachinery wording)."""

from __future__ import annotations

import re
from typing import Any

from omectl.sim.apiserver.errors import FieldError

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QUALIFIED_NAME + ")?"

_label_re = re.compile(f"^{_DNS1123_LABEL}$")
_subdomain_re = re.compile(f"^{_DNS1123_SUBDOMAIN}$")
_qualified_re = re.compile(f"^{_QUALIFIED_NAME}$")
_value_re = re.compile(f"^{_LABEL_VALUE}$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN}')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    f"end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    f"'{_DNS1123_LABEL}')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    f"'{_QUALIFIED_NAME}')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    f"validation is '{_LABEL_VALUE}')"
)

SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)


def name_errors(name: str, *, dns_label: bool = False, path: str = "metadata.name") -> list[FieldError]:
    if dns_label:
        if len(name) > 63:
            return [FieldError("Invalid", path, "must be no more than 63 characters", name)]
        if not _label_re.match(name):
            return [FieldError("Invalid", path, LABEL_MSG, name)]
        return []
    if len(name) > 253:
        return [FieldError("Invalid", path, "must be no more than 253 characters", name)]
    if not _subdomain_re.match(name):
        return [FieldError("Invalid", path, SUBDOMAIN_MSG, name)]
    return []


def dns1123_subdomain_problems(value: str) -> list[str]:
    """`IsDNS1123Subdomain`: what is wrong with `value` as a DNS subdomain (empty when nothing)."""
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not _subdomain_re.match(value):
        problems.append(SUBDOMAIN_MSG)
    return problems


def qualified_name_errors(key: str, path: str) -> list[FieldError]:
    """A label/annotation key or finalizer: an optional DNS-subdomain prefix, '/', and a name part."""
    prefix, _, name = key.rpartition("/")
    errors: list[FieldError] = []
    if "/" in key and not prefix:
        errors.append(FieldError("Invalid", path, "prefix part must be non-empty", key))
    elif prefix:
        if len(prefix) > 253:
            errors.append(FieldError("Invalid", path, "prefix part must be no more than 253 characters", key))
        elif not _subdomain_re.match(prefix):
            errors.append(FieldError("Invalid", path, "prefix part " + SUBDOMAIN_MSG, key))
    if not name:
        errors.append(FieldError("Invalid", path, "name part must be non-empty", key))
    elif len(name) > 63:
        errors.append(FieldError("Invalid", path, "name part must be no more than 63 characters", key))
    elif not _qualified_re.match(name):
        errors.append(FieldError("Invalid", path, QUALIFIED_MSG, key))
    return errors


# Keys and label values already found valid: most writes repeat the same few, so the regex checks and
# error-path strings are skipped for them. Bounded; cleared when full.
_KNOWN_VALID_CAP = 8192
_valid_keys: set[str] = set()
_valid_label_values: set[str] = set()


def _remember(known: set[str], text: str) -> None:
    if len(known) >= _KNOWN_VALID_CAP:
        known.clear()
    known.add(text)


def _key_errors(key: str, path: str) -> list[FieldError]:
    if key in _valid_keys:
        return []
    errors = qualified_name_errors(key, path)
    if not errors:
        _remember(_valid_keys, key)
    return errors


def _label_value_ok(value: str) -> bool:
    if value in _valid_label_values:
        return True
    if len(value) > 63 or not _value_re.match(value):
        return False
    _remember(_valid_label_values, value)
    return True


def meta_errors(meta: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        return [FieldError("Invalid", "metadata.labels", "must be a map of string to string", labels)]
    for key, value in labels.items():
        if key not in _valid_keys:
            errors += _key_errors(key, "metadata.labels")
        if isinstance(value, str) and _label_value_ok(value):
            continue
        if not isinstance(value, str):
            errors.append(FieldError("Invalid", f"metadata.labels[{key}]", "must be a string", value))
        elif len(value) > 63:
            errors.append(FieldError("Invalid", "metadata.labels", "must be no more than 63 characters", value))
        else:
            errors.append(FieldError("Invalid", "metadata.labels", VALUE_MSG, value))
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        return [*errors, FieldError("Invalid", "metadata.annotations", "must be a map", annotations)]
    total = 0
    for key, value in annotations.items():
        lowered = key.lower()
        if lowered not in _valid_keys:
            errors += _key_errors(lowered, "metadata.annotations")
        total += len(key) + len(value if isinstance(value, str) else str(value))
    if total > 256 * 1024:
        errors.append(FieldError("TooLong", "metadata.annotations", "may not be more than 262144 bytes"))
    finalizers = meta.get("finalizers")
    if finalizers:
        for i, fin in enumerate(finalizers):
            if not isinstance(fin, str):
                errors.append(FieldError("Invalid", f"metadata.finalizers[{i}]", "must be a string", fin))
            elif fin not in _valid_keys:
                errors += _key_errors(fin, f"metadata.finalizers[{i}]")
    owner_refs = meta.get("ownerReferences")
    if owner_refs:
        errors += owner_reference_errors(owner_refs)
    return errors


def owner_reference_errors(refs: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    controllers = 0
    for i, ref in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, dict):
            errors.append(FieldError("Invalid", path, "must be an object", ref))
            continue
        for required in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(required):
                what = {"apiVersion": "version", "uid": "uid", "kind": "kind", "name": "name"}[required]
                errors.append(FieldError("Invalid", f"{path}.{required}", f"{what} must not be empty", ""))
        if ref.get("controller"):
            controllers += 1
    if controllers > 1:
        names = [r.get("name", "") for r in refs if isinstance(r, dict) and r.get("controller")]
        errors.append(
            FieldError(
                "Invalid",
                "metadata.ownerReferences",
                'Only one reference can have Controller set to true. Found "true" in references for '
                + " and ".join(f"{r.get('kind', '')}/{n}" for r, n in zip(refs, names, strict=False)),
                refs,
            )
        )
    return errors
