"""The checks kube-apiserver runs on a webhook's `clientConfig` wherever one is configured (a
ValidatingWebhookConfiguration's webhooks, a CRD's conversion webhook): apiserver's webhook validation, in its
wording."""

from __future__ import annotations

import base64
import binascii
import ssl
from typing import Any
from urllib.parse import urlsplit

from omectl.sim.apiserver.errors import FieldError
from omectl.sim.apiserver.metadata import dns1123_subdomain_problems

_URL_FORM = "; desired format: https://host[/path]"


def url_errors(url: str, path: str, *, allow_http: bool = False) -> list[FieldError]:
    """`ValidateWebhookURL` (https only, unless `allow_http`)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a bad port, as Go's url.Parse does
    except ValueError as exc:
        return [FieldError("Required", path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errors: list[FieldError] = []
    if parts.scheme != "https" and not (allow_http and parts.scheme == "http"):
        errors.append(FieldError("Invalid", path, "'https' is the only allowed URL scheme" + _URL_FORM, parts.scheme))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        errors.append(FieldError("Invalid", path, "host must be specified" + _URL_FORM, host))
    if "@" in parts.netloc:
        user = parts.netloc.rpartition("@")[0]
        errors.append(FieldError("Invalid", path, "user information is not permitted in the URL", user))
    if parts.fragment:
        errors.append(FieldError("Invalid", path, "fragments are not permitted in the URL", parts.fragment))
    if parts.query:
        errors.append(FieldError("Invalid", path, "query parameters are not permitted in the URL", parts.query))
    return errors


def service_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    """`ValidateWebhookService`: a name, a namespace, a valid port (defaulted to 443 before), and a path made
    of DNS-subdomain segments."""
    errors: list[FieldError] = []
    # kube-apiserver hands the Service's name and namespace to this check the other way round (both for
    # admission webhooks and conversion webhooks): a missing namespace is reported at `.name`, a missing name
    # at `.namespace` (measured against v1.34.4).
    if not service.get("namespace"):
        errors.append(FieldError("Required", f"{path}.name"))
    if not service.get("name"):
        errors.append(FieldError("Required", f"{path}.namespace"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        detail = "port is not valid: must be between 1 and 65535, inclusive"
        errors.append(FieldError("Invalid", f"{path}.port", detail, port))
    service_path = service.get("path")
    if service_path is not None:
        errors += _service_path_errors(str(service_path), f"{path}.path")
    return errors


def _service_path_errors(url_path: str, path: str) -> list[FieldError]:
    if url_path in ("", "/"):
        return []
    if url_path == "//":
        return [FieldError("Invalid", path, "segment[0] may not be empty", url_path)]
    errors: list[FieldError] = []
    if not url_path.startswith("/"):
        errors.append(FieldError("Invalid", path, "must start with a '/'", url_path))
    steps = url_path[1:].removesuffix("/")
    for i, step in enumerate(steps.split("/")):
        if not step:
            errors.append(FieldError("Invalid", path, f"segment[{i}] may not be empty", url_path))
            continue
        for problem in dns1123_subdomain_problems(step):
            errors.append(FieldError("Invalid", path, f"segment[{i}]: {problem}", url_path))
    return errors


def ca_bundle_errors(ca_bundle: str, path: str) -> list[FieldError]:
    """`ValidateCABundle`: the bundle (base64 in JSON) must hold PEM certificates."""
    try:
        ssl.create_default_context(cadata=base64.b64decode(ca_bundle, validate=True).decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError):
        detail = "unable to load root certificates: unable to parse bytes as PEM block"
        return [FieldError("Invalid", path, detail, ca_bundle)]
    return []
