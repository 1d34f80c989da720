"""ValidatingWebhookConfiguration objects as the API server checks and stores them: the admissionregistration/v1
validation on create and update, and the defaults it fills in."""

from __future__ import annotations

import re
from typing import Any

from omectl.sim.apiserver.errors import FieldError, go_quote
from omectl.sim.apiserver.metadata import VALUE_MSG, name_errors, qualified_name_errors
from omectl.sim.apiserver.webhook_config_rules import service_errors, url_errors

REVIEW_VERSIONS = ("v1", "v1beta1")  # the AdmissionReview versions the real server can send, in its order
DEFAULT_TIMEOUT_SECONDS = 10  # a webhook's timeoutSeconds when unset
NO_DRY_RUN_SIDE_EFFECTS = ("None", "NoneOnDryRun")  # the sideEffects v1 accepts; both allow a dry-run call
_SUPPORTED_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_dns1035_re = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    f"character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{_DNS1035_FMT}')"
)
_URL_FORM = "; desired format: https://host[/path]"


def _go_slice(values: list[Any], element_type: str = "string") -> str:
    """Go's `%#v` of a string slice, which is how field errors print list values."""
    return f"[]{element_type}{{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _resources_errors(resources: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not resources:
        errors.append(FieldError("Required", path))
    wildcard_subresources: set[str] = set()  # x/*
    wildcard_resources: set[str] = set()  # */x
    has_double_wildcard = has_single_wildcard = has_plain_resource = False
    for i, entry in enumerate(resources):
        entry = str(entry)
        if not entry:
            errors.append(FieldError("Required", f"{path}[{i}]"))
            continue
        has_double_wildcard = has_double_wildcard or entry == "*/*"
        has_single_wildcard = has_single_wildcard or entry == "*"
        if "/" not in entry:
            has_plain_resource = entry != "*"  # the last plain entry decides, exactly as upstream does
            continue
        resource, _, sub = entry.partition("/")
        if resource in wildcard_subresources:
            errors.append(
                FieldError(
                    "Invalid",
                    f"{path}[{i}]",
                    f"if '{resource}/*' is present, must not specify {entry}",
                    entry,
                )
            )
        if sub in wildcard_resources:
            errors.append(
                FieldError("Invalid", f"{path}[{i}]", f"if '*/{sub}' is present, must not specify {entry}", entry)
            )
        if sub == "*":
            wildcard_subresources.add(resource)
        if resource == "*":
            wildcard_resources.add(sub)
    if len(resources) > 1 and has_double_wildcard:
        errors.append(
            FieldError(
                "Invalid",
                path,
                "if '*/*' is present, must not specify other resources",
                raw_value=_go_slice(resources),
            )
        )
    if has_single_wildcard and has_plain_resource:
        errors.append(
            FieldError(
                "Invalid",
                path,
                "if '*' is present, must not specify other resources without subresources",
                raw_value=_go_slice(resources),
            )
        )
    return errors


def _rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operations = _list(rule.get("operations"))
    if not operations:
        errors.append(FieldError("Required", f"{path}.operations"))
    if len(operations) > 1 and "*" in operations:
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.operations",
                "if '*' is present, must not specify other operations",
                raw_value=_go_slice(operations, "admissionregistration.OperationType"),
            )
        )
    for i, op in enumerate(operations):
        if op not in _SUPPORTED_OPERATIONS:
            errors.append(
                FieldError("NotSupported", f"{path}.operations[{i}]", value=op, supported=_SUPPORTED_OPERATIONS)
            )
    groups = _list(rule.get("apiGroups"))
    if not groups:
        errors.append(FieldError("Required", f"{path}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.apiGroups",
                "if '*' is present, must not specify other API groups",
                raw_value=_go_slice(groups),
            )
        )
    versions = _list(rule.get("apiVersions"))
    if not versions:
        errors.append(FieldError("Required", f"{path}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.apiVersions",
                "if '*' is present, must not specify other API versions",
                raw_value=_go_slice(versions),
            )
        )
    for i, version in enumerate(versions):
        if version == "":
            errors.append(FieldError("Required", f"{path}.apiVersions[{i}]"))
    errors += _resources_errors(_list(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errors.append(FieldError("NotSupported", f"{path}.scope", value=scope, supported=_SCOPES))
    return errors


def _label_value_errors(value: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    text = str(value)
    if len(text) > 63:
        errors.append(FieldError("Invalid", path, "must be no more than 63 characters", text))
    if not re.fullmatch("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", text):
        errors.append(FieldError("Invalid", path, VALUE_MSG, text))
    return errors


def _selector_errors(selector: Any, path: str) -> list[FieldError]:
    """`ValidateLabelSelector` (label values in selectors must be valid, as on create)."""
    if not isinstance(selector, dict):
        return []
    errors: list[FieldError] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        errors += qualified_name_errors(str(key), f"{path}.matchLabels")
        errors += _label_value_errors(value, f"{path}.matchLabels")
    for i, expr in enumerate(_list(selector.get("matchExpressions"))):
        expr_path = f"{path}.matchExpressions[{i}]"
        expr = expr if isinstance(expr, dict) else {}
        op, values = expr.get("operator"), _list(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errors.append(
                    FieldError(
                        "Required",
                        f"{expr_path}.values",
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError(
                        "Forbidden",
                        f"{expr_path}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(FieldError("Invalid", f"{expr_path}.operator", "not a valid selector operator", op))
        errors += qualified_name_errors(str(expr.get("key", "")), f"{expr_path}.key")
        for j, value in enumerate(values):
            errors += _label_value_errors(value, f"{expr_path}.values[{j}]")
    return errors


def _review_versions_errors(versions: list[Any], path: str) -> list[FieldError]:
    if not versions:
        return [FieldError("Required", path, "must specify one of v1, v1beta1")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version = str(version)
        if version in seen:
            errors.append(FieldError("Invalid", f"{path}[{i}]", "duplicate version", version))
            continue
        seen.add(version)
        if len(version) > 63:
            errors.append(FieldError("Invalid", f"{path}[{i}]", "must be no more than 63 characters", version))
        if not _dns1035_re.match(version):
            errors.append(FieldError("Invalid", f"{path}[{i}]", _DNS1035_MSG, version))
    if not seen.intersection(REVIEW_VERSIONS):
        errors.append(
            FieldError("Invalid", path, "must include at least one of v1, v1beta1", raw_value=_go_slice(versions))
        )
    return errors


def _webhook_name_errors(name: str, path: str) -> list[FieldError]:
    """`IsFullyQualifiedName`: a DNS subdomain with at least three dot-separated segments."""
    if not name:
        return [FieldError("Required", path)]
    errors = name_errors(name, path=path)
    if errors:
        return errors
    if len(name.split(".")) < 3:
        return [FieldError("Invalid", path, "should be a domain with at least three segments separated by dots", name)]
    return []


def _webhook_errors(webhook: dict[str, Any], path: str, allow_http: bool) -> list[FieldError]:
    errors = _webhook_name_errors(str(webhook.get("name") or ""), f"{path}.name")
    for i, rule in enumerate(_list(webhook.get("rules"))):
        errors += _rule_errors(rule if isinstance(rule, dict) else {}, f"{path}.rules[{i}]")
    failure_policy = webhook.get("failurePolicy")
    if failure_policy is not None and failure_policy not in _FAILURE_POLICIES:
        errors.append(
            FieldError("NotSupported", f"{path}.failurePolicy", value=failure_policy, supported=_FAILURE_POLICIES)
        )
    match_policy = webhook.get("matchPolicy")
    if match_policy is not None and match_policy not in _MATCH_POLICIES:
        errors.append(FieldError("NotSupported", f"{path}.matchPolicy", value=match_policy, supported=_MATCH_POLICIES))
    side_effects = webhook.get("sideEffects")
    if side_effects is None:
        errors.append(FieldError("Required", f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in NO_DRY_RUN_SIDE_EFFECTS:
        errors.append(
            FieldError("NotSupported", f"{path}.sideEffects", value=side_effects, supported=NO_DRY_RUN_SIDE_EFFECTS)
        )
    timeout = webhook.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or not 1 <= timeout <= 30):
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.timeoutSeconds",
                "the timeout value must be between 1 and 30 seconds",
                timeout,
            )
        )
    errors += _selector_errors(webhook.get("namespaceSelector"), f"{path}.namespaceSelector")
    errors += _selector_errors(webhook.get("objectSelector"), f"{path}.objectSelector")
    client_config = webhook.get("clientConfig")
    client_config = client_config if isinstance(client_config, dict) else {}
    url, service = client_config.get("url"), client_config.get("service")
    if (url is None) == (service is None):
        errors.append(FieldError("Required", f"{path}.clientConfig", "exactly one of url or service is required"))
    elif url is not None:
        errors += url_errors(str(url), f"{path}.clientConfig.url", allow_http=allow_http)
    else:
        errors += service_errors(service if isinstance(service, dict) else {}, f"{path}.clientConfig.service")
    return errors


def validate_webhook_configuration(obj: dict[str, Any], *, allow_http: bool = False) -> list[FieldError]:
    """The API server's checks of a ValidatingWebhookConfiguration's webhooks on create/update (metadata is
    checked by the generic object rules). `allow_http` accepts `http://` URLs, matching the dispatcher's."""
    errors: list[FieldError] = []
    seen_names: set[str] = set()
    for i, webhook in enumerate(_list(obj.get("webhooks"))):
        path = f"webhooks[{i}]"
        webhook = webhook if isinstance(webhook, dict) else {}
        errors += _webhook_errors(webhook, path, allow_http)
        errors += _review_versions_errors(
            _list(webhook.get("admissionReviewVersions")), f"{path}.admissionReviewVersions"
        )
        name = webhook.get("name")
        if name:
            if name in seen_names:
                errors.append(FieldError("Duplicate", f"{path}.name", value=name))
            seen_names.add(name)
    return errors


def default_webhook_configuration(obj: dict[str, Any]) -> None:
    """Apply the admissionregistration/v1 defaults in place, as the real server stores them."""
    for webhook in _list(obj.get("webhooks")):
        if not isinstance(webhook, dict):
            continue
        webhook.setdefault("failurePolicy", "Fail")
        webhook.setdefault("matchPolicy", "Equivalent")
        webhook.setdefault("namespaceSelector", {})
        webhook.setdefault("objectSelector", {})
        webhook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
        for rule in _list(webhook.get("rules")):
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
