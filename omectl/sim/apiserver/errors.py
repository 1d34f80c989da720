"""Kubernetes `Status` error bodies, worded exactly as the real API server words them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import orjson


class APIError(Exception):
    """An error answered to the client as a `Status` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details if self.details is not None else {},
            "code": self.code,
        }
        if not self.reason:
            del body["reason"]
        if self.details is None:
            # The real server omits `details` for plain errors such as BadRequest.
            del body["details"]
        return body


def go_quote(text: str) -> str:
    """Go's `%q` of a string, as the real server's messages quote names, URLs and values."""
    return orjson.dumps(text).decode()


def go_value(value: Any) -> str:
    """Render a value the way Go's field errors do (`%#v`-like for the common JSON types)."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True)
class FieldError:
    """One field error, like apimachinery's `field.Error`.

    `kind` is one of: Required, Invalid, TypeInvalid, NotSupported, Forbidden, TooLong, TooMany, Duplicate.
    """

    kind: str
    field: str
    detail: str = ""
    value: Any = None
    supported: tuple[str, ...] = dataclasses.field(default_factory=tuple)
    raw_value: str | None = None  # a preformatted value (e.g. "0x0")

    _REASONS = {
        "Required": ("FieldValueRequired", "Required value"),
        "Invalid": ("FieldValueInvalid", "Invalid value"),
        "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
        "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
        "Forbidden": ("FieldValueForbidden", "Forbidden"),
        "TooLong": ("FieldValueTooLong", "Too long"),
        "TooMany": ("FieldValueTooMany", "Too many"),
        "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    }

    @property
    def reason(self) -> str:
        return self._REASONS[self.kind][0]

    def body(self) -> str:
        """The message without the field path (`ErrorBody` in apimachinery)."""
        label = self._REASONS[self.kind][1]
        if self.kind == "TooMany" and self.value is not None:
            return f"{label}: {go_value(self.value)}: {self.detail}"
        if self.kind in ("Required", "Forbidden", "TooLong", "TooMany"):
            return f"{label}: {self.detail}" if self.detail else label
        value = self.raw_value if self.raw_value is not None else go_value(self.value)
        text = f"{label}: {value}"
        if self.kind == "NotSupported" and self.supported:
            text += ": supported values: " + ", ".join(f'"{s}"' for s in self.supported)
        elif self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.body(), "field": self.field}


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


def qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> APIError:
    return APIError(404, "NotFound", f'{qualified(plural, group)} "{name}" not found', _details(name, group, plural))


def unknown_resource() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(plural: str, group: str, name: str) -> APIError:
    return APIError(
        409,
        "AlreadyExists",
        f'{qualified(plural, group)} "{name}" already exists',
        _details(name, group, plural),
    )


def conflict(plural: str, group: str, name: str, why: str | None = None) -> APIError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
        _details(name, group, plural),
    )


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> APIError:
    """422 Invalid. `kind` is the Kind (`Widget`), except where the real server uses the plural."""
    subject = f'{qualified(kind, group)} "{name}"'
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return APIError(
        422,
        "Invalid",
        f"{subject} is invalid: {text}",
        _details(name, group, kind, causes=[e.cause() for e in errors]),
    )


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def forbidden(plural: str, group: str, name: str, why: str, causes: list[dict[str, Any]] | None = None) -> APIError:
    details = _details(name, group, plural)
    if causes:
        details["causes"] = causes
    return APIError(403, "Forbidden", f'{qualified(plural, group)} "{name}" is forbidden: {why}', details)


def unsupported_media_type(accepted: list[str]) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
        {},
    )


def method_not_allowed() -> APIError:
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def internal_error(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def too_many_requests(message: str, retry_after: int) -> APIError:
    return APIError(
        429, "TooManyRequests", message, {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)}
    )
