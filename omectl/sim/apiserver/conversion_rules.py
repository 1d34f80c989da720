"""The checks kube-apiserver runs on a CRD's `spec.conversion`, in its wording. Its messages name the internal
fields: `spec.conversion.webhookClientConfig` for v1's `webhook.clientConfig`, and
`spec.conversion.conversionReviewVersions` for v1's `webhook.conversionReviewVersions`."""

from __future__ import annotations

from typing import Any

from omectl.sim.apiserver.errors import FieldError
from omectl.sim.apiserver.schema import dns1035_label_problems
from omectl.sim.apiserver.webhook_config_rules import ca_bundle_errors, service_errors, url_errors

STRATEGIES = ("None", "Webhook")
REVIEW_VERSIONS = ("v1", "v1beta1")  # what a conversion webhook may accept (one of them is required)
_PATH = "spec.conversion"
_CLIENT_CONFIG = f"{_PATH}.webhookClientConfig"
_REVIEW = f"{_PATH}.conversionReviewVersions"


def conversion_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The errors of `crd`'s (defaulted) conversion; `old` is the CRD an update replaces."""
    spec = crd.get("spec") or {}
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        return []
    errors: list[FieldError] = []
    strategy = conversion.get("strategy") or ""
    if strategy != "None" and spec.get("preserveUnknownFields") is True:
        detail = "must be None if spec.preserveUnknownFields is true"
        errors.append(FieldError("Invalid", f"{_PATH}.strategy", detail, strategy))
    if not strategy:
        errors.append(FieldError("Required", f"{_PATH}.strategy"))
    elif strategy not in STRATEGIES:
        errors.append(FieldError("NotSupported", f"{_PATH}.strategy", value=strategy, supported=STRATEGIES))
    webhook = conversion.get("webhook")
    webhook = webhook if isinstance(webhook, dict) else {}
    client_config = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions") or []
    if strategy != "Webhook":
        not_webhook = "should not be set when strategy is not set to Webhook"
        if client_config is not None:
            errors.append(FieldError("Forbidden", _CLIENT_CONFIG, not_webhook))
        if versions:
            errors.append(FieldError("Forbidden", _REVIEW, not_webhook))
        return errors
    if not isinstance(client_config, dict):
        errors.append(FieldError("Required", _CLIENT_CONFIG, "required when strategy is set to Webhook"))
    else:
        errors += _client_config_errors(client_config, allow_invalid_ca_bundle=_allows_invalid_ca_bundle(old))
    errors += _review_version_errors(versions, require_recognized=_requires_recognized_version(old))
    return errors


def _client_config_errors(client_config: dict[str, Any], *, allow_invalid_ca_bundle: bool) -> list[FieldError]:
    url, service = client_config.get("url"), client_config.get("service")
    errors: list[FieldError] = []
    if (url is None) == (service is None):
        errors.append(FieldError("Required", _CLIENT_CONFIG, "exactly one of url or service is required"))
    elif url is not None:
        errors += url_errors(str(url), f"{_CLIENT_CONFIG}.url")
    else:
        errors += service_errors(service if isinstance(service, dict) else {}, f"{_CLIENT_CONFIG}.service")
    ca_bundle = client_config.get("caBundle")
    if ca_bundle and not allow_invalid_ca_bundle:
        errors += ca_bundle_errors(str(ca_bundle), f"{_CLIENT_CONFIG}.caBundle")
    return errors


def _review_version_errors(versions: list[Any], *, require_recognized: bool) -> list[FieldError]:
    if not versions:
        return [FieldError("Required", _REVIEW)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version = str(version)
        if version in seen:
            errors.append(FieldError("Invalid", f"{_REVIEW}[{i}]", "duplicate version", version))
            continue
        seen.add(version)
        errors += [FieldError("Invalid", f"{_REVIEW}[{i}]", p, version) for p in dns1035_label_problems(version)]
    if require_recognized and not seen & set(REVIEW_VERSIONS):
        detail = "must include at least one of " + ", ".join(REVIEW_VERSIONS)
        errors.append(FieldError("Invalid", _REVIEW, detail, [str(v) for v in versions]))
    return errors


def _allows_invalid_ca_bundle(old: dict[str, Any] | None) -> bool:
    """A bad caBundle is let through on create, while the CRD is not yet Established, and when the old one was
    bad too."""
    if old is None or not _established(old):
        return True
    old_bundle = (((old.get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}
    bundle = old_bundle.get("caBundle") if isinstance(old_bundle, dict) else None
    return bool(bundle) and bool(ca_bundle_errors(str(bundle), ""))


def _requires_recognized_version(old: dict[str, Any] | None) -> bool:
    """On update, only when the old CRD's versions (if any) named one the server knows."""
    if old is None:
        return True
    webhook = (((old.get("spec") or {}).get("conversion") or {}).get("webhook")) or {}
    old_versions = webhook.get("conversionReviewVersions") if isinstance(webhook, dict) else None
    return not old_versions or any(v in REVIEW_VERSIONS for v in old_versions)


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions if isinstance(c, dict))
