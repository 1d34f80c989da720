"""Admission checks for AIMRuntimeConfig / AIMClusterRuntimeConfig specs and an AIMService's inline config.

Each problem is a `FieldError` whose text is `<field path>: <reason>`, e.g.
`spec.routing.pathTemplate: invalid jsonpath expression "{.metadata[}": unterminated array`. Checked:

- `routing.pathTemplate`: a string whose `{...}` are balanced and valid JSONPath (`paths.validate_path_template`);
- `routing.requestTimeout`: a Go duration an HTTPRoute can hold (`durations.validate_duration`);
- `routing.gatewayRef`: has a `name` when it is given;
- `labelPropagation.match[i]`: a well-formed pattern (`labels.validate_pattern`);
- `env[i]`: has a name, not repeated;
- `storage.pvcHeadroomPercent` and the deprecated top-level `pvcHeadroomPercent`: not negative.

An empty list means the spec is admitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omectl.core.aim.durations import validate_duration
from omectl.core.aim.labels import validate_pattern
from omectl.core.aim.paths import validate_path_template


@dataclass(frozen=True)
class FieldError:
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


def validate_runtime_config(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """Problems of a runtime config spec at `path` (`spec`, or `spec.runtimeConfig` for an inline config)."""
    errors: list[FieldError] = []
    routing = spec.get("routing")
    if isinstance(routing, Mapping):
        errors += validate_routing(routing, f"{path}.routing")
    propagation = spec.get("labelPropagation")
    patterns = propagation.get("match") if isinstance(propagation, Mapping) else None
    if isinstance(patterns, list):
        for index, pattern in enumerate(patterns):
            problem = validate_pattern(pattern) if isinstance(pattern, str) else "must be a string"
            if problem is not None:
                errors.append(FieldError(f"{path}.labelPropagation.match[{index}]", problem))
    errors += _validate_env(spec.get("env"), f"{path}.env")
    storage = spec.get("storage")
    for field, value in (
        (
            f"{path}.storage.pvcHeadroomPercent",
            storage.get("pvcHeadroomPercent") if isinstance(storage, Mapping) else None,
        ),
        (f"{path}.pvcHeadroomPercent", spec.get("pvcHeadroomPercent")),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            errors.append(FieldError(field, f"must be at least 0, got {value}"))
    return errors


def validate_routing(routing: Mapping[str, Any], path: str) -> list[FieldError]:
    """Problems of a `routing` block (a runtime config's or an AIMService's own) at `path`."""
    errors: list[FieldError] = []
    template = routing.get("pathTemplate")
    if template is not None:
        problem = validate_path_template(template) if isinstance(template, str) else "must be a string"
        if problem is not None:
            errors.append(FieldError(f"{path}.pathTemplate", problem))
    timeout = routing.get("requestTimeout")
    if timeout is not None and timeout != "":
        problem = validate_duration(timeout) if isinstance(timeout, str) else "must be a string"
        if problem is not None:
            errors.append(FieldError(f"{path}.requestTimeout", problem))
    gateway = routing.get("gatewayRef")
    if isinstance(gateway, Mapping) and gateway and not gateway.get("name"):
        errors.append(FieldError(f"{path}.gatewayRef.name", "required"))
    return errors


def validate_service(spec: Mapping[str, Any]) -> list[FieldError]:
    """Problems of an AIMService spec's runtime-config parts: `spec.runtimeConfig`, `spec.routing`, `spec.env`."""
    errors: list[FieldError] = []
    inline = spec.get("runtimeConfig")
    if isinstance(inline, Mapping):
        errors += validate_runtime_config(inline, "spec.runtimeConfig")
    routing = spec.get("routing")
    if isinstance(routing, Mapping):
        errors += validate_routing(routing, "spec.routing")
    errors += _validate_env(spec.get("env"), "spec.env")
    return errors


def _validate_env(env: Any, path: str) -> list[FieldError]:
    if not isinstance(env, list):
        return []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, item in enumerate(env):
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not name:
            errors.append(FieldError(f"{path}[{index}].name", "required"))
        elif name in seen:
            errors.append(FieldError(f"{path}[{index}].name", f"duplicate name {name!r}"))
        else:
            seen.add(name)
    return errors
